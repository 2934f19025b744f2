"""The BPE encode kernels: one thread per text, from raw UTF-8 to token ids in one pass over the text.

Per text: check its span and its UTF-8; split it at the added tokens matched in the raw text (HF's non-normalized
added tokens, tiktoken's allowed specials); normalize each segment between them when the format says so (NFC,
``add_prefix_space``) into the text's byte scratch; split that at the normalized added tokens; pre-tokenize the
rest with the family's scanner (:mod:`~triton_textops.ops.bpe.pretok`) and merge each pre-token
(:mod:`~triton_textops.ops.bpe.merge`). Ids go to the text's own scratch region, sized from its length before
the launch (no count pass); every write is bounds-checked against that region.

Kernels: :func:`encode_kernels` (a format's encode kernel: ids into scratch + a count or status per text, and, given rows, straight into fixed-length
padded rows + mask: one launch), :data:`COMPACT` (scratch -> the flat ragged ids, a file's truncation and padding
applied).
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.bpe.formats import REGEX
from triton_textops.ops.bpe.limits import L_LEFT_PAD, L_LEFT_TRUNC, L_PAD_ID
from triton_textops.ops.bpe.merge import encode_piece
from triton_textops.ops.bpe.pretok import CL_S, CL_W, SCANNERS, cls_at, pretoken_end
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.status import (  # (-1 - status in a count row)
    BAD_SPAN,
    BAD_UTF8,
    DISALLOWED,
    MAX_TEXT_BYTES,
    SIZE_BOUND,
    TOO_LONG,
)
from triton_textops.ops.core.unorm import nfc_quick, nfc_write
from triton_textops.ops.core.utf8 import utf8_valid
from triton_textops.ops.sentencepiece.normalize import NT_PROG, sp_norm_op

# cfg (int64 array) entries
C_PREFIX_SPACE, C_MULT, C_EXTRA, C_NPRE, C_NSUF, C_IDS = range(6)  # then the prefix and suffix ids
# adds tuple: (pool uint8, off int64 m+1, id int64 m, flags int64 m, by_first int64 259 + 1024) sorted by first byte;
# by_first[b] .. by_first[b+1]: the tokens starting with byte b; by_first[257], [258]: how many match raw / normalized;
# then TWO_BITS: a bitset over b0 << 8 | b1 of the first two bytes of every token (a one-byte token: with every b1)
A_POOL, A_OFF, A_ID, A_FLAGS, A_FIRST = range(5)
TWO_BITS = 259  # where the bitset starts in by_first
# added-token flags: split it out / refuse it / match it after normalizing; HF's lstrip, rstrip, single_word
F_MATCH, F_DISALLOWED, F_NORMALIZED, F_LSTRIP, F_RSTRIP, F_SINGLE_WORD = 1, 2, 4, 8, 16, 32
# the scratch tuple: normalized bytes (written), merge work rows, ids, and the normalized bytes again as the text's
# buffer type (read-only on the CPU): every scanner and merge then compiles for one buffer type, not two
S_NBUF, S_WORK, S_IDS, S_NBUF_READ, S_CACHE = range(5)  # S_CACHE: the merge cache (merge.CACHE_SHAPE): a row per
# CPU share, whose row ``row`` (the share's; none on the GPU: 0 rows) bpe_text and what it calls use


def added_arrays(items: list[tuple[bytes, int, int]]) -> tuple[np.ndarray, ...]:
    """The adds tuple (host arrays) of the added tokens a kernel matches: (content, id, flags) each."""
    items = sorted(items, key=lambda x: x[0][0])
    pool = np.frombuffer(b"".join(c for c, _, _ in items) or b"\0", dtype=np.uint8)
    off = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(c) for c, _, _ in items], out=off[1:])
    first = np.zeros(TWO_BITS + 1024, dtype=np.int64)
    two = np.zeros(1 << 16, dtype=bool)  # (TWO_BITS)
    for c, _, f in items:
        first[c[0] + 1:257] += 1
        first[258 if f & F_NORMALIZED else 257] += 1
        two[(c[0] << 8) | c[1] if len(c) > 1 else slice(c[0] << 8, (c[0] + 1) << 8)] = True
    first[TWO_BITS:] = np.packbits(two, bitorder="little").view("<i8")  # (word w, bit i: the pair w * 64 + i;
    # packing a reversed view by rows was most of a new tokenizer's first call)
    return (pool, off, np.array([i for _, i, _ in items] or [0], dtype=np.int64),
            np.array([f for _, _, f in items] or [0], dtype=np.int64), first)


@K.device
def match_at(buf, pos, end, adds, normalized):
    """Leftmost-longest added token of the set ``normalized`` (0: matched in the raw text, F_NORMALIZED: after
    normalization) in ``buf[pos:end]``: (start, end, index), or (end, end, -1)."""
    pool = adds[A_POOL]
    off = adds[A_OFF]
    flags = adds[A_FLAGS]
    first = adds[A_FIRST]
    if first[257 + (normalized != 0)] == 0:  # no token of this set
        return end, end, -1
    for p in range(pos, end):
        b = buf[p]
        if first[b] == first[b + 1]:
            continue
        if p + 1 < end:  # no token starts with these two bytes: the usual case. Llama-3's 256 specials all start
            # with "<|", and HTML has a "<" every few bytes: without this check HTML on a Llama-3-style file spent
            # most of its time here (figures: benchmarks/RESULTS.md, Design measurements, ops/bpe/encode.py)
            two = (np.int64(b) << 8) | np.int64(buf[p + 1])
            if ((first[TWO_BITS + (two >> 6)] >> (two & 63)) & 1) == 0:
                continue
        best = -1
        best_len = 0
        for k in range(first[b], first[b + 1]):
            f = flags[k]
            if (f & (F_MATCH | F_DISALLOWED)) == 0 or (f & F_NORMALIZED) != normalized:
                continue
            ln = off[k + 1] - off[k]
            if ln <= best_len or p + ln > end:
                continue
            same = True
            for j in range(1, ln):
                if buf[p + j] != pool[off[k] + j]:
                    same = False
                    break
            if same:
                best = k
                best_len = ln
        if best >= 0:
            return p, p + best_len, best
    return end, end, -1


@K.device(inline=True)
def char_before(buf, lo, i):
    """Start of the UTF-8 character that ends at ``buf[i]`` (``i > lo``)."""
    j = i - 1
    while j > lo and (buf[j] & 0xC0) == 0x80:
        j -= 1
    return j


@K.device
def next_added(buf, lo, pos, at, end, adds, normalized, ctab):
    """The next added token of a set in the piece ``buf[lo:end]``, searched from ``at`` (the previous match's own
    end), with HF's flags applied: ``single_word`` skips a match that touches a word character (``\\w``) on either
    side (the search goes on after it), ``lstrip`` / ``rstrip`` take the whitespace before it (not before ``pos``,
    where the previous match's strip ended) / after it. Returns (start, end, index, the match's own end) or (end,
    end, -1, end). As HF's, the search goes on from the match's own end, not from what ``rstrip`` took: a match
    may start inside that whitespace (and a start before ``pos`` leaves no text between them); an ``lstrip`` one
    then starts at ``pos``, and is dropped (by the caller) when that leaves it empty."""
    flags = adds[A_FLAGS]
    p = at
    while True:
        s, e, k = match_at(buf, p, end, adds, normalized)
        if k < 0:
            return s, e, k, e
        f = flags[k]
        if f & F_SINGLE_WORD:
            before = s > lo and (cls_at(buf, char_before(buf, lo, s), end, ctab)[0] & CL_W) != 0
            after = e < end and (cls_at(buf, e, end, ctab)[0] & CL_W) != 0
            if before or after:
                p = e
                continue
        own = e
        if f & F_LSTRIP:
            while s > pos:
                j = char_before(buf, pos, s)
                if (cls_at(buf, j, end, ctab)[0] & CL_S) == 0:
                    break
                s = j
            if s < pos:  # (HF: max(the stripped start, where the previous strip ended))
                s = pos
        if f & F_RSTRIP:
            while e < end:
                c, n, cp = cls_at(buf, e, end, ctab)
                if (c & CL_S) == 0:
                    break
                e += n
        return s, e, k, own


@K.device(inline="ir")
def encode_gap(buf, i, s, voc, ctab, cfg, scr, wb, o, cap, row):
    """Pre-tokenize ``buf[i:s]`` with the family's scanner (the kernel variant's ``pretoken_end``) and merge each
    pre-token into ``ids[o:]``; the new ``o`` or -1 when the ids region (``cap``) is full."""
    ids = scr[S_IDS]
    while i < s:
        j = pretoken_end(buf, i, s, ctab)
        if o + (j - i) > cap:
            return -1
        o = encode_piece(buf, i, j, voc, scr[S_WORK], wb, ids, o, scr[S_CACHE], row)
        i = j
    return o


@K.device(inline="ir")
def encode_span(buf, lo, hi, voc, ctab, adds, cfg, scr, nb, wb, o, cap, row):
    """Ids of ``buf[lo:hi]`` (a normalized piece): split at the normalized added tokens; each piece between them
    gets ByteLevel's prefix space when the format adds one (copied to the byte scratch at ``nb``), then
    :func:`encode_gap`. Returns the new ``o``, -1 when the text's regions are full, -1 - DISALLOWED for a
    disallowed token."""
    ids = scr[S_IDS]
    nbuf = scr[S_NBUF]
    prefix = cfg[C_PREFIX_SPACE] != 0
    pos = lo
    at = lo
    while at < hi:
        s, e, k, at = next_added(buf, lo, pos, at, hi, adds, F_NORMALIZED, ctab)
        if s > pos:
            src, a, b = buf, pos, s
            if prefix and buf[pos] != 32:
                if nb + 1 + (s - pos) > cap:
                    return -1
                nbuf[nb] = 32
                for q in range(pos, s):
                    nbuf[nb + 1 + q - pos] = buf[q]
                src, a, b = scr[S_NBUF_READ], nb, nb + 1 + s - pos
            o = encode_gap(src, a, b, voc, ctab, cfg, scr, wb, o, cap, row)  # (one call site: one inlined copy)
            if o < 0:
                return -1
        if k < 0:
            break
        if e > s:  # (HF drops an empty match: an lstrip one started where the previous strip ended)
            if adds[A_FLAGS][k] & F_DISALLOWED:
                return -1 - DISALLOWED
            if o >= cap:
                return -1
            ids[o] = adds[A_ID][k]
            o += 1
        pos = e
    return o


NORMAL = -2  # normalize(): the segment is normalized as it is


@K.device(inline=True)
def normalize(data, lo, hi, out, o, cap, ntab):
    """The normalizer of a format without one: every segment is :data:`NORMAL`. The NFC variant of the encode
    kernel binds this name to :func:`normalize_nfc`."""
    return NORMAL


@K.device(inline=True)
def normalize_nfc(data, lo, hi, out, o, cap, ntab):
    """One Unicode form (NFC; NFKC, NFD, NFKD: ``ntab`` is that form's tables): :data:`NORMAL` when ``data[lo:hi]``
    is in the form already, else the end of the form of it written to ``out[o:cap]`` (-1: it does not fit)."""
    if not nfc_quick(data, lo, hi, ntab):
        return NORMAL
    return nfc_write(data, lo, hi, out, o, cap, ntab)


@K.device
def normalize_prog(data, lo, hi, out, o, cap, ntab):
    """Any other normalizer: a program of :mod:`~triton_textops.ops.sentencepiece.normalize` (``ntab``: its
    tables), the one SentencePiece files run. ``out[o:cap]`` is split into two areas the ops ping-pong between,
    the segment copied into the one that makes the last op end in the first; returns the end of the result in
    ``out[o:]`` (-1: an area is too small; the tokenizer sizes them by the program's bound)."""
    nops = ntab[NT_PROG][0]
    size = (cap - o) // 2
    if o < 0 or hi - lo > size or cap > out.shape[0]:
        return -1
    cur = o if nops % 2 == 0 else o + size
    for k in range(hi - lo):
        out[cur + k] = data[lo + k]
    a = cur
    b = cur + hi - lo
    for op in range(nops):
        dst = o + size if cur == o else o
        b = sp_norm_op(out, a, b, out, dst, dst + size, ntab, op)
        if b < 0:
            return -1
        cur = dst
        a = dst
    return b


@K.device(inline="ir")
def bpe_text(t, row, wb, data, offsets, voc, ctab, adds, ntab, cfg, scr, cnt):
    """Ids of text ``t`` into its scratch region; ``cnt[t]``: their number, or -1 - status. The merge work rows
    from column ``wb`` on (a CPU share's own columns, reused text after text), or, ``wb`` < 0, the text's region
    (the GPU's: all texts at once)."""
    n_data = data.shape[0]
    lo = offsets[t]
    hi = offsets[t + 1]
    if lo < 0 or hi < lo or hi > n_data:
        cnt[t] = -1 - BAD_SPAN
        return
    if hi - lo > MAX_TEXT_BYTES:
        cnt[t] = -1 - TOO_LONG
        return
    if not utf8_valid(data, lo, hi):
        cnt[t] = -1 - BAD_UTF8
        return
    mult = cfg[C_MULT]
    extra = cfg[C_EXTRA]
    base = mult * offsets[t] + extra * t  # this text's region in every scratch array
    cap = base + mult * (hi - lo) + extra
    if wb < 0:
        wb = base
    if cap > scr[S_IDS].shape[0] or wb + (cap - base) > scr[S_WORK].shape[1]:  # (a piece is at most cap - base)
        cnt[t] = -1 - SIZE_BOUND
        return
    o = base
    npre = cfg[C_NPRE]
    for k in range(npre):
        scr[S_IDS][o] = cfg[C_IDS + k]
        o += 1
    pos = lo
    at = lo
    while at < hi:
        s, e, k, at = next_added(data, lo, pos, at, hi, adds, 0, ctab)
        if s > pos:  # the segment before it, NFC-normalized into the byte scratch when the format says so and it
            # is not NFC already (the prefix-space copies of encode_span then go after the normalized bytes)
            w = normalize(data, pos, s, scr[S_NBUF], base, cap, ntab)
            src, a, b, nb = data, pos, s, base
            if w != NORMAL:
                src, a, b, nb = scr[S_NBUF_READ], base, w, w
            o = -1 if w == -1 else encode_span(src, a, b, voc, ctab, adds, cfg, scr, nb, wb, o, cap, row)
            if o < 0:
                cnt[t] = -1 - (DISALLOWED if o == -1 - DISALLOWED else SIZE_BOUND)
                return
        if k < 0:
            break
        if e > s:  # (as encode_span)
            if adds[A_FLAGS][k] & F_DISALLOWED:
                cnt[t] = -1 - DISALLOWED
                return
            if o >= cap:
                cnt[t] = -1 - SIZE_BOUND
                return
            scr[S_IDS][o] = adds[A_ID][k]
            o += 1
        pos = e
    for k in range(cfg[C_NSUF]):
        if o >= cap:
            cnt[t] = -1 - SIZE_BOUND
            return
        scr[S_IDS][o] = cfg[C_IDS + npre + k]
        o += 1
    cnt[t] = o - base




@K.device
def compact_text(t, offsets, cfg, ids, cnt, drop, lim, out_off, out):
    """Copy text ``t``'s ``cnt[t]`` ids from its scratch region of ``ids`` to ``out[out_off[t]:out_off[t+1]]``, a
    file's limits applied (:mod:`~triton_textops.ops.bpe.limits`, planned on the host): ``drop[t]`` ids cut (none
    past ``drop``'s end) on the left (after the template's prefix ids) or the right (before its suffix ids), by
    ``lim``; the rest of the output row padded with the pad id on the left or the right. A plan that does not fit
    the text (not made by plan_limits) writes nothing."""
    base = cfg[C_MULT] * offsets[t] + cfg[C_EXTRA] * t
    c = cnt[t]
    d = drop[t] if drop.shape[0] > t else 0
    a = out_off[t]
    w = out_off[t + 1] - a
    keep = c - d
    if c < 0 or d < 0 or d > c - cfg[C_NPRE] - cfg[C_NSUF] or w < keep or a < 0 or a + w > out.shape[0] \
            or base + c > ids.shape[0]:
        return
    at = a + (w - keep if lim[L_LEFT_PAD] else 0)  # where the text's ids start in its output row
    cut = cfg[C_NPRE] if lim[L_LEFT_TRUNC] else keep - cfg[C_NSUF]  # the kept ids before the cut ones
    for k in range(cut):
        out[at + k] = ids[base + k]
    for k in range(cut, keep):
        out[at + k] = ids[base + k + d]
    pad = lim[L_PAD_ID]
    for k in range(a, at):
        out[k] = pad
    for k in range(at + keep, a + w):
        out[k] = pad


COMPACT = K.kernel(compact_text)


@K.device
def write_row(t, offsets, cfg, ids, cnt, rows, pad_id, left_pad, left_trunc):
    """Row ``t`` of ``rows`` (ids, mask) from text ``t``'s ids (its scratch region, ``cnt[t]`` of them): the
    format's prefix / suffix ids kept, the content truncated on the right or left to fit, padded with ``pad_id``
    on the right or left. A bad text (``cnt[t] < 0``) gets an empty row."""
    width = rows.shape[2]
    n = cnt[t]
    for k in range(width):
        rows[0, t, k] = pad_id
        rows[1, t, k] = 0
    if n < 0:
        return
    base = cfg[C_MULT] * offsets[t] + cfg[C_EXTRA] * t
    npre = cfg[C_NPRE]
    nsuf = cfg[C_NSUF]
    content = n - npre - nsuf
    room = width - npre - nsuf
    keep = content if content < room else room
    skip = content - keep if left_trunc else 0
    used = npre + keep + nsuf
    at = width - used if left_pad else 0
    for k in range(npre):
        rows[0, t, at + k] = ids[base + k]
    for k in range(keep):
        rows[0, t, at + npre + k] = ids[base + npre + skip + k]
    for k in range(nsuf):
        rows[0, t, at + npre + keep + k] = ids[base + npre + content + k]
    for k in range(used):
        rows[1, t, at + k] = 1


# Text t tokenized into its scratch region (the count in cnt[t]), then, when ``rows`` has rows (ragged output
# passes none), written as row t. The entry points call the two stages directly, and bpe_text and the stages under it
# (encode_span, encode_gap) are inlined by numba: each separately compiled function between the kernel and the
# merge step added to a cold compile (kernels.device).
# On the CPU the texts are taken in chunks by the threads (kernels.run_cpu_chunked): thread ``slot`` of ``slots`` uses
# its own merge work columns and merge cache row.
@K.device(inline="ir")
def bpe_rows_item(t, slot, slots, data, offsets, voc, ctab, adds, ntab, cfg, scr, cnt, out):
    """Text ``t`` into its scratch region and, when ``out``'s rows have rows, into row ``t``. ``slot`` of ``slots``:
    the CPU worker, whose merge work columns and merge cache row it uses (``slots`` 0 on the GPU: no merge cache).
    Group OUT: (rows int (2, n, width) or (2, 0, 0) for ragged output, pad_id, left_pad, left_trunc)."""
    rows, pad_id, left_pad, left_trunc = out
    wb = slot * (scr[S_WORK].shape[1] // slots) if slots > 0 else -1
    bpe_text(t, slot, wb, data, offsets, voc, ctab, adds, ntab, cfg, scr, cnt)
    if rows.shape[1] > 0:
        write_row(t, offsets, cfg, scr[S_IDS], cnt, rows, pad_id, left_pad, left_trunc)


def encode_kernels(family: int, nfc: bool | str, ranked: bool = False, dfa_only: bool = False) -> tuple:
    """The encode kernel pair of a format: one kernel for ragged ids and fixed rows (a second copy of the whole
    encoder would double the compile time), compiled with the family's scanner, its normalizer (``nfc``: False for
    none, True for one Unicode form, NFC or another (:func:`normalize_nfc`), "program" for any other normalizer
    (:func:`normalize_prog`)), and
    for a rank file (``ranked``) tiktoken's pair rule (:func:`~triton_textops.ops.bpe.merge.span_pair`), and
    nothing else (each unused scanner or normalizer compiled in would lengthen a cold load). A regex
    pre-tokenizer whose DFA is complete (``dfa_only``, :func:`~triton_textops.ops.bpe.regex.dfa.complete`) gets
    the variant without the Pike VM."""
    if family == REGEX:  # the compiled regex engine's gap encoder (a name the kernel binds: imported for it)
        import triton_textops.ops.bpe.regex.match  # noqa: F401, PLC0415 (it imports this module)
    bind = ((("pretoken_end", SCANNERS[family]),) if family in SCANNERS else ()) \
        + ((("encode_gap", "encode_gap_regex"),) if family == REGEX else ()) \
        + ((("rx_find", "rx_find_dfa"),) if family == REGEX and dfa_only else ()) \
        + ((("normalize", "normalize_prog" if nfc == "program" else "normalize_nfc"),) if nfc else ()) \
        + ((("pair_near", "span_pair"),) if ranked else ())
    return K.kernel(bpe_rows_item, bind, chunked=True)
