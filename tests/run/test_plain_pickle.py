"""The check of a pickle before it is loaded (harness/run/plain_pickle.py): what plain data of
every protocol does passes; sharing that unfolds beyond the bound, classes, code and keys that
hash dearly do not. The command-level cases (a second, a named error) are in
tests/fuzz/test_pickles.py."""

import pickle

import pytest

from freshrag.run.plain_pickle import BASE_LIMIT, LIMIT_PER_BYTE, PickleRefused, check

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def released_run(rows: int = 200) -> list[dict]:
    """Rows as the released files hold them; the questions of one article share its text object
    and every row shares its keys, as a script that built them would."""
    content = "Town has bridges. " * 800
    return [{"title": f"Town {i // 4}", "content": content, "url": f"https://x/{i // 4}",
             "question": f"Question {i}?", "answer": f"Answer {i}.", "n_input_tokens": 900 + i,
             "n_output_tokens": 9, "retrieved": bool(i % 2), "truthfulness": 4.5,
             "relevance": None, "context": [f"Title: Town {i // 4}\n{content[:200]}"],
             "tags": {"a", "b"}, "pair": (1, 2.5), "frozen": frozenset([i, "x"])}
            for i in range(rows)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_released_run_passes_at_every_protocol(protocol):
    data = pickle.dumps(released_run(), protocol=protocol)
    check(data)
    assert pickle.loads(data) == released_run()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_bound_counts_a_shared_string_at_every_reference(protocol):
    text = "x" * 10_000

    def refs(n: int) -> bytes:
        return pickle.dumps([[text] * n], protocol=protocol)

    # each reference costs a few bytes of the file and 10,001 against the bound
    check(refs(100))  # about 1,000,000: within 1,000,000 + 32 per byte
    data = refs(200)
    assert 200 * 10_001 > BASE_LIMIT + LIMIT_PER_BYTE * len(data)
    with pytest.raises(PickleRefused, match="shared references unfold to more than"):
        check(data)


def test_a_list_that_holds_itself_is_refused():
    looped: list = []
    looped.append(looped)
    with pytest.raises(PickleRefused, match="changes a list after a second reference"):
        check(pickle.dumps([looped], protocol=2))


@pytest.mark.parametrize("value, named", [
    ({(1, 2): "pair"}, "a tuple as a dict key"),
    (frozenset([(1, 2)]), "a tuple as a dict key or set member"),
    ({2**64: 1}, "a number of more than 60 bits as a dict key"),
])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_key_or_member_that_hashes_dearly_is_refused(value, named, protocol):
    with pytest.raises(PickleRefused, match=named):
        check(pickle.dumps([value], protocol=protocol))


@pytest.mark.parametrize("data, named", [
    (b"\x80\x02h\x05.", "memo entry 5 is read before it is written"),
    (b"\x80\x04]\x94\x8c\x01x\x93.", "refused a class named by something other than strings"),
    (b"cos\nsystem\n(S'ls'\ntR.", "refused to load os.system"),
    (b"(ibuiltins\nset\n.", "refused INST"),
    (b"(cbuiltins\nset\no.", "refused the opcode OBJ"),
    (b"\x80\x02P1\n.", "refused a persistent id"),
])
def test_code_and_what_plain_data_never_does_are_refused(data, named):
    with pytest.raises(PickleRefused, match=named):
        check(data)
