"""Served models measured with Triton's own perf_analyzer, in one real tritonserver (issue 27).

One repository (``.cache/demo/bench-perf-repo``) holds every model the questions need, built from the trained
example of ``triton-textops example readability`` (cached under ``.cache/demo/`` like ``make demo``); the server
runs in explicit model-control mode and loads only the models of the question asked. perf_analyzer
(:mod:`triton_textops.tools.perf`: set up in the cache on first use) drives each model over gRPC on 127.0.0.1
with real inputs: ``--input-data`` JSON made from the bundled Austen corpus (the paragraphs in a fixed random
order; one paragraph per request row), never random bytes.

Questions (``python benchmarks/perf.py QUESTION``):

``models``  (a) our ``preprocess`` and ``tokenize`` models against the usual alternative, a Python model on HF
            ``tokenizers`` (``benchmarks/models/hf_preprocess``: ``hf_preprocess`` with the same outputs as
            ``preprocess``, ``hf_tokenize`` with only ids + mask, like ``tokenize``), at concurrency 1, 8, 64;
            ``preprocess`` also with system shared memory for the BYTES input and the outputs; and both
            preprocess models at fixed request rates (perf_analyzer's request-rate mode).
``modes``   (b) the seed's deployment modes on CPU: (B) the whole ``ensemble_all`` (text → score) against (A) the
            served part of client-side pre/post-processing: ``served_models``, an ensemble of only ``bert-large``
            and ``cuml`` (both run in parallel, as (A)'s client sends both requests at once), fed the ids, mask
            and features the client computed. The client's own pre/post-processing time per request (our ops +
            the blend, in this process) is measured in the same run and added to (A)'s latency.
``tune``    (c) ``preprocess`` under a sweep of ``max_queue_delay_microseconds`` and instance count (one model per
            setting), at concurrency 1, 8, 64.
``llm``     (d) our ``llm_preprocess`` against TensorRT-LLM's own ``preprocessing`` model.py (prompts of ~2 KB and
            of ~32 KB, a long-context prompt: Austen paragraphs joined) and ``llm_postprocess`` against its
            ``postprocessing`` (256-token sequences),
            at concurrency 1 and 64, on a Llama-3-style tokenizer.json (cl100k ranks, ``tests/llm_dirs.py``). The
            reference model.py files are the copies vendored under ``tests/models/trtllm_ref`` (``--trtllm-ref``),
            copied into the temporary repository; they run with the ``transformers`` their requirements pin
            (4.47.0 with tokenizers 0.21.4, as ``tests/llm_reference.py``) from a cached venv of their own
            (numpy<2 for the 24.10 stub) that only they name (``EXECUTION_ENV_PATH``).
            The configs are the same (tensors, max_batch_size, dynamic batching, 1 CPU instance) except that the
            reference's declares the three multimodal outputs its model.py looks up at load (ours refuses them).
            A third model of each kind, the Python-backend floor (reads QUERY / TOKENS_BATCH, answers fixed
            outputs, no tokenizing / decoding), bounds what any pre- / postprocessing model.py can reach on this
            server; each of ours is also given as a ratio to its floor (throughput, and p99 latency) in the same
            run, against issue 46's goals (>= 0.9x the floor's throughput, p99 <= 1.2x the floor's).

Each question runs ``--runs`` times (default 3) in one server; within a run the models take turns at every load
level, so a noisy neighbour hits all of them alike; ratios are taken within a run and the tables give the median
and the range over runs. Everything lands in ``--out`` (default ``.cache/perf/<question>-<time>/``): perf_analyzer's
own CSVs, ``<question>.csv`` (all rows), ``<question>.md`` (the tables) and ``<question>.png`` (throughput and
p50/p99 latency against concurrency, drawn from that CSV alone, its digest in the PNG's ``Source`` chunk).
``--results`` also copies the CSV and PNG to ``benchmarks/perf-<question>.*`` and puts the tables on top of
``benchmarks/RESULTS.md`` (newest first). ``--replot`` measures nothing: it redraws the committed
``benchmarks/perf-<question>.png`` from the committed CSV (tests/docs/test_plots.py checks that they agree).

    python benchmarks/perf.py models|modes|tune|llm|all [--runs 3] [--quick] [--results]
    python benchmarks/perf.py models|modes|tune|llm|all --replot [--machine "<the run's machine line>"]
"""

from __future__ import annotations

import argparse
import csv
import math
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _common import austen, machine  # noqa: E402

HF_PACKAGES = ("tokenizers==0.22.2",)
WEIGHT = 0.5
N_TEXTS = 512  # corpus paragraphs in each --input-data file
QUESTIONS = ("models", "modes", "tune", "llm")
CSV_FIELDS = ("question", "run", "case", "model", "shm", "mode", "load", "throughput", "p50_ms", "p90_ms",
              "p95_ms", "p99_ms", "server_queue_us", "server_compute_us", "stability_pct", "error")
TITLES = {"models": "(a) our preprocess / tokenize models vs an HF-tokenizers Python model",
         "modes": "(b) deployment modes on CPU: ensemble_all vs client-side pre/post + served models",
         "tune": "(c) preprocess: max_queue_delay_microseconds x instance count",
         "llm": "(d) llm_preprocess / llm_postprocess vs TensorRT-LLM's preprocessing / postprocessing "
                "model.py"}
TUNE_INSTANCES = (1, 2)
TUNE_DELAYS_US = (0, 100, 1000, 10000)
# (d) llm: TensorRT-LLM's model.py files (vendored with their licence), the load
TRTLLM_REF = ROOT / "tests" / "models" / "trtllm_ref"
PROMPT_BYTES = 2048  # prompts of ~2 KB
LONG_PROMPT_BYTES = 32768  # and long-context prompts of ~32 KB
PROMPT_SIZES = {"llm_pre": PROMPT_BYTES, "llm_pre_32k": LONG_PROMPT_BYTES}  # --input-data key: prompt bytes
FLOOR_GOAL, FLOOR_P99_GOAL = 0.9, 1.2  # issue 46: ours >= 0.9x the floor's infer/s, p99 <= 1.2x the floor's
OUTPUT_TOKENS = 256
LLM_MODELS = ("llm_preprocess", "trtllm_preprocessing", "floor_preprocessing", "llm_postprocess",
              "trtllm_postprocessing", "floor_postprocessing")
# (d)'s floor: what any Python-backend model pays per request on postprocessing's config, with no decoding (reads
# TOKENS_BATCH, answers a fixed ~1 KB text per sequence): an upper bound on any postprocessing model.py's rate
FLOOR_POSTPROCESSING = """import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.text = b"x" * 1024

    def execute(self, requests):
        out = []
        for r in requests:
            shape = pb_utils.get_input_tensor_by_name(r, "TOKENS_BATCH").as_numpy().shape[:-1]
            text = np.full(shape, self.text, dtype=object)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", text)]))
        return out
"""


