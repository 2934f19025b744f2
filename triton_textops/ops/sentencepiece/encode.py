"""The SentencePiece encode kernel: one thread per text, raw UTF-8 to ids in one pass, as HF's pipeline orders it.

Per text: check its span and UTF-8; split it at the added tokens matched in the raw text; normalize each segment
between them (:mod:`~triton_textops.ops.sentencepiece.normalize`) into the first two areas of the text's byte
scratch; split that at the normalized added tokens; pre-tokenize each gap (:mod:`.pretokenize`: the split, then
Metaspace into the third area) and hand each pre-token to the model (:func:`sp_word`: BPE by default, the
Unigram variant binds it to its own). Ids go to the text's region of the ids scratch, laid out as byte-level BPE's
(:mod:`~triton_textops.ops.bpe.encode`: its row writer and compaction kernel serve both families).

The byte scratch layout (``lay``): on the GPU a text of n bytes at offset ``off`` of the batch owns ``lay[L_NB] *
off + lay[L_EB] * t`` onwards, on the CPU each worker's share of the scratch is reused text after text: two
normalize areas of ``lay[L_SA] * n + lay[L_SB]`` bytes and a pre-token area of ``lay[L_WA] * n + lay[L_WB]`` (the
merge work rows of a GPU text start at that area's column too).
"""

from __future__ import annotations

from triton_textops.ops.bpe.encode import (
    A_FLAGS,
    A_ID,
    C_EXTRA,
    C_IDS,
    C_MULT,
    C_NPRE,
    C_NSUF,
    F_DISALLOWED,
    F_NORMALIZED,
    next_added,
    write_row,
)
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.status import (
    BAD_SPAN,
    BAD_UTF8,
    DISALLOWED,
    MAX_TEXT_BYTES,
    SIZE_BOUND,
    TOO_LONG,
)
from triton_textops.ops.core.utf8 import utf8_valid
from triton_textops.ops.sentencepiece.bpe import sp_bpe_word
from triton_textops.ops.sentencepiece.normalize import sp_normalize
from triton_textops.ops.sentencepiece.pretokenize import (
    B_NEXT,
    P_META,
    P_MSPLIT,
    P_REP0,
    P_REPN,
    P_WORDS,
    metaspace_write,
    piece_next,
    sp_word_end,
    split_next,
)
from triton_textops.ops.sentencepiece.unigram import uni_encode

L_NB, L_EB, L_SA, L_SB, L_WA, L_WB = range(6)
S_NBUF, S_WORK, S_IDS, S_LAY, S_CACHE = range(5)  # the scratch tuple


@K.device
def sp_word(buf, lo, hi, mdl, work, base, out, o, cap, cache, row):
    """The model stage: ids of pre-token ``buf[lo:hi]`` into ``out[o:cap]`` (new ``o``, or -1 - status). BPE here;
    a Unigram kernel binds this name to its model's function of the same arguments."""
    return sp_bpe_word(buf, lo, hi, mdl, work, base, out, o, cap, cache, row)


@K.device(inline=True)
def unigram_word(buf, lo, hi, mdl, work, base, out, o, cap, cache, row):
    """:func:`sp_word` of a Unigram model (its kernel variant binds this name): Viterbi over the pieces
    (:func:`~triton_textops.ops.sentencepiece.unigram.uni_encode`), its work rows in ``cache`` (best, back)."""
    if o + (hi - lo) > cap:
        return -1 - SIZE_BOUND
    best, back = cache
    return uni_encode(buf, lo, hi, mdl, best, back, base, out, o)


@K.device(inline="ir")
def sp_gap(nbuf, a, b, first, mdl, ptab, scr, wbuf, wsz, wb, o, cap, row):
    """Pre-tokenize ``nbuf[a:b]`` and encode each pre-token (``first``: the gap starts the text, for Metaspace's
    ``first`` scheme). The new ``o``, or -1 - status (SIZE_BOUND when a region is full)."""
    ints, pool = ptab
    meta = ints[P_META] != 0
    msplit = ints[P_MSPLIT] != 0
    words = ints[P_WORDS] != 0
    i = a
    while i < b:
        s, e, i = piece_next(nbuf, i, b, ptab)
        if e <= s:
            continue
        r0 = s
        r1 = e
        if meta:
            r0 = wbuf
            r1 = metaspace_write(nbuf, s, e, nbuf, wbuf, wbuf + wsz, ptab, first and s == a)
            if r1 < 0:
                return -1 - SIZE_BOUND
        j = r0
        while j < r1:  # (each piece of Metaspace's split, or with P_WORDS each word, else the whole)
            if meta and msplit:
                ws, we, j = split_next(nbuf, j, r1, pool, ints[P_REP0], ints[P_REPN], B_NEXT)
            else:
                ws = j
                we = sp_word_end(nbuf, j, r1) if words else r1
                j = we
            if we > ws:
                o = sp_word(nbuf, ws, we, mdl, scr[S_WORK], wb, scr[S_IDS], o, cap, scr[S_CACHE], row)
                if o < 0:
                    return o
    return o


