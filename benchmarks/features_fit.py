"""ReadabilityFeatures.fit on Dask vs in memory: throughput against partitions and workers.

The bundled Austen paragraphs, repeated ``--repeat`` times, are written as jsonl partition files (as a
corpus would sit on shared storage) and read by the workers with ``dask.bag.read_text``; each
configuration is one timed run of the whole fit (both passes) on a ``distributed.LocalCluster`` of
worker processes with one thread each, started before the timer. Every Dask artifact is checked to be
identical to the in-memory one. Prints texts/s and the ratio to the in-memory fit. The Dask fit reads
and tokenizes the corpus twice (words, then moments) so that nothing has to stay in memory: one worker
runs at most at about half the in-memory speed, and the point is the scaling with workers and machines.

    python benchmarks/features_fit.py [--repeat 10] [--workers 1 2] [--partitions 2 8 32]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from _common import austen, machine  # noqa: E402

from triton_textops.ops.features import ReadabilityFeatures  # noqa: E402


def _write_partitions(texts: list[str], n: int, folder: Path) -> list[str]:
    size = -(-len(texts) // n)
    paths = []
    for i in range(n):
        p = folder / f"part-{i:04d}.jsonl"
        with p.open("w", encoding="utf-8") as f:
            for t in texts[i * size : (i + 1) * size]:
                f.write(json.dumps({"text": t}) + "\n")
        paths.append(str(p))
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10, help="copies of the Austen corpus (default 10)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker processes (default 1 2)")
    ap.add_argument("--partitions", type=int, nargs="+", default=[2, 8, 32], help="partitions (default 2 8 32)")
    args = ap.parse_args()

    import dask.bag as db
    from distributed import Client, LocalCluster

    texts = austen() * args.repeat
    print(f"# {machine()}")
    print(f"# corpus: {len(texts)} texts ({args.repeat} x Austen), one run per configuration")
    t = time.perf_counter()
    ref = ReadabilityFeatures.fit(texts)
    base = time.perf_counter() - t
    print(f"{'fit':<28}{'seconds':>9}{'texts/s':>11}{'vs in-memory':>14}")
    print(f"{'in memory':<28}{base:>9.2f}{len(texts) / base:>11.0f}{1.0:>13.2f}x")
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for p in args.partitions:
            (Path(tmp) / f"p{p}").mkdir()
            files[p] = _write_partitions(texts, p, Path(tmp) / f"p{p}")
        for w in args.workers:
            with LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                    Client(cluster):
                for p in args.partitions:
                    bag = db.read_text(files[p]).map(json.loads).pluck("text")
                    t = time.perf_counter()
                    fitted = ReadabilityFeatures.fit(bag)
                    secs = time.perf_counter() - t
                    if fitted.to_dict() != ref.to_dict():
                        print(f"MISMATCH: {w} workers, {p} partitions differ from the in-memory fit")
                        return 1
                    label = f"dask {w} worker(s), {p} parts"
                    print(f"{label:<28}{secs:>9.2f}{len(texts) / secs:>11.0f}{base / secs:>13.2f}x")
    print("# every Dask artifact is identical to the in-memory one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
