"""Unicode NFC exactly as HuggingFace ``tokenizers`` does it (``normalizers.NFC()``), as device functions.

Qwen2's ``tokenizer.json`` normalizes with NFC before pre-tokenizing, so the BPE kernel runs :func:`nfc_quick` on
each text segment and, when it says the bytes may change, :func:`nfc_write`. HF's NFC comes from the Rust crate
``unicode-normalization-alignments``, whose Unicode data is older than the running Python's ``unicodedata``; the
tables are therefore *measured* on the oracle by ``scripts/gen_nfc_tables.py`` (which also runs this module's
algorithm against the oracle on every code point alone and in contexts: 0 differences) and shipped as package
data (``data/nfc_tables.npz``). Nothing is rebuilt from ``unicodedata``.

The algorithm is the crate's: full canonical decomposition (Hangul syllables algorithmically), a stable sort of
each run of combining marks by canonical combining class (ccc), then canonical composition (a mark composes
with the last starter unless an uncomposed mark of a class >= its own stands between them; a starter composes
with the starter right before it, as Hangul LV + T or U+0B47 + U+0B3E). It needs no scratch memory: the
decomposed text is never stored. It is walked with a cursor (input byte, index in that code point's
decomposition); a run of marks is walked once to find its end, then its marks are streamed in canonical order,
one walk per class present in the run when it is not already in order (at most the number of distinct classes,
a few dozen; in practice one or two), and the run is walked once to compose and once to write. Time is linear
in the segment (times that small constant), no allocation, no recursion.

Tables (:func:`nfc_tables`, one tuple, the kernels' ``tabs`` argument):

0. ``idx`` int32 [0x110000 >> 7]: block number of each 128-code-point block;
1. ``info`` int32 [blocks * 128]: per code point ``ccc | QC_BIT | decomposition length << 9 | pool offset << 12``
   (``QC_BIT``: NFC may change a text holding it: it is changed by NFC alone, or it composes with a character
   before it; the length is 0 for a code point that does not decompose and for Hangul syllables);
2. ``pool`` int32: decompositions, each entry ``code point | ccc << 21``;
3. ``comp_keys`` int64, sorted: ``first << 21 | second`` of every composition pair (Hangul excluded);
4. ``comp_vals`` int32: the composite of each pair.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from triton_textops.ops import kernels as K
from triton_textops.ops.text import pack_host, utf8_at

try:
    from numba import cuda
except ImportError:  # pragma: no cover - numba without its CUDA target: GPU entry points never compiled
    cuda = None

BLOCK_SHIFT = 7
BLOCK_MASK = (1 << BLOCK_SHIFT) - 1
CCC_MASK = 0xFF
QC_BIT = 1 << 8
DLEN_SHIFT, DLEN_MASK, DOFF_SHIFT = 9, 7, 12
CP_BITS = 21
CP_MASK = (1 << CP_BITS) - 1
# Hangul (Unicode ch. 3.12); the generator checks HF's NFD/NFC of every syllable and jamo pair against these
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
N_COUNT = V_COUNT * T_COUNT
S_COUNT = L_COUNT * N_COUNT
NO_CLASS = 256  # above every ccc


def load_tables(path: Any = None) -> dict[str, np.ndarray]:
    """The arrays of ``nfc_tables.npz`` (the packaged one by default) as a dict."""
    if path is None:
        return dict(_packaged())
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@functools.lru_cache(maxsize=1)
def _packaged() -> dict[str, np.ndarray]:
    ref = resources.files("triton_textops") / "data" / "nfc_tables.npz"
    with resources.as_file(ref) as p, np.load(p) as z:
        return {k: z[k] for k in z.files}


TABLE_NAMES = ("idx", "info", "pool", "comp_keys", "comp_vals")


def table_tuple(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The kernels' ``tabs`` tuple (host arrays) from a dict of table arrays."""
    return tuple(np.ascontiguousarray(arrays[k]) for k in TABLE_NAMES)


@functools.lru_cache(maxsize=8)
def nfc_tables(target: str, xp: Any = np) -> tuple:
    """The packaged tables as the ONE tuple the device functions take (``tabs``), on ``target``'s device
    ("cpu": the host arrays; "cuda": uploaded once, cached)."""
    return tuple(K.to_device(a, target, xp) for a in table_tuple(_packaged()))


