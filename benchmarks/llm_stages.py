"""Where ``llm_preprocess`` / ``llm_postprocess`` spend a request's time beyond the Python-backend floor (issue 46).

In process (the testing harness, :func:`triton_textops.testing.load_model`, mock ``pb_utils``): our two models and
``benchmarks/perf.py``'s floors on TensorRT-LLM's configs and the Llama-3-style tokenizer of ``perf.py llm``, on
the same requests (~2 KB and ~32 KB prompts, 256-token sequences), one ``execute`` of 1 or of 64 requests (what
dynamic batching hands a model at concurrency 1 and 64). Each stage of ours is timed with ``time.thread_time``
around the model's own methods: request parsing + tensor reading (``read``), the tokenizer call (``compute``),
output tensors + response (``_respond``); ``execute`` in all, and the floor's ``execute``. Cells: the minimum over
``--reps`` calls of each, per request, in us (thread time: a loaded machine's other processes mostly drop out).

The harness's ``pb_utils`` is Python, the server's stub C++: what a call costs differs there, so this script gives
where *our* Python time goes; the served ratios come from ``perf.py llm``.

    python benchmarks/llm_stages.py [--reps 200] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import perf  # noqa: E402
from _common import austen, machine  # noqa: E402


def _timed(obj: Any, name: str, acc: dict[str, float]) -> None:
    """Wrap ``obj.name`` so that its thread time adds up in ``acc[name]``."""
    fn = getattr(obj, name)

    def wrapper(*a: Any, **k: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            acc[name] += time.thread_time() - t0

    setattr(obj, name, wrapper)


def build(root: Path) -> tuple[dict[str, Path], Path]:
    from llm_dirs import write_tokenizer_dir

    tok = write_tokenizer_dir(root / "tokenizer", "llama3")
    repo = perf.build_llm_repository(root / "repo", tok, perf.TRTLLM_REF, root / "unused-env", max_batch_size=64)
    return {m: repo / m for m in ("llm_preprocess", "floor_preprocessing", "llm_postprocess",
                                  "floor_postprocessing")}, tok


def inputs(tok: Path) -> dict[str, list[dict[str, Any]]]:
    from triton_textops.ops.llm import LLMTokenizer

    texts = [str(t) for t in np.random.default_rng(0).permutation(np.array(austen(), dtype=object))[:perf.N_TEXTS]]
    out = {}
    for key, size in perf.PROMPT_SIZES.items():
        out[key] = [{"QUERY": np.array([[p.encode()]], dtype=np.object_),
                     "REQUEST_OUTPUT_LEN": np.array([[perf.OUTPUT_TOKENS]], dtype=np.int32)}
                    for p in perf.llm_texts(texts, 64, size)]
    ids = LLMTokenizer(str(tok)).bpe.encode(perf.llm_texts(texts, 64), add_special_tokens=False).tolist()
    out["llm_post"] = [{"TOKENS_BATCH": np.array([[i[:perf.OUTPUT_TOKENS]]], dtype=np.int32),
                        "SEQUENCE_LENGTH": np.array([[perf.OUTPUT_TOKENS]], dtype=np.int32)} for i in ids]
    return out


def measure(model: Any, requests: list[Any], reps: int, stages: tuple[str, ...]) -> dict[str, float]:
    """Min over ``reps`` executes of each stage's thread time (and execute's), in us per request."""
    inst = model.instance
    acc = dict.fromkeys(stages, 0.0)
    for s in stages:
        _timed(inst, s, acc)
    best = {s: float("inf") for s in (*stages, "execute")}
    for _ in range(reps):
        for s in stages:
            acc[s] = 0.0
        t0 = time.thread_time()
        inst.execute(requests)
        total = time.thread_time() - t0
        best["execute"] = min(best["execute"], total)
        for s in stages:
            best[s] = min(best[s], acc[s])
    for s in stages:
        del inst.__dict__[s]
    return {k: v / len(requests) * 1e6 for k, v in best.items()}


def profile(model: Any, requests: list[Any], reps: int) -> str:
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(reps):
        model.instance.execute(requests)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    return s.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--profile", action="store_true", help="also print cProfile's top functions of ours")
    args = ap.parse_args(argv)
    from triton_textops.testing import load_model

    stages = ("read", "compute", "_respond")
    print(f"Machine: {machine()}; thread time, min of {args.reps} executes, us per request\n")
    print("| model | input | requests / execute | read | compute | respond | execute | floor's execute | "
          "ours - floor |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        dirs, tok = build(Path(tmp))
        data = inputs(tok)
        plan: list[tuple[str, str, str]] = [("llm_preprocess", "floor_preprocessing", "llm_pre"),
                                            ("llm_preprocess", "floor_preprocessing", "llm_pre_32k"),
                                            ("llm_postprocess", "floor_postprocessing", "llm_post")]
        models = {m: load_model(d) for m, d in dirs.items()}
        profiles = []
        try:
            for ours, floor, key in plan:
                for n in (1, 64):
                    rows = data[key][:n]
                    got = measure(models[ours], [models[ours].make_request(x) for x in rows], args.reps, stages)
                    fl = measure(models[floor], [models[floor].make_request(x) for x in rows], args.reps, ())
                    print(f"| {ours} | {key} | {n} | {got['read']:.1f} | {got['compute']:.1f} | "
                          f"{got['_respond']:.1f} | {got['execute']:.1f} | {fl['execute']:.1f} | "
                          f"{got['execute'] - fl['execute']:.1f} |", flush=True)
                    if args.profile:
                        reqs = [models[ours].make_request(x) for x in rows]
                        profiles.append((f"{ours} {key} x{n}", profile(models[ours], reqs, max(1, args.reps // 4))))
        finally:
            for m in models.values():
                m.finalize()
    for title, text in profiles:
        print(f"\n## {title}\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
