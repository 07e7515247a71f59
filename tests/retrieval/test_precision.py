"""The local embedding model's precision: bf16 where the CPU has bfloat16 in hardware, int8
elsewhere, one pinned by FRESHRAG_LOCAL_EMBEDDINGS_PRECISION; each its own model name, so its own
index key. No model is loaded here."""

import pytest

from freshrag.core.config import ConfigError
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import (
    PRECISION_VARIABLE,
    PRECISIONS,
    LocalMiniLM,
    default_precision,
    native_bf16,
)
from freshrag.retrieval.index import index_key
from tests import WIKIRAG
from tests.fuzz.support import assert_refused, invoke
from tests.support.systems import CORPUS

AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
AMX = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni amx_bf16 amx_tile amx_int8\n"
ZEN4 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"


@pytest.mark.parametrize("cpuinfo, expected", [(AVX2, False), (AMX, True), (ZEN4, True),
                                               ("", False), ("model name: amx_bf16\n", False)])
def test_bf16_in_hardware_is_read_from_the_flags_line_only(cpuinfo, expected):
    assert native_bf16(cpuinfo) is expected


def test_the_default_follows_the_cpu_unless_the_variable_pins_one(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMX)
    assert default_precision({}, cpuinfo) == "bf16"
    cpuinfo.write_text(AVX2)
    assert default_precision({}, cpuinfo) == "int8"
    assert default_precision({}, tmp_path / "absent") == "int8"  # no /proc: the safe one
    for precision in PRECISIONS:
        assert default_precision({PRECISION_VARIABLE: f" {precision} "}, cpuinfo) == precision
    assert default_precision({PRECISION_VARIABLE: ""}, cpuinfo) == "int8"  # empty is unset


def test_a_bad_precision_names_the_variable_and_the_choices():
    with pytest.raises(ConfigError) as raised:
        default_precision({PRECISION_VARIABLE: "fp16"})
    assert PRECISION_VARIABLE in str(raised.value) and "'fp16'" in str(raised.value)
    assert all(precision in str(raised.value) for precision in PRECISIONS)
    with pytest.raises(ValueError):
        LocalMiniLM(precision="fp64")


def test_each_precision_is_its_own_model_name_and_index_key():
    names = {precision: LocalMiniLM(precision=precision).name for precision in PRECISIONS}
    assert names == {"bf16": "all-MiniLM-L6-v2-bf16", "int8": "all-MiniLM-L6-v2-int8",
                     "fp32": "all-MiniLM-L6-v2"}  # int8 and fp32 keep the keys they had
    keys = {index_key(CORPUS.values(), IndexConfig(), name) for name in names.values()}
    assert len(keys) == len(PRECISIONS)


def test_the_command_refuses_a_bad_precision_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv(PRECISION_VARIABLE, "half")
    result = invoke("index", "--articles", WIKIRAG / "articles.jsonl",
                    "--index-dir", tmp_path / "index")
    assert_refused(result, PRECISION_VARIABLE)
    assert not (tmp_path / "index").exists()
