"""The `freshrag` command's parser and dispatch: one subcommand a module in
harness/cli/commands/, listed by `freshrag --help` with a one-line summary each.

One module per command in harness/cli/commands/ declares its options and does its work; this one
parses, dispatches and reports what the user can fix (freshrag.core.errors.UserError) as one
line, once, for every command (docs/cli.md). A command module imports at its top only what its
options need, and the rest when it runs, so that `freshrag --help` does not load every command's
libraries.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import os
import signal
import sys
import threading
import traceback

from freshrag.cli.commands import (
    agreement,
    build,
    corpus,
    cutoff,
    datasets,
    demo,
    export,
    filter,
    gate,
    import_answers,
    import_legacy,
    index,
    label,
    merge,
    mix,
    needs,
    probe_judge,
    report,
    run,
    scan_retrieval,
    score,
    seed_server,
    serve,
    systems,
)
from freshrag.cli.options import HelpFormatter, check_together
from freshrag.core.errors import UserError
from freshrag.llm import deadline

# In the order `freshrag --help` lists them.
COMMANDS = (build, corpus, datasets, label, mix, filter, run, cutoff, systems, score, index,
            scan_retrieval, seed_server, report, merge, export, agreement, gate, import_answers,
            import_legacy, demo, probe_judge, needs, serve)


DESCRIPTION = ("Benchmark RAG strategies on questions about Wikipedia articles created after a "
               "model's knowledge cutoff: build a dataset, run systems on it, judge and report. "
               "`freshrag COMMAND --help` describes a command, with examples.\n\n"
               "On every command a dataset is --dataset DIR, a run directory read is RUN_DIR "
               "(the first argument), and what a command writes is --out; --model, --model-role "
               "and --base-url choose the models of every command that calls one.")
EXAMPLES = ("freshrag demo                      # the whole workflow offline, no key",
            "export FRESHRAG_API_KEY=sk-...",
            "freshrag run --base-url https://api.openai.com/v1 --model gpt-4o-mini",
            "freshrag report results/example --html report.html")


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line: every command with its options and their help texts; with
    `only`, that command's options alone and the others by name and summary, so that
    `freshrag --help` (`only=""`) and one command load no other command's libraries."""
    whole = argparse.ArgumentParser(
        prog="freshrag", description=DESCRIPTION, formatter_class=HelpFormatter,
        epilog="examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES))
    whole.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = whole.add_subparsers(required=True, metavar="COMMAND", title="commands")
    for command in COMMANDS:
        if only is None or command.NAME == only:
            command.add_parser(sub)
        else:
            sub.add_parser(command.NAME, help=command.HELP)
    return whole


def version() -> str:
    """The installed distribution's version (its package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("freshrag")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    """The command of `argv` (of sys.argv when None: main is then the program itself)."""
    code = _dispatch(argv)
    if argv is None and deadline.STOP.is_set():
        _leave_abandoned_threads(code)
    return code


def _dispatch(argv: list[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    # the command is the first argument: the program's own options (--help, --version) end it
    args = parser(given[0] if given and not given[0].startswith("-") else "").parse_args(argv)
    before = {signum: signal.signal(signum, _stop) for signum in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(signum) is not signal.SIG_IGN}  # nohup's and `&`'s stay ignored
    try:
        check_together(args)
        return args.handler(args)
    except UserError as err:  # what the user can fix (freshrag.core.errors): no traceback
        print(f"freshrag: error: {err}", file=sys.stderr)
        if err.show_cause and err.__cause__ is not None:  # their own code's, once
            cause = traceback.format_exception(err.__cause__)
            print("".join(cause).rstrip(), file=sys.stderr)
        return 2
    except BrokenPipeError:  # a reader that stopped early (`--out - | head`): nothing to say
        if argv is None:  # the program itself: its exit would flush into the closed pipe again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as err:  # a read-only directory, a full disk: named, what was written is kept
        print(f"freshrag: error: {_describe_os_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # _stop's, or a Stopped from a request the stop abandoned
        print("freshrag: stopped; finished work is kept, run the same command to resume",
              file=sys.stderr)
        return 128 + (_received or signal.SIGINT)
    finally:  # as they were (a caller's, when main runs inside another program or a test)
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _describe_os_error(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    message = f"{where}{err.strerror or err}"
    if err.errno == errno.ENOSPC:
        message += ("; what was written before is kept: free some space and run the same command "
                    "again, which resumes")
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        message += "; choose a directory you can write to"
    return message


def _leave_abandoned_threads(code: int) -> None:
    """After a stop, end the process now if threads are still running someone else's code (a
    system blocked on its own lock, abandoned by core/concurrency.py): the interpreter's exit
    would join them, forever. The exit handlers run first (servers stopped, files flushed)."""
    if any(thread.is_alive() and not thread.daemon and thread is not threading.main_thread()
           for thread in threading.enumerate()):
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


_received: int | None = None  # the signal that stopped the command


def _stop(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM stops the command within a second: requests in flight are
    abandoned (harness/llm/deadline.py), finished rows are kept, and the embedded server is
    stopped on the way out. A second one ends the process at once."""
    global _received
    if deadline.STOP.is_set():
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _received = signum
    deadline.STOP.set()
    raise deadline.Stopped(signal.Signals(signum).name)
