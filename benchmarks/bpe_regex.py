"""The compiled regex engine against the hand-written scanners and the peers, in one run.

For each scanner pattern (cl100k, o200k) the same rank file is loaded twice: with its scanner (``encoding=``) and
forced onto the compiled regex path (``pattern=``, a form the scanners do not recognize: the same pattern with a
redundant group), and tiktoken on the same ranks and pattern; then a file that needs the compiled path (Tekken's
pattern on o200k's ranks) against tiktoken. Ids are checked equal before timing. Prints MB/s at batch 512 (one
thread per engine each call: numba threads 1, tiktoken's batch with 1 thread), best of ``--repeats`` with the
range, and the ratios.

    python benchmarks/bpe_regex.py [--repeats 5] [--texts 2000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bpe_oracles as O  # noqa: E402
from _common import austen, machine  # noqa: E402

from triton_textops.ops.bpe.formats import _O200K, CL100K  # noqa: E402
from triton_textops.ops.bpe.formats import PATTERNS as SCANNED  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402

TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
          r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")


def best(fn, batches: list[list[str]], repeats: int) -> tuple[float, float]:  # noqa: ANN001
    """(best, worst) seconds over ``repeats`` passes of ``fn`` over the batches."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for b in batches:
            fn(b)
        times.append(time.perf_counter() - t)
    return min(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--texts", type=int, default=2048)
    args = ap.parse_args()
    import tiktoken  # noqa: PLC0415

    K.set_num_threads(1)
    texts = austen()[: args.texts]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    batches = [texts[i:i + 512] for i in range(0, len(texts), 512)]
    print(machine())
    print(f"{len(texts)} Austen paragraphs, {mb:.1f} MB, batch 512, 1 thread each, best of {args.repeats}")
    cl_hf = next(p for p, f in SCANNED.items() if f == CL100K)
    cases = [("cl100k_base", cl_hf), ("o200k_base", _O200K), ("o200k_base", TEKKEN)]
    for name, pattern in cases:
        path = O.DATA / O.RANK_FILES[name]
        enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=O.ranks(name), special_tokens={})
        engines = {"tiktoken": lambda b, e=enc: e.encode_ordinary_batch(b, num_threads=1)}
        if pattern in SCANNED:
            scan = BPETokenizer.from_tiktoken(path, encoding=name)
            engines["scanner"] = scan.encode
        compiled = BPETokenizer.from_tiktoken(path, pattern=f"(?:{pattern})", special_tokens={})
        engines["compiled"] = compiled.encode
        want = enc.encode_ordinary_batch(texts[:512])
        for k, fn in engines.items():
            got = fn(texts[:512])
            assert (got.tolist() if hasattr(got, "tolist") else got) == want, k
        res = {k: best(fn, batches, args.repeats) for k, fn in engines.items()}
        label = "scanner pattern" if pattern in SCANNED else "Tekken pattern (compiled path only)"
        print(f"{name} ranks, {label}:")
        for k, (lo, hi) in res.items():
            print(f"  {k:9s} {mb / lo:7.1f} MB/s (range {mb / hi:.1f}-{mb / lo:.1f}); compiled / {k}: "
                  f"{res[k][0] / res['compiled'][0]:.2f}x")


if __name__ == "__main__":
    main()
