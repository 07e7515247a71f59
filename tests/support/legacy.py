"""Pickles in the format of the paper's released runs (which are not in the repository), made
from rows written here, and imported with `freshrag import-legacy`."""

import pickle

from freshrag.cli.main import main


def row(i, truthfulness=None, relevance=None, n_in=100, n_out=10, retrieved=False, context=""):
    """One row as the released files hold it; no scores means an unscored file's row."""
    made = {"title": f"Article {i}", "content": "text", "date": "2023-05-01",
            "url": f"https://en.wikipedia.org/wiki/A{i}", "question": f"Question {i}?",
            "answer": f"Answer {i}", "n_input_tokens": n_in, "n_output_tokens": n_out,
            "retrieved": retrieved, "context": context}
    if truthfulness is not None:
        made.update(truthfulness=truthfulness, relevance=relevance)
    return made


def import_rows(tmp_path, rows, dataset, system, out, protocol=pickle.DEFAULT_PROTOCOL):
    path = tmp_path / f"{dataset}-{system}.pkl"
    path.write_bytes(pickle.dumps(rows, protocol=protocol))
    assert main(["import-legacy", str(path), "--dataset", dataset, "--system", system,
                 "--out", str(out)]) == 0
    return path
