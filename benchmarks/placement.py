"""GPU placement: the time of tokenize and preprocess per batch size on the CPU kernels and on the GPU kernels
(text upload and the copy back of the status included), and the crossover that ``gpu_min_batch`` should be.

One run, same machine: for batch sizes 1, 8, 32, 128, 512, 4096 (Austen paragraphs, repeated past the
corpus) each path's best of a few calls; on the GPU the calls are timed with CUDA events around the whole
call, after a synchronize. Without a GPU it prints the CPU column only (the GPU column is what a lent GPU
measures: ``benchmarks/gpu_check.sh`` runs this). Usage: python benchmarks/placement.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import austen, machine  # noqa: E402

from triton_textops import BertTokenizer, ReadabilityFeatures  # noqa: E402
from triton_textops.bundled import vocab_path  # noqa: E402
from triton_textops.ops.core.kernels import GPU_MIN_BATCH, get_num_threads  # noqa: E402
from triton_textops.ops.core.xp import gpu_available, tune_host_allocator  # noqa: E402
from triton_textops.ops.preprocess import preprocess  # noqa: E402

SIZES = (1, 8, 32, 128, 512, 4096)


def best_ms(call, rounds: int, sync=None) -> float:
    call()  # warm (compiles, or loads numba's cache)
    best = float("inf")
    for _ in range(rounds):
        if sync is None:
            t0 = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - t0)
        else:
            start, end = sync.Event(), sync.Event()
            sync.get_current_stream().synchronize()
            start.record()
            call()
            end.record()
            end.synchronize()
            best = min(best, sync.get_elapsed_time(start, end) / 1e3)
    return best * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tune_host_allocator()
    corpus = austen()
    feats = ReadabilityFeatures.fit(corpus[:1000], n_common=100, n_rare=100)
    devices = {"cpu": BertTokenizer.from_vocab(vocab_path(), device="cpu")}
    cp = None
    if gpu_available():
        import cupy as cp

        devices["cuda"] = BertTokenizer.from_vocab(vocab_path(), device="cuda")
    print(f"# {machine()}; CPU kernels on {get_num_threads()} threads; default gpu_min_batch {GPU_MIN_BATCH}")
    print(f"{'op':<11}{'batch':>6}" + "".join(f"{d + ' ms':>12}" for d in devices) + ("   gpu/cpu" if cp else ""))
    crossover: dict[str, int | None] = {}
    for op in ("tokenize", "preprocess"):
        crossover[op] = None
        for n in SIZES:
            texts = (corpus * (n // len(corpus) + 1))[:n]
            ms = {}
            for dev, tok in devices.items():
                if op == "tokenize":
                    def call(tok=tok, texts=texts):
                        return tok.encode_rows(texts, max_length=128, gpu_min_batch=0)
                else:
                    def call(tok=tok, texts=texts):
                        return preprocess(tok, feats, texts, max_length=128, gpu_min_batch=0)
                ms[dev] = best_ms(call, args.rounds, cp if dev == "cuda" else None)
            row = f"{op:<11}{n:>6}" + "".join(f"{ms[d]:>12.3f}" for d in devices)
            if cp:
                row += f"{ms['cuda'] / ms['cpu']:>10.2f}"
                if crossover[op] is None and ms["cuda"] < ms["cpu"]:
                    crossover[op] = n
            print(row)
    if cp:
        for op, n in crossover.items():
            print(f"# {op}: the GPU kernels are faster from batch {n} on (of {SIZES})" if n else
                  f"# {op}: the CPU kernels were faster at every batch size measured")
    else:
        print("# no GPU: the crossover needs the GPU column (benchmarks/gpu_check.sh on a lent GPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
