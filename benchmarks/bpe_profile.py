"""Where the merge step's time goes on long pre-tokens (issue 45): one thread, ``time.thread_time``, min of N.

The texts of a set (benchmarks/bpe_texts.py) are pre-tokenized with tiktoken's own pattern; the pieces that are not
one token are merged by our kernels one piece at a time. A pure-Python run of the same merge order counts the
pair lookups each piece makes (the first round reads the byte-pair table; every merge then looks up the merged
symbol's pair and its left neighbour's) and records their spans, which a kernel then replays alone (hash + probe),
so the merge's time splits into: whole-piece probe, pair lookups (hits / misses), and the rest (heap, scan, links).

    NUMBA_NUM_THREADS=1 python benchmarks/bpe_profile.py [--vocab cl100k_base] [--sets cjk code] [--repeats 5]
    NUMBA_NUM_THREADS=1 python benchmarks/bpe_profile.py --old 63bcc97   # + that commit's merge step, taking turns
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bpe_oracles as O  # noqa: E402
import bpe_texts as T  # noqa: E402
import regex  # noqa: E402

from triton_textops.ops.bpe import merge as M  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402

SETS = {"cjk": T.cjk, "thai": T.thai, "korean": T.korean, "code": T.code, "base64": T.base64_blobs}


def _pieces_kernel(buf, offs, voc, work, out, cache, mode, total):
    """mode 0: encode_piece (whole probe, then merge; no cache); 1: the whole-piece probe alone; 2: the merge."""
    o = 0
    for p in range(offs.shape[0] - 1):
        lo = offs[p]
        hi = offs[p + 1]
        if mode == 0:
            o = encode_piece(buf, lo, hi, voc, work, 0, out, 0, cache, 0)  # noqa: F821
        elif mode == 1:
            h, q = piece_hash(buf, lo, hi)  # noqa: F821
            o = lookup(buf, lo, hi, h, q, voc, True)  # noqa: F821
        else:
            o = bpe_piece(buf, lo, hi, voc, work, 0, out, 0)  # noqa: F821
        total[0] += o


def _spans_kernel(buf, spans, voc, total, chain):
    """Replay pair lookups: piece_hash + lookup of each span ``buf[spans[k, 0]:spans[k, 1]]``; ``chain``: each
    lookup's start depends on the previous one's result (as a merge's next choice does: latency, not throughput)."""
    t = 0
    for k in range(spans.shape[0]):
        a = spans[k, 0] + (((t + 1) >> 40) if chain else 0)  # (ids < 2**31: adds 0)
        h, q = piece_hash(buf, a, spans[k, 1])  # noqa: F821
        t = lookup(buf, a, spans[k, 1], h, q, voc, False)  # noqa: F821
        total[0] += t


# (K.cpu binds the device functions a kernel names to their compiled versions, in a copy of its globals)
PIECES = K.cpu(_pieces_kernel, (("pair_near", "span_pair"),))


def _variant(commit: str) -> object:
    """The pieces kernel with ``merge_symbols`` as it was at ``commit`` (a same-run A/B of the merge step): its
    source, from git, compiled under another name in the merge module's globals."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:triton_textops/ops/bpe/merge.py"], check=True,
                         capture_output=True, text=True).stdout
    node = next(d for d in ast.parse(src).body if isinstance(d, ast.FunctionDef) and d.name == "merge_symbols")
    node.name = f"merge_symbols_{commit}"
    node.decorator_list = []
    ns = dict(vars(M))
    where = Path(tempfile.gettempdir()) / f"bpe_profile_merge_{commit}.py"  # (numba's cache wants a source file)
    where.write_text(ast.unparse(node) + "\n")
    exec(compile(ast.Module([node], []), str(where), "exec"), ns)  # noqa: S102
    K.device(ns[node.name], inline=True)
    return K.cpu(_pieces_kernel, (("pair_near", "span_pair"), ("merge_symbols", node.name)))


SPANS = K.cpu(_spans_kernel)


def replay(piece: bytes, ranks: dict[bytes, int]) -> list[tuple[int, int, bool]]:
    """The pair lookups our merge makes on ``piece`` past the first round: (start, end, hit), tiktoken's order."""
    bounds = list(range(len(piece) + 1))
    got = []

    def rank(i: int) -> int:
        return ranks.get(piece[bounds[i]:bounds[i + 2]], 1 << 40) if i + 2 < len(bounds) else 1 << 40

    rk = [rank(i) for i in range(len(bounds) - 1)]
    while True:
        best = min(rk) if rk else 1 << 40
        if best >= 1 << 40:
            break
        i = rk.index(best)
        del bounds[i + 1]
        del rk[i + 1]
        for a in (i, i - 1):
            if a >= 0 and a + 2 < len(bounds):
                r = rank(a)
                got.append((bounds[a], bounds[a + 2], r < 1 << 40))
                rk[a] = r
            elif a >= 0:
                rk[a] = 1 << 40
    return got


def best(fn, repeats: int) -> float:
    t = []
    for _ in range(repeats):
        a = time.thread_time()
        fn()
        t.append(time.thread_time() - a)
    return min(t)


def profile_set(name: str, args: argparse.Namespace, tok: BPETokenizer, old: object | None) -> None:
    """Print one set's split of the time (see the module's docstring)."""
    enc = O.tiktoken_encoding(args.vocab)
    ranks = O.ranks(args.vocab)
    pat = regex.compile(enc._pat_str)
    voc = tok._voc
    cache = (np.zeros((0, 1), np.int64), np.zeros((0, M.CACHE_SHAPE[2]), np.uint8))  # (no rows: no merge cache)
    texts = SETS[name]()[: args.texts]
    nbytes = sum(len(t.encode()) for t in texts)
    allp = [m.encode() for t in texts for m in pat.findall(t)]
    long = [p for p in allp if p not in ranks]
    buf = np.frombuffer(b"".join(long), dtype=np.uint8)
    offs = np.zeros(len(long) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in long], out=offs[1:])
    work = np.zeros((M.N_WORK_ROWS, max(len(p) for p in long)), dtype=np.int32)
    out = np.zeros(work.shape[1], dtype=np.int32)
    total = np.zeros(1, dtype=np.int64)
    spans, hits, merges = [], 0, 0
    for p, a in zip(long, offs[:-1], strict=True):
        for s, e, hit in replay(p, ranks):
            spans.append((a + s, a + e))
            hits += hit
        merges += len(p) - len(enc._encode_single_piece(p))
    sp = np.array(spans, dtype=np.int64).reshape(-1, 2)
    rows = {"tokenizer.encode (whole set, merge cache warm)": best(lambda: tok.encode(texts), args.repeats)}
    for mode, what in ((0, "encode_piece, merged pieces"), (1, "  whole-piece probe"), (2, "  bpe_piece")):
        rows[what] = best(lambda m=mode: PIECES(buf, offs, voc, work, out, cache, m, total), args.repeats)
    if old is not None:
        t_new, t_old = [], []
        for _ in range(args.repeats):
            t_new.append(best(lambda: PIECES(buf, offs, voc, work, out, cache, 2, total), 1))
            t_old.append(best(lambda: old(buf, offs, voc, work, out, cache, 2, total), 1))
        rows[f"  bpe_piece, {args.old} (taking turns)"] = min(t_old)
        rows["  bpe_piece, this tree (taking turns)"] = min(t_new)
    rows["    pair lookups replayed"] = best(lambda: SPANS(buf, sp, voc, total, False), args.repeats)
    rows["    pair lookups replayed, chained"] = best(lambda: SPANS(buf, sp, voc, total, True), args.repeats)
    rows["    rest of bpe_piece (scan / heap, links)"] = rows["  bpe_piece"] - rows["    pair lookups replayed"]
    nlong = sum(len(p) > M.SHORT for p in long)
    print(f"\n{args.vocab} / {name}: {len(texts)} texts, {nbytes / 1e6:.2f} MB, {len(allp)} pre-tokens, "
          f"{len(long)} merged ({len(set(long))} distinct, {nlong} over SHORT={M.SHORT} bytes, "
          f"{buf.shape[0] / nbytes:.0%} of the bytes), {merges} merges, {len(sp)} pair lookups "
          f"({hits / max(len(sp), 1):.0%} hits)")
    whole = rows["tokenizer.encode (whole set, merge cache warm)"]
    for what, t in rows.items():
        print(f"  {what:48s} {t * 1e3:8.2f} ms  {t / whole:6.1%}")
    print(f"  per merge: {rows['  bpe_piece'] / max(merges, 1) * 1e9:.0f} ns; per pair lookup "
          f"{rows['    pair lookups replayed'] / max(len(sp), 1) * 1e9:.0f} ns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--sets", nargs="+", default=["cjk", "code"], choices=list(SETS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--texts", type=int, default=1000, help="the first N texts of each set")
    ap.add_argument("--old", help="a commit: time its merge_symbols against this tree's, taking turns")
    args = ap.parse_args()
    K.set_num_threads(1)
    tok = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[args.vocab], encoding=args.vocab)
    old = _variant(args.old) if args.old else None
    for name in args.sets:
        profile_set(name, args, tok, old)


if __name__ == "__main__":
    main()