# the same for preprocessing's config: reads QUERY, answers every output the config declares with fixed arrays (2 ids
# per 9 bytes of the prompt, slices of one array made at load: the ~2 KB prompts give 421-489 ids, mean 454, on the
# Llama-3-style tokenizer, ~4.5 bytes an id), no tokenizing: an upper bound on any preprocessing model.py's rate
FLOOR_PREPROCESSING = """import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.outputs = []
        for o in cfg["output"]:
            dims = [d if d > 0 else 1 for d in o["dims"]]
            self.outputs.append((o["name"], np.zeros([1] + dims, pb_utils.triton_string_to_numpy(o["data_type"]))))
        self.ids = np.zeros((1, 1 << 16), np.int32)

    def execute(self, requests):
        out = []
        for r in requests:
            query = pb_utils.get_input_tensor_by_name(r, "QUERY").as_numpy()
            ids = self.ids[:, :max(1, len(query.reshape(-1)[0]) * 2 // 9)]
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor(n, ids if n == "INPUT_ID" else a)
                                                   for n, a in self.outputs]))
        return out
"""


# ------------------------------------------------------------------------------------------------ repository


def _pb() -> Any:
    from triton_textops.triton.config import model_config_pb2

    return model_config_pb2()


def _variant(repo: Path, src: str, name: str, edit: Callable[[Any], None], files: dict[str, Path] | None = None,
             model_py: Path | None = None) -> None:
    """``repo/name``: ``src``'s directory and config, renamed and edited (``files`` copied next to ``1/``)."""
    from triton_textops.triton.config import load_config, write_config

    dst = repo / name
    shutil.copytree(repo / src, dst)
    cfg = load_config(dst / "config.pbtxt")
    cfg.name = name
    edit(cfg)
    write_config(cfg, dst / "config.pbtxt")
    for rel, path in (files or {}).items():
        shutil.copyfile(path, dst / rel)
    if model_py is not None:
        shutil.copyfile(model_py, dst / "1" / "model.py")


def build_repository(directory: Path, artifacts: Path, *, max_batch_size: int) -> Path:
    """Every model of every question in one repository (loaded per question, explicit model control)."""
    from triton_textops.bundled import vocab_path
    from triton_textops.tools.example import readability as rd

    if directory.exists():
        shutil.rmtree(directory)
    # ensemble_all, preprocess, bert-large, cuml, postprocess: python backends, KIND_CPU, 1 instance, dynamic batching
    repo = rd.build_repository(directory, artifacts, device="cpu", backends="python", max_batch_size=max_batch_size)
    pb2 = _pb()
    hf_py = HERE / "models" / "hf_preprocess" / "model.py"
    hf_files = {"vocab.txt": vocab_path(), "features.json": artifacts / "features.json"}

    def hf(tokenize_only: bool) -> Callable[[Any], None]:
        def edit(cfg: Any) -> None:
            cfg.ClearField("parameters")
            cfg.parameters["max_length"].string_value = str(rd.MAX_LENGTH)
            if tokenize_only:
                cfg.parameters["tokenize_only"].string_value = "true"
                del cfg.output[2]  # TREE_FEATS
        return edit

    _variant(repo, "preprocess", "hf_preprocess", hf(False), hf_files, hf_py)
    _variant(repo, "preprocess", "hf_tokenize", hf(True), hf_files, hf_py)

    def tokenize(cfg: Any) -> None:  # our tokenize model: TEXT -> INPUT_IDS, ATTENTION_MASK
        keep = {k: cfg.parameters[k].string_value for k in ("FORCE_CPU_ONLY_INPUT_TENSORS", "max_length")}
        cfg.ClearField("parameters")
        for k, v in keep.items():
            cfg.parameters[k].string_value = v
        cfg.input[0].name = "TEXT"
        cfg.output[0].name, cfg.output[1].name = "INPUT_IDS", "ATTENTION_MASK"
        del cfg.output[2]

    _variant(repo, "preprocess", "tokenize", tokenize)
    (repo / "tokenize" / "1" / "model.py").write_text(
        "from triton_textops.models.tokenize import TritonPythonModel  # noqa: F401\n")
    (repo / "tokenize" / "features.json").unlink()

    for n in TUNE_INSTANCES:
        for us in TUNE_DELAYS_US:
            def tune(cfg: Any, n: int = n, us: int = us) -> None:
                cfg.instance_group[0].count = n
                cfg.dynamic_batching.max_queue_delay_microseconds = us
            _variant(repo, "preprocess", tune_name(n, us), tune)

    # (A)'s served part: bert-large and cuml side by side in one request
    cfg = pb2.ModelConfig(name="served_models", platform="ensemble", max_batch_size=max_batch_size)
    for name, dtype, dims in (("bert_ids", "TYPE_INT64", [rd.MAX_LENGTH]), ("bert_am", "TYPE_INT64", [rd.MAX_LENGTH]),
                              ("tree_feats", "TYPE_FP32", [_width(artifacts)])):
        cfg.input.add(name=name, data_type=pb2.DataType.Value(dtype), dims=dims)
    for name in ("bert_score", "cuml_score"):
        cfg.output.add(name=name, data_type=pb2.DataType.Value("TYPE_FP32"), dims=[1])
    cfg.ensemble_scheduling.step.add(model_name="bert-large", model_version=-1,
                                     input_map={"INPUT__0": "bert_ids", "INPUT__1": "bert_am"},
                                     output_map={"OUTPUT__0": "bert_score"})
    cfg.ensemble_scheduling.step.add(model_name="cuml", model_version=-1, input_map={"input__0": "tree_feats"},
                                     output_map={"output__0": "cuml_score"})
    from triton_textops.triton.config import write_config

    (repo / "served_models" / "1").mkdir(parents=True)
    write_config(cfg, repo / "served_models" / "config.pbtxt")
    return repo


def tune_name(instances: int, delay_us: int) -> str:
    return f"preprocess_i{instances}_d{delay_us}"


def _width(artifacts: Path) -> int:
    from triton_textops.ops.features import ReadabilityFeatures

    return ReadabilityFeatures.load(artifacts / "features.json").n_features