HANGUL_EXPAND = 3  # a Hangul syllable (3 bytes) decomposes to at most 3 jamo of 3 bytes each


def expansion(tabs: tuple) -> int:
    """Most output bytes of NFC per input byte, from a host ``tabs`` tuple: NFC's output is the canonical
    decomposition, reordered (same bytes), then composed (the generator checks that a composite never has more
    UTF-8 bytes than its pair), so each code point's decomposition bounds its share of the output."""
    idx, info, pool = tabs[0], tabs[1], tabs[2]
    elems = pool.astype(np.int64) & CP_MASK
    csum = np.concatenate([[0], np.cumsum(_utf8_len(elems))])
    full = info[(idx.astype(np.int64)[:, None] << BLOCK_SHIFT) + np.arange(1 << BLOCK_SHIFT)].reshape(-1)
    ln = (full >> DLEN_SHIFT) & DLEN_MASK
    has = np.nonzero(ln)[0]
    off = full[has] >> DOFF_SHIFT
    out_bytes = csum[off + ln[has]] - csum[off]
    worst = int(np.max(-(-out_bytes // _utf8_len(has)))) if has.size else 1
    return max(worst, HANGUL_EXPAND)


def _utf8_len(cps: np.ndarray) -> np.ndarray:
    return np.where(cps < 0x80, 1, np.where(cps < 0x800, 2, np.where(cps < 0x10000, 3, 4)))


def __getattr__(name: str) -> Any:
    """``NFC_EXPAND``: max output bytes of NFC per input byte (3 with HF's tables), measured from the packaged
    tables on first use (importing this module reads no file)."""
    if name == "NFC_EXPAND":
        return _packaged_expansion()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=1)
def _packaged_expansion() -> int:
    return expansion(table_tuple(_packaged()))


# ------------------------------------------------------------------------------------ device code


@K.device(inline=True)
def nfc_info(cp, tabs):
    """The packed table entry of code point ``cp`` (0 .. 0x10FFFF)."""
    return int(tabs[1][(int(tabs[0][cp >> BLOCK_SHIFT]) << BLOCK_SHIFT) | (cp & BLOCK_MASK)])


@K.device
def nfc_quick(data, lo, hi, tabs):
    """False when ``data[lo:hi]`` is certainly NFC already (no code point with QC_BIT, and the combining classes
    of consecutive marks never decrease), True when NFC may change it: UAX #15's quick check, on HF's tables.
    One table read per non-ASCII code point; ASCII has no QC_BIT and class 0 (checked by the generator). Invalid
    UTF-8 (the caller checks it first) answers True."""
    last = 0
    i = lo
    while i < hi:
        if data[i] < 0x80:
            last = 0
            i += 1
            continue
        cp, n = utf8_at(data, i, hi)
        if cp < 0:
            return True
        info = nfc_info(cp, tabs)
        if info & QC_BIT:
            return True
        cc = info & CCC_MASK
        if cc != 0 and last > cc:
            return True
        last = cc
        i += n
    return False


@K.device
def nfc_elem(data, i, j, hi, tabs):
    """The decomposed code point at cursor ``(i, j)`` (the ``j``-th code point of the full canonical decomposition
    of the code point at byte ``i``) as ``(cp, ccc, next_i, next_j)``. An invalid byte reads as U+FFFD."""
    b = int(data[i])
    if b < 0x80:
        return b, 0, i + 1, 0
    c, n = utf8_at(data, i, hi)
    if c < 0:
        return 0xFFFD, 0, i + 1, 0
    s = c - S_BASE
    if 0 <= s < S_COUNT:
        t = s % T_COUNT
        if j == 0:
            return L_BASE + s // N_COUNT, 0, i, 1
        if j == 1:
            v = V_BASE + (s % N_COUNT) // T_COUNT
            if t == 0:
                return v, 0, i + n, 0
            return v, 0, i, 2
        return T_BASE + t, 0, i + n, 0
    info = nfc_info(c, tabs)
    ln = (info >> DLEN_SHIFT) & DLEN_MASK
    if ln == 0:
        return c, info & CCC_MASK, i + n, 0
    e = int(tabs[2][(info >> DOFF_SHIFT) + j])
    if j + 1 < ln:
        return e & CP_MASK, e >> CP_BITS, i, j + 1
    return e & CP_MASK, e >> CP_BITS, i + n, 0


@K.device
def nfc_compose(a, b, tabs):
    """The primary composite of starter ``a`` followed by ``b``, or -1 (Hangul: L + V -> LV, LV + T -> LVT;
    the rest: a binary search of the measured pairs)."""
    la = a - L_BASE
    if 0 <= la < L_COUNT:
        vb = b - V_BASE
        if 0 <= vb < V_COUNT:
            return S_BASE + (la * V_COUNT + vb) * T_COUNT
        return -1
    s = a - S_BASE
    if 0 <= s < S_COUNT:
        tb = b - T_BASE
        if s % T_COUNT == 0 and 0 < tb < T_COUNT:
            return a + tb
        return -1
    keys = tabs[3]
    key = (a << CP_BITS) | b
    lo = 0
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < keys.shape[0] and keys[lo] == key:
        return int(tabs[4][lo])
    return -1


@K.device(inline=True)
def nfc_put(out, o, cap, cp):
    """Write ``cp`` as UTF-8 at ``out[o]``; the next position, or -1 when it does not fit before ``cap``."""
    if cp < 0x80:
        if o + 1 > cap:
            return -1
        out[o] = cp
        return o + 1
    if cp < 0x800:
        if o + 2 > cap:
            return -1
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        if o + 3 > cap:
            return -1
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    if o + 4 > cap:
        return -1
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@K.device
def nfc_run(data, i, j, ei, ej, hi, c0, srt, comp, emit, out, o, cap, tabs):
    """Stream the marks of the run between cursors ``(i, j)`` and ``(ei, ej)`` in canonical order (in one walk when
    ``srt``, the run being in order already; else one walk per class present, from the lowest, ``c0``), composing
    each into ``comp`` (the starter before the run, or -1: none) unless blocked. With ``emit`` the marks that do
    not compose are written to ``out[o:cap]``. Returns ``(comp, last, o)``: the composite, the class of the last
    mark left uncomposed (-1: none) and the output position (-1: did not fit)."""
    last = -1
    cls = c0
    while True:
        nxt = NO_CLASS
        pi = i
        pj = j
        while pi < ei or (pi == ei and pj < ej):
            cp, cc, ni, nj = nfc_elem(data, pi, pj, hi, tabs)
            if srt or cc == cls:
                keep = True
                if comp >= 0 and last < cc:
                    x = nfc_compose(comp, cp, tabs)
                    if x >= 0:
                        comp = x
                        keep = False
                if keep:
                    last = cc
                    if emit:
                        o = nfc_put(out, o, cap, cp)
                        if o < 0:
                            return comp, last, -1
            elif cls < cc < nxt:
                nxt = cc
            pi = ni
            pj = nj
        if srt or nxt == NO_CLASS:
            return comp, last, o
        cls = nxt


@K.device
def nfc_write(data, lo, hi, out, o, cap, tabs):
    """Write NFC(``data[lo:hi]``) to ``out[o:cap]``; returns the end position in ``out``, or -1 when it does not fit
    (``out`` is then partly written), or when ``lo:hi`` is not a span of ``data``.

    Contract: ``data[lo:hi]`` is valid UTF-8 (the caller checks it; an invalid byte would read as U+FFFD). The
    output never exceeds ``NFC_EXPAND * (hi - lo)`` bytes, so ``cap - o >= NFC_EXPAND * (hi - lo)`` always fits.
    Reads only ``data[lo:hi]`` and the tables, writes only ``out[o:min(cap, len(out))]``; needs no scratch.
    Time: linear in ``hi - lo``, times (when a run of marks is out of canonical order) the number of distinct
    classes in that run."""
    if lo < 0 or hi > data.shape[0] or o < 0:
        return -1
    if cap > out.shape[0]:
        cap = out.shape[0]
    i = lo
    j = 0
    comp = -1
    while i < hi:
        cp, cc, ni, nj = nfc_elem(data, i, j, hi, tabs)
        if cc == 0:  # a starter: composes with the one right before it, or ends it
            if comp >= 0:
                x = nfc_compose(comp, cp, tabs)
                if x >= 0:
                    comp = x
                    i = ni
                    j = nj
                    continue
                o = nfc_put(out, o, cap, comp)
                if o < 0:
                    return -1
            comp = cp
            i = ni
            j = nj
            continue
        # a run of marks from (i, j) up to the next starter (ei, ej): in order? its lowest class?
        srt = True
        prev = cc
        c0 = cc
        ei = ni
        ej = nj
        while ei < hi:
            _, cc2, ni2, nj2 = nfc_elem(data, ei, ej, hi, tabs)
            if cc2 == 0:
                break
            if cc2 < prev:
                srt = False
            if cc2 < c0:
                c0 = cc2
            prev = cc2
            ei = ni2
            ej = nj2
        if comp >= 0:
            start = comp
            comp, last, _ = nfc_run(data, i, j, ei, ej, hi, c0, srt, comp, False, out, o, cap, tabs)
            if last >= 0:  # marks stay: the composite is final, then they follow it
                o = nfc_put(out, o, cap, comp)
                if o < 0:
                    return -1
                _, _, o = nfc_run(data, i, j, ei, ej, hi, c0, srt, start, True, out, o, cap, tabs)
                if o < 0:
                    return -1
                comp = -1
            # else every mark composed: the composite may still compose with a starter right after the run
        else:  # marks with no starter before them: written in order
            _, _, o = nfc_run(data, i, j, ei, ej, hi, c0, srt, -1, True, out, o, cap, tabs)
            if o < 0:
                return -1
        i = ei
        j = ej
    if comp >= 0:
        o = nfc_put(out, o, cap, comp)
    return o


# ------------------------------------------------------------------------------------ batch kernel


@K.device
def nfc_text(t, data, offs, out, oofs, olen, tabs, quick):
    """NFC of text ``t`` (``data[offs[t]:offs[t+1]]``) into ``out[oofs[t]:oofs[t+1]]``; its length in ``olen[t]``
    (-1: did not fit). With ``quick``, a text :func:`nfc_quick` passes is copied as it is."""
    lo = offs[t]
    hi = offs[t + 1]
    o = oofs[t]
    cap = oofs[t + 1]
    if quick and not nfc_quick(data, lo, hi, tabs):
        if hi - lo > cap - o:
            olen[t] = -1
            return
        for k in range(hi - lo):
            out[o + k] = data[lo + k]
        olen[t] = hi - lo
        return
    end = nfc_write(data, lo, hi, out, o, cap, tabs)
    olen[t] = end - o if end >= 0 else -1


def _nfc_cpu(share, shares, n, data, offs, out, oofs, olen, tabs, quick):
    for t in range(share, n, shares):
        nfc_text(t, data, offs, out, oofs, olen, tabs, quick)


def _nfc_gpu(n, data, offs, out, oofs, olen, tabs, quick):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        nfc_text(t, data, offs, out, oofs, olen, tabs, quick)


NFC_KERNEL = (K.cpu(_nfc_cpu), K.gpu(_nfc_gpu))


def nfc_normalize(texts: Sequence[str | bytes], target: str = "cpu", xp: Any = np, *, tables: tuple | None = None,
                  quick: bool = True, caps: Sequence[int] | None = None) -> list[bytes | None]:
    """NFC (UTF-8 bytes) of each text, by the kernels on ``target``: a host-side aid for the tests, the table
    generator (``tables``: a host ``tabs`` tuple to use instead of the packaged one) and debugging. ``caps``: the
    output bytes each text may use (default ``NFC_EXPAND`` per input byte); a text that does not fit gives None.
    ``quick=False`` runs :func:`nfc_write` on every text, even those :func:`nfc_quick` would pass."""
    data, offs = pack_host(texts)
    n = offs.shape[0] - 1
    expand = _packaged_expansion() if tables is None else expansion(tables)
    size = np.diff(offs) * expand if caps is None else np.asarray(caps, dtype=np.int64)
    oofs = np.zeros(n + 1, dtype=np.int64)
    oofs[1:] = np.cumsum(size)
    out = np.zeros(max(1, int(oofs[-1])), dtype=np.uint8)
    olen = np.zeros(n, dtype=np.int64)
    tabs = nfc_tables(target, xp) if tables is None else tuple(K.to_device(a, target, xp) for a in tables)
    dev = [K.to_device(a, target, xp) for a in (data, offs, out, oofs, olen)]
    K.launch(target, NFC_KERNEL, n, *dev[:5], tabs, quick)
    out_h = K.to_host(dev[2], target)
    olen_h = K.to_host(dev[4], target)
    return [None if olen_h[t] < 0 else out_h[oofs[t] : oofs[t] + olen_h[t]].tobytes() for t in range(n)]
