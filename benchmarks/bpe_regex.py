"""The compiled regex engine against the hand-written scanners and the peers, in one run.

Cases (each on a bundled rank file's ranks):

- ``cl100k`` / ``o200k``: a scanner's pattern, our tokenizer loaded twice: with its scanner (``encoding=``) and
  forced onto the compiled path (``pattern=``: the same pattern in a redundant group, which the scanners do not
  recognize); peers tiktoken, and HF tokenizers / fastokens / gigatoken where installed.
- ``tekken``: Tekken's pattern on o200k's ranks (a pattern only the compiled path runs): tiktoken with that
  pattern, and a tokenizer.json with it as a ``Split`` for the others.
- ``deepseek``: DeepSeek-V3's pre-tokenizer (three chained ``Split`` s, then ByteLevel) in a tokenizer.json on
  cl100k's ranks, against HF tokenizers (the reference) and the peers that read the file.

Every engine's ids are checked against the case's reference (tiktoken, or HF for a tokenizer.json) on each corpus
before timing; one that differs is reported and not timed. Engines take turns, a fresh (cold) instance per timed
call. Times are **CPU time** of the process (``time.process_time``: the machine is shared, wall time is noise):
numba with one thread (``NUMBA_NUM_THREADS=1``), ``RAYON_NUM_THREADS=1``, tiktoken's batch with one thread; a peer
with its own thread pool is charged for all its threads. Prints MB per CPU-second at batch 512 and us per text
(the first 200 texts one at a time), best of ``--repeats`` with the range, and each engine's ratio to ours
(compiled). Peers live in their own venv; run e.g.

    PYTHONPATH=$PWD:/work/main/.venv/lib/python3.11/site-packages NUMBA_NUM_THREADS=1 \\
        /work/bench45-venv/bin/python benchmarks/bpe_regex.py [--repeats 5] [--cases cl100k tekken]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bpe_oracles as O  # noqa: E402
from _common import Engine, austen, hf_file_peers, ids_of, machine  # noqa: E402
from bpe import multilingual  # noqa: E402

from triton_textops.ops.bpe.formats import _O200K, CL100K  # noqa: E402
from triton_textops.ops.bpe.formats import PATTERNS as SCANNED  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402

TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
          r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
# DeepSeek-V3's pre-tokenizer (deepseek-ai/DeepSeek-V3 tokenizer.json): three Isolated Splits, then ByteLevel
DEEPSEEK = [r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+",
            r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+"
            r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]
CL_HF = next(p for p, f in SCANNED.items() if f == CL100K)


def hf_file(tmp: Path, name: str, ranks: str, pretokenizers: list[dict]) -> Path:
    """A tokenizer.json on ``ranks`` with the pre-tokenizer steps ``pretokenizers`` then ByteLevel."""
    path = O.write_tokenizer_json(tmp / name, ranks, family_pattern=CL_HF)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [*pretokenizers, {
        "type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def split(pattern: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def ours(make: Callable[[], BPETokenizer]) -> Engine:
    return (make, lambda t, xs: t.encode(xs), lambda t, x: t.encode([x]))


def case(label: str, tmp: Path) -> tuple[dict[str, Engine], Callable[[list[str]], list[list[int]]]]:
    """(engines, the reference's ids of a batch) of one case."""
    import tiktoken  # noqa: PLC0415

    if label in ("cl100k", "o200k", "tekken"):
        name = "cl100k_base" if label == "cl100k" else "o200k_base"
        pattern = {"cl100k": CL_HF, "o200k": _O200K, "tekken": TEKKEN}[label]
        path = O.DATA / O.RANK_FILES[name]
        enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=O.ranks(name), special_tokens={})
        eng: dict[str, Engine] = {
            "ours compiled": ours(lambda: BPETokenizer.from_tiktoken(path, pattern=f"(?:{pattern})",
                                                                     special_tokens={}))}
        if label != "tekken":
            eng["ours scanner"] = ours(lambda: BPETokenizer.from_tiktoken(path, encoding=name))
        eng["tiktoken"] = (lambda: enc, lambda e, xs: e.encode_ordinary_batch(xs, num_threads=1),
                           lambda e, x: e.encode_ordinary(x))
        eng.update(hf_file_peers(hf_file(tmp, label, name, [split(pattern)])))
        return eng, lambda xs: enc.encode_ordinary_batch(xs, num_threads=1)
    if label == "deepseek":
        path = hf_file(tmp, label, "cl100k_base", [split(p) for p in DEEPSEEK])
        peers = hf_file_peers(path)
        ref = peers["hf-tokenizers"][0]()
        eng = {"ours compiled": ours(lambda: BPETokenizer.from_file(path)), **peers}
        return eng, lambda xs: [e.ids for e in ref.encode_batch(xs, add_special_tokens=False)]
    raise SystemExit(f"unknown case {label!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", nargs="+", default=["cl100k", "o200k", "tekken", "deepseek"])
    ap.add_argument("--corpora", nargs="+", default=["english", "multilingual"])
    args = ap.parse_args()
    K.set_num_threads(1)
    corpora = {"english": austen()[:512], "multilingual": multilingual(512)}
    print(machine())
    print(f"batch 512 (cold instance each), one text: the first 200 one at a time; MB per CPU-second, best of "
          f"{args.repeats} [range]; ratio: ours compiled's time / the engine's (> 1: the engine is faster)")
    tmp = Path(tempfile.mkdtemp(prefix="bpe-regex-bench-"))
    for label in args.cases:
        eng, ref = case(label, tmp)
        for cname in args.corpora:
            texts = corpora[cname]
            want = ref(texts)
            live = {}
            for e, (make, enc, _) in eng.items():
                try:
                    got = ids_of(enc(make(), texts))
                except Exception as err:  # noqa: BLE001 - a peer that refuses the file is reported, not timed
                    print(f"  !! {label} / {cname}: {e} does not load or encode it ({str(err).splitlines()[0][:90]})")
                    continue
                bad = sum(a != b for a, b in zip(got, want))
                if bad:
                    print(f"  !! {label} / {cname}: {e} differs from the reference on {bad} of 512 texts: not timed")
                else:
                    live[e] = eng[e]
            nb = sum(len(t.encode()) for t in texts)
            one = texts[:200]
            t512: dict[str, list[float]] = {e: [] for e in live}
            t1: dict[str, list[float]] = {e: [] for e in live}
            for _ in range(args.repeats):
                for e, (make, enc, enc1) in live.items():
                    inst = make()
                    c0 = time.process_time()
                    enc(inst, texts)
                    t512[e].append(time.process_time() - c0)
                    inst = make()
                    c0 = time.process_time()
                    for x in one:
                        enc1(inst, x)
                    t1[e].append((time.process_time() - c0) / len(one))
            print(f"\n{label} / {cname}: 512 texts, {nb / 1e6:.2f} MB")
            base = "ours compiled"
            for e in live:
                a, b = min(t512[e]), max(t512[e])
                print(f"  {e:14s} b=512 {nb / a / 1e6:7.1f} MB/s [{nb / b / 1e6:.1f}-{nb / a / 1e6:.1f}] "
                      f"{min(t512[base]) / a:5.2f}x   one text {min(t1[e]) * 1e6:7.1f} us "
                      f"[{min(t1[e]) * 1e6:.1f}-{max(t1[e]) * 1e6:.1f}] {min(t1[base]) / min(t1[e]):5.2f}x")


if __name__ == "__main__":
    main()