def build_llm_repository(directory: Path, tokenizer: Path, reference: Path, ref_env: Path, *,
                         max_batch_size: int) -> Path:
    """(d)'s repository: our two LLM models and TensorRT-LLM's, on the same configs and tokenizer directory."""
    from triton_textops.tools.example import llm
    from triton_textops.triton.config import write_config

    if directory.exists():
        shutil.rmtree(directory)
    pb2 = _pb()
    models = {
        "llm_preprocess": (llm.preprocessing_config, "llm_preprocess", None),
        "trtllm_preprocessing": (llm.preprocessing_config, None, reference / "preprocessing" / "1" / "model.py"),
        "floor_preprocessing": (llm.preprocessing_config, None, None),
        "llm_postprocess": (llm.postprocessing_config, "llm_postprocess", None),
        "trtllm_postprocessing": (llm.postprocessing_config, None, reference / "postprocessing" / "1" / "model.py"),
        "floor_postprocessing": (llm.postprocessing_config, None, None),
    }
    for name, (make, ours, ref_py) in models.items():
        params = {"add_special_tokens": "true"} if make is llm.preprocessing_config else {"skip_special_tokens": "true"}
        if ref_py is not None:
            if not ref_py.is_file():
                raise SystemExit(f"{ref_py}: TensorRT-LLM's model.py not found (--trtllm-ref)")
            params["EXECUTION_ENV_PATH"] = str(ref_env)  # a directory: used in place, seen by this model only
            if make is llm.preprocessing_config:
                params["multimodal_model_path"] = ""  # as their config leaves it: text only
        cfg = make(name, str(tokenizer), max_batch_size=max_batch_size, params=params)
        if ref_py is not None and make is llm.preprocessing_config:  # looked up by their initialize
            for out, dtype, dims in (("OUT_PROMPT_TABLE_EXTRA_IDS", "TYPE_UINT64", [-1]),
                                     ("PIXEL_VALUES", "TYPE_FP16", [-1, -1, -1, -1]), ("IMAGE_SIZES", "TYPE_INT64", [2])):
                cfg.output.add(name=out, data_type=pb2.DataType.Value(dtype), dims=dims)
        (directory / name / "1").mkdir(parents=True)
        write_config(cfg, directory / name / "config.pbtxt")
        if ours:
            (directory / name / "1" / "model.py").write_text(
                f"from triton_textops.models.{ours} import TritonPythonModel  # noqa: F401\n")
        elif ref_py is None:
            (directory / name / "1" / "model.py").write_text(
                FLOOR_PREPROCESSING if make is llm.preprocessing_config else FLOOR_POSTPROCESSING)
        else:
            shutil.copyfile(ref_py, directory / name / "1" / "model.py")
    return directory


def llm_texts(texts: list[str], n: int, size: int = PROMPT_BYTES) -> list[str]:
    """``n`` prompts of ~``size`` bytes: consecutive paragraphs joined by blank lines, cut at a space."""
    out, at = [], 0
    while len(out) < n:
        parts, got = [], 0
        while got < size:
            parts.append(texts[at % len(texts)])
            got += len(parts[-1].encode()) + 2
            at += 1
        blob = "\n\n".join(parts).encode()[:size]
        out.append(blob[:blob.rfind(b" ")].decode())
    return out


def make_llm_inputs(out: Path, texts: list[str], tokenizer: Path) -> dict[str, Path]:
    """``--input-data`` of (d): a prompt (~2 KB; ~32 KB) and REQUEST_OUTPUT_LEN per request; 256 tokens of a text
    per sequence."""
    from triton_textops.ops.llm import LLMTokenizer
    from triton_textops.tools.perf import write_input_data

    prompts = llm_texts(texts, 64)
    ids = LLMTokenizer(str(tokenizer)).bpe.encode(prompts, add_special_tokens=False).tolist()
    files = {key: write_input_data(out / f"input-{key}.json", [
        {"QUERY": [p], "REQUEST_OUTPUT_LEN": np.int32([OUTPUT_TOKENS])} for p in llm_texts(texts, 64, size)])
        for key, size in PROMPT_SIZES.items()}
    return {
        **files,
        "llm_post": write_input_data(out / "input-llm_post.json", [
            {"TOKENS_BATCH": np.int32([i[:OUTPUT_TOKENS]]), "SEQUENCE_LENGTH": np.int32([OUTPUT_TOKENS])}
            for i in ids]),
    }


def check_llm_equal(server: Any, files: dict[str, Path], ref_env: Path) -> str:
    """Before timing: both reference models run in their own env, and on 16 requests of each input file ours
    answer exactly what TensorRT-LLM's model.py answers (every output both give). SystemExit otherwise."""
    import json

    import tritonclient.grpc as grpcclient
    from tritonclient.utils import np_to_triton_dtype

    if server.log.count(f'Using Python execution env {ref_env}"') != 2:
        raise SystemExit(f"the reference models did not load from {ref_env}:\n{server.log[-3000:]}")
    client = grpcclient.InferenceServerClient(server.grpc_url)
    n = 0
    try:
        for key, ours, ref in (("llm_pre", "llm_preprocess", "trtllm_preprocessing"),
                               ("llm_pre_32k", "llm_preprocess", "trtllm_preprocessing"),
                               ("llm_post", "llm_postprocess", "trtllm_postprocessing")):
            for entry in json.loads(files[key].read_text(encoding="utf-8"))["data"][:16]:
                inputs = []
                for name, v in entry.items():
                    is_text = isinstance(v["content"][0], str)
                    arr = np.array([v["content"]], dtype=np.object_ if is_text else np.int32)
                    arr = (np.char.encode(arr.astype(str), "utf-8").astype(np.object_) if is_text else arr).reshape(
                        [1, *v["shape"]])
                    i = grpcclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
                    i.set_data_from_numpy(arr)
                    inputs.append(i)
                got = {}
                for model in (ours, ref):
                    res = client.infer(model, inputs)
                    got[model] = {o.name: res.as_numpy(o.name) for o in res.get_response().outputs}
                for name in set(got[ours]) & set(got[ref]):
                    a, b = got[ours][name], got[ref][name]
                    if a.shape != b.shape or a.tolist() != b.tolist():
                        raise SystemExit(f"{ours} and {ref} differ on {name}: {a!r} vs {b!r}")
                n += 1
    finally:
        client.close()
    return f"checked: on {n} requests our models' outputs equal TensorRT-LLM's model.py's (run in {ref_env})"


# ------------------------------------------------------------------------------------------------ inputs


@dataclass
class Inputs:
    """``--input-data`` files, one per input layout, made from the same corpus paragraphs."""

    files: dict[str, Path]
    client_ms: list[float] = field(default_factory=list)  # (A): client-side pre/post per one-text request


