"""SentencePiece BPE, the model stage: a pre-token's characters -> symbols (a piece's id, else its UTF-8 bytes'
``<0xXX>`` pieces with byte fallback, else the unknown id, fused when the format says), merged by the byte-level
BPE merge loop (:func:`~triton_textops.ops.bpe.merge.merge_symbols`: lowest rank first, leftmost on ties; a
heap for long pieces, so a 1 MB pre-token is n log n).

The ranks are HF's merge order (tokenizer.json) or, for a ``.model``, the result piece's score (highest first, equal
scores one rank: sentencepiece's leftmost pair among equals). A ``.model``'s user-defined pieces are matched whole
at a symbol's start and never merged (sentencepiece's frozen symbols).

The tables are :mod:`~triton_textops.ops.bpe.merge`'s vocabulary tuple (its lookup and pair tables), with the
SentencePiece entries after them (:data:`V_FROZEN`, :data:`V_ASCII`; :data:`VCONST` entries from :data:`V_UNK`).
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.bpe.merge import (
    BYTE_IDS,
    NO_PAIR,
    VCONST,
    _fill_pairs,
    _fill_slots,
    cache_get,
    cache_put,
    lookup,
    merge_symbols,
    pair_of,
    piece_hash,
)
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.status import SIZE_BOUND
from triton_textops.ops.core.utf8 import utf8_at
from triton_textops.ops.sentencepiece.formats import SPSpec
from triton_textops.ops.sentencepiece.normalize import frozen_table, sp_prefix_at

V_FROZEN, V_ASCII = 7, 8  # the frozen pieces' table (normalize.frozen_table), one-byte pieces' ids (256, -1: none)
V_UNK, V_FUSE, V_FALLBACK, V_IGNORE = 5, 6, 7, 8  # VCONST entries after merge's


def vocab_tables(spec: SPSpec) -> tuple:
    """The model's host tables (the kernels' vocabulary tuple)."""
    n_ids = spec.n_ids
    if n_ids >= 1 << 31:
        raise ValueError(f"{spec.source}: ids up to {n_ids - 1} do not fit int32")
    toks: list[bytes] = [b""] * n_ids
    for tok, i in spec.vocab.items():
        toks[i] = tok
    off = np.zeros(n_ids + 1, dtype=np.int64)
    np.cumsum([len(t) for t in toks], out=off[1:])
    pool = np.frombuffer(b"".join(toks) or b"\0", dtype=np.uint8).copy()
    size = 1 << max(4, (2 * max(len(spec.vocab), 1) - 1).bit_length())
    slots, _, max_probe = _fill_slots(pool, off, size)
    left, right, rank, result = spec.pairs
    if len(rank) and (rank.max() >= NO_PAIR or result.max() >= 1 << 31):
        raise ValueError(f"{spec.source}: merge ranks / ids do not fit int32")
    psize = 1 << max(4, (2 * max(len(left), 1) - 1).bit_length())
    pairs, pair_probe = _fill_pairs(left, right, rank, result, psize)
    consts = np.array([size - 1, psize - 1, max_probe, pair_probe, n_ids, spec.unk_id, int(spec.fuse_unk),
                       int(spec.byte_fallback), int(spec.ignore_merges)], dtype=np.int64)
    ascii_ids = np.array([spec.vocab.get(bytes([b]), -1) for b in range(256)], dtype=np.int64)
    frozen = frozen_table([p for p, _ in spec.frozen], [i for _, i in spec.frozen])
    return (pool, off, slots.reshape(-1), pairs, np.zeros(1, dtype=np.int64), spec.byte_ids.astype(np.int32),
            consts, frozen, ascii_ids)


@K.device(inline=True)
def sp_push_unk(sym, base, m, unk):
    """A pending unknown symbol written (the new count)."""
    sym[base + m] = unk
    return m + 1


@K.device
def sp_bpe_word(buf, lo, hi, voc, work, base, out, o, cap, cache, row):
    """Ids of the pre-token ``buf[lo:hi]`` into ``out[o:cap]`` (HF's BPE ``merge_word`` with byte fallback; a
    ``.model``'s frozen pieces whole): the new ``o``, -1 - SIZE_BOUND when ``out`` is full."""
    n = hi - lo
    if n <= 0:
        return o
    if o + n > cap:
        return -1 - SIZE_BOUND
    consts = voc[VCONST]
    h, q = piece_hash(buf, lo, hi)
    if consts[V_IGNORE]:
        tid = lookup(buf, lo, hi, h, q, voc, False)
        if tid >= 0:
            out[o] = tid
            return o + 1
    e = cache_get(buf, lo, hi, h, cache, row, out, o)
    if e >= 0:
        return e
    sym = work[0]
    nxt = work[1]
    rk = work[2]
    hp = work[3]
    unk = consts[V_UNK]
    fuse = consts[V_FUSE] != 0
    fallback = consts[V_FALLBACK] != 0
    byte_ids = voc[BYTE_IDS]
    ascii_ids = voc[V_ASCII]
    frozen = voc[V_FROZEN]
    has_frozen = frozen[1].shape[0] > 1
    m = 0
    pending = False
    i = lo
    while i < hi:
        c = buf[i]
        tid = -1
        ln = 1
        if has_frozen:
            fl, fk = sp_prefix_at(buf, i, hi, frozen)
            if fl > 0:
                tid = frozen[3][fk]
                ln = fl
        if tid < 0:
            if c < 0x80:
                tid = ascii_ids[c]
            else:
                ln = utf8_at(buf, i, hi)[1]
                ch, cq = piece_hash(buf, i, i + ln)
                tid = lookup(buf, i, i + ln, ch, cq, voc, False)
        if tid >= 0:
            if pending:
                m = sp_push_unk(sym, base, m, unk)
                pending = False
            sym[base + m] = tid
            m += 1
        else:
            ok = fallback
            for k in range(ln):
                if byte_ids[buf[i + k]] < 0:
                    ok = False
            if ok:  # (HF: a pending unknown stays pending past the bytes)
                for k in range(ln):
                    sym[base + m] = byte_ids[buf[i + k]]
                    m += 1
            elif unk >= 0:
                if pending and not fuse:
                    m = sp_push_unk(sym, base, m, unk)
                pending = True
        i += ln
    if pending:
        m = sp_push_unk(sym, base, m, unk)
    if m == 0:
        return o
    for k in range(m):
        nxt[base + k] = k + 1
    for k in range(m - 1):
        r, t = pair_of(sym[base + k], sym[base + k + 1], voc)
        rk[base + k] = r
        hp[base + k] = t
    rk[base + m - 1] = NO_PAIR
    e = merge_symbols(buf, lo, m, voc, work, base, out, o)
    if row < cache[0].shape[0]:  # (the hash again, not kept across the merge: registers on the GPU, no cache)
        h = piece_hash(buf, lo, hi)[0]
        cache_put(buf, lo, hi, h, cache, row, out, o, e)
    return e
