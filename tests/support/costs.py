"""What the cost tests share: the price they give the fake server's model, its long articles (so
that an answer's input tokens weigh), and the dry run's printed estimate read back (`table`)."""

PRICE = (2.0, 8.0)  # USD per million input / output tokens of "fake-model"


def long_article(i: int) -> str:
    """Town i's article, forty times the sentence its question asks about."""
    return f"Town {i} has {i + 3} bridges. " * 40


def table(text: str, which: int = 0) -> dict[str, list[str]]:
    """role -> the cells of its row in the printed estimate (`which` 1: system -> its row in the
    table per system)."""
    blocks = "\n".join(line if line.startswith("|") else "" for line in text.splitlines())
    found = [block for block in blocks.split("\n\n") if block.strip()]
    if len(found) <= which:
        return {}
    rows = [line.strip("|").split("|") for line in found[which].strip().splitlines()
            if line.startswith("| ")]  # not the |---| line
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[1:]}
