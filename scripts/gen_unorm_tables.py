#!/usr/bin/env python3
"""Generate ``triton_textops/data/unorm_tables.npz``: Unicode NFC, NFD, NFKC, NFKD, Lowercase and StripAccents
as HuggingFace ``tokenizers`` does them, measured.

Why: Qwen2's tokenizer normalizes with ``tokenizers.normalizers.NFC()``, Claude's with ``NFKC()``, SentencePiece
conversions with ``NFKC``/``Lowercase``/``StripAccents`` sequences; these use the Rust crate
``unicode-normalization-alignments`` and its own (older) Unicode data, not the running Python's ``unicodedata``.
So everything is measured on the oracle, once, and shipped as package data (the layout is described in
:mod:`triton_textops.ops.core.unorm`). For NFC (NFKC, NFD, NFKD the same way, with HF's NFKD as the
decomposition and the form's own output for the quick check; NFD/NFKD compose nothing):

- the full canonical decomposition of every code point (surrogates skipped): HF's ``NFD`` of it alone;
- the canonical combining class (ccc) of every code point NFD leaves as is, measured by reordering probes on HF's
  NFD (``gen_unicode_tables._hf_ccc``: ``"x"+c+r`` against reference marks ``r`` of known classes);
- the composition pairs: for each code point NFC leaves alone but NFD changes (a primary composite ``c``, Hangul
  aside), the pair ``(NFC(d[:-1]), d[-1])`` of its decomposition ``d`` (or another split of ``d`` when that one
  does not give ``c``), kept when HF's NFC turns the pair into ``c``; Hangul (L + V, LV + T) is the kernel's
  arithmetic, checked on HF for every L and every syllable followed by every jamo;
- QC_BIT, NFC's quick check: set for a code point NFC changes alone, and for the second code point of a pair
  (it can compose with a character before it). With the ccc order check this is UAX #15's quick check.

The maps: HF's ``Lowercase`` and ``StripAccents`` of every code point alone (several code points go to the pool).

Then the kernel's algorithm (the CPU kernel of :mod:`triton_textops.ops.core.unorm`, on these arrays) runs, for
each of the four forms, against HF's form on every code point alone, every code point in contexts (``a c U+0301``, ``c U+0301 U+0316``, after a
Hangul L, LV and LVT, after U+0B47), every first x second of the pairs, every syllable x jamo, every ordered
pair of marks after ``a``, and random strings of interesting characters; and ``nfc_quick`` must be False only on
texts the form leaves as they are; the maps against HF's Lowercase / StripAccents on every code point alone, in
contexts (``A c Σ``, ``c U+0301``) and random strings. The number of differences is printed; any difference
fails the script.

Usage: python scripts/gen_unorm_tables.py [OUT.npz]   (needs tokenizers==0.22.2, the dev pin)
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_unicode_tables import N_CP, _batched, _hf_ccc  # noqa: E402

# batch separators: private-use starters no form, map or probe here changes or produces (NFKD makes spaces and
# U+4E00, the separators of the BERT tables' generator)
SEPS = ("\U000F0000", "\U00100000")

BLOCK = 128
HANGUL_S, HANGUL_N = 0xAC00, 11172
JAMO = [*range(0x1100, 0x1200), *range(0xA960, 0xA980), *range(0xD7B0, 0xD800)]


def _cps() -> list[int]:
    return [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]


def _u8(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def measure(nfc, nfd, nfkc, nfkd) -> dict:
    """Decompositions, classes, pairs and quick-check flags, measured on HF (see the module docstring)."""
    t0 = time.time()
    cps = _cps()
    hf_nfd: list[str | None] = [None] * N_CP
    hf_nfc: list[str | None] = [None] * N_CP
    for cp, d, c in zip(cps, _batched(nfd, [chr(cp) for cp in cps], SEPS), _batched(nfc, [chr(cp) for cp in cps], SEPS)):
        hf_nfd[cp], hf_nfc[cp] = d, c
    hf_nfkd: list[str | None] = [None] * N_CP
    hf_nfkc: list[str | None] = [None] * N_CP
    for cp, d, c in zip(cps, _batched(nfkd, [chr(cp) for cp in cps], SEPS), _batched(nfkc, [chr(cp) for cp in cps],
                                                                                       SEPS)):
        hf_nfkd[cp], hf_nfkc[cp] = d, c
    ccc, diff = _hf_ccc(nfd, hf_nfd)
    print(f"measured NFD/NFC/ccc of {len(cps)} code points in {time.time() - t0:.0f} s; HF's ccc differs from "
          f"unicodedata on {len(diff)} code points")
    for cp in cps:
        for d in hf_nfd[cp]:
            if ccc[ord(d)] < 0 or hf_nfd[ord(d)] != d:
                raise RuntimeError(f"U+{cp:04X}: its NFD holds U+{ord(d):04X}, which NFD changes")
        for d in hf_nfkd[cp]:
            if ccc[ord(d)] < 0 or hf_nfkd[ord(d)] != d:
                raise RuntimeError(f"U+{cp:04X}: its NFKD holds U+{ord(d):04X}, which NFKD changes")
        if hf_nfkc[cp] != nfc(hf_nfkd[cp]):
            raise RuntimeError(f"U+{cp:04X}: HF's NFKC of it is not the NFC of its NFKD")
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
    return {"cps": cps, "nfd": hf_nfd, "nfc": hf_nfc, "nfkd": hf_nfkd, "nfkc": hf_nfkc, "ccc": ccc, "pairs": pairs,
            "seconds": seconds}


def measure_maps(lower, strip) -> dict:
    """HF's Lowercase and StripAccents of every code point alone."""
    cps = _cps()
    out = {}
    for name, fn in (("lower", lower), ("strip", strip)):
        got: list[str | None] = [None] * N_CP
        for cp, r in zip(cps, _batched(fn, [chr(cp) for cp in cps], SEPS)):
            got[cp] = r
        out[name] = got
    for cp in range(0x80):
        if out["lower"][cp] != chr(cp).lower() or out["strip"][cp] != chr(cp):
            raise RuntimeError(f"U+{cp:04X}: HF's Lowercase / StripAccents of ASCII is not map_write's shortcut")
    print(f"maps: Lowercase changes {sum(out['lower'][c] != chr(c) for c in cps)} code points "
          f"({sum(len(out['lower'][c]) > 1 for c in cps)} to several), StripAccents removes "
          f"{sum(out['strip'][c] == '' for c in cps)}, changes otherwise "
          f"{sum(out['strip'][c] not in ('', chr(c)) for c in cps)}")
    return out


