"""The merge step: a pre-token's bytes -> token ids, exactly as tiktoken / HF's BPE model.

A pre-token is looked up whole first (:func:`lookup`): English words are single tokens, so most pre-tokens
cost one hash probe. Only what is not emitted whole is merged (:func:`bpe_piece`): repeatedly the adjacent
pair of lowest rank, leftmost on ties (:func:`pair_at`): HF's ranked merges through a (left id, right id) ->
(rank, result) table; tiktoken's rule (a pair merges into the token of its bytes, ranked by its id) by looking the
pair's bytes up in the token table itself (:func:`span_pair`, bound into a rank file's kernel). Pieces of
up to :data:`SHORT` symbols rescan their rank row in index order (a symbol merged away ranks NO_PAIR); longer ones
keep an indexed min-heap keyed by (rank, position), so a 1 MB run of one letter is n log n, not quadratic. The
heap keeps each pair's result beside its rank, so merging the top looks nothing up again. On the CPU, each kernel share
keeps the pieces it merged (:func:`cache_get` / :func:`cache_put`: bytes -> ids, verified on the bytes, emptied when
full), so a word that repeats is merged once per thread; the GPU kernels run without it (one thread per text).

The tables (:class:`Vocab`) are built on the host with NumPy, in the kernels' hash arithmetic. Only what needs the
merge step runs as a kernel at load: :func:`_reach_kernel` (HF files without ``ignore_merges``).
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.bpe.formats import BPESpec
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.words import U1, word_at

SHORT = 48  # pieces of more symbols use the heap
# the merge cache of the CPU kernels, a row per kernel share: pieces of up to CACHE_PIECE bytes that were merged ->
# their ids, emptied when full. Two arrays (few arguments: each array a kernel layer passes costs compile time):
# meta int64 [used entries, bytes used, ids used, slots, entry columns | slots | entries (2 columns each) | ids] and
# the pieces' bytes (uint8). CACHE_SHAPE: (slots, entry columns, bytes, ids), the slots a power of 2
CACHE_PIECE = 255
CACHE_SHAPE = (1 << 15, 1 << 15, 1 << 19, 1 << 18)
C_USED, C_BYTES, C_IDS, C_SLOTS, C_ENTS = range(5)
CACHE_HEAD = 5
NO_PAIR = 0x7FFFFFFF  # rank of a symbol with no mergeable right neighbour
# the vocabulary tuple a kernel takes (one argument): indices of its arrays
# PAIRS (HF merges; a rank file has an empty one): (slots, 2) int64, each slot (left id << 32 | right id,
# rank << 32 | result id): one cache line a probe
# BYTE_PAIRS: (65536,) int64, (rank << 32 | result) of merging byte b0 then b1 at index b0 << 8 | b1, or -1: the
# first round of every piece (a pair of single bytes) without hashing
# SLOTS: (2 * slots,) int64 (the host builds it (slots, 2): slot s at 2s, 2s + 1; flat, a kernel's index needs no
# multiply by a stride) open addressing over the tokens' bytes, each [23 bits of the hash << 40 | min(length, 255)
# << 32 | WHOLE << 31 | id (-1: empty), the token's first min(length, 8) bytes little-endian (zero above)]: a lookup
# reads one 16-byte slot, and the token's bytes in POOL only past its 8th (a token's bytes: POOL[TOK_OFF[id]:
# TOK_OFF[id + 1]]). (A separate entry array, read after the slot, held the id and the bytes before.)
POOL, TOK_OFF, SLOTS, PAIRS, BYTE_PAIRS, BYTE_IDS, VCONST = range(7)
WHOLE = 1 << 31  # the SLOTS flag: the format emits this token whole (HF without ignore_merges: only if merges reach it)
SLOT_MASK, PAIR_MASK, MAX_PROBE, PAIR_PROBE, N_IDS = range(5)  # entries of the constants array


# Hash arithmetic is uint64: numba compiles an int64 product as LLVM ``mul nsw`` (overflow is undefined, and LLVM
# used that to drop a mask after one), a uint64 product as a plain ``mul`` that wraps, as NumPy's uint64 does
U32, U31, U27 = np.uint64(32), np.uint64(31), np.uint64(27)
M32, M63 = np.uint64(0xFFFFFFFF), np.uint64(0x7FFFFFFFFFFFFFFF)
H_LEN, H_LO, H_HI, H_STEP = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D), np.uint64(0x85EBCA77),
                             np.uint64(0x27D4EB2F165667C5))  # (piece_hash's odd multipliers)
PAIR_MIX = np.uint64(0x7FB5D329728EA185)  # mix64's


@K.device(inline=True)
def piece_hash(buf, lo, hi):
    """(32-bit hash, first word) of the piece ``buf[lo:hi]``: its length and its 8-byte words (:func:`word_at`)
    mixed by multiplication, a word at a time (as the host's :func:`_hash_all`). The first word is what a slot
    keeps of a token (:func:`lookup`). FNV-1a took a multiply per byte in one dependent chain, and the slot's
    bytes a second loop on the length."""
    q = word_at(buf, lo, hi)
    acc = np.uint64(hi - lo) * H_LEN
    w = q
    i = lo
    while True:
        x = np.uint64(w)
        acc = (acc ^ ((x & M32) * H_LO + (x >> U32) * H_HI)) * H_STEP
        i += 8
        if i >= hi:
            break
        w = word_at(buf, i, hi)
    return np.int64(acc >> U32), q


@K.device(inline=True)
def mix64(key):
    """A 64-bit mix of a pair key (left * 2**32 + right) -> its home slot bits (as the host build)."""
    h = np.uint64(key)
    h ^= h >> U31
    h = (h * PAIR_MIX) & M63
    return np.int64(h ^ (h >> U27))


@K.device(inline=True)
def slot_tag(h, n):
    """The upper 32 bits of a SLOTS entry for a token of ``n`` bytes whose :func:`piece_hash` is ``h``: 23 bits of the hash
    (a filled slot stays >= 0) and the length, 255 for any longer."""
    return (h & 0x7FFFFF) << 8 | (n if n < 255 else 255)


@K.device(inline=True)
def tail_same(buf, lo, hi, voc, tid):
    """Whether token ``tid`` has ``hi - lo`` bytes whose part past the 8th equals ``buf[lo + 8:hi]``, given that its
    slot's tag matched (so its length is ``hi - lo`` when that is under 255)."""
    off = voc[TOK_OFF]
    pool = voc[POOL]
    a = off[tid]
    n = hi - lo
    if n >= 255 and off[tid + 1] - a != n:  # (a slot's tag holds the length up to 254: past it, read it)
        return False
    for k in range(8, n):  # (unsigned indices: no negative-index wrap; comparing words cost the GPU kernels
        if pool[np.uint64(a + k)] != buf[np.uint64(lo + k)]:  # registers, which tests/ptx watch)
            return False
    return True


@K.device(inline=True)
def lookup(buf, lo, hi, h, q, voc, whole):
    """Id of the token whose bytes are ``buf[lo:hi]`` (``h``, ``q``: their :func:`piece_hash`), or -1; ``whole``: -1
    also when the format does not emit that token whole (its WHOLE flag). Every hit is verified on the bytes."""
    slots = voc[SLOTS]
    mask = voc[VCONST][SLOT_MASK]
    s = (h ^ (h >> 15)) & mask
    n = hi - lo
    tag = slot_tag(h, n)
    for _ in range(voc[VCONST][MAX_PROBE] + 1):
        at = np.uint64(2 * s)  # (s >= 0: an unsigned index skips numba's negative-index wrap)
        v = slots[at]
        if v < 0:
            return -1
        if (v >> 32) == tag and slots[at + U1] == q and (n <= 8 or tail_same(buf, lo, hi, voc, v & 0x7FFFFFFF)):
            if whole and (v & WHOLE) == 0:
                return -1
            return v & 0x7FFFFFFF
        s = (s + 1) & mask
    return -1


@K.device(inline=True)
def pair_of(a, b, voc):
    """(rank, result id) of merging tokens ``a`` and ``b``, or (NO_PAIR, -1)."""
    pairs = voc[PAIRS]
    key = (int(a) << 32) | int(b)
    mask = voc[VCONST][PAIR_MASK]
    s = mix64(key) & mask
    for _ in range(voc[VCONST][PAIR_PROBE] + 1):
        u = np.uint64(s)  # (s >= 0: no negative-index wrap)
        k = pairs[u, 0]
        if k == key:
            v = pairs[u, 1]
            return v >> 32, v & 0xFFFFFFFF
        if k < 0:
            break
        s = (s + 1) & mask
    return NO_PAIR, -1


@K.device(inline=True)
def pair_at(buf, lo, sym, nxt, base, n, a, b, voc):
    """(rank, result id) of merging the piece's symbol at ``a`` with the next one, at ``b``: by their ids
    (:func:`pair_of`; HF's ranked merges). A rank file's kernel calls :func:`span_pair` instead, through :func:`pair_near`."""
    return pair_of(sym[np.uint64(base + a)], sym[np.uint64(base + b)], voc)


@K.device(inline=True)
def pair_near(buf, lo, sym, nxt, base, n, a, b, voc):
    """:func:`pair_at` at the merge step's call sites (the scan's one, the heap's two), where a rank file's kernel
    binds it to :func:`span_pair`, inlined (a call passes the vocabulary's arrays field by field: on CJK and
    identifier pieces the heap ran 15-25% slower through a non-inlined span lookup, benchmarks/RESULTS.md, issue 45)."""
    return pair_at(buf, lo, sym, nxt, base, n, a, b, voc)


@K.device(inline=True)
def span_pair(buf, lo, sym, nxt, base, n, a, b, voc):
    """:func:`pair_at` by tiktoken's rule: the two symbols' bytes together, ``buf[lo + a:lo + end of b]``, looked up
    as one token, whose id is the rank and the result. The whole-token table answers it: rank files need no pair
    table (cl100k: 8 MB less, and merges read the table lookups keep warm). Inlined at the merge step's call sites
    (:func:`pair_near`)."""
    e = nxt[np.uint64(base + b)]
    hi = lo + (e if e < n else n)
    h, q = piece_hash(buf, lo + a, hi)
    t = lookup(buf, lo + a, hi, h, q, voc, False)
    return (t, t) if t >= 0 else (NO_PAIR, -1)


@K.device(inline=True)
def heap_less(rk, x, y):
    return rk[x] < rk[y] or (rk[x] == rk[y] and x < y)


@K.device(inline=True)
def heap_fix(heap, where, rk, base, size, at, up):
    """Restore the min-heap ``heap[base:base+size]`` (symbol indices keyed by (rk, index)) around slot ``at``:
    sifted up (``up``: its key changed either way, in a heap) then down. Building the heap sifts down only: the
    slots above ``at`` are not a heap yet, and an entry sifted up into them left a slot below out of order (a
    piece of over :data:`SHORT` bytes then merged in the wrong order)."""
    x = heap[base + at]
    while up and at > 0:  # up
        p = (at - 1) >> 1
        y = heap[base + p]
        if not heap_less(rk, base + x, base + y):
            break
        heap[base + at] = y
        where[base + y] = at
        at = p
    heap[base + at] = x
    where[base + x] = at
    while True:  # down
        c = 2 * at + 1
        if c >= size:
            break
        y = heap[base + c]
        if c + 1 < size and heap_less(rk, base + heap[base + c + 1], base + y):
            c += 1
            y = heap[base + c]
        if not heap_less(rk, base + y, base + x):
            break
        heap[base + at] = y
        where[base + y] = at
        at = c
    heap[base + at] = x
    where[base + x] = at


@K.device(inline=True)
def heap_remove(heap, where, rk, base, size, x):
    """Remove symbol ``x`` from the heap of ``size`` entries; returns the new size."""
    at = where[base + x]
    size -= 1
    if at != size:
        heap[base + at] = heap[base + size]
        where[base + heap[base + at]] = at
        heap_fix(heap, where, rk, base, size, at, True)
    return size


@K.device
def bpe_piece(buf, lo, hi, voc, work, base, out, o):
    """BPE-merge the pre-token ``buf[lo:hi]`` and write its ids to ``out[o:]``; returns the new ``o``.

    ``work``: :data:`N_WORK_ROWS` int32 rows (symbol id, next, rank; heap, slot in the heap, previous, each
    pair's result: long pieces only) whose columns ``base .. base + hi - lo - 1`` are this piece's scratch."""
    sym = work[0]
    nxt = work[1]
    rk = work[2]
    hp = work[3]
    n = hi - lo
    byte_ids = voc[BYTE_IDS]
    for k in range(n):  # (unsigned indices: no negative-index wrap on each load)
        u = np.uint64(base + k)
        sym[u] = byte_ids[buf[np.uint64(lo + k)]]
        nxt[u] = k + 1
    bp2 = voc[BYTE_PAIRS]
    for k in range(n - 1):
        u = np.uint64(base + k)
        v = bp2[(np.int64(buf[np.uint64(lo + k)]) << 8) | np.int64(buf[np.uint64(lo + k + 1)])]
        if v < 0:
            rk[u] = NO_PAIR
        else:
            rk[u] = v >> 32
            hp[u] = v & 0xFFFFFFFF  # the short path keeps each pair's result (the heap path reuses this row)
    rk[base + n - 1] = NO_PAIR
    return merge_symbols(buf, lo, n, voc, work, base, out, o)


@K.device(inline=True)
def merge_symbols(buf, lo, n, voc, work, base, out, o):
    """Merge the ``n`` symbols of a piece laid out in ``work`` (columns ``base ..``: symbol ids, next = k + 1, the
    rank of each symbol's pair with its right neighbour (NO_PAIR for the last) and, on the short path, the pair's
    result in the heap row) and write the ids to ``out[o:]``; returns the new ``o``. Shared by byte-level BPE
    (:func:`bpe_piece`) and SentencePiece BPE, whose symbols are characters and byte-fallback bytes."""
    sym = work[0]
    nxt = work[1]
    rk = work[2]
    hp = work[3]
    if n <= SHORT:
        # a scan of the rank row in index order (a symbol merged away ranks NO_PAIR): no chain of dependent loads
        # as a walk of the links would be; the previous symbol (to re-rank) by back links
        prv = work[5]
        for k in range(n):
            prv[base + k] = k - 1
        while True:  # (indices >= 0 unsigned: numba adds no negative-index wrap to each load)
            best = NO_PAIR
            bi = -1
            for k in range(n):
                r = rk[np.uint64(base + k)]
                if r < best:
                    best = r
                    bi = k
            if bi < 0:
                break
            ui = np.uint64(base + bi)
            bp = prv[ui]
            j = nxt[ui]
            sym[ui] = hp[ui]
            uj = np.uint64(base + j)
            rk[uj] = NO_PAIR
            nj = nxt[uj]
            nxt[ui] = nj
            if nj < n:
                prv[np.uint64(base + nj)] = bi
            for w in range(2):  # re-rank the merged symbol, then its left neighbour (one call site of pair_near)
                a = bi if w == 0 else bp
                if a < 0:
                    break
                ua = np.uint64(base + a)
                j2 = nxt[ua]
                if j2 < n:
                    rk[ua], hp[ua] = pair_near(buf, lo, sym, nxt, base, n, a, j2, voc)
                else:
                    rk[ua] = NO_PAIR
    else:
        # an indexed min-heap of the symbols that have a mergeable right neighbour (``where``: a symbol's slot
        # in it), and back links (``prv``) to re-rank the left neighbour of each merge
        where = work[4]
        prv = work[5]
        res = work[6]  # each pair's result (the first round's, from the heap row), so the top's is not looked up again
        size = 0
        for k in range(n):
            prv[base + k] = k - 1
            if rk[base + k] != NO_PAIR:
                res[base + k] = hp[base + k]
        for k in range(n):
            if rk[base + k] != NO_PAIR:
                hp[base + size] = k
                where[base + k] = size
                size += 1
        for at in range((size >> 1) - 1, -1, -1):  # heapify: sift down each inner slot
            heap_fix(hp, where, rk, base, size, at, False)
        while size > 0:
            bi = hp[base]
            j = nxt[base + bi]
            sym[base + bi] = res[base + bi]
            if rk[base + j] != NO_PAIR:
                size = heap_remove(hp, where, rk, base, size, j)
            nj = nxt[base + j]
            nxt[base + bi] = nj
            if nj < n:
                prv[base + nj] = bi
            if nj < n:
                rk[base + bi], res[base + bi] = pair_near(buf, lo, sym, nxt, base, n, bi, nj, voc)
            else:
                rk[base + bi] = NO_PAIR
            if rk[base + bi] == NO_PAIR:
                size = heap_remove(hp, where, rk, base, size, bi)
            else:
                heap_fix(hp, where, rk, base, size, where[base + bi], True)
            p = prv[base + bi]
            if p >= 0:
                had = rk[base + p] != NO_PAIR
                rk[base + p], res[base + p] = pair_near(buf, lo, sym, nxt, base, n, p, bi, voc)
                if rk[base + p] == NO_PAIR:
                    if had:
                        size = heap_remove(hp, where, rk, base, size, p)
                elif had:
                    heap_fix(hp, where, rk, base, size, where[base + p], True)
                else:
                    hp[base + size] = p
                    where[base + p] = size
                    size += 1
                    heap_fix(hp, where, rk, base, size, size - 1, True)
    k = 0
    while k < n:
        out[o] = sym[np.uint64(base + k)]
        o += 1
        k = nxt[np.uint64(base + k)]
    return o


@K.device
def cache_get(buf, lo, hi, h, cache, row, out, o):
    """The ids of a pre-token merged before by this CPU share (row ``row`` of the cache), copied to ``out[o:]``:
    the new ``o``, or -1 when it is not cached (or the cache is off: it has no row ``row``)."""
    meta, pool = cache
    n = hi - lo
    if row >= meta.shape[0] or n > CACHE_PIECE:
        return -1
    ns = meta[row, C_SLOTS]
    ents = CACHE_HEAD + ns
    ids = ents + meta[row, C_ENTS]
    mask = ns - 1
    s = (h ^ (h >> 15)) & mask
    for _ in range(ns):
        v = meta[row, CACHE_HEAD + s]
        if v < 0:
            return -1
        if (v >> 32) == (h & 0x7FFFFFFF):
            e = v & 0xFFFFFFFF
            b = meta[row, ents + 2 * e]
            if (b & 0xFFFFFFFF) == n:
                a = b >> 32
                same = True
                for k in range(n):
                    if pool[row, a + k] != buf[lo + k]:
                        same = False
                        break
                if same:
                    d = meta[row, ents + 2 * e + 1]
                    at = ids + (d >> 32)
                    m = d & 0xFFFFFFFF
                    for k in range(m):
                        out[o + k] = meta[row, at + k]
                    return o + m
        s = (s + 1) & mask
    return -1


@K.device
def cache_put(buf, lo, hi, h, cache, row, out, o, e):
    """Remember that pre-token ``buf[lo:hi]`` merges to ``out[o:e]`` (a miss of :func:`cache_get`, just merged).
    A full cache is emptied first; pieces over :data:`CACHE_PIECE` bytes are not kept."""
    meta, pool = cache
    n = hi - lo
    m = e - o
    if row >= meta.shape[0] or n > CACHE_PIECE:
        return
    ns = meta[row, C_SLOTS]
    ents = CACHE_HEAD + ns
    ids = ents + meta[row, C_ENTS]
    used = meta[row, C_USED]
    if 2 * (used + 1) > ns or ents + 2 * (used + 1) > ids or meta[row, C_BYTES] + n > pool.shape[1] \
            or ids + meta[row, C_IDS] + m > meta.shape[1]:
        for k in range(ns):
            meta[row, CACHE_HEAD + k] = -1
        meta[row, C_USED] = 0
        meta[row, C_BYTES] = 0
        meta[row, C_IDS] = 0
        used = 0
        if 2 > ns or ents + 2 > ids or n > pool.shape[1] or ids + m > meta.shape[1]:
            return
    mask = ns - 1
    s = (h ^ (h >> 15)) & mask
    while meta[row, CACHE_HEAD + s] >= 0:  # at most half the slots are taken: an empty one is always found
        s = (s + 1) & mask
    a = meta[row, C_BYTES]
    at = meta[row, C_IDS]
    for k in range(n):
        pool[row, a + k] = buf[lo + k]
    for k in range(m):
        meta[row, ids + at + k] = out[o + k]
    meta[row, ents + 2 * used] = (a << 32) | n
    meta[row, ents + 2 * used + 1] = (at << 32) | m
    meta[row, CACHE_HEAD + s] = ((h & 0x7FFFFFFF) << 32) | used
    meta[row, C_USED] = used + 1
    meta[row, C_BYTES] = a + n
    meta[row, C_IDS] = at + m


@K.device(inline=True)
def encode_piece(buf, lo, hi, voc, work, base, out, o, cache, row):
    """Ids of the pre-token ``buf[lo:hi]`` into ``out[o:]``: the whole token when it is one (and the format
    emits it whole), else its merges, remembered per CPU share (``cache``, row ``row``: text repeats its
    words). Returns the new ``o``."""
    if hi - lo == 1:
        out[o] = voc[BYTE_IDS][buf[lo]]
        return o + 1
    h, q = piece_hash(buf, lo, hi)
    tid = lookup(buf, lo, hi, h, q, voc, True)
    if tid >= 0:
        out[o] = tid
        return o + 1
    e = cache_get(buf, lo, hi, h, cache, row, out, o)
    if e >= 0:
        return e
    e = bpe_piece(buf, lo, hi, voc, work, base, out, o)
    cache_put(buf, lo, hi, h, cache, row, out, o, e)
    return e


# ------------------------------------------------------------------------------ host-side table build

N_WORK_ROWS = 7  # rows of the merge scratch (symbol, next, rank, heap, where, prev, result): int32 per byte


def _place(home: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Slots for keys of home slots ``home`` in an open-addressing table of ``size`` (a power of 2, more than the
    keys) with linear probing that wraps around, as :func:`lookup` and :func:`pair_of` probe it: each key is
    placed at its home or after a run of filled slots that starts there. Returns (slot per key, the longest run
    from a home to its key's slot).

    Vectorized (NumPy: no kernel to compile at load): by home order, key i lands at ``max(home_i, slot_{i-1} + 1)``,
    i.e. ``i + cummax(home - i)``. The keys are laid out twice, the second copy shifted by ``size``, so that the
    second copy sees what the first pushes past the end of the table (the wrap); the second copy is the table."""
    m = home.shape[0]
    order = np.argsort(home)  # (any order among equal homes gives a valid table)
    h2 = np.concatenate([home[order], home[order] + size])
    idx = np.arange(2 * m, dtype=np.int64)
    line = idx + np.maximum.accumulate(h2 - idx)
    # the second copy's slots rise strictly: distinct modulo size when they span less than size
    if m and line[-1] - line[m] >= size:
        raise RuntimeError("open addressing: more keys than slots")
    slot = np.empty(m, dtype=np.int64)
    slot[order] = line[m:] - size
    run = slot - home  # >= 0: the second copy's slot is at least its home
    return slot & (size - 1), int(run.max(initial=0))


def _hash_all(pool: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`piece_hash` of each ``pool[start:start + length]`` (length >= 1), vectorized by word: (hash, first
    word), int64."""
    padded = np.concatenate([pool, np.zeros(8, dtype=np.uint8)])
    words = np.maximum((length + 7) // 8, 1)
    ln = length.astype(np.uint64)
    acc = ln * H_LEN
    first = np.zeros(length.shape[0], dtype=np.uint64)
    lanes = np.arange(8, dtype=np.int64)
    for c in range(int(words.max(initial=0))):
        at = np.flatnonzero(words > c)
        w = np.ascontiguousarray(padded[(start[at] + 8 * c)[:, None] + lanes]).view("<u8").reshape(-1)
        r = ln[at] - np.uint64(8 * c)  # >= 1
        short = r < 8
        w[short] &= (np.uint64(1) << (np.uint64(8) * r[short])) - np.uint64(1)
        if c == 0:
            first[at] = w
        acc[at] = (acc[at] ^ ((w & M32) * H_LO + (w >> U32) * H_HI)) * H_STEP
    return (acc >> U32).astype(np.int64), first.view(np.int64)


def _mix64_all(key: np.ndarray) -> np.ndarray:
    """:func:`mix64` of each int64 ``key`` >= 0."""
    h = key.astype(np.uint64)
    h ^= h >> U31
    h *= PAIR_MIX  # (wraps mod 2**64, as the kernels' uint64 product; 63 bits kept)
    h &= M63
    h ^= h >> U27
    return h.astype(np.int64)


def _fill_slots(pool: np.ndarray, off: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The SLOTS table of every token of bytes (the kernels' :func:`piece_hash` and :func:`slot_tag`), each flagged
    WHOLE; returns (slots, each id's slot or -1, the longest probe run)."""
    lengths = np.diff(off)
    tid = np.flatnonzero(lengths > 0)
    n = lengths[tid]
    h, head = _hash_all(pool, off[tid], n)
    slot, longest = _place((h ^ (h >> 15)) & (size - 1), size)
    slots = np.full((size, 2), -1, dtype=np.int64)
    tag = ((h & 0x7FFFFF) << 8) | np.minimum(n, 255)
    slots[slot, 0] = (tag << 32) | WHOLE | tid
    slots[slot, 1] = head
    slot_of = np.full(lengths.shape[0], -1, dtype=np.int64)
    slot_of[tid] = slot
    return slots, slot_of, longest


def _fill_pairs(left: np.ndarray, right: np.ndarray, rank: np.ndarray, result: np.ndarray, size: int
                ) -> tuple[np.ndarray, int]:
    """The PAIRS table of every merge: (slots, 2) of (left << 32 | right, rank << 32 | result); returns (pairs, the
    longest probe run). A repeated pair keeps its lowest rank, then its first listed (HF's first-listed merge)."""
    key = (left << 32) | right
    order = np.lexsort((np.arange(key.shape[0]), rank, key))
    ks = key[order]
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = ks[1:] != ks[:-1]
    keep = order[first]
    key, rank, result = key[keep], rank[keep], result[keep]
    slot, longest = _place(_mix64_all(key) & (size - 1), size)
    pairs = np.full((size, 2), -1, dtype=np.int64)
    pairs[slot, 0] = key
    pairs[slot, 1] = (rank << 32) | result
    return pairs, longest


class Vocab:
    """A :class:`~triton_textops.ops.bpe.formats.BPESpec`'s merge tables as the kernels read them (host
    arrays; :meth:`on` gives the kernels' tuple on a device)."""

    def __init__(self, spec: BPESpec) -> None:
        n_ids = spec.n_ids
        if n_ids >= 1 << 31:
            raise ValueError(f"{spec.source}: ids up to {n_ids - 1} do not fit int32")
        lengths = np.zeros(n_ids, dtype=np.int64)
        toks: list[bytes] = [b""] * n_ids
        for tok, i in spec.vocab.items():
            toks[i] = tok
            lengths[i] = len(tok)
        off = np.zeros(n_ids + 1, dtype=np.int64)
        np.cumsum(lengths, out=off[1:])
        pool = np.frombuffer(b"".join(toks), dtype=np.uint8)
        size = 1 << max(4, (2 * max(len(spec.vocab), 1) - 1).bit_length())
        slots, slot_of, max_probe = _fill_slots(pool, off, size)
        byte_ids = np.array([spec.vocab[bytes([b])] for b in range(256)], dtype=np.int32)
        byte_pairs = np.full(1 << 16, -1, dtype=np.int64)
        if spec.merges is None:  # tiktoken's rule: a pair merges into the token of its bytes, ranked by that token's id:
            # the kernels look the pair's bytes up (span_pair), no pair table; the first round from the 2-byte tokens
            left = right = rank = result = np.zeros(0, dtype=np.int64)
            two = np.flatnonzero(lengths == 2)
            byte_pairs[(pool[off[two]].astype(np.int64) << 8) | pool[off[two] + 1]] = (two << 32) | two
        else:
            left, right, rank, result = spec.pair_table()
            if len(rank) and (rank.max() >= NO_PAIR or result.max() >= 1 << 31):
                raise ValueError(f"{spec.source}: merge ranks / ids do not fit int32")
            byte_of = np.full(n_ids, -1, dtype=np.int64)
            byte_of[byte_ids] = np.arange(256)
            lb, rb = byte_of[left], byte_of[right]
            single = (lb >= 0) & (rb >= 0)
            at = (lb[single] << 8) | rb[single]
            packed = (rank[single] << 32) | result[single]
            order = np.argsort(-rank[single], kind="stable")  # the lowest rank written last wins (as _fill_pairs)
            byte_pairs[at[order]] = packed[order]
        psize = 1 << max(4, (2 * max(len(left), 1) - 1).bit_length())
        pairs, pair_probe = _fill_pairs(left, right, rank, result, psize)  # (a rank file's: empty)
        consts = np.array([size - 1, psize - 1, max_probe, pair_probe, n_ids], dtype=np.int64)
        self.host = (pool, off, slots.reshape(-1), pairs, byte_pairs, byte_ids, consts)  # (SLOTS: flat, a view)
        if not spec.ignore_merges:  # whole only where merging the token's bytes gives the token itself
            part = slot_of[(lengths > 0) & (_self_reachable(self.host, off) == 0)]
            slots[part, 0] &= ~WHOLE
        self.lengths = lengths
        self.n_ids = n_ids

    def on(self, target: str, xp: object) -> tuple:
        """The tables on ``target``'s device, as the one tuple a kernel takes."""
        return tuple(K.to_device(a, target, xp) for a in self.host)


def _self_reachable(voc: tuple, off: np.ndarray) -> np.ndarray:
    """1 for each id whose bytes merge into that id alone (HF without ``ignore_merges`` emits a pre-token whole
    only then), 0 otherwise."""
    n = off.shape[0] - 1
    longest = int(np.diff(off).max()) if n else 0
    work = np.zeros((N_WORK_ROWS, max(longest, 1)), dtype=np.int32)
    out = np.zeros(max(longest, 1), dtype=np.int32)
    flags = np.zeros(n, dtype=np.uint8)
    _REACH(voc, off, work, out, flags)
    return flags


def _reach_kernel(voc, off, work, out, flags):
    """flags[tid] = 1 when the bytes of token ``tid`` merge into ``tid`` alone (a CPU kernel: see :func:`K.cpu`)."""
    pool = voc[POOL]
    for tid in range(off.shape[0] - 1):
        a = off[tid]
        b = off[tid + 1]
        if b - a == 1:
            flags[tid] = 1
        elif b - a > 1:
            o = bpe_piece(pool, a, b, voc, work, 0, out, 0)
            flags[tid] = 1 if (o == 1 and out[0] == tid) else 0


_REACH = K.cpu(_reach_kernel)