def make_inputs(out: Path, texts: list[str], artifacts: Path, *, client_side: bool) -> Inputs:
    from triton_textops.tools.perf import write_input_data

    files = {
        "INPUT0": write_input_data(out / "input-INPUT0.json", [{"INPUT0": [t]} for t in texts]),
        "TEXT": write_input_data(out / "input-TEXT.json", [{"TEXT": [t]} for t in texts]),
        "ensemble_all": write_input_data(out / "input-ensemble_all.json",
                                         [{"excerpt": [t], "BERT_WEIGHT": np.float32([WEIGHT])} for t in texts]),
    }
    inputs = Inputs(files)
    if client_side:
        ops = client_ops(artifacts)
        ids, mask, feats = ops(texts)
        files["served_models"] = write_input_data(out / "input-served_models.json", [
            {"bert_ids": ids[i], "bert_am": mask[i], "tree_feats": feats[i]} for i in range(len(texts))])
        inputs.client_ms = time_client_side(ops, texts)
    return inputs


def client_ops(artifacts: Path) -> Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """What (A)'s client computes before its requests: the ``preprocess`` model's outputs, by our ops."""
    from triton_textops.bundled import vocab_path
    from triton_textops.ops.features import ReadabilityFeatures
    from triton_textops.ops.preprocess import preprocess
    from triton_textops.ops.wordpiece.tokenizer import BertTokenizer
    from triton_textops.tools.example import readability as rd

    feats = ReadabilityFeatures.load(artifacts / "features.json")
    tok = BertTokenizer.from_vocab(vocab_path(), lowercase=feats.lowercase)

    def run(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        enc, f = preprocess(tok, feats, list(texts), max_length=rd.MAX_LENGTH)
        return np.asarray(enc.input_ids), np.asarray(enc.attention_mask), np.asarray(f, dtype=np.float32)

    return run


def time_client_side(ops: Callable[[Sequence[str]], Any], texts: list[str]) -> list[float]:
    """(A)'s client work per one-text request (preprocess ops, then the blend of the two scores), in ms."""
    from triton_textops.ops.blend import blend_scores

    score = np.zeros((1, 1), np.float32)
    for t in texts[:20]:  # warm-up (first calls compile/load)
        ops([t])
    out = []
    for t in texts:
        t0 = time.perf_counter()
        ops([t])
        blend_scores(score, score, np.float32(WEIGHT))
        out.append((time.perf_counter() - t0) * 1e3)
    return out


# ------------------------------------------------------------------------------------------------ measuring


@dataclass(frozen=True)
class Case:
    """One line of a table: a model, its input file and how the tensors travel."""

    label: str
    model: str
    data: str  # key of Inputs.files
    shm: str = "none"


@dataclass
class Point:
    question: str
    run: int
    case: Case
    mode: str
    load: float
    row: Any = None  # PerfRow
    error: str = ""
    stability: float = float("nan")  # the --stability-percentage the accepted measurement met

    @property
    def ok(self) -> bool:
        return self.row is not None


def cases_for(question: str) -> list[Case]:
    if question == "models":
        return [Case("preprocess", "preprocess", "INPUT0"),
                Case("preprocess, system shm", "preprocess", "INPUT0", "system"),
                Case("hf_preprocess", "hf_preprocess", "INPUT0"),
                Case("tokenize", "tokenize", "TEXT"),
                Case("hf_tokenize", "hf_tokenize", "INPUT0")]
    if question == "modes":
        return [Case("(B) ensemble_all", "ensemble_all", "ensemble_all"),
                Case("(A) served part: bert-large + cuml", "served_models", "served_models")]
    if question == "llm":
        return [Case("llm_preprocess (ours)", "llm_preprocess", "llm_pre"),
                Case("TensorRT-LLM preprocessing", "trtllm_preprocessing", "llm_pre"),
                Case("Python floor (no tokenizing)", "floor_preprocessing", "llm_pre"),
                Case("llm_preprocess (ours), ~32 KB", "llm_preprocess", "llm_pre_32k"),
                Case("TensorRT-LLM preprocessing, ~32 KB", "trtllm_preprocessing", "llm_pre_32k"),
                Case("Python floor (no tokenizing), ~32 KB", "floor_preprocessing", "llm_pre_32k"),
                Case("llm_postprocess (ours)", "llm_postprocess", "llm_post"),
                Case("TensorRT-LLM postprocessing", "trtllm_postprocessing", "llm_post"),
                Case("Python floor (no decode)", "floor_postprocessing", "llm_post")]
    return [Case(f"{n} instance{'s' if n > 1 else ''}, delay {us} us", tune_name(n, us), "INPUT0")
            for n in TUNE_INSTANCES for us in TUNE_DELAYS_US]


def measure(question: str, cases: list[Case], inputs: Inputs, pa: Any, url: str, args: argparse.Namespace,
            raw: Path, log: Callable[[str], None]) -> list[Point]:
    """``args.runs`` rounds; in each, every load level with the cases taking turns (order rotating per level)."""
    from triton_textops.tools.perf import PerfAnalyzerError, run_perf_analyzer

    interval = args.interval_ms or (6000 if question == "modes" else 2000)
    levels: list[tuple[str, float, list[Case]]] = [("concurrency", c, cases) for c in args.concurrency[question]]
    if question == "models":
        rated = [c for c in cases if c.model in ("preprocess", "hf_preprocess") and c.shm == "none"]
        levels += [("request_rate", r, rated) for r in args.request_rates]
    points = []
    for run in range(1, args.runs + 1):
        for k, (mode, load, group) in enumerate(levels):
            order = group[k % len(group):] + group[:k % len(group)]
            for case in order:
                p = Point(question, run, case, mode, load)
                tag = f"{question}-r{run}-{case.model}-{case.data}-{case.shm}-{mode}-{load:g}"
                # windows that never agree within --stability (a busy shared machine): measured once more and
                # accepted at 100% (3 windows merged whatever their spread), marked in the tables and the CSV
                for stability in (args.stability, 100.0):
                    try:
                        rows = run_perf_analyzer(
                            pa, case.model, url, raw / f"{tag}.csv", input_data=inputs.files[case.data],
                            shared_memory=case.shm, measurement_interval_ms=interval,
                            stability_percentage=stability, max_trials=args.max_trials,
                            timeout=interval / 1e3 * (args.max_trials + 2) + 60,
                            **({"concurrency": int(load)} if mode == "concurrency" else {"request_rate": load}))
                        p.row, p.error, p.stability = rows[-1], "", stability
                        break
                    except PerfAnalyzerError as err:
                        p.error = _first_error(str(err))
                        if "stable" not in p.error or stability >= 100:
                            break
                points.append(p)
                log(f"run {run} {mode} {load:>6g} {case.label:42} " + (
                    f"{p.row.throughput:9.1f} infer/s  p50 {p.row.p50_ms:8.2f} ms  p99 {p.row.p99_ms:8.2f} ms"
                    if p.ok else f"ERROR {p.error}"))
    return points


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if any(w in ln.lower() for w in ("error", "failed", "unstable", "did not"))]
    return (hits[-1] if hits else lines[0] if lines else "?")[:160]