def _blocks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A two-level table of per-code-point ``values``: (block number of each BLOCK code points, the distinct
    blocks packed one after another), int32 both; equal blocks are stored once."""
    data = values.astype(np.int32).reshape(-1, BLOCK)
    blocks: dict[bytes, int] = {}
    uniq: list[np.ndarray] = []
    idx = np.zeros(data.shape[0], dtype=np.int32)
    for b in range(idx.shape[0]):
        key = data[b].tobytes()
        if key not in blocks:
            blocks[key] = len(uniq)
            uniq.append(data[b])
        idx[b] = blocks[key]
    return idx, np.concatenate(uniq).astype(np.int32)


def build(m: dict, form: str) -> dict[str, np.ndarray]:
    """The packed arrays of ``form`` (:mod:`triton_textops.ops.core.unorm`) from the measurements."""
    from triton_textops.ops.core import unorm as N  # noqa: PLC0415

    composing = form in N.COMPOSING
    ccc, hf_nfd, hf_nfc = m["ccc"], m["nfkd" if form.startswith("nfk") else "nfd"], m[form]
    info = np.zeros(N_CP, dtype=np.int64)
    pool: list[int] = []
    seen: dict[str, int] = {}
    firsts = {a for a, _ in m["pairs"]} if composing else set()
    seconds = m["seconds"] if composing else set()
    for cp in m["cps"]:
        ch = chr(cp)
        v = 0
        if hf_nfc[cp] != ch or cp in seconds:
            v |= N.QC_BIT
        if cp in firsts:
            v |= N.FIRST_BIT
        d = hf_nfd[cp]
        if d == ch:
            v |= int(ccc[cp])
            if (hf_nfc[cp] != ch) and not HANGUL_S <= cp < HANGUL_S + HANGUL_N:
                raise RuntimeError(f"U+{cp:04X}: the decomposition keeps it, {form} changes it")
        elif not HANGUL_S <= cp < HANGUL_S + HANGUL_N:
            if len(d) > N.DLEN_MASK:
                raise RuntimeError(f"decomposition of U+{cp:04X} too long")
            if d not in seen:
                seen[d] = len(pool)
                pool.extend(ord(c) | (int(ccc[ord(c)]) | (N.SECOND if ord(c) in seconds else 0)) << N.CP_BITS
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
    idx, packed = _blocks(info)
    keys = sorted((a << N.CP_BITS | b, c) for (a, b), c in m["pairs"].items())
    return {
        f"{form}_idx": idx,
        f"{form}_info": packed,
        f"{form}_pool": np.array(pool, dtype=np.int32),
        "comp_keys": np.array([k for k, _ in keys], dtype=np.int64),
        "comp_vals": np.array([c for _, c in keys], dtype=np.int32),
    }


def build_maps(mm: dict) -> dict[str, np.ndarray]:
    """The maps' arrays (:mod:`triton_textops.ops.core.unorm`) from :func:`measure_maps`."""
    out: dict[str, np.ndarray] = {}
    pool: list[int] = []
    for name in ("lower", "strip"):
        vals = np.zeros(N_CP, dtype=np.int64)  # 0: kept as it is
        for cp in _cps():
            r = mm[name][cp]
            if r == chr(cp):
                continue
            if r == "":
                vals[cp] = -1
            elif len(r) == 1:
                vals[cp] = ord(r)
            else:
                vals[cp] = -2 - len(pool)
                pool.extend([len(r), *(ord(c) for c in r)])
        out[f"{name}_idx"], out[f"{name}_map"] = _blocks(vals)
    out["map_pool"] = np.array(pool or [0], dtype=np.int32)
    return out