@K.device(inline="ir")
def sp_segment(data, pos, s, first, mdl, ctab, adds, ntab, ptab, scr, bb, seg, wbuf, wsz, wb, o, cap, row):
    """Normalize segment ``data[pos:s]`` (between raw added tokens), split it at the normalized added tokens and
    encode each gap. The new ``o``, or -1 - status (SIZE_BOUND, DISALLOWED, the model's)."""
    nbuf = scr[S_NBUF]
    ids = scr[S_IDS]
    nl, nh = sp_normalize(data, pos, s, nbuf, bb, seg, ntab)
    if nl < 0:
        return -1 - SIZE_BOUND
    p = nl
    at = nl
    while at < nh:
        ms, me, k, at = next_added(nbuf, nl, p, at, nh, adds, F_NORMALIZED, ctab)
        if ms > p:
            o = sp_gap(nbuf, p, ms, first and p == nl, mdl, ptab, scr, wbuf, wsz, wb, o, cap, row)
            if o < 0:
                return o
        if k < 0:
            break
        if me > ms:
            if adds[A_FLAGS][k] & F_DISALLOWED:
                return -1 - DISALLOWED
            if o >= cap:
                return -1 - SIZE_BOUND
            ids[o] = adds[A_ID][k]
            o += 1
        p = me
    return o


@K.device(inline="ir")
def sp_text(t, row, wb, nbb, data, offsets, mdl, ctab, adds, ntab, ptab, cfg, scr, cnt):
    """Ids of text ``t`` into its ids region; ``cnt[t]``: their number, or -1 - status. ``wb``: the merge work
    columns of this CPU share, or < 0: the text's own (the GPU's); ``nbb``: likewise the share's byte scratch
    (reused text after text: it stays in cache), or < 0: the text's own region."""
    lo = offsets[t]
    hi = offsets[t + 1]
    if lo < 0 or hi < lo or hi > data.shape[0]:
        cnt[t] = -1 - BAD_SPAN
        return
    if hi - lo > MAX_TEXT_BYTES:
        cnt[t] = -1 - TOO_LONG
        return
    if not utf8_valid(data, lo, hi):
        cnt[t] = -1 - BAD_UTF8
        return
    lay = scr[S_LAY]
    n = hi - lo
    bb = lay[L_NB] * lo + lay[L_EB] * t if nbb < 0 else nbb
    seg = lay[L_SA] * n + lay[L_SB]
    wbuf = bb + 2 * seg
    wsz = lay[L_WA] * n + lay[L_WB]
    base = cfg[C_MULT] * lo + cfg[C_EXTRA] * t
    cap = base + cfg[C_MULT] * n + cfg[C_EXTRA]
    if wb < 0:
        wb = wbuf
    if wbuf + wsz > scr[S_NBUF].shape[0] or cap > scr[S_IDS].shape[0] or wb + wsz > scr[S_WORK].shape[1]:
        cnt[t] = -1 - SIZE_BOUND
        return
    ids = scr[S_IDS]
    o = base
    npre = cfg[C_NPRE]
    for k in range(npre):
        ids[o] = cfg[C_IDS + k]
        o += 1
    pos = lo
    at = lo
    while at < hi:
        s, e, k, at = next_added(data, lo, pos, at, hi, adds, 0, ctab)
        if s > pos:
            o = sp_segment(data, pos, s, pos == lo, mdl, ctab, adds, ntab, ptab, scr, bb, seg, wbuf, wsz, wb, o,
                           cap, row)
            if o < 0:
                cnt[t] = o
                return
        if k < 0:
            break
        if e > s:
            if adds[A_FLAGS][k] & F_DISALLOWED:
                cnt[t] = -1 - DISALLOWED
                return
            if o >= cap:
                cnt[t] = -1 - SIZE_BOUND
                return
            ids[o] = adds[A_ID][k]
            o += 1
        pos = e
    for k in range(cfg[C_NSUF]):
        if o >= cap:
            cnt[t] = -1 - SIZE_BOUND
            return
        ids[o] = cfg[C_IDS + npre + k]
        o += 1
    cnt[t] = o - (cfg[C_MULT] * lo + cfg[C_EXTRA] * t)  # (the base again: not kept live through the text)


@K.device(inline="ir")
def sp_rows_item(t, slot, slots, data, offsets, mdl, ctab, adds, ntab, ptab, cfg, scr, cnt, out):
    """Text ``t`` into its ids region and, when ``out``'s rows have rows, into row ``t`` (as BPE's
    ``bpe_rows_item``). OUT: (rows (2, n, width) or (2, 0, 0), pad_id, left_pad, left_trunc)."""
    rows, pad_id, left_pad, left_trunc = out
    wb = slot * (scr[S_WORK].shape[1] // slots) if slots > 0 else -1
    nbb = slot * (scr[S_NBUF].shape[0] // slots) if slots > 0 else -1
    sp_text(t, slot, wb, nbb, data, offsets, mdl, ctab, adds, ntab, ptab, cfg, scr, cnt)
    if rows.shape[1] > 0:
        write_row(t, offsets, cfg, scr[S_IDS], cnt, rows, pad_id, left_pad, left_trunc)


def encode_kernels(model: str = "bpe") -> tuple:
    """The encode kernel of a SentencePiece model (``model`` "bpe"; "unigram" binds :func:`sp_word` to the
    Unigram model's word function)."""
    bind = (("sp_word", "unigram_word"),) if model == "unigram" else ()
    return K.kernel(sp_rows_item, bind, chunked=True)


SP_ENCODE = encode_kernels()  # (made at import: tests/ptx finds them)
SP_ENCODE_UNIGRAM = encode_kernels("unigram")