# ------------------------------------------------------------------------------------------------ reporting


def _fmt(x: float, nd: int = 1) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:,.{nd}f}"


def _stat(values: list[float], nd: int | None = None, unit: str = "") -> str:
    """median (min–max over runs); ``nd`` decimals (default: 0 from 100 up, 1 from 10, else 2)."""
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return "–"
    med = statistics.median(v)
    if nd is None:
        nd = 0 if abs(med) >= 100 else 1 if abs(med) >= 10 else 2
    return f"{_fmt(med, nd)}{unit}" + (f" ({_fmt(min(v), nd)}–{_fmt(max(v), nd)})" if len(v) > 1 else "")


def _get(points: list[Point], case: Case, mode: str, load: float, run: int) -> Point | None:
    return next((p for p in points if p.case == case and p.mode == mode and p.load == load and p.run == run), None)


def table(points: list[Point], cases: list[Case], mode: str, baseline: Case | None, stability: float,
          extra: Callable[[Case, float, int], float] | None = None, extra_head: str = "") -> str:
    """Rows by load level then case: throughput, p50, p99 (median and min–max over runs), ratio to ``baseline``
    measured within each run. ``†n``: n of the runs were accepted only at 100% (windows disagreed by more than
    ``stability``%)."""
    runs = sorted({p.run for p in points})
    loads = sorted({p.load for p in points if p.mode == mode})
    what = "concurrency" if mode == "concurrency" else "request rate (/s)"
    head = f"| {what} | model | infer/s | p50 ms | p99 ms |" + (" infer/s vs " + baseline.label + " |"
                                                                  if baseline else "") + (f" {extra_head} |"
                                                                                          if extra else "")
    out = [head, "|---:|---|---:|---:|---:|" + ("---:|" if baseline else "") + ("---:|" if extra else "")]
    for load in loads:
        for case in cases:
            pts = [_get(points, case, mode, load, r) for r in runs]
            pts = [p for p in pts if p is not None]
            if not pts:
                continue
            ok = [p for p in pts if p.ok]
            errs = [p.error for p in pts if not p.ok]
            cells = [_stat([p.row.throughput for p in ok]), _stat([p.row.p50_ms for p in ok]),
                     _stat([p.row.p99_ms for p in ok])]
            if baseline:
                ratios = []
                for r in runs:
                    a, b = _get(points, case, mode, load, r), _get(points, baseline, mode, load, r)
                    if a and b and a.ok and b.ok:
                        ratios.append(a.row.throughput / b.row.throughput)
                cells.append(_stat(ratios, 2, "x"))
            if extra:
                cells.append(_stat([extra(case, load, r) for r in runs]))
            note = f" ({len(errs)} of {len(pts)} runs failed: {errs[0]})" if errs else ""
            loose = sum(1 for p in ok if p.stability > stability)
            note += f" †{loose}" if loose else ""
            out.append(f"| {load:g} | {case.label}{note} | " + " | ".join(cells) + " |")
    if any(p.ok and p.stability > stability for p in points if p.mode == mode and p.case in cases):
        out += ["", f"†n: in n runs perf_analyzer's windows never agreed within {stability:g}%; measured again "
                "and accepted at 100% (three windows merged whatever their spread)."]
    return "\n".join(out)


def _ratios(points: list[Point], a: Case, b: Case, load: float, runs: list[int],
            value: Callable[[Any], float]) -> list[float]:
    """``value(a) / value(b)`` at concurrency ``load`` in each run where both were measured."""
    out = []
    for r in runs:
        pa, pb = _get(points, a, "concurrency", load, r), _get(points, b, "concurrency", load, r)
        if pa and pb and pa.ok and pb.ok:
            out.append(value(pa.row) / value(pb.row))
    return out


