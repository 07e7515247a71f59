"""What the cost tests share: the price they give the fake server's model, its long articles (so
that an answer's input tokens weigh), and the dry run's printed estimate read back (`table`)."""

PRICE = (2.0, 8.0)  # USD per million input / output tokens of "fake-model"


def long_article(i: int) -> str:
    """Town i's article, forty times the sentence its question asks about."""
    return f"Town {i} has {i + 3} bridges. " * 40


def table(text: str) -> dict[str, list[str]]:
    """role -> the cells of its row in the printed estimate."""
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[1:]}
