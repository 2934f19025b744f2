"""Unicode normalization forms (NFC, NFD, NFKC, NFKD) and the per-code-point maps (``Lowercase``,
``StripAccents``) exactly as HuggingFace ``tokenizers`` does them (``normalizers.NFC()`` ...), as device functions.

One implementation for every tokenizer family: the BPE kernel runs :func:`nfc_quick` / :func:`nfc_write` on each
text segment of a file normalized by NFC alone, and the normalizer programs (:mod:`~triton_textops.ops.
sentencepiece.normalize`, used by SentencePiece and by byte-level BPE files with any other normalizer) run the
same functions on the form's tables and :func:`map_write` for ``Lowercase`` / ``StripAccents``. HF's forms come
from the Rust crate ``unicode-normalization-alignments``, whose Unicode data is older than the running Python's
``unicodedata``; Lowercase is Rust's ``char::to_lowercase`` per character (U+0130 -> ``i`` U+0307; no final-sigma
rule), StripAccents removes every code point the crate calls a combining mark (Mn, Mc, Me), one at a time, after
nothing (it does not decompose: ``StripAccents`` of U+00E9 is U+00E9). The tables are therefore *measured* on the
oracle by ``scripts/gen_unorm_tables.py`` (which also runs this module's algorithm against the oracle on every code
point alone and in contexts: 0 differences) and shipped as package data (``data/unorm_tables.npz``). Nothing is
rebuilt from ``unicodedata``.

The algorithm is the crate's: full decomposition (canonical for NFC/NFD, compatibility for NFKC/NFKD, up to 18 code
points: U+FDFA; Hangul syllables algorithmically), a stable sort of each run of combining marks by canonical
combining class (ccc), then, for NFC/NFKC, canonical composition (a mark composes with the last starter unless an
uncomposed mark of a class >= its own stands between them; a starter composes with the starter right before it, as
Hangul LV + T or U+0B47 + U+0B3E). The four forms differ only in their tables (same layout): the decomposition
pool, the quick-check bit, and for NFD/NFKD composition tables that compose nothing (``comp_vals[0] < 0``). It
needs no scratch memory: the decomposed text is never stored but walked with a cursor (input byte, index in that
code point's decomposition). A run of marks is walked once to find its end (and whether it is in canonical order,
its classes); then, in order, once to compose into the starter before it and once to write the marks left. A run
out of order (rare: real text has runs of one to three marks, mostly in order already) is streamed in canonical
order instead, one walk per class present (HF's data has 54 classes) to write, and one per class present that
holds a mark able to compose (11 such classes), stopped at the first mark of that class that does not compose.
Time is linear in the segment (times that constant for out-of-order runs); no allocation, no recursion.

Use from a kernel (``tabs = form_tables("nfc", target, xp)``, passed down as one argument; ``data[lo:hi]`` valid
UTF-8)::

    if nfc_quick(data, lo, hi, tabs):                  # False: the bytes are in the form already, use them as they are
        end = nfc_write(data, lo, hi, out, o, cap, tabs)  # normalized bytes in out[o:end]; -1: did not fit
    # cap - o >= expansion(form) * (hi - lo) always fits (3 for NFC/NFD, 11 for NFKC/NFKD with HF's tables)

Tables of a form (:func:`form_tables`, one tuple, the kernels' ``tabs`` argument):

0. ``idx`` int32 [0x110000 >> 7]: block number of each 128-code-point block;
1. ``info`` int32 [blocks * 128]: per code point ``ccc | QC_BIT | decomposition length << 9 | pool offset << 14 |
   FIRST_BIT``. QC_BIT: the form may change a text holding this code point (it changes it alone, or, composing
   forms, it composes with a character before it: for a code point the decomposition keeps, QC_BIT means exactly
   the latter, SECOND). The length is 0 for a code point that does not decompose and for Hangul syllables
   (decomposed by arithmetic). FIRST_BIT: the code point is the first of a composition pair;
2. ``pool`` int32: decompositions, each entry ``code point | (ccc | SECOND) << 21``;
3. ``comp_keys`` int64, sorted: ``first << 21 | second`` of every composition pair (Hangul excluded);
4. ``comp_vals`` int32: the composite of each pair. NFD/NFKD: ``[-1]`` and ``[-1]``, nothing composes.

Maps (:func:`map_tables`): ``(lower_idx, lower_map, strip_idx, strip_map, map_pool)``, blocks of 128 as above; a
map's entry for a code point is 0 when it stays as it is, the code point it becomes (> 0), -1 when it is removed,
or ``-2 - k`` for the several code points ``map_pool[k + 1 : k + 1 + map_pool[k]]``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.batch import pack_host

BLOCK_SHIFT = 7
BLOCK_MASK = (1 << BLOCK_SHIFT) - 1
CCC_MASK = 0xFF
QC_BIT = 1 << 8
SECOND = QC_BIT  # in a decomposition's key: the code point composes with a starter before it
KEY_MASK = CCC_MASK | SECOND
DLEN_SHIFT, DLEN_MASK, DOFF_SHIFT, DOFF_MASK = 9, 31, 14, 0xFFFF
FIRST_BIT = 1 << 30
CP_BITS = 21
CP_MASK = (1 << CP_BITS) - 1
# Hangul (Unicode ch. 3.12); the generator checks HF's NFD/NFC of every syllable and jamo pair against these
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
N_COUNT = V_COUNT * T_COUNT
S_COUNT = L_COUNT * N_COUNT
NO_CLASS = 256  # above every ccc


FORMS = ("nfc", "nfd", "nfkc", "nfkd")  # HF's NFC, NFD, NFKC, NFKD
COMPOSING = ("nfc", "nfkc")
MAPS = ("lower", "strip")  # HF's Lowercase, StripAccents


def load_tables(path: Any = None) -> dict[str, np.ndarray]:
    """The arrays of ``unorm_tables.npz`` (the packaged one by default) as a dict."""
    if path is None:
        return dict(_packaged())
    with np.load(path) as z:
        return check_tables({k: z[k] for k in z.files})


@functools.lru_cache(maxsize=1)
def _packaged() -> dict[str, np.ndarray]:
    ref = resources.files("triton_textops") / "data" / "unorm_tables.npz"
    with resources.as_file(ref) as p, np.load(p) as z:
        return check_tables({k: z[k] for k in z.files})


N_BLOCKS = 0x110000 >> BLOCK_SHIFT


def _check_two_level(idx: np.ndarray, vals: np.ndarray, what: str) -> None:
    if idx.shape != (N_BLOCKS,) or vals.ndim != 1 or vals.shape[0] % (1 << BLOCK_SHIFT) \
            or (idx.size and (int(idx.min()) < 0 or int(idx.max()) >= vals.shape[0] >> BLOCK_SHIFT)):
        raise ValueError(f"unorm tables: {what}: the block index does not fit its blocks")


def check_tables(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` after checking, once, every index the device functions take from them: block numbers within
    the blocks, decomposition offsets and lengths within the pool, code points below U+110000 (a code point is
    looked up again), map pool entries within the pool. A damaged file is a ValueError here, never a read past
    an array in a kernel."""
    for form in FORMS:
        idx, info, pool = (np.asarray(arrays[f"{form}_{k}"]).astype(np.int64) for k in TABLE_NAMES)
        _check_two_level(idx, info, form)
        end = ((info >> DOFF_SHIFT) & DOFF_MASK) + ((info >> DLEN_SHIFT) & DLEN_MASK)
        if (pool.size and int((pool & CP_MASK).max()) >= 0x110000) or (end.size and int(end.max()) > pool.shape[0]):
            raise ValueError(f"unorm tables: {form}: a decomposition lies outside its pool or holds no code point")
    keys, vals = np.asarray(arrays["comp_keys"]), np.asarray(arrays["comp_vals"])
    if keys.shape != vals.shape or (vals.size and (int(vals.min()) < 0 or int(vals.max()) >= 0x110000)) \
            or (keys.size > 1 and bool(np.any(keys[1:] <= keys[:-1]))):
        raise ValueError("unorm tables: the composition pairs are not sorted, or a composite is no code point")
    mpool = np.asarray(arrays["map_pool"]).astype(np.int64)
    for name in MAPS:
        idx, vals = np.asarray(arrays[f"{name}_idx"]).astype(np.int64), np.asarray(arrays[f"{name}_map"]).astype(
            np.int64)
        _check_two_level(idx, vals, name)
        at = -2 - vals[vals <= -2]
        bad = bool(vals.size and int(vals.max()) >= 0x110000)
        if at.size:
            ok = at < mpool.shape[0]
            bad = bad or not bool(ok.all()) or bool(np.any(mpool[at] < 0)) \
                or bool(np.any(at + 1 + mpool[at] > mpool.shape[0]))
        if bad:
            raise ValueError(f"unorm tables: {name}: a mapping lies outside the map pool or is no code point")
    return arrays


