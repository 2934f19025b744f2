#!/usr/bin/env python3
"""Generate ``triton_textops/data/nfc_tables.npz``: Unicode NFC as HuggingFace ``tokenizers`` does it, measured.

Why: Qwen2's tokenizer normalizes with ``tokenizers.normalizers.NFC()``, which uses the Rust crate
``unicode-normalization-alignments`` and its own (older) Unicode data, not the running Python's ``unicodedata``.
So everything is measured on the oracle, once, and shipped as package data (the layout is described in
:mod:`triton_textops.ops.bpe.nfc`):

- the full canonical decomposition of every code point (surrogates skipped): HF's ``NFD`` of it alone;
- the canonical combining class (ccc) of every code point NFD leaves as is, measured by reordering probes on HF's
  NFD (``gen_unicode_tables._hf_ccc``: ``"x"+c+r`` against reference marks ``r`` of known classes);
- the composition pairs: for each code point NFC leaves alone but NFD changes (a primary composite ``c``, Hangul
  aside), the pair ``(NFC(d[:-1]), d[-1])`` of its decomposition ``d`` (or another split of ``d`` when that one
  does not give ``c``), kept when HF's NFC turns the pair into ``c``; Hangul (L + V, LV + T) is the kernel's
  arithmetic, checked on HF for every L and every syllable followed by every jamo;
- QC_BIT, NFC's quick check: set for a code point NFC changes alone, and for the second code point of a pair
  (it can compose with a character before it). With the ccc order check this is UAX #15's quick check.

Then the kernel's algorithm (the CPU kernel of :mod:`triton_textops.ops.bpe.nfc`, on these arrays) runs against
HF's NFC on every code point alone, every code point in contexts (``a c U+0301``, ``c U+0301 U+0316``, after a
Hangul L, LV and LVT, after U+0B47), every first x second of the pairs, every syllable x jamo, every ordered
pair of marks after ``a``, and random strings of interesting characters; and ``nfc_quick`` must be False only on
texts NFC leaves as they are. The number of differences is printed; any difference fails the script.

Usage: python scripts/gen_nfc_tables.py [OUT.npz]   (needs tokenizers==0.22.2, the dev pin)
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_unicode_tables import N_CP, SEPS, _batched, _hf_ccc  # noqa: E402

BLOCK = 128
HANGUL_S, HANGUL_N = 0xAC00, 11172
JAMO = [*range(0x1100, 0x1200), *range(0xA960, 0xA980), *range(0xD7B0, 0xD800)]


def _cps() -> list[int]:
    return [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]


def _u8(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def measure(nfc, nfd) -> dict:
    """Decompositions, classes, pairs and quick-check flags, measured on HF (see the module docstring)."""
    t0 = time.time()
    cps = _cps()
    hf_nfd: list[str | None] = [None] * N_CP
    hf_nfc: list[str | None] = [None] * N_CP
    for cp, d, c in zip(cps, _batched(nfd, [chr(cp) for cp in cps], SEPS), _batched(nfc, [chr(cp) for cp in cps], SEPS)):
        hf_nfd[cp], hf_nfc[cp] = d, c
    ccc, diff = _hf_ccc(nfd, hf_nfd)
    print(f"measured NFD/NFC/ccc of {len(cps)} code points in {time.time() - t0:.0f} s; HF's ccc differs from "
          f"unicodedata on {len(diff)} code points")
    for cp in cps:
        for d in hf_nfd[cp]:
            if ccc[ord(d)] < 0 or hf_nfd[ord(d)] != d:
                raise RuntimeError(f"U+{cp:04X}: its NFD holds U+{ord(d):04X}, which NFD changes")
    # Hangul syllables: HF's NFD is the arithmetic one
    for s in range(HANGUL_N):
        t = s % 28
        want = [0x1100 + s // 588, 0x1161 + (s % 588) // 28] + ([0x11A7 + t] if t else [])
        if [ord(c) for c in hf_nfd[HANGUL_S + s]] != want or hf_nfc[HANGUL_S + s] != chr(HANGUL_S + s):
            raise RuntimeError(f"HF's NFD/NFC of the syllable U+{HANGUL_S + s:04X} is not the arithmetic one")
    # composition pairs
    composites = [cp for cp in cps if hf_nfd[cp] != chr(cp) and hf_nfc[cp] == chr(cp)
                  and not HANGUL_S <= cp < HANGUL_S + HANGUL_N]
    cands: dict[int, list[tuple[int, int]]] = {}
    for cp in composites:
        d = hf_nfd[cp]
        splits = [len(d) - 1] + [k for k in range(len(d) - 1)]
        for k in splits:
            rest = hf_nfc[ord(d[0])] if len(d) == 2 and k == 1 else None
            rest = nfc(d[:k] + d[k + 1 :]) if rest is None else rest
            if len(rest) == 1:
                cands.setdefault(cp, []).append((ord(rest), ord(d[k])))
    pairs: dict[tuple[int, int], int] = {}
    for cp, cl in cands.items():
        for a, b in cl:
            if nfc(chr(a) + chr(b)) == chr(cp):
                pairs[(a, b)] = cp
                break
    missing = [cp for cp in composites if cp not in pairs.values()]
    if missing:
        raise RuntimeError(f"no pair found for the composites {[f'U+{cp:04X}' for cp in missing[:10]]}")
    for (a, b), c in pairs.items():
        if _u8(c) > _u8(a) + _u8(b):
            raise RuntimeError(f"composite U+{c:04X} is longer in UTF-8 than its pair")
        if 0x1100 <= a < 0x1200 or HANGUL_S <= a < HANGUL_S + HANGUL_N:
            raise RuntimeError(f"a table pair starts with Hangul U+{a:04X}")
        if ccc[a] > 0:
            raise RuntimeError(f"a pair starts with the mark U+{a:04X}")
    seps = {ord(s) for s in SEPS}
    if any(a in seps or b in seps for a, b in pairs):
        raise RuntimeError("a batch separator composes: the batched measurements are not valid")
    seconds = {b for _, b in pairs} | set(range(0x1161, 0x1161 + 21)) | set(range(0x11A8, 0x11A8 + 27))
    print(f"{len(composites)} primary composites, {len(pairs)} pairs, {len(seconds)} code points compose with one "
          "before them")
    return {"cps": cps, "nfd": hf_nfd, "nfc": hf_nfc, "ccc": ccc, "pairs": pairs, "seconds": seconds}


def build(m: dict) -> dict[str, np.ndarray]:
    """The packed arrays of :mod:`triton_textops.ops.bpe.nfc` from the measurements."""
    from triton_textops.ops.bpe import nfc as N  # noqa: PLC0415

    ccc, hf_nfd, hf_nfc = m["ccc"], m["nfd"], m["nfc"]
    info = np.zeros(N_CP, dtype=np.int64)
    pool: list[int] = []
    seen: dict[str, int] = {}
    firsts = {a for a, _ in m["pairs"]}
    for cp in m["cps"]:
        ch = chr(cp)
        v = 0
        if hf_nfc[cp] != ch or cp in m["seconds"]:
            v |= N.QC_BIT
        if cp in firsts:
            v |= N.FIRST_BIT
        d = hf_nfd[cp]
        if d == ch:
            v |= int(ccc[cp])
            if (hf_nfc[cp] != ch) and not HANGUL_S <= cp < HANGUL_S + HANGUL_N:
                raise RuntimeError(f"U+{cp:04X}: NFD keeps it, NFC changes it")
        elif not HANGUL_S <= cp < HANGUL_S + HANGUL_N:
            if len(d) > N.DLEN_MASK:
                raise RuntimeError(f"decomposition of U+{cp:04X} too long")
            if d not in seen:
                seen[d] = len(pool)
                pool.extend(ord(c) | (int(ccc[ord(c)]) | (N.SECOND if ord(c) in m["seconds"] else 0)) << N.CP_BITS
                            for c in d)
            if seen[d] > N.DOFF_MASK:
                raise RuntimeError("the decomposition pool outgrew its field")
            v |= len(d) << N.DLEN_SHIFT | seen[d] << N.DOFF_SHIFT
            if not v & N.QC_BIT and ccc[ord(d[0])] != 0:
                raise RuntimeError(f"U+{cp:04X}: NFC keeps it, yet it decomposes to a mark first")
        info[cp] = v
    if info.max() >= 2**31:
        raise RuntimeError("packed entries overflow int32")
    if np.any(info[:0x80] & ~N.FIRST_BIT):
        raise RuntimeError("an ASCII code point has a class, a decomposition or QC_BIT: nfc_quick's shortcut fails")
    blocks: dict[bytes, int] = {}
    idx = np.zeros(N_CP // BLOCK, dtype=np.int32)
    data = info.astype(np.int32).reshape(-1, BLOCK)
    uniq: list[np.ndarray] = []
    for b in range(idx.shape[0]):
        key = data[b].tobytes()
        if key not in blocks:
            blocks[key] = len(uniq)
            uniq.append(data[b])
        idx[b] = blocks[key]
    keys = sorted((a << N.CP_BITS | b, c) for (a, b), c in m["pairs"].items())
    return {
        "idx": idx,
        "info": np.concatenate(uniq).astype(np.int32),
        "pool": np.array(pool, dtype=np.int32),
        "comp_keys": np.array([k for k, _ in keys], dtype=np.int64),
        "comp_vals": np.array([c for _, c in keys], dtype=np.int32),
    }


def verify(arrays: dict[str, np.ndarray], m: dict, nfc) -> int:
    """The kernel (CPU) on ``arrays`` against HF's NFC; returns the number of differing texts (printed)."""
    from triton_textops.ops.bpe import nfc as N  # noqa: PLC0415

    tabs = N.table_tuple(arrays)
    cps, ccc = m["cps"], m["ccc"]
    marks = [cp for cp in cps if ccc[cp] > 0]
    firsts = sorted({a for a, _ in m["pairs"]} | set(m["pairs"].values()))
    seconds = sorted(m["seconds"])
    decomposing = [cp for cp in cps if m["nfd"][cp] != chr(cp)]
    groups: dict[str, list[str]] = {
        "alone": [chr(c) for c in cps],
        "a c U+0301": ["a" + chr(c) + "\u0301" for c in cps],
        "c U+0301 U+0316": [chr(c) + "\u0301\u0316" for c in cps],
        "after L, LV, LVT, U+0B47": [p + chr(c) for c in cps for p in ("\u1100", "\uac00", "\uac01", "\u0b47")],
        "first x second": [chr(a) + chr(b) for a in firsts for b in seconds],
        "syllable x jamo": [chr(s) + chr(j) for s in range(HANGUL_S, HANGUL_S + HANGUL_N) for j in JAMO[:0x100]]
                           + [chr(a) + chr(b) for a in JAMO for b in JAMO],
        "a mark mark": ["a" + chr(p) + chr(q) for p in marks[::3] for q in marks[::3]],
    }
    rng = random.Random(0)
    pool = marks + firsts + seconds + decomposing[::4] + [ord(c) for c in "aeAE <>="] + JAMO[:0x100] \
        + list(range(HANGUL_S, HANGUL_S + HANGUL_N, 97))
    groups["random"] = ["".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 16))) for _ in range(200000)]
    total = 0
    for name, texts in groups.items():
        t0 = time.time()
        want = [s.encode() for s in _batched(nfc, texts, SEPS)]
        got = N.nfc_normalize(texts, tables=tabs, quick=False)
        quick = N.nfc_normalize(texts, tables=tabs, quick=True)
        bad = [t for t, g, w in zip(texts, got, want) if g != w]
        qbad = [t for t, g, w in zip(texts, quick, want) if g != w]
        print(f"  {name}: {len(texts)} texts, {len(bad)} differences, {len(qbad)} with the quick check "
              f"({time.time() - t0:.1f} s)")
        for t in (bad + qbad)[:5]:
            print("    e.g.", [f"U+{ord(c):04X}" for c in t])
        total += len(bad) + len(qbad)
    return total


def main(argv: list[str]) -> int:
    import tokenizers
    from tokenizers.normalizers import NFC, NFD

    default = Path(__file__).resolve().parents[1] / "triton_textops/data/nfc_tables.npz"
    out = Path(argv[1]) if len(argv) > 1 else default
    nfc, nfd = NFC().normalize_str, NFD().normalize_str
    m = measure(nfc, nfd)
    arrays = build(m)
    arrays["tokenizers_version"] = np.array(tokenizers.__version__)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes; {arrays['info'].shape[0] // BLOCK} blocks, "
          f"{arrays['pool'].shape[0]} pool entries, {arrays['comp_keys'].shape[0]} pairs) from tokenizers "
          f"{tokenizers.__version__}")
    from triton_textops.ops.bpe import nfc as N  # noqa: PLC0415

    print(f"NFC_EXPAND (max output bytes per input byte) = {N.expansion(N.table_tuple(arrays))}")
    ndiff = verify(arrays, m, nfc)
    print(f"verification: {ndiff} differences against HF's NFC")
    return 1 if ndiff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
