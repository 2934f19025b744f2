"""Same-run A/B of two builds of the package: the tokenizers' and features' speed, old and new source trees taking turns.

Why: a refactor (a module moved, a kernel's arguments grouped, its loops generated) must lose no speed, and these
machines are noisy: only runs that alternate in the same minutes compare. Each run is a fresh process importing the
package from one tree (``PYTHONPATH``), after one untimed run per tree that compiles its kernels into numba's cache
(each tree's cache is its own: the sources' stamp differs). Prints each case's median time per call for each tree,
the range over the rounds, and new / old.

    python benchmarks/ab.py --old /tmp/old-tree --new . [--rounds 5] [--reps 15] [--threads 1]

``--old``: a checkout of the commit to compare with (``git worktree add /tmp/old-tree <commit>``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# One process's work: every case timed as the median of its repeats, printed as JSON. It imports only names that
# exist in both trees (the top-level lazy names and the BPE tokenizer's constructors).
WORKER = r"""
import json, sys, time
import numpy as np
from triton_textops import BertTokenizer, BPETokenizer, ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs, vocab_path
try:
    from triton_textops.ops.preprocess import preprocess
except ImportError:
    preprocess = None
data = sys.argv[1]
REPS = int(sys.argv[2])
paras = austen_paragraphs()
batch = (paras * 4)[:512]
one = [paras[3]]
bert = BertTokenizer.from_vocab(vocab_path())
rows = getattr(bert, "encode_rows", bert.encode)  # (the old tree's padded encode)
cl100k = BPETokenizer.from_tiktoken(data + "/cl100k_base.tiktoken", encoding="cl100k_base")
o200k = BPETokenizer.from_tiktoken(data + "/o200k_base.tiktoken", encoding="o200k_base")
gpt2 = BPETokenizer.from_gpt2_files(data + "/encoder.json", data + "/vocab.bpe")
feats = ReadabilityFeatures.fit(paras[:200])
cases = {
    "wordpiece rows, batch 512": lambda: rows(batch, max_length=256),
    "wordpiece rows, one text": lambda: rows(one, max_length=256),
    "wordpiece windows, batch 512": lambda: rows(batch, max_length=64, stride=16, return_overflowing_tokens=True),
    "features, batch 512": lambda: feats.transform(batch),
    "preprocess, batch 512": lambda: preprocess(bert, feats, batch, max_length=256),
    "bpe cl100k, batch 512": lambda: cl100k.encode(batch),
    "bpe cl100k, one text": lambda: cl100k.encode(one),
    "bpe o200k, batch 512": lambda: o200k.encode(batch),
    "bpe o200k, one text": lambda: o200k.encode(one),
    "bpe gpt2, batch 512": lambda: gpt2.encode(batch),
    "bpe cl100k rows, batch 512": lambda: cl100k.encode_rows(batch, max_length=256),
}
out = {}
for name, fn in cases.items():
    reps = REPS * (40 if "one text" in name else 1)
    for _ in range(3):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    out[name] = float(np.median(t))
print(json.dumps(out))
"""


def run(tree: Path, data: Path, reps: int = 3, threads: int | None = None) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    got = subprocess.run([sys.executable, "-c", WORKER, str(data), str(reps)], env=env, capture_output=True, text=True,
                         cwd="/tmp", check=False)
    if got.returncode:
        raise SystemExit(f"{tree}: worker failed:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, type=Path, help="source tree of the build to compare with")
    ap.add_argument("--new", default=HERE.parent, type=Path, help="source tree of this build (default: this one)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating runs of each tree")
    ap.add_argument("--reps", type=int, default=15, help="timed calls per case and run (one text: 40x as many)")
    ap.add_argument("--threads", type=int, default=None, help="the kernels' CPU threads (default: numba's, all cores)")
    a = ap.parse_args()
    data = HERE.parent / "tests" / "data" / "bpe"
    trees = {"old": a.old.resolve(), "new": a.new.resolve()}
    for tree in trees.values():  # compile into each tree's cache, untimed
        run(tree, data)
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for r in range(a.rounds):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            runs[name].append(run(trees[name], data, a.reps, a.threads))
    print(f"{'case':32s} {'old (ms)':>20s} {'new (ms)':>20s} {'new/old':>16s}")
    for case in runs["old"][0]:
        o = [x[case] * 1e3 for x in runs["old"]]
        n = [x[case] * 1e3 for x in runs["new"]]
        ratios = [b / c for b, c in zip(n, o)]
        print(f"{case:32s} {statistics.median(o):8.3f} ({min(o):.3f}-{max(o):.3f}) "
              f"{statistics.median(n):8.3f} ({min(n):.3f}-{max(n):.3f}) "
              f"{statistics.median(ratios):5.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
