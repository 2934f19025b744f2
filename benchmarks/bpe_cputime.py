"""Byte-level BPE throughput per CPU-second on a loaded machine: ours, tiktoken and fastokens, one thread each.

When other jobs share the cores, wall-clock MB/s says more about the load than about the engines. This times each
engine's ``time.process_time`` (every thread of the process) on one thread (``NUMBA_NUM_THREADS=1`` and
``RAYON_NUM_THREADS=1`` are set here; tiktoken: ``encode_ordinary`` per text), cold instances (a fresh tokenizer per
repeat: our merge cache empty), engines taking turns, min of ``--repeats``, ids checked equal to tiktoken first.

    python benchmarks/bpe_cputime.py [--vocab cl100k_base o200k_base] [--sets english cjk code] [--texts 600]
"""

from __future__ import annotations

import os

os.environ["NUMBA_NUM_THREADS"] = "1"
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bpe_oracles as O  # noqa: E402
import bpe_texts as T  # noqa: E402
from _common import austen, ids_of  # noqa: E402

from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402

SETS = {"english": austen, "cjk": T.cjk, "thai": T.thai, "korean": T.korean, "code": T.code,
        "base64": T.base64_blobs}


def engines(name: str) -> dict:
    """name -> (make a fresh instance, encode a list of texts to lists of ids)."""
    path = O.DATA / O.RANK_FILES[name]
    out = {"ours": (lambda: BPETokenizer.from_tiktoken(path, encoding=name), lambda t, xs: t.encode(xs).tolist())}

    def tk() -> object:
        O.tiktoken_encoding.cache_clear()
        return O.tiktoken_encoding(name)

    out["tiktoken"] = (tk, lambda e, xs: [e.encode_ordinary(x) for x in xs])
    try:
        import fastokens  # noqa: PLC0415

        out["fastokens"] = (lambda: fastokens.Tokenizer.from_tiktoken(str(path), encoding=name),
                            lambda t, xs: ids_of(t.encode_batch(xs, add_special_tokens=False)))
    except ImportError:
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--sets", nargs="+", default=["english", "cjk", "code"], choices=list(SETS))
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    for name in a.vocab:
        eng = engines(name)
        for s in a.sets:
            texts = SETS[s]()[: a.texts]
            mb = sum(len(t.encode()) for t in texts) / 1e6
            want = eng["tiktoken"][1](eng["tiktoken"][0](), texts)
            best = {}
            for e, (make, enc) in eng.items():
                if enc(make(), texts) != want:
                    print(f"  {e}: ids differ from tiktoken's on {name} / {s}: not timed")
                    continue
                best[e] = []
            for _ in range(a.repeats):
                for e in best:
                    inst = eng[e][0]()
                    t0 = time.process_time()
                    eng[e][1](inst, texts)
                    best[e].append(time.process_time() - t0)
            row = "  ".join(f"{e} {mb / min(t):.1f} [{mb / max(t):.1f}-{mb / min(t):.1f}]" for e, t in best.items())
            print(f"{name} / {s} ({len(texts)} texts, {mb:.2f} MB), MB/s per CPU-second, best [range]: {row}",
                  flush=True)


if __name__ == "__main__":
    main()
