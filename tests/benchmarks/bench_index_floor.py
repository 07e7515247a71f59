"""The index build against its floor: chunks/s of the local all-MiniLM-L6-v2 beside what its
FLOPs allow on this machine (docs/measurements.md#the-index-build).

    python tests/benchmarks/bench_index_floor.py [--sample N] [--rounds R] [--no-build] [--quality]
        [--openvino]

Prints ONE JSON object on stdout (progress on stderr). Over the paper's 1,101 articles chunked
as the index chunks them (1,024/48), it measures in one run:

1. the machine: CPU model, cores, torch's threads, load average before and after;
2. two floors per precision (fp32, int8, bf16), at each chunk's real token count n (capped at
   the model's 256, no padding):
   - the matmul floor: FLOPs per chunk of all-MiniLM-L6-v2 (6 layers, hidden 384, FFN 1,536; the
     linear layers' 24·n·h² and attention's 4·n²·h per layer) at the machine's measured FLOP/s
     (a large fp32 torch.matmul, the int8 dynamic linear layer at the model's FFN shape, a large
     bf16 matmul: AMX where the CPU has it);
   - the operations floor: that, plus the work matmul FLOPs leave out, each kind at the best rate
     this machine measured for it, in fp32 or bf16, at the size of a model's batch: the softmax
     over 12·n² attention scores, the GELU over n·1,536 activations and the layer norms and
     residual adds over n·384, per layer;
3. variants of the encode path over an evenly spaced sample of chunks, in interleaved rounds
   (best round kept: the machine may be shared), each with chunks/s, CPU per chunk, its ratio
   to the floor of its arithmetic, and how far its vectors are from the path before and from
   fp32's (largest absolute difference of any component, smallest cosine): the path before
   issue 29 (int8, batches of 8 over chunks sorted by characters, 256 per encode() call, each
   batch spread over torch's threads), batches side by side (one torch thread each) formed by
   characters or by tokens, the three precisions, batch sizes, chunks handed over sorted by
   tokens, sentence-transformers' defaults; with --openvino (after `pip install openvino`, which
   the project does not need), the same model in Intel's OpenVINO runtime as a cross-check of
   what another runtime gets from this CPU: its fused attention, the batches by tokens, bf16 where
   the CPU has it;
4. the build split (unless --no-build): the whole corpus into embedded Qdrant through
   `open_index`, its wall divided into the splitter, the model, the lexical vectors and Qdrant;
5. with --quality: the gold article's hit@1 and hit@5 for every A_f and A_r question in int8,
   bf16 and fp32, by exact cosine over the whole corpus (what each precision costs in quality).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy  # noqa: E402
import torch  # noqa: E402

from freshrag.core.dataset import load_articles  # noqa: E402
from freshrag.retrieval import lexical  # noqa: E402
from freshrag.retrieval.chunking import chunk_articles  # noqa: E402
from freshrag.retrieval.config import IndexConfig  # noqa: E402
from freshrag.retrieval.embeddings import LocalMiniLM  # noqa: E402
from freshrag.retrieval.index import open_index  # noqa: E402
from tests import WIKIRAG  # noqa: E402

LAYERS, HIDDEN, FFN = 6, 384, 1536
STEP = IndexConfig().batch_size  # chunks the index hands the embedder at once


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def machine() -> dict:
    """CPU model, cores, threads and load: the conditions every figure below was taken in."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo")
                  if line.startswith("flags")), [])
    return {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "isa": [flag for flag in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16",
                                      "amx_int8") if flag in flags],
            "python": platform.python_version(), "load_before": list(os.getloadavg())}


def chunk_flops(tokens: int) -> int:
    """Multiply-adds times two of one chunk of `tokens` tokens through the encoder."""
    linear = 2 * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)  # Q, K, V, output; FFN in, out
    attention = 4 * tokens * tokens * HIDDEN  # Q·Kᵀ and weights·V
    return LAYERS * (linear + attention)