def verify(arrays: dict[str, np.ndarray], m: dict, form: str, fn) -> int:
    """The kernel (CPU) on ``arrays`` against HF's ``form`` (``fn``); returns the number of differing texts
    (printed)."""
    from triton_textops.ops.core import unorm as N  # noqa: PLC0415

    tabs = N.table_tuple(arrays, form)
    cps, ccc = m["cps"], m["ccc"]
    marks = [cp for cp in cps if ccc[cp] > 0]
    firsts = sorted({a for a, _ in m["pairs"]} | set(m["pairs"].values()))
    seconds = sorted(m["seconds"])
    decomposing = [cp for cp in cps if m["nfkd"][cp] != chr(cp)]
    groups: dict[str, list[str]] = {
        "alone": [chr(c) for c in cps],
        "a c U+0301": ["a" + chr(c) + "\u0301" for c in cps],
        "c U+0301 U+0316": [chr(c) + "\u0301\u0316" for c in cps],
        "after L, LV, LVT, U+0B47": [p + chr(c) for c in cps for p in ("\u1100", "\uac00", "\uac01", "\u0b47")],
        "first x second": [chr(a) + chr(b) for a in firsts for b in seconds],
        "syllable x jamo": [chr(s) + chr(j) for s in range(HANGUL_S, HANGUL_S + HANGUL_N) for j in JAMO[:0x100]]
                           + [chr(a) + chr(b) for a in JAMO for b in JAMO],
        "a mark mark": ["a" + chr(p) + chr(q) for p in marks[::3] for q in marks[::3]],
        "decomposing x mark": [chr(c) + chr(q) for c in decomposing for q in marks[::29]],
    }
    rng = random.Random(0)
    pool = marks + firsts + seconds + decomposing[::4] + [ord(c) for c in "aeAE <>="] + JAMO[:0x100] \
        + list(range(HANGUL_S, HANGUL_S + HANGUL_N, 97))
    groups["random"] = ["".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 16))) for _ in range(200000)]
    total = 0
    for name, texts in groups.items():
        t0 = time.time()
        want = [s.encode() for s in _batched(fn, texts, SEPS)]
        got = N.nfc_normalize(texts, tables=tabs, quick=False)
        quick = N.nfc_normalize(texts, tables=tabs, quick=True)
        bad = [t for t, g, w in zip(texts, got, want) if g != w]
        qbad = [t for t, g, w in zip(texts, quick, want) if g != w]
        print(f"  {form} {name}: {len(texts)} texts, {len(bad)} differences, {len(qbad)} with the quick check "
              f"({time.time() - t0:.1f} s)")
        for t in (bad + qbad)[:5]:
            print("    e.g.", [f"U+{ord(c):04X}" for c in t])
        total += len(bad) + len(qbad)
    return total