TABLE_NAMES = ("idx", "info", "pool")  # per form, as ``{form}_idx`` ...; then the shared comp_keys, comp_vals
NO_COMPOSE = (np.full(1, -1, dtype=np.int64), np.full(1, -1, dtype=np.int32))


def table_tuple(arrays: dict[str, np.ndarray], form: str = "nfc") -> tuple[np.ndarray, ...]:
    """The kernels' ``tabs`` tuple (host arrays) of ``form`` from a dict of table arrays."""
    if form not in FORMS:
        raise ValueError(f"unknown normalization form {form!r} (one of {FORMS})")
    own = tuple(np.ascontiguousarray(arrays[f"{form}_{k}"]) for k in TABLE_NAMES)
    if form not in COMPOSING:
        return own + NO_COMPOSE
    return own + (np.ascontiguousarray(arrays["comp_keys"]), np.ascontiguousarray(arrays["comp_vals"]))


@functools.lru_cache(maxsize=16)
def form_tables(form: str, target: str, xp: Any = np) -> tuple:
    """The packaged tables of ``form`` as the ONE tuple the device functions take (``tabs``), on ``target``'s
    device ("cpu": the host arrays; "cuda": uploaded once, cached)."""
    return tuple(K.to_device(a, target, xp) for a in table_tuple(_packaged(), form))