def rate(work, flops: float, repeat: int) -> float:
    """FLOP/s of `work` (after one warm-up call), best of ten timings of `repeat` calls: on a
    shared machine the best is the one least disturbed."""
    work()
    best = float("inf")
    for _ in range(10):
        started = time.perf_counter()
        for _ in range(repeat):
            work()
        best = min(best, time.perf_counter() - started)
    return flops * repeat / best


def machine_flops() -> dict:
    """Measured rates on large tensors: GFLOP/s of an fp32 and a bf16 matmul and of the int8
    dynamic linear layer; Gelem/s of softmax, GELU, layer norm and add in fp32 and bf16."""
    size = 2048
    result = {}
    for name, dtype in (("fp32_matmul_2048", torch.float32), ("bf16_matmul_2048", torch.bfloat16)):
        a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
        result[name] = rate(lambda: torch.matmul(a, b), 2 * size ** 3, 3) / 1e9
    rows = 8 * 256  # a batch of 8 chunks of 256 tokens through the FFN's first layer
    layer = torch.nn.Sequential(torch.nn.Linear(HIDDEN, FFN))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        int8 = torch.ao.quantization.quantize_dynamic(layer, {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.randn(rows, HIDDEN)
    with torch.inference_mode():
        result["fp32_linear_ffn"] = rate(lambda: layer(x), 2 * rows * HIDDEN * FFN, 10) / 1e9
        result["int8_dynamic_linear_ffn"] = rate(lambda: int8(x), 2 * rows * HIDDEN * FFN, 10) / 1e9
        # At the size of a batch of 16 chunks of 192 tokens, each op its own tensors: sizes a
        # model's batch works in (far larger outputs measure the allocator's page faults).
        for label, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            scores = torch.randn(16, 12, 192, 192, dtype=dtype)  # the attention scores
            wide = torch.randn(16 * 192, FFN, dtype=dtype)
            narrow = torch.randn(16 * 192, HIDDEN, dtype=dtype)
            weight, bias = torch.ones(HIDDEN, dtype=dtype), torch.zeros(HIDDEN, dtype=dtype)
            for op, work, elements in (
                    ("softmax", lambda: torch.softmax(scores, -1), scores.numel()),
                    ("gelu", lambda: torch.nn.functional.gelu(wide), wide.numel()),
                    ("layer_norm", lambda: torch.nn.functional.layer_norm(
                        narrow, (HIDDEN,), weight, bias), narrow.numel()),
                    ("add", lambda: narrow + narrow, narrow.numel())):
                result[f"{label}_{op}_gelem"] = rate(work, elements, 5) / 1e9
    return {key: round(value, 2) for key, value in result.items()}


def matmul_rates(floors: dict) -> dict:
    """GFLOP/s of each precision's linear layers and attention matmuls."""
    return {"fp32": (floors["fp32_matmul_2048"], floors["fp32_matmul_2048"]),
            "int8": (floors["int8_dynamic_linear_ffn"], floors["fp32_matmul_2048"]),
            "bf16": (floors["bf16_matmul_2048"], floors["bf16_matmul_2048"])}


def chunk_seconds(tokens: int, precision: str, floors: dict, operations: bool) -> float:
    """The least time one chunk of `tokens` tokens can take in `precision` on this machine: its
    matmuls at the precision's measured matmul rate, and (`operations`) its softmax, GELU, layer
    norms and residual adds each at the best rate measured for it in fp32 or bf16, whichever is
    faster, in every precision (a fused attention kernel computes its softmax faster than
    `torch.softmax` does in fp32, so a floor may not hold fp32 to it)."""
    linear_rate, attention_rate = matmul_rates(floors)[precision]
    linear = 2 * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
    seconds = LAYERS * (linear / linear_rate + 4 * tokens * tokens * HIDDEN / attention_rate) / 1e9
    if operations:
        best = {op: max(floors[f"{dtype}_{op}_gelem"] for dtype in ("fp32", "bf16"))
                for op in ("softmax", "gelu", "layer_norm", "add")}
        seconds += LAYERS * (12 * tokens * tokens / best["softmax"] + tokens * FFN / best["gelu"]
                             + 2 * tokens * HIDDEN / best["layer_norm"]
                             + 2 * tokens * HIDDEN / best["add"]) / 1e9
    return seconds


def floor_per_s(tokens: list[int], floors: dict) -> dict:
    """Chunks/s at each floor: `{precision: {"matmul": …, "operations": …}}`."""
    return {precision: {kind: round(len(tokens) / sum(chunk_seconds(n, precision, floors,
                                                                      kind == "operations")
                                                         for n in tokens), 1)
                        for kind in ("matmul", "operations")}
            for precision in ("fp32", "int8", "bf16")}


def corpus_tokens(model, texts: list[str]) -> list[int]:
    """Each chunk's token count as the model sees it ([CLS] and [SEP] in, cut at 256)."""
    tokenizer, cap = model.tokenizer, model.max_seq_length
    return [min(len(ids), cap) for ids in tokenizer(texts, add_special_tokens=True)["input_ids"]]


def padded_flops(texts: list[str], tokens: list[int], batch_size: int, by_tokens: bool) -> float:
    """FLOPs the index's batches compute, every chunk padded to its batch's longest: chunks
    sorted by characters, 256 handed to the model at a time, which sorts them longest first by
    tokens (now) or by characters (as `encode()` does), `batch_size` a batch."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    total = 0
    for start in range(0, len(order), STEP):
        step = sorted(order[start:start + STEP],
                      key=(lambda i: -tokens[i]) if by_tokens else (lambda i: -len(texts[i])))
        for first in range(0, len(step), batch_size):
            batch = step[first:first + batch_size]
            total += len(batch) * chunk_flops(max(tokens[i] for i in batch))
    return total


def timed(encode, texts: list[str]) -> tuple[float, float, numpy.ndarray]:
    """Wall seconds, CPU seconds and vectors of one encode of `texts`."""
    started, cpu = time.perf_counter(), time.process_time()
    vectors = encode(texts)
    return (time.perf_counter() - started, time.process_time() - cpu,
            numpy.asarray(vectors, dtype=numpy.float32))


def index_path(embed, key=len):
    """The index's encode path: chunks sorted by `key`, handed over 256 at a time."""
    def encode(texts: list[str]) -> numpy.ndarray:
        order = sorted(range(len(texts)), key=lambda i: key(texts[i]))
        out = numpy.zeros((len(texts), 384), dtype=numpy.float32)
        for start in range(0, len(order), STEP):
            ids = order[start:start + STEP]
            out[ids] = embed([texts[i] for i in ids])
        return out
    return encode


def before(embedder: LocalMiniLM):
    """The embedder as it was: one encode() call, each batch spread over torch's threads."""
    def embed(texts: list[str]) -> numpy.ndarray:
        if embedder._model is None:
            embedder.embed(texts[:1])  # loads the model
        return embedder._model.encode(texts, batch_size=embedder.batch_size,
                                      normalize_embeddings=True, show_progress_bar=False,
                                      convert_to_numpy=True)
    return embed


def compare(vectors: numpy.ndarray, reference: numpy.ndarray) -> dict:
    cosine = (vectors * reference).sum(1) / (numpy.linalg.norm(vectors, axis=1)
                                            * numpy.linalg.norm(reference, axis=1))
    return {"max_abs_diff": float(f"{numpy.abs(vectors - reference).max():.3g}"),
            "min_cosine": float(f"{cosine.min():.6f}")}


class ByCharacters(LocalMiniLM):
    """The local model with the batches `encode()` forms: texts sorted by characters."""

    def batches(self, texts: list[str], lengths: list[int] | None = None) -> list:
        order = numpy.argsort([-len(text) for text in texts])
        return [order[start:start + self.batch_size]
                for start in range(0, len(texts), self.batch_size)]


class OpenVINOMiniLM(LocalMiniLM):
    """The same model converted to OpenVINO, on 2 streams of one thread (as the batches run side
    by side here), in bf16 where the CPU has it: a cross-check, not a path of the index."""

    def __init__(self, precision: str):
        super().__init__(batch_size=16, precision=precision)
        import openvino

        torch_model = LocalMiniLM(precision="fp32")._load()
        example = dict(torch_model.tokenizer(["an example", "another example"], padding=True,
                                             return_tensors="pt"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracing warnings from transformers
            converted = openvino.convert_model(torch_model[0].auto_model, example_input=example)
        self.compiled = openvino.Core().compile_model(converted, "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
            "PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2, "INFERENCE_NUM_THREADS": 2})
        self.inputs = [port.get_any_name() for port in self.compiled.inputs]
        self._model = torch_model  # its tokenizer forms the batches, as the index's do
        self.openvino = openvino

    def embed(self, texts: list[str]) -> list[list[float]]:
        batches = self.batches(texts)
        vectors = numpy.empty((len(texts), 384), dtype=numpy.float32)
        features = [self._model.tokenizer([texts[i] for i in batch], padding=True,
                                          truncation=True, max_length=256, return_tensors="np")
                    for batch in batches]

        def pooled(request, i):
            mask = features[i]["attention_mask"][..., None].astype(numpy.float32)
            summed = (request.get_output_tensor(0).data * mask).sum(1) / mask.sum(1)
            vectors[batches[i]] = summed / numpy.linalg.norm(summed, axis=1, keepdims=True)

        queue = self.openvino.AsyncInferQueue(self.compiled, 2)
        queue.set_callback(pooled)
        for i, found in enumerate(features):
            queue.start_async({name: found[name] for name in self.inputs}, i)
        queue.wait_all()
        return vectors


def plans(by_text: dict, openvino: bool = False) -> list[tuple[str, str, object]]:
    """(variant, its precision, its encode over a list of texts)."""
    cross_check = []
    if openvino:
        precision = LocalMiniLM().precision.replace("int8", "fp32")  # no int8 without calibration
        cross_check = [(f"OpenVINO, {precision}, batch 16 by tokens, 2 streams", precision,
                        index_path(OpenVINOMiniLM(precision).embed))]
    return [
        ("before: int8, batch 8, encode() on 2 torch threads", "int8",
         index_path(before(LocalMiniLM(precision="int8")))),
        ("int8, batch 8 by characters, side by side on 1 torch thread each", "int8",
         index_path(ByCharacters(precision="int8").embed)),
        ("now, int8: batch 8 by tokens, side by side", "int8",
         index_path(LocalMiniLM(precision="int8").embed)),
        ("bf16, batch 8 by characters, side by side", "bf16",
         index_path(ByCharacters(precision="bf16", batch_size=8).embed)),
        ("bf16, batch 8 by tokens, side by side", "bf16",
         index_path(LocalMiniLM(precision="bf16", batch_size=8).embed)),
        ("now, bf16: batch 16 by tokens, side by side", "bf16",
         index_path(LocalMiniLM(precision="bf16").embed)),
        ("bf16, batch 32 by tokens", "bf16",
         index_path(LocalMiniLM(precision="bf16", batch_size=32).embed)),
        ("fp32, batch 8 by tokens, side by side", "fp32",
         index_path(LocalMiniLM(precision="fp32").embed)),
        ("sentence-transformers' defaults: fp32, batch 32, encode() on 2 threads", "fp32",
         index_path(before(LocalMiniLM(batch_size=32, precision="fp32")))),
        ("now, bf16, chunks handed over sorted by tokens, not characters", "bf16",
         index_path(LocalMiniLM(precision="bf16").embed, by_text.get)),
        *cross_check,
    ]


def variants(texts: list[str], tokens: list[int], floors: dict, rounds: int,
             openvino: bool = False) -> list[dict]:
    """Chunks/s of each way to encode the sample (the best of `rounds` interleaved rounds, so
    that another process's burst hurts one round of a variant, not the variant), with its ratio
    to its precision's two floors and to fp32's matmul floor, and its vectors beside the path
    before and fp32's."""
    chosen = plans(dict(zip(texts, tokens)), openvino)
    for _, _, encode in chosen:
        encode(texts[:STEP // 8])  # loads each variant's model outside the timing
    timings: dict[str, list] = {name: [] for name, _, _ in chosen}
    vectors: dict[str, numpy.ndarray] = {}
    for round_ in range(rounds):
        for name, _, encode in chosen:
            wall, cpu, found = timed(encode, texts)
            timings[name].append((wall, cpu))
            vectors[name] = found
            log(f"round {round_ + 1} {name}: {len(texts) / wall:.1f} chunks/s, "
                f"load {os.getloadavg()[0]:.1f}")
    first, fp32 = chosen[0][0], next(name for name, kind, _ in chosen if kind == "fp32")
    rows = []
    for name, precision, _ in chosen:
        wall = min(t[0] for t in timings[name])
        rows.append({
            "variant": name, "precision": precision,
            "chunks_per_s": round(len(texts) / wall, 1),
            "chunks_per_s_each_round": [round(len(texts) / t[0], 1) for t in timings[name]],
            "cpu_ms_per_chunk": round(1000 * min(t[1] for t in timings[name]) / len(texts), 1),
            "vs_before": compare(vectors[name], vectors[first]),
            "vs_fp32": compare(vectors[name], vectors[fp32])})
    rescore(rows, tokens, floors)
    return rows


def rescore(rows: list[dict], tokens: list[int], floors: dict) -> None:
    """Each variant's ratios to its precision's floors (as measured so far) and to fp32's."""
    per_s = floor_per_s(tokens, floors)
    for row in rows:
        own = per_s[row["precision"]]
        row["ratio_to_matmul_floor"] = round(row["chunks_per_s"] / own["matmul"], 3)
        row["ratio_to_operations_floor"] = round(row["chunks_per_s"] / own["operations"], 3)
        row["ratio_to_fp32_matmul_floor"] = round(row["chunks_per_s"] / per_s["fp32"]["matmul"], 3)


def quality(chunks: list, sets: dict[str, list[dict]]) -> dict:
    """Gold article hit@1 and hit@5 of each arithmetic over the whole corpus: chunks embedded as
    the index embeds them, each question alone as a retrieval embeds it, exact cosine top 5."""
    texts, titles = [chunk.text for chunk in chunks], [chunk.title for chunk in chunks]
    result = {}
    for name in ("int8", "bf16", "fp32"):
        embedder = LocalMiniLM(precision=name)
        log(f"quality: the whole corpus in {name}")
        vectors = index_path(embedder.embed)(texts)
        result[name] = {}
        for set_name, asked in sets.items():
            queries = numpy.asarray([embedder.embed([q["question"]])[0] for q in asked])
            top = numpy.argsort(-(queries @ vectors.T), axis=1)[:, :5]
            found = [[titles[i] for i in row] for row in top]
            result[name][set_name] = {
                "questions": len(asked),
                "hit@1": round(sum(q["title"] == f[0] for q, f in zip(asked, found)) / len(asked), 4),
                "hit@5": round(sum(q["title"] in f for q, f in zip(asked, found)) / len(asked), 4)}
    return result


class TimedEmbedder:
    """The index's embedder, with the seconds spent inside it counted."""

    def __init__(self, inner: LocalMiniLM):
        self.inner, self.name, self.where = inner, inner.name, inner.where
        self.seconds = 0.0

    def embed(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


def build_split(articles: dict, chunk_texts: list[str], tmp: Path) -> dict:
    """The whole build through open_index, its wall divided among splitter, model, lexical, Qdrant."""
    embedder = TimedEmbedder(LocalMiniLM())  # the default precision, as `freshrag index` runs it
    embedder.inner.embed(["warm"])  # the model load is not the build's steady cost
    started = time.perf_counter()
    chunk_articles(articles.values(), 1024, 48)
    splitter = time.perf_counter() - started
    started = time.perf_counter()
    _, average = lexical.measure(chunk_texts)
    for text in chunk_texts:
        lexical.document_vector(text, average)
    lexical_s = time.perf_counter() - started
    started = time.perf_counter()
    open_index(articles, IndexConfig(directory=tmp / "index"), embedder, progress=False).close()
    wall = time.perf_counter() - started
    # open_index splits once more and builds the lexical vectors inside; both timed alone above
    qdrant = wall - splitter - embedder.seconds - lexical_s
    return {"chunks": len(chunk_texts), "wall_s": round(wall, 1),
            "chunks_per_s": round(len(chunk_texts) / wall, 1), "precision": embedder.inner.precision,
            "splitter_s": round(splitter, 1), "model_s": round(embedder.seconds, 1),
            "lexical_vectors_s": round(lexical_s, 1), "qdrant_and_rest_s": round(qdrant, 1),
            "model_chunks_per_s": round(len(chunk_texts) / embedder.seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=768,
                        help="chunks each variant encodes (evenly spaced over the corpus)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the variants")
    parser.add_argument("--quality", action="store_true",
                        help="also the gold article's hit@1/@5 in int8, bf16 and fp32 (A_f, A_r)")
    parser.add_argument("--no-build", action="store_true", help="skip the whole build's split")
    parser.add_argument("--openvino", action="store_true",
                        help="also the model in OpenVINO, a cross-check (pip install openvino)")
    args = parser.parse_args()
    if args.openvino:
        try:
            import openvino  # noqa: F401
        except ImportError:
            parser.error("--openvino needs OpenVINO: pip install openvino")
    report = {"command": " ".join(["python tests/benchmarks/bench_index_floor.py", *sys.argv[1:]]),
              "machine": machine()}
    articles = load_articles(WIKIRAG / "articles.jsonl")
    texts = [chunk.text for chunk in chunk_articles(articles.values(), 1024, 48)]
    model = LocalMiniLM(precision="fp32")._load()
    tokens = corpus_tokens(model, texts)
    log("measuring the machine's FLOP/s")
    floors = machine_flops()
    per_chunk = sum(chunk_flops(n) for n in tokens) / len(tokens)
    report["corpus"] = {"articles": len(articles), "chunks": len(texts),
                        "tokens_mean": round(sum(tokens) / len(tokens), 1),
                        "tokens_median": sorted(tokens)[len(tokens) // 2],
                        "chunks_cut_at_256": sum(n == model.max_seq_length for n in tokens),
                        "gflop_per_chunk": round(per_chunk / 1e9, 3),
                        "padding_overhead": {
                            f"batch {size} by {kind}": round(
                                padded_flops(texts, tokens, size, kind == "tokens")
                                / (per_chunk * len(tokens)) - 1, 4)
                            for size in (8, 16) for kind in ("characters", "tokens")},
                        "attention_share": round(sum(LAYERS * 4 * n * n * HIDDEN for n in tokens)
                                                 / sum(chunk_flops(n) for n in tokens), 3)}
    report["floor"] = {"rates": floors, "chunks_per_s": floor_per_s(tokens, floors)}
    step = max(1, len(texts) // args.sample)
    sample, sample_tokens = texts[::step][:args.sample], tokens[::step][:args.sample]
    report["sample"] = {"chunks": len(sample), "every": step}
    report["variants"] = variants(sample, sample_tokens, floors, args.rounds, args.openvino)
    log("the machine's rates again: the floor is the better of the two measurements")
    again = machine_flops()
    report["floor"]["rates_start_end"] = {name: [floors[name], again[name]] for name in floors}
    floors = {name: max(floors[name], again[name]) for name in floors}
    report["floor"]["rates"] = floors
    report["floor"]["chunks_per_s"] = floor_per_s(tokens, floors)
    report["floor"]["sample_chunks_per_s"] = floor_per_s(sample_tokens, floors)
    rescore(report["variants"], sample_tokens, floors)
    if not args.no_build:
        log("the whole build, split")
        with tempfile.TemporaryDirectory() as tmp:
            build = report["build"] = build_split(articles, texts, Path(tmp))
        own = report["floor"]["chunks_per_s"][build["precision"]]
        build["model_ratio_to_matmul_floor"] = round(build["model_chunks_per_s"] / own["matmul"], 3)
        build["model_ratio_to_operations_floor"] = round(build["model_chunks_per_s"]
                                                         / own["operations"], 3)
    if args.quality:
        sets = {name: [json.loads(line) for line in (WIKIRAG / file).open(encoding="utf-8")
                       if line.strip()]
                for name, file in (("A_f", "questions-A_f.jsonl"), ("A_r", "questions-A_r300.jsonl"))}
        report["quality"] = quality(chunk_articles(articles.values(), 1024, 48), sets)
    report["machine"]["load_after"] = list(os.getloadavg())
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