def verify_maps(arrays: dict[str, np.ndarray], fns: dict) -> int:
    """The map kernel (CPU) against HF's Lowercase / StripAccents; returns the number of differing texts."""
    from triton_textops.ops.core import unorm as N  # noqa: PLC0415

    maps = N.map_tuple(arrays)
    cps = _cps()
    rng = random.Random(1)
    groups = {
        "alone": [chr(c) for c in cps],
        "A c Sigma": ["A" + chr(c) + "\u03a3" for c in cps],
        "c U+0301": [chr(c) + "\u0301" for c in cps],
        "random": ["".join(chr(rng.choice(cps[:0x3000] + [0x130, 0x3a3, 0x301, 0x1e9e])) for _ in range(12))
                   for _ in range(100000)],
    }
    total = 0
    for name, fn in fns.items():
        for g, texts in groups.items():
            want = [s.encode() for s in _batched(fn, texts, SEPS)]
            got = N.map_normalize(texts, name, tables=maps)
            bad = [t for t, x, w in zip(texts, got, want) if x != w]
            print(f"  {name} {g}: {len(texts)} texts, {len(bad)} differences")
            for t in bad[:5]:
                print("    e.g.", [f"U+{ord(c):04X}" for c in t])
            total += len(bad)
    return total


def main(argv: list[str]) -> int:
    import tokenizers
    from tokenizers.normalizers import NFC, NFD, NFKC, NFKD, Lowercase, StripAccents

    from triton_textops.ops.core import unorm as N  # noqa: PLC0415

    default = Path(__file__).resolve().parents[1] / "triton_textops/data/unorm_tables.npz"
    out = Path(argv[1]) if len(argv) > 1 else default
    fns = {"nfc": NFC().normalize_str, "nfd": NFD().normalize_str, "nfkc": NFKC().normalize_str,
           "nfkd": NFKD().normalize_str}
    maps = {"lower": Lowercase().normalize_str, "strip": StripAccents().normalize_str}
    m = measure(fns["nfc"], fns["nfd"], fns["nfkc"], fns["nfkd"])
    arrays: dict[str, np.ndarray] = {}
    for form in N.FORMS:
        arrays.update(build(m, form))
    arrays.update(build_maps(measure_maps(maps["lower"], maps["strip"])))
    arrays["tokenizers_version"] = np.array(tokenizers.__version__)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes; {arrays['comp_keys'].shape[0]} pairs) from tokenizers "
          f"{tokenizers.__version__}")
    for form in N.FORMS:
        print(f"  {form}: {arrays[form + '_info'].shape[0] // BLOCK} blocks, {arrays[form + '_pool'].shape[0]} pool "
              f"entries, expansion (max output bytes per input byte) {N.expansion(N.table_tuple(arrays, form))}")
    print(f"  maps: expansion lower {N.map_expansion(arrays, 'lower')}, strip {N.map_expansion(arrays, 'strip')}")
    ndiff = sum(verify(arrays, m, form, fns[form]) for form in N.FORMS) + verify_maps(arrays, maps)
    print(f"verification: {ndiff} differences against HF")
    return 1 if ndiff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