def map_tuple(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The kernels' maps tuple (host arrays) from a dict of table arrays (the module docstring)."""
    return tuple(np.ascontiguousarray(arrays[k]) for k in ("lower_idx", "lower_map", "strip_idx", "strip_map",
                                                             "map_pool"))


@functools.lru_cache(maxsize=8)
def map_tables(target: str, xp: Any = np) -> tuple:
    """The packaged Lowercase / StripAccents maps as one tuple on ``target``'s device (cached)."""
    return tuple(K.to_device(a, target, xp) for a in map_tuple(_packaged()))


def map_expansion(arrays: dict[str, np.ndarray], name: str) -> int:
    """Most output bytes per input byte of map ``name`` ("lower" or "strip"), from the table arrays."""
    idx, vals, pool = arrays[f"{name}_idx"].astype(np.int64), arrays[f"{name}_map"].astype(np.int64), \
        arrays["map_pool"].astype(np.int64)
    full = vals[(idx[:, None] << BLOCK_SHIFT) + np.arange(1 << BLOCK_SHIFT)].reshape(-1)
    cps = np.arange(full.shape[0])
    out = np.where(full > 0, _utf8_len(np.maximum(full, 0)), np.where(full == 0, _utf8_len(cps), 0))
    for k in np.unique(full[full <= -2]):
        at = -2 - int(k)
        out[full == k] = int(_utf8_len(pool[at + 1 : at + 1 + pool[at]]).sum())
    return max(1, int(np.max(-(-out // _utf8_len(cps)))))


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
    off = (full[has] >> DOFF_SHIFT) & DOFF_MASK
    out_bytes = csum[off + ln[has]] - csum[off]
    worst = int(np.max(-(-out_bytes // _utf8_len(has)))) if has.size else 1
    return max(worst, HANGUL_EXPAND)


def _utf8_len(cps: np.ndarray) -> np.ndarray:
    return np.where(cps < 0x80, 1, np.where(cps < 0x800, 2, np.where(cps < 0x10000, 3, 4)))


def __getattr__(name: str) -> Any:
    """``NFC_EXPAND``: max output bytes of NFC per input byte (3 with HF's tables), measured from the packaged
    tables on first use (importing this module reads no file)."""
    if name == "NFC_EXPAND":
        return form_expansion("nfc")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=8)
def form_expansion(form: str) -> int:
    """Most output bytes per input byte of ``form`` with the packaged tables (3: NFC, NFD; 11: NFKC, NFKD)."""
    return expansion(table_tuple(_packaged(), form))


@functools.lru_cache(maxsize=2)
def packaged_map_expansion(name: str) -> int:
    """Most output bytes per input byte of the packaged map ``name`` (2: Lowercase, 1: StripAccents)."""
    return map_expansion(_packaged(), name)


# ------------------------------------------------------------------------------------ device code


@K.device(inline=True)
def nfc_info(cp, tabs):
    """The packed table entry of code point ``cp`` (0 .. 0x10FFFF)."""
    return int(tabs[1][(int(tabs[0][cp >> BLOCK_SHIFT]) << BLOCK_SHIFT) | (cp & BLOCK_MASK)])


@K.device(inline=True)
def nfc_decode(data, i, hi):
    """(code point, length) of the UTF-8 sequence at ``data[i]``, ``i < hi``, for bytes already checked to be
    UTF-8 (cheaper than :func:`~triton_textops.ops.core.utf8.utf8_at`, which validates). A sequence that is cut by
    ``hi`` or does not start with a lead byte, or a value past U+10FFFF, gives (-1, 1): never a read outside
    ``data[i:hi]`` nor the tables."""
    b0 = int(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xC0 or b0 >= 0xF8:
        return -1, 1
    n = 2
    cp = b0 & 0x1F
    if b0 >= 0xF0:
        n = 4
        cp = b0 & 0x07
    elif b0 >= 0xE0:
        n = 3
        cp = b0 & 0x0F
    if i + n > hi:
        return -1, 1
    for k in range(1, n):
        cp = (cp << 6) | (int(data[i + k]) & 0x3F)
    if cp > 0x10FFFF:
        return -1, 1
    return cp, n


@K.device
def nfc_quick(data, lo, hi, tabs):
    """False when ``data[lo:hi]`` is certainly NFC already (no code point with QC_BIT, and the combining classes
    of consecutive marks never decrease), True when NFC may change it: UAX #15's quick check, on HF's tables
    (sound: the generator and the tests check that False never comes with a text NFC changes). One two-level
    table lookup per non-ASCII code point, none for ASCII (no QC_BIT and class 0: checked by the generator;
    speed: benchmarks/RESULTS.md, Design measurements, ops/bpe/nfc.py: nfc_quick). Common text in NFC
    (precomposed Latin, Hangul syllables, CJK, ...) answers False. Bytes that are not UTF-8 answer True.
    Reads only ``data[lo:hi]`` (``0 <= lo <= hi <= len(data)``: the caller's span) and the tables."""
    last = 0
    i = lo
    while i < hi:
        if data[i] < 0x80:
            last = 0
            i += 1
            continue
        cp, n = nfc_decode(data, i, hi)
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


@K.device(inline=True)
def nfc_elem(data, i, j, hi, tabs):
    """The decomposed code point at cursor ``(i, j)`` (the ``j``-th code point of the full canonical decomposition
    of the code point at byte ``i``) as ``(cp, key, next_i, next_j)``; ``key``: its ccc, | SECOND when it composes
    with a starter before it. A byte that is not UTF-8 reads as U+FFFD."""
    c, n = nfc_decode(data, i, hi)
    if c < 0x80:
        if c < 0:
            return 0xFFFD, 0, i + 1, 0
        return c, 0, i + 1, 0
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
        return c, info & KEY_MASK, i + n, 0
    e = int(tabs[2][((info >> DOFF_SHIFT) & DOFF_MASK) + j])
    if j + 1 < ln:
        return e & CP_MASK, e >> CP_BITS, i, j + 1
    return e & CP_MASK, e >> CP_BITS, i + n, 0


@K.device
def nfc_compose(a, b, tabs):
    """The primary composite of starter ``a`` followed by ``b``, or -1 (Hangul: L + V -> LV, LV + T -> LVT;
    the rest: a binary search of the measured pairs; always -1 with the tables of NFD and NFKD)."""
    if tabs[4][0] < 0:
        return -1
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
def nfc_can_start(a, tabs):
    """Whether ``a`` is the first code point of any composition pair (Hangul L and LV syllables included)."""
    if 0 <= a - L_BASE < L_COUNT:
        return True
    s = a - S_BASE
    if 0 <= s < S_COUNT:
        return s % T_COUNT == 0
    return (nfc_info(a, tabs) & FIRST_BIT) != 0


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


@K.device(inline=True)
def nfc_bit(m0, m1, m2, m3, c):
    """Bit ``c`` (0..255) of the 256-bit set ``m0..m3``."""
    m = m0
    if c >= 192:
        m = m3
    elif c >= 128:
        m = m2
    elif c >= 64:
        m = m1
    return (m >> (c & 63)) & 1


@K.device
def nfc_compose_run(data, i, j, ei, ej, hi, srt, comp, m0, m1, m2, m3, tabs):
    """Compose the marks of the run between cursors ``(i, j)`` and ``(ei, ej)``, taken in canonical order, into the
    starter ``comp`` before it: a mark composes unless an uncomposed mark of a class >= its own comes before it
    in that order. Returns ``(composite, number of marks composed)``. A run in order (``srt``) takes one walk;
    otherwise one walk per class that holds a mark able to compose (``m0..m3``: the set of those classes), each
    stopping at the first mark of the class that does not compose (it blocks the rest of its class)."""
    ncomp = 0
    if not nfc_can_start(comp, tabs) or (not srt and (m0 | m1 | m2 | m3) == 0):
        return comp, 0
    if srt:
        last = -1
        pi = i
        pj = j
        while pi < ei or (pi == ei and pj < ej):
            cp, key, ni, nj = nfc_elem(data, pi, pj, hi, tabs)
            cc = key & CCC_MASK
            x = -1
            if last < cc:
                x = nfc_compose(comp, cp, tabs)
            if x >= 0:
                comp = x
                ncomp += 1
            else:
                last = cc
            pi = ni
            pj = nj
        return comp, ncomp
    for c in range(1, NO_CLASS):
        if nfc_bit(m0, m1, m2, m3, c) == 0:
            continue
        pi = i
        pj = j
        while pi < ei or (pi == ei and pj < ej):
            cp, key, ni, nj = nfc_elem(data, pi, pj, hi, tabs)
            if key & CCC_MASK == c:
                x = nfc_compose(comp, cp, tabs)
                if x < 0:
                    break
                comp = x
                ncomp += 1
            pi = ni
            pj = nj
    return comp, ncomp


@K.device
def nfc_emit_run(data, i, j, ei, ej, hi, c0, srt, comp, out, o, cap, tabs):
    """Write the marks of the run between cursors ``(i, j)`` and ``(ei, ej)`` in canonical order to ``out[o:cap]``,
    except those that compose into ``comp`` (the starter before the run, or -1), by the rule of
    :func:`nfc_compose_run`. One walk when the run is in order (``srt``), else one walk per class present, from the
    lowest (``c0``), each finding the next. Returns the output position, -1 when it does not fit."""
    last = -1
    cls = c0
    if comp >= 0 and not nfc_can_start(comp, tabs):
        comp = -1
    while True:
        nxt = NO_CLASS
        pi = i
        pj = j
        while pi < ei or (pi == ei and pj < ej):
            cp, key, ni, nj = nfc_elem(data, pi, pj, hi, tabs)
            cc = key & CCC_MASK
            if srt or cc == cls:
                x = -1
                if comp >= 0 and last < cc:
                    x = nfc_compose(comp, cp, tabs)
                if x >= 0:
                    comp = x
                else:
                    last = cc
                    o = nfc_put(out, o, cap, cp)
                    if o < 0:
                        return -1
            elif cls < cc < nxt:
                nxt = cc
            pi = ni
            pj = nj
        if srt or nxt == NO_CLASS:
            return o
        cls = nxt


@K.device
def nfc_write(data, lo, hi, out, o, cap, tabs):
    """Write NFC(``data[lo:hi]``) to ``out[o:cap]``; returns the end position in ``out``, or -1 when it does not fit
    (``out`` is then partly written), or when ``lo:hi`` is not a span of ``data``.

    Contract: ``data[lo:hi]`` is valid UTF-8 (the caller checks it; a byte that is not would read as U+FFFD). The
    output never exceeds ``NFC_EXPAND * (hi - lo)`` bytes, so ``cap - o >= NFC_EXPAND * (hi - lo)`` always fits.
    Reads only ``data[lo:hi]`` and the tables, writes only ``out[o:min(cap, len(out))]``; needs no scratch.
    Time: linear in ``hi - lo``; a run of marks out of canonical order costs one walk of it per class present
    (HF's data has 54 classes) plus one per class that can compose (11)."""
    if lo < 0 or hi > data.shape[0] or o < 0:
        return -1
    if cap > out.shape[0]:
        cap = out.shape[0]
    i = lo
    j = 0
    comp = -1
    while i < hi:
        cp, key, ni, nj = nfc_elem(data, i, j, hi, tabs)
        if key & CCC_MASK == 0:  # a starter: composes with the one right before it, or ends it
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
        # a run of marks from (i, j) up to the next starter (ei, ej): its size, whether it is in canonical order,
        # its lowest class and the set of the classes of its marks that can compose (m0..m3)
        nmarks = 0
        srt = True
        prev = 0
        c0 = NO_CLASS
        m0 = 0
        m1 = 0
        m2 = 0
        m3 = 0
        ei = i
        ej = j
        while ei < hi:
            _, key2, ni2, nj2 = nfc_elem(data, ei, ej, hi, tabs)
            cc2 = key2 & CCC_MASK
            if cc2 == 0:
                break
            nmarks += 1
            if cc2 < prev:
                srt = False
            prev = cc2
            c0 = min(c0, cc2)
            if key2 & SECOND:
                bit = 1 << (cc2 & 63)
                if cc2 >= 192:
                    m3 |= bit
                elif cc2 >= 128:
                    m2 |= bit
                elif cc2 >= 64:
                    m1 |= bit
                else:
                    m0 |= bit
            ei = ni2
            ej = nj2
        start = comp
        if comp >= 0:
            comp, ncomp = nfc_compose_run(data, i, j, ei, ej, hi, srt, comp, m0, m1, m2, m3, tabs)
            if ncomp == nmarks:  # every mark composed: the composite may still compose with the next starter
                i = ei
                j = ej
                continue
            o = nfc_put(out, o, cap, comp)  # marks stay: the composite is final, and they follow it
            if o < 0:
                return -1
            comp = -1
        o = nfc_emit_run(data, i, j, ei, ej, hi, c0, srt, start, out, o, cap, tabs)
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


NFC_KERNEL = K.kernel(nfc_text)


def nfc_normalize(texts: Sequence[str | bytes], target: str = "cpu", xp: Any = np, *, tables: tuple | None = None,
                  quick: bool = True, caps: Sequence[int] | None = None, form: str = "nfc") -> list[bytes | None]:
    """``form`` (NFC by default; "nfd", "nfkc", "nfkd") of each text as UTF-8 bytes, by the kernels on ``target``:
    a host-side aid for the tests, the table generator (``tables``: a host ``tabs`` tuple to use instead of the
    packaged one) and debugging. ``caps``: the output bytes each text may use (default the form's expansion per
    input byte); a text that does not fit gives None. ``quick=False`` runs :func:`nfc_write` on every text, even
    those :func:`nfc_quick` would pass."""
    data, offs = pack_host(texts)
    n = offs.shape[0] - 1
    expand = form_expansion(form) if tables is None else expansion(tables)
    size = np.diff(offs) * expand if caps is None else np.asarray(caps, dtype=np.int64)
    oofs = np.zeros(n + 1, dtype=np.int64)
    oofs[1:] = np.cumsum(size)
    out = np.zeros(max(1, int(oofs[-1])), dtype=np.uint8)
    olen = np.zeros(n, dtype=np.int64)
    tabs = form_tables(form, target, xp) if tables is None else tuple(K.to_device(a, target, xp) for a in tables)
    dev = [K.to_device(a, target, xp) for a in (data, offs, out, oofs, olen)]
    K.launch(target, NFC_KERNEL, n, *dev[:5], tabs, quick)
    out_h = K.to_host(dev[2], target)
    olen_h = K.to_host(dev[4], target)
    return [None if olen_h[t] < 0 else out_h[oofs[t] : oofs[t] + olen_h[t]].tobytes() for t in range(n)]


# ------------------------------------------------------------------------------------ Lowercase, StripAccents


@K.device(inline=True)
def map_entry(cp, idx, vals):
    """The entry of code point ``cp`` (0 .. 0x10FFFF) in a map (``idx``, ``vals``): the module docstring."""
    return int(vals[(int(idx[cp >> BLOCK_SHIFT]) << BLOCK_SHIFT) | (cp & BLOCK_MASK)])


@K.device
def map_write(data, lo, hi, out, o, cap, maps, which):
    """Map ``which`` (0: Lowercase, 1: StripAccents) of ``data[lo:hi]`` (valid UTF-8) into ``out[o:cap]``, one
    code point at a time (both are per character in HF); the new end, -1 when it does not fit. ASCII takes no
    table lookup (Lowercase: A-Z; StripAccents keeps ASCII: checked by the generator)."""
    if lo < 0 or hi > data.shape[0] or o < 0:
        return -1
    if cap > out.shape[0]:
        cap = out.shape[0]
    idx = maps[2 * which]
    vals = maps[2 * which + 1]
    pool = maps[4]
    i = lo
    while i < hi:
        b = int(data[i])
        if b < 0x80:
            if which == 0 and 0x41 <= b <= 0x5A:
                b += 0x20
            if o >= cap:
                return -1
            out[o] = b
            o += 1
            i += 1
            continue
        cp, n = nfc_decode(data, i, hi)
        i += n
        if cp < 0:
            cp = 0xFFFD
        v = map_entry(cp, idx, vals)
        if v == 0:
            o = nfc_put(out, o, cap, cp)
        elif v > 0:
            o = nfc_put(out, o, cap, v)
        elif v <= -2:
            at = -2 - v
            for k in range(int(pool[at])):
                if o >= 0:
                    o = nfc_put(out, o, cap, int(pool[at + 1 + k]))
        if o < 0:
            return -1
    return o


@K.device
def map_text(t, data, offs, out, oofs, olen, maps, which):
    """Map ``which`` of text ``t`` into ``out[oofs[t]:oofs[t+1]]``; its length in ``olen[t]`` (-1: did not fit)."""
    o = oofs[t]
    end = map_write(data, offs[t], offs[t + 1], out, o, oofs[t + 1], maps, which)
    olen[t] = end - o if end >= 0 else -1


MAP_KERNEL = K.kernel(map_text)


def map_normalize(texts: Sequence[str | bytes], which: str, target: str = "cpu", xp: Any = np, *,
                  tables: tuple | None = None) -> list[bytes | None]:
    """Map ``which`` ("lower": HF's Lowercase, "strip": StripAccents) of each text as UTF-8 bytes, by the kernels
    on ``target`` (``tables``: a host maps tuple instead of the packaged one): the tests' and generator's aid."""
    data, offs = pack_host(texts)
    n = offs.shape[0] - 1
    oofs = np.zeros(n + 1, dtype=np.int64)
    oofs[1:] = np.cumsum(np.diff(offs) * 3)
    out = np.zeros(max(1, int(oofs[-1])), dtype=np.uint8)
    olen = np.zeros(n, dtype=np.int64)
    maps = map_tables(target, xp) if tables is None else tuple(K.to_device(a, target, xp) for a in tables)
    dev = [K.to_device(a, target, xp) for a in (data, offs, out, oofs, olen)]
    K.launch(target, MAP_KERNEL, n, *dev[:5], maps, MAPS.index(which))
    out_h = K.to_host(dev[2], target)
    olen_h = K.to_host(dev[4], target)
    return [None if olen_h[t] < 0 else out_h[oofs[t] : oofs[t] + olen_h[t]].tobytes() for t in range(n)]