def llm_table(points: list[Point], cases: list[Case], ref: Case, floor: Case, stability: float) -> str:
    """(d)'s rows by concurrency then case: infer/s, p50, p99 (median and min–max over runs), and within each run
    infer/s over TensorRT-LLM's, infer/s over the floor's, p50 and p99 over the floor's (p50: what a loaded
    machine's spikes move least)."""
    runs = sorted({p.run for p in points})
    loads = sorted({p.load for p in points if p.mode == "concurrency"})
    out = [f"| concurrency | model | infer/s | p50 ms | p99 ms | infer/s vs {ref.label} | infer/s vs floor | "
           "p50 vs floor | p99 vs floor |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for load in loads:
        for case in cases:
            pts = [p for r in runs if (p := _get(points, case, "concurrency", load, r)) is not None]
            if not pts:
                continue
            ok = [p for p in pts if p.ok]
            errs = [p.error for p in pts if not p.ok]
            cells = [_stat([p.row.throughput for p in ok]), _stat([p.row.p50_ms for p in ok]),
                     _stat([p.row.p99_ms for p in ok]),
                     _stat(_ratios(points, case, ref, load, runs, lambda r: r.throughput), 2, "x"),
                     _stat(_ratios(points, case, floor, load, runs, lambda r: r.throughput), 2, "x"),
                     _stat(_ratios(points, case, floor, load, runs, lambda r: r.p50_ms), 2, "x"),
                     _stat(_ratios(points, case, floor, load, runs, lambda r: r.p99_ms), 2, "x")]
            note = f" ({len(errs)} of {len(pts)} runs failed: {errs[0]})" if errs else ""
            loose = sum(1 for p in ok if p.stability > stability)
            note += f" †{loose}" if loose else ""
            out.append(f"| {load:g} | {case.label}{note} | " + " | ".join(cells) + " |")
    if any(p.ok and p.stability > stability for p in points if p.case in cases):
        out += ["", f"†n: in n runs perf_analyzer's windows never agreed within {stability:g}%; measured again "
                "and accepted at 100% (three windows merged whatever their spread)."]
    return "\n".join(out)


def _verdict(values: list[float], ok: Callable[[float], bool]) -> str:
    med = statistics.median(values)
    return "met" if all(ok(v) for v in values) else "met by the median, not by every run" if ok(med) else "NOT met"


def goal_lines(points: list[Point], ours: Case, floor: Case, what: str, runs: int) -> list[str]:
    """Issue 46's goals per concurrency: ours >= FLOOR_GOAL x the floor's infer/s, p99 <= FLOOR_P99_GOAL x the
    floor's p99, each run's ratio (met: in every run)."""
    out = []
    for load in sorted({p.load for p in points if p.mode == "concurrency"}):
        tput = _ratios(points, ours, floor, load, list(range(1, runs + 1)), lambda r: r.throughput)
        p99 = _ratios(points, ours, floor, load, list(range(1, runs + 1)), lambda r: r.p99_ms)
        if not tput:
            continue
        out.append(f"- {what}, concurrency {load:g}: {statistics.median(tput):.2f}x the floor's infer/s (runs "
                   f"{min(tput):.2f}–{max(tput):.2f}x), goal >= {FLOOR_GOAL:g}x: "
                   f"{_verdict(tput, lambda v: v >= FLOOR_GOAL)}; p99 {statistics.median(p99):.2f}x the floor's "
                   f"(runs {min(p99):.2f}–{max(p99):.2f}x), goal <= {FLOOR_P99_GOAL:g}x: "
                   f"{_verdict(p99, lambda v: v <= FLOOR_P99_GOAL)}")
    return out


def write_csv(path: Path, points: list[Point]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for p in points:
            r = p.row
            w.writerow({"question": p.question, "run": p.run, "case": p.case.label, "model": p.case.model,
                        "shm": p.case.shm, "mode": p.mode, "load": f"{p.load:g}",
                        "throughput": f"{r.throughput:.2f}" if r else "", "p50_ms": f"{r.p50_ms:.3f}" if r else "",
                        "p90_ms": f"{r.p90_ms:.3f}" if r else "", "p95_ms": f"{r.p95_ms:.3f}" if r else "",
                        "p99_ms": f"{r.p99_ms:.3f}" if r else "",
                        "server_queue_us": r.raw.get("Server Queue", "") if r else "",
                        "server_compute_us": r.raw.get("Server Compute Infer", "") if r else "",
                        "stability_pct": f"{p.stability:g}" if r else "", "error": p.error})


def csv_digest(path: Path) -> str:
    """sha256 of a results CSV's text (line ends normalised): the PNG drawn from it carries this in its metadata."""
    import hashlib

    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_points(path: Path) -> tuple[list[Point], list[Case]]:
    """The points and cases of a CSV written by :func:`write_csv` (the cases in the order the sweep has them)."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or tuple(rows[0]) != CSV_FIELDS:
        raise SystemExit(f"{path}: not a perf.py CSV (columns {list(rows[0]) if rows else []})")
    from triton_textops.tools.perf import PerfRow

    known = {c.label: i for q in QUESTIONS for i, c in enumerate(cases_for(q))}
    cases: dict[str, Case] = {}
    points = []
    for r in rows:
        case = cases.setdefault(r["case"], Case(r["case"], r["model"], "", r["shm"]))
        row = None
        if r["throughput"]:
            row = PerfRow(r["mode"], float(r["load"]), float(r["throughput"]),
                          *(float(r[k]) for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms")))
        points.append(Point(r["question"], int(r["run"]), case, r["mode"], float(r["load"]), row, r["error"],
                            float(r["stability_pct"]) if r["stability_pct"] else float("nan")))
    order = sorted(cases.values(), key=lambda c: known.get(c.label, len(known)))
    return points, order


def plot_csv(csv_path: Path, png: Path, title: str) -> None:
    """Draw ``png`` from ``csv_path`` alone, so a plot always shows the run its CSV (and tables) hold."""
    points, cases = read_points(csv_path)
    plot(points, cases, png, title, source=f"{csv_path.name} sha256:{csv_digest(csv_path)}")


def plot(points: list[Point], cases: list[Case], path: Path, title: str, source: str = "") -> None:
    """Save :func:`figure` as ``path``; ``source`` (the CSV and its digest) goes into the PNG's ``Source`` text
    chunk, which tests/docs checks against the committed CSV."""
    import matplotlib.pyplot as plt

    fig = figure(points, cases, title)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Source": source} if source else None)
    plt.close(fig)


def figure(points: list[Point], cases: list[Case], title: str) -> Any:
    """Throughput (left) and p50 / p99 latency (right) against concurrency: medians over runs, bars min–max.

    The legends sit below the axes, never over a data line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    n_lines = len(cases) * 2  # the latency panel has a p50 and a p99 line per case
    ncol = 2
    fig, (ax_t, ax_l) = plt.subplots(1, 2, figsize=(12, 4.8 + 0.16 * math.ceil(n_lines / ncol)))
    loads = sorted({p.load for p in points if p.mode == "concurrency"})
    for i, case in enumerate(cases):
        color = f"C{i % 10}"
        series: dict[str, list[tuple[float, float, float, float]]] = {"tput": [], "p50": [], "p99": []}
        for load in loads:
            ok = [p for p in points if p.case == case and p.mode == "concurrency" and p.load == load and p.ok]
            if not ok:
                continue
            for key, vals in (("tput", [p.row.throughput for p in ok]), ("p50", [p.row.p50_ms for p in ok]),
                              ("p99", [p.row.p99_ms for p in ok])):
                series[key].append((load, statistics.median(vals), min(vals), max(vals)))
        for ax, key, style, label in ((ax_t, "tput", "-", case.label), (ax_l, "p50", "-", f"{case.label} p50"),
                                      (ax_l, "p99", "--", f"{case.label} p99")):
            s = series[key]
            if s:
                x, med, lo, hi = (np.array(v) for v in zip(*s))
                ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o" + style, color=color, capsize=3,
                            label=label, markersize=4)
    for ax, ylabel in ((ax_t, "throughput (infer/s = texts/s)"), (ax_l, "latency (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if str(round(v))[0] in "25" else ""))
        ax.set_xticks(loads, [f"{x:g}" for x in loads])
        ax.set_xlabel("concurrency (requests in flight, 1 text each)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=ncol, frameon=False)
    fig.suptitle(title, fontsize=9)
    return fig


def report(question: str, points: list[Point], cases: list[Case], inputs: Inputs, setup: str, st: float) -> str:
    """The markdown section of one question."""
    runs = max((p.run for p in points), default=0)
    parts = [setup, ""]
    if question == "models":
        ours = [c for c in cases if c.model in ("preprocess", "hf_preprocess")]
        parts += ["preprocess (ids, mask, 207 features) vs the HF-tokenizers Python model; cells: median "
                  f"(min–max) over {runs} runs; ratios within each run:", "",
                  table(points, ours, "concurrency", next(c for c in cases if c.model == "hf_preprocess"), st), ""]
        tok = [c for c in cases if c.model in ("tokenize", "hf_tokenize")]
        parts += ["tokenize (ids, mask) vs the same HF model with only the tokenizer:", "",
                  table(points, tok, "concurrency", next(c for c in cases if c.model == "hf_tokenize"), st), ""]
        if any(p.mode == "request_rate" for p in points):
            parts += ["Request-rate mode (perf_analyzer sends at a fixed rate whatever the latency; infer/s below "
                      "the rate means the model fell behind):", "",
                      table(points, [c for c in cases if c.model in ("preprocess", "hf_preprocess") and
                                     c.shm == "none"], "request_rate", None, st), ""]
    elif question == "llm":
        parts.append(f"Cells: median (min–max) over {runs} runs; ratios within each run (infer/s over the other "
                     "model's; p99 over the floor's):")
        for key, kind, what in (("llm_pre", "preprocessing", "preprocessing, ~2 KB prompts"),
                                ("llm_pre_32k", "preprocessing", "preprocessing, ~32 KB prompts"),
                                ("llm_post", "postprocessing", f"postprocessing, {OUTPUT_TOKENS} tokens")):
            ours_model = "llm_preprocess" if kind == "preprocessing" else "llm_postprocess"
            shown = {m: next((c for c in cases if c.model == m and c.data == key), None)
                     for m in (ours_model, f"trtllm_{kind}", f"floor_{kind}")}
            if None in shown.values():
                continue
            ours, ref, floor = shown.values()
            parts += ["", f"{what}:", "", llm_table(points, [ours, ref, floor], ref, floor, st), ""]
            parts += goal_lines(points, ours, floor, what, runs)
        parts.append("")
    elif question == "modes":
        served = next(c for c in cases if c.model == "served_models")
        client = inputs.client_ms
        cp50, cp99 = (float(np.percentile(client, q)) for q in (50, 99)) if client else (float("nan"),) * 2

        def est(case: Case, load: float, run: int) -> float:
            p = _get(points, case, "concurrency", load, run)
            return p.row.p50_ms + cp50 if p and p.ok and case is served else float("nan")

        parts += [f"Cells: median (min–max) over {runs} runs; ratios within each run. (A)'s client-side work "
                  f"(our ops on one text + the blend, in the client process, {len(client)} requests): "
                  f"p50 {cp50:.2f} ms, p99 {cp99:.2f} ms per request.", "",
                  table(points, cases, "concurrency", next(c for c in cases if c.model == "ensemble_all"), st,
                        est, "(A) p50 ms incl. client work"), ""]
    else:
        from triton_textops.tools.repo.generate import DEFAULT_QUEUE_DELAY_US

        delay = DEFAULT_QUEUE_DELAY_US
        base = next(c for c in cases if c.model == tune_name(1, delay))
        parts += [f"Cells: median (min–max) over {runs} runs; ratios within each run, against `repo create`'s "
                  f"default (1 instance, {delay} us):", "", table(points, cases, "concurrency", base, st), ""]
        for load in sorted({p.load for p in points}):
            ratios = {c: [a.row.throughput / b.row.throughput for r in range(1, runs + 1)
                          if (a := _get(points, c, "concurrency", load, r)) and a.ok
                          and (b := _get(points, base, "concurrency", load, r)) and b.ok] for c in cases}
            ranked = sorted(((statistics.median(v), c) for c, v in ratios.items() if v), key=lambda t: -t[0])
            if ranked:
                parts.append(f"- concurrency {load:g}: highest throughput {ranked[0][1].label} "
                             f"({ranked[0][0]:.2f}x the default, median of the runs' ratios); then "
                             + ", ".join(f"{c.label} {m:.2f}x" for m, c in ranked[1:3]))
        parts.append("")
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("question", choices=(*QUESTIONS, "all"))
    ap.add_argument("--runs", type=int, default=3, help="rounds of the whole sweep (default 3)")
    ap.add_argument("--quick", action="store_true", help="1 run, concurrency 1 and 8, short windows (a smoke run)")
    ap.add_argument("--concurrency", default=None,
                    help="concurrency levels, comma-separated (default 1,8,64; modes: 1,4,16; llm: 1,64)")
    ap.add_argument("--request-rates", default="200,400,800", help="request rates for `models` ('' for none)")
    ap.add_argument("--interval-ms", type=int, default=None,
                    help="perf_analyzer measurement window (default 2000; modes 6000)")
    ap.add_argument("--stability", type=float, default=25.0,
                    help="perf_analyzer --stability-percentage (default 25: a shared 2-core machine); a point "
                    "whose windows never agree is measured again and accepted at 100%%, marked in the tables")
    ap.add_argument("--max-trials", type=int, default=8, help="perf_analyzer --max-trials (default 8)")
    ap.add_argument("--max-batch-size", type=int, default=64, help="max_batch_size of every model (default 64)")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "demo",
                    help="trained example artifacts (default .cache/demo, shared with make demo)")
    ap.add_argument("--python-env", type=Path, default=None, help="model runtime venv (default: built, cached)")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default .cache/perf/<question>-<time>)")
    ap.add_argument("--results", action="store_true",
                    help="add the tables on top of benchmarks/RESULTS.md, copy CSV + PNG to benchmarks/perf-<question>.*")
    ap.add_argument("--results-file", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--replot", action="store_true",
                    help="measure nothing: redraw benchmarks/perf-<question>.png from benchmarks/perf-<question>.csv")
    ap.add_argument("--machine", default=None,
                    help="with --replot: the machine line of the plot's title (the run's, from its RESULTS section)")
    ap.add_argument("--trtllm-ref", type=Path, default=TRTLLM_REF,
                    help="TensorRT-LLM's model files: <dir>/preprocessing/1/model.py, <dir>/postprocessing/1/model.py "
                    "(default tests/models/trtllm_ref)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.interval_ms = 1, args.interval_ms or 1000
        args.concurrency = args.concurrency or "1,8"
        args.request_rates = "200" if args.request_rates == "200,400,800" else args.request_rates
    default = {"modes": "1,4,16", "llm": "1,64"}
    levels = {q: [int(c) for c in (args.concurrency or default.get(q, "1,8,64")).split(",")] for q in QUESTIONS}
    args.concurrency = levels
    args.request_rates = [float(r) for r in args.request_rates.split(",") if r.strip()]
    return args


def replot(questions: list[str], machine_line: str | None) -> None:
    """Redraw each committed ``perf-<question>.png`` from its committed CSV (no server, no perf_analyzer)."""
    for q in questions:
        title = TITLES[q] + (f" — {machine_line}" if machine_line else "")
        plot_csv(HERE / f"perf-{q}.csv", HERE / f"perf-{q}.png", title)
        print(f"{HERE / f'perf-{q}.png'} from {HERE / f'perf-{q}.csv'}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot:
        replot(list(QUESTIONS) if args.question == "all" else [args.question], args.machine)
        return 0
    t_run = time.monotonic()
    from triton_textops.tools.example import readability as rd
    from triton_textops.tools.perf import find_perf_analyzer
    from triton_textops.tools.server import TritonServer, TritonServerError, find_server, model_runtime_env

    log_file = sys.stderr

    def step(msg: str) -> None:
        print(f"[{time.monotonic() - t_run:6.1f} s] {msg}", file=log_file, flush=True)

    questions = list(QUESTIONS) if args.question == "all" else [args.question]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / ".cache" / "perf" / f"{args.question}-{stamp}"
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)

    from triton_textops.triton.config import load_config

    pa = find_perf_analyzer()
    step(f"{pa.version()}: {pa.executable} ({pa.origin})")
    install = find_server()
    texts = list(np.random.default_rng(0).permutation(np.array(austen(), dtype=object))[:N_TEXTS])
    repos: dict[str, Path] = {}
    delays: dict[str, int] = {}
    envs: dict[str, Path] = {}
    inputs = Inputs({})
    if any(q != "llm" for q in questions):
        step("trained example artifacts (first run trains: a few minutes)")
        with redirect_stdout(log_file):
            artifacts, _, trained = rd.cached_artifacts(args.cache / "artifacts", rd.TrainConfig(), out=log_file)
        env = args.python_env or model_runtime_env(packages=[*rd.RUNTIME_PACKAGES, *HF_PACKAGES])
        repo = build_repository(args.cache / "bench-perf-repo", artifacts, max_batch_size=args.max_batch_size)
        step(f"repository {repo}; server {install.executable}; model env {env}")
        delay = load_config(repo / "preprocess" / "config.pbtxt").dynamic_batching.max_queue_delay_microseconds
        inputs = make_inputs(out, [str(t) for t in texts], artifacts, client_side="modes" in questions)
        repos.update(dict.fromkeys((q for q in questions if q != "llm"), repo))
        delays.update(dict.fromkeys(repos, delay))
        envs.update(dict.fromkeys(repos, env))
    if "llm" in questions:
        sys.path.insert(0, str(ROOT / "tests"))
        from llm_dirs import write_tokenizer_dir
        from llm_reference import REFERENCE_PACKAGES  # the tests' pins (transformers 4.47.0, ...)

        tok = write_tokenizer_dir(out / "tokenizer", "llama3")
        packages = (*REFERENCE_PACKAGES, "pillow", "requests")  # their preprocessing model.py imports both
        step(f"TensorRT-LLM's env (cached): {', '.join(packages)}")
        ref_env = model_runtime_env(packages=packages)
        envs["llm"] = args.python_env or model_runtime_env()
        repos["llm"] = build_llm_repository(out / "llm-repo", tok, args.trtllm_ref, ref_env,
                                            max_batch_size=args.max_batch_size)
        delays["llm"] = load_config(repos["llm"] / "llm_preprocess" / "config.pbtxt") \
            .dynamic_batching.max_queue_delay_microseconds
        inputs.files.update(make_llm_inputs(out, [str(t) for t in texts], tok))
        step(f"repository {repos['llm']} (tokenizer {tok}); reference model.py from {args.trtllm_ref}, env {ref_env}")

    models = {"models": ["preprocess", "hf_preprocess", "tokenize", "hf_tokenize"],
              "modes": ["ensemble_all", "served_models"],
              "tune": [tune_name(n, us) for n in TUNE_INSTANCES for us in TUNE_DELAYS_US],
              "llm": list(LLM_MODELS)}
    sections = []
    for q in questions:
        load = [f"--load-model={m}" for m in models[q]]
        delay_us = delays[q]
        server = TritonServer(repos[q], install=install, python_env=envs[q], startup_timeout=600,
                              extra_args=["--model-control-mode=explicit", *load])
        try:
            server.start()
        except TritonServerError as err:
            print(err, file=sys.stderr)
            return 1
        try:
            step(f"{q}: tritonserver ready (gRPC {server.grpc_url}), models {', '.join(models[q])}")
            cases = cases_for(q)
            if q == "llm":
                step(check_llm_equal(server, inputs.files, ref_env))
            points = measure(q, cases, inputs, pa, server.grpc_url, args, raw, step)
        finally:
            server.stop()
        date = time.strftime("%Y-%m-%d %H:%M")
        per_request = {"llm": f"one ~{PROMPT_BYTES // 1024} KB or ~{LONG_PROMPT_BYTES // 1024} KB prompt (64 round "
                              f"robin) or one {OUTPUT_TOKENS}-token sequence (64) per request (`-b 1`, "
                              "`--input-data`)"}.get(
            q, f"one corpus paragraph per request (`-b 1`), {N_TEXTS} paragraphs round robin (`--input-data`)")
        setup = (f"Machine: {machine()}. {pa.version().split(' (')[0]} (tritonclient wheel) against tritonserver "
                 f"2.51.0 (nvidia-pytriton wheel) on the same machine, gRPC on 127.0.0.1; Python backend, KIND_CPU, "
                 f"max_batch_size {args.max_batch_size}, dynamic batching (max_queue_delay {delay_us} us unless "
                 f"the model says otherwise), 1 instance unless said; {per_request}; windows of "
                 f"{args.interval_ms or (6000 if q == 'modes' else 2000)} ms until 3 agree within "
                 f"{args.stability:g}% (at most {args.max_trials}); latencies are perf_analyzer's client-side ones. "
                 f"{args.runs} run(s); the models take turns at each load level within a run.")
        title = TITLES[q]
        cmd = f"benchmarks/perf.py {q}" + (" --quick" if args.quick else f" --runs {args.runs}")
        section = f"### {title}: `{cmd}` ({date})\n\n" + report(q, points, cases, inputs, setup, args.stability)
        (out / f"{q}.md").write_text(section + "\n", encoding="utf-8")
        write_csv(out / f"{q}.csv", points)
        plot_csv(out / f"{q}.csv", out / f"{q}.png", f"{title} — {machine()}")
        print(section, flush=True)
        step(f"{q}: {out / (q + '.md')}, {out / (q + '.csv')}, {out / (q + '.png')}")
        sections.append(f"{section.rstrip()}\n\n![{q}: throughput and latency vs concurrency](perf-{q}.png)\n")
        if args.results:
            for ext in ("csv", "png"):
                shutil.copyfile(out / f"{q}.{ext}", HERE / f"perf-{q}.{ext}")
    if args.results:
        head = f"## Served models with perf_analyzer: `benchmarks/perf.py {args.question}` ({time.strftime('%Y-%m-%d')})"
        insert_results(args.results_file, "\n".join([head, "", *sections]))
        step(f"added to {args.results_file}")
    return 0


def insert_results(path: Path, section: str) -> None:
    """Put ``section`` above the newest section of ``path`` (RESULTS.md lists the newest first)."""
    text = path.read_text(encoding="utf-8")
    at = text.find("\n## ")
    at = len(text) if at < 0 else at + 1
    path.write_text(text[:at] + section.rstrip() + "\n\n" + text[at:], encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
