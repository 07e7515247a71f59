"""freshrag's exceptions: one base, and a branch for what the user can fix (docs/design.md).

Every exception class of freshrag derives from `FreshragError`, most through `UserError`:

- `UserError` is what the person running freshrag can fix: an option or input file that cannot be
  used (a dataset, a dump, a needs file, a template, a released run), a configuration value, a
  run or dataset directory this command must not write, a wiki, endpoint or Qdrant store that
  refuses or cannot be reached. Its message names the file, option or URL at fault. The
  `freshrag` command catches it once, prints `freshrag: error: MESSAGE` and exits with status 2.
- Any other `FreshragError` is caught inside freshrag where it is raised, as part of the work: a
  reply that is not what a forced call asked for (recorded as unscored or retried), a dataset
  that cannot give judge probes (reported as such), the cap of `--max-cost` (the command ends
  resumable, exit 3). One that reaches the command is a bug and ends in a traceback.

One exception stands apart: `freshrag.llm.deadline.Stopped`, raised when a signal stops the
command, is a KeyboardInterrupt, so that no `except Exception` (a pair's own failure) catches it.

A class keeps the standard exception it has always derived from (ValueError, RuntimeError) as a
second base, so that code catching that one still catches it.
"""

from __future__ import annotations


class FreshragError(Exception):
    """The base of every exception freshrag raises on purpose."""


def said(err: BaseException) -> str:
    """`err` as "Type: message", for a message about other people's code (a system, a scorer,
    a factory) that failed. Their exception's `str()` may itself raise (a broken `__str__`):
    its message is then said to be unreadable, rather than a second exception ending the
    command in a traceback."""
    try:
        text = str(err)
    except Exception as broken:  # the user's __str__, whatever it raises
        text = f"(its message cannot be read: str() raised {type(broken).__name__})"
    return f"{type(err).__name__}: {text}"


def traceback_of(err: BaseException, most: int = 4000) -> str:
    """`err`'s traceback as Python prints it (file, line and code of each frame, then "Type:
    message"), its last `most` characters: where other people's code failed, kept beside the
    one-line `said(err)`. A message that cannot be read is said so, as `said` does."""
    import traceback

    frames = "".join(traceback.format_tb(err.__traceback__))
    text = f"Traceback (most recent call last):\n{frames}{said(err)}"
    return text if len(text) <= most else "..." + text[-most:]


class UserError(FreshragError):
    """Something the user can fix; the message says what and where (exit status 2). Where the
    user's own code failed (a plugged-in system), `show_cause` asks for the traceback of the
    chained cause, printed once under the message."""

    show_cause = False


class CutoffError(UserError, ValueError):
    """A knowledge cutoff, or a date it is compared with, that cannot be used: a cutoff that is
    not a date or lies outside the range a model's can (builders/cutoffs.py), a model whose
    cutoff is unknown, an article's creation time that is not a timestamp, or a run or dataset
    the cutoff analysis cannot read (harness/reporting/cutoff.py). The message names the input."""
