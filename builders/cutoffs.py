"""Knowledge cutoffs: the date after which a model cannot know anything, by model name.

`--cutoff DATE` wins; `--model NAME` looks the model up in the built-in table, extended or
overridden by a `[cutoffs]` table in `freshrag.toml` (`"my-model" = "2024-06-30"`). An article is
*after* the cutoff when its first revision is later than the end of the cutoff day (UTC).
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

from freshrag.core.config import config_table
from freshrag.core.errors import UserError

# Dates as the providers document them; a month-only cutoff is given as that month's last day.
KNOWN_CUTOFFS = {
    "gpt-4-0613": "2021-09-30",  # the paper's model (section III.A)
    "gpt-4-0314": "2021-09-30",
    "gpt-3.5-turbo-0613": "2021-09-30",
    "gpt-3.5-turbo-1106": "2021-09-30",
    "gpt-4-1106-preview": "2023-04-30",
    "gpt-4-turbo-2024-04-09": "2023-12-31",
    "gpt-4o-2024-05-13": "2023-10-31",
    "gpt-4o-2024-08-06": "2023-10-31",
    "gpt-4o-mini-2024-07-18": "2023-10-31",
}


class CutoffError(UserError, ValueError):
    """A cutoff that is not a date, or a model whose cutoff is unknown."""


def parse_cutoff(text: str, where: str = "--cutoff") -> date:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise CutoffError(f"{where}: {text!r} is not a date (expected YYYY-MM-DD)") from None


def cutoff_table(config_file: Path | None) -> dict[str, str]:
    """The built-in table with the config file's `[cutoffs]` on top."""
    table = dict(KNOWN_CUTOFFS)
    for model, value in config_table(config_file, "cutoffs").items():
        parse_cutoff(str(value), f"{config_file}: [cutoffs] {model}")
        table[model] = str(value)
    return table


def resolve_cutoff(cutoff: str | None, model: str | None,
                   config_file: Path | None = None) -> tuple[date, str]:
    """The cutoff date and where it came from, for the manifest."""
    if cutoff is not None:
        return parse_cutoff(cutoff), "--cutoff"
    if model is None:
        raise CutoffError("give --cutoff YYYY-MM-DD or --model NAME (a model of the cutoff table)")
    table = cutoff_table(config_file)
    if model not in table:
        raise CutoffError(f"--model {model!r}: no known cutoff; give --cutoff YYYY-MM-DD, or add "
                          f"it under [cutoffs] in freshrag.toml (known: {', '.join(sorted(table))})")
    return parse_cutoff(table[model], f"cutoff of {model}"), f"table entry for {model}"


def created_after(created: str, cutoff: date) -> bool:
    """True if the ISO-8601 timestamp `created` falls after the whole cutoff day (UTC)."""
    moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).date() > cutoff
