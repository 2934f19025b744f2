"""BERT post-processing of WordPiece: the template's special tokens (``[CLS] ... [SEP]``, HF's ``BertProcessing`` or a
``TemplateProcessing`` of one sequence) and token types, truncation on either side, overflow windows with stride,
padding on either side, masks and the row->text mapping; and the WordPiece kernels, each pretokenize -> model ->
framing of one text.

Kernel groups: TEXT, NORM and PRE (:mod:`~triton_textops.ops.wordpiece.pretokenize`), VOCAB
(:mod:`~triton_textops.ops.wordpiece.model`: its consts hold the template), and ROWS ``(rows: ids, mask, token types
as (3, nrows, width); mapping (nrows,))``. ``flags``: :data:`F_SPECIALS` (frame with the template) |
:data:`F_LEFT_PAD` (pad on the left; a ``True`` from an older caller is the template, padded on the right).
"""

from __future__ import annotations

from triton_textops.ops.core import kernels as K
from triton_textops.ops.wordpiece.model import V_NPRE, V_NSUF, V_PAD, V_PRE, V_SEQTYPE, V_SUF, put, wp_text
from triton_textops.ops.wordpiece.pretokenize import FULL, STATUS, pretok_text, pretokens_ok

F_SPECIALS, F_LEFT_PAD = 1, 2


@K.device
def frame_rows(t, n, rows, mapping, row0, nwin, content, step, flags, vocab):
    """The template's ids and types around the pieces, padding, attention mask (``rows[1]``), token types
    (``rows[2]``) and row->text mapping of text ``t``'s ``nwin`` rows, whose ``n`` pieces are already in place in
    ``rows[0]`` (from the column after the template's leading ids). Left padding moves them right. As HF's, the
    windows after the first give the text type 0 (its template's sequence type only in the first)."""
    width = rows.shape[2]
    sp = (flags & F_SPECIALS) != 0
    npre = vocab[V_NPRE] if sp else 0
    nsuf = vocab[V_NSUF] if sp else 0
    pre_at = vocab[V_PRE]
    suf_at = vocab[V_SUF]
    pad = vocab[V_PAD]
    for k in range(nwin):
        r = row0 + k
        if r < 0 or r >= rows.shape[1]:
            return
        length = n - k * step
        if length > content:
            length = content
        if length > width - npre - nsuf:
            length = width - npre - nsuf
        if length < 0:
            length = 0
        used = npre + length + nsuf
        shift = 0
        if (flags & F_LEFT_PAD) != 0 and used < width:
            shift = width - used
            for j in range(length - 1, -1, -1):  # the pieces move right, the last first
                rows[0, r, shift + npre + j] = rows[0, r, npre + j]
        seq = vocab[V_SEQTYPE] if k == 0 else 0
        for j in range(width):
            q = j - shift
            if q < 0 or q >= used:
                rows[0, r, j] = pad
                rows[1, r, j] = 0
                rows[2, r, j] = 0
                continue
            rows[1, r, j] = 1
            if q < npre:
                rows[0, r, j] = vocab[pre_at + q]
                rows[2, r, j] = vocab[pre_at + npre + q]
            elif q < npre + length:
                rows[2, r, j] = seq
            else:
                rows[0, r, j] = vocab[suf_at + q - npre - length]
                rows[2, r, j] = vocab[suf_at + nsuf + q - npre - length]
        mapping[r] = t


@K.device
def encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, row0, nwin, content, step, specials):
    """WordPiece and post-processing of text ``t``: its pieces straight into its ``nwin`` rows from ``row0``, framed (``specials``:
    the flags, or a bool: the template or none, right padding)."""
    flags = int(specials)
    off = vocab[V_NPRE] if (flags & F_SPECIALS) != 0 else 0
    stop = content if nwin == 1 else FULL  # one row: the pieces past it are never needed
    m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, row0, off, content, step, nwin, 0, stop)
    frame_rows(t, m, rows, mapping, row0, nwin, content, step, flags, vocab)


@K.device
def copy_pieces(t, pieces, piece_off, rows, row0, off, content, step, nwin):
    """Text ``t``'s pieces from the flat array into its rows; returns how many it has."""
    lo = piece_off[t]
    m = piece_off[t + 1] - lo
    for p in range(m):
        put(rows, row0, off, content, step, nwin, 0, p, pieces[lo + p])
    return m


@K.device(inline="ir")
def wp_rows_item(t, pre, voc, out, content, flags):
    """Fixed-length row ``t`` from checked pre-tokens (PRE, VOCAB, ROWS)."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    rows, mapping = out
    pretokens_ok(t, data, expand, offs, tok, txt)
    encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, flags)


ENCODE_ROWS = K.kernel(wp_rows_item)


@K.device(inline="ir")
def wp_left_rows_item(t, pre, voc, out, skips, content, flags):
    """Fixed-length row ``t`` truncated on the left: its first ``skips[t]`` pieces dropped (host: from the counts)."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    rows, mapping = out
    pretokens_ok(t, data, expand, offs, tok, txt)
    skip = skips[t]
    off = vocab[V_NPRE] if (flags & F_SPECIALS) != 0 else 0
    m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, t, off, content, content, 1, skip, FULL)
    frame_rows(t, m - skip, rows, mapping, t, 1, content, content, flags, vocab)


ENCODE_LEFT_ROWS = K.kernel(wp_left_rows_item)


@K.device(inline="ir")
def wp_fused_item(t, text, norm, pre, voc, out, content, flags):
    """Normalization + pre-tokenization, WordPiece and framing of text ``t`` by one thread, into fixed-length row ``t``."""
    data, offs = text
    info, npool, sp_first, sp_bytes, sp_off, n_sp = norm
    nbuf, expand, _, tok, txt = pre
    vocab, slots, pool = voc
    rows, mapping = out
    pretok_text(t, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, nbuf, expand, tok, txt, content)
    encode_text(t, nbuf, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, flags)


ENCODE_FUSED = K.kernel(wp_fused_item)  # normalize + pre-tokenize + WordPiece + rows: one launch


@K.device(inline="ir")
def wp_count_item(t, pre, voc, dummy, counts):
    """Text ``t``'s number of pieces, or ``-1 - status``."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    pretokens_ok(t, data, expand, offs, tok, txt)
    m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, dummy, 0, 0, 0, 1, 0, 0, FULL)
    counts[t] = m if txt[STATUS, t] == 0 else -1 - txt[STATUS, t]


COUNT_PIECES = K.kernel(wp_count_item)


@K.device(inline="ir")
def wp_windows_item(t, pre, voc, out, plan, content, step, flags):
    """Text ``t``'s overflow windows, rows ``plan[t] .. plan[t+1] - 1``."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    rows, mapping = out
    pretokens_ok(t, data, expand, offs, tok, txt)
    encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, plan[t], plan[t + 1] - plan[t],
                content, step, flags)


ENCODE_WINDOWS = K.kernel(wp_windows_item)


@K.device(inline="ir")
def wp_pieces_item(t, pre, voc, pieces, piece_off):
    """Text ``t``'s pieces into the flat array at ``piece_off[t]``."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    pretokens_ok(t, data, expand, offs, tok, txt)
    wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, pieces, 0, piece_off[t],
            piece_off[t + 1] - piece_off[t], FULL, 1, 0, FULL)


WRITE_PIECES = K.kernel(wp_pieces_item)


@K.device
def frame_flat(t, out, lo, hi, npre, keep, nsuf, flags, vocab):
    """The template's ids and the padding around text ``t``'s ``keep`` pieces in ``out[0, 0, lo:hi]`` (the pieces
    already in place after the leading padding and ids); returns nothing."""
    pad = vocab[V_PAD]
    padn = hi - lo - npre - keep - nsuf
    start = lo + padn if (flags & F_LEFT_PAD) != 0 else lo
    for j in range(lo, hi):
        q = j - start
        if q < 0 or q >= npre + keep + nsuf:
            out[0, 0, j] = pad
        elif q < npre:
            out[0, 0, j] = vocab[vocab[V_PRE] + q]
        elif q >= npre + keep:
            out[0, 0, j] = vocab[vocab[V_SUF] + q - npre - keep]


@K.device(inline="ir")
def wp_ragged_item(t, pre, voc, out, out_off, plan, flags):
    """Text ``t``'s ids, framed, into ``out[0, 0, out_off[t]:out_off[t+1]]``: its pieces from ``plan[0, t]`` on
    (left truncation drops the first), ``plan[1, t]`` of them, the template's ids around them when ``flags`` says
    so, and padding up to the span's end (on the side ``flags`` says)."""
    data, expand, offs, tok, txt = pre
    vocab, slots, pool = voc
    pretokens_ok(t, data, expand, offs, tok, txt)
    lo = out_off[t]
    hi = out_off[t + 1]
    if lo < 0 or hi < lo or hi > out.shape[2]:
        return
    sp = (flags & F_SPECIALS) != 0
    npre = vocab[V_NPRE] if sp else 0
    nsuf = vocab[V_NSUF] if sp else 0
    skip = plan[0, t]
    keep = plan[1, t]
    if keep > hi - lo - npre - nsuf:  # (the host's plan fits; never write outside the span)
        keep = hi - lo - npre - nsuf
    if keep < 0 or skip < 0:
        return
    start = hi - nsuf - keep - npre if (flags & F_LEFT_PAD) != 0 else lo
    wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, out, 0, start + npre, keep, FULL, 1, skip,
            skip + keep)
    frame_flat(t, out, lo, hi, npre, keep, nsuf, flags, vocab)


WRITE_RAGGED = K.kernel(wp_ragged_item)


@K.device(inline="ir")
def wp_pack_item(t, pieces, piece_off, vocab, out, plan, content, step, flags):
    """A caller's pieces of text ``t`` framed into its rows."""
    rows, mapping = out
    row0 = plan[t]
    nwin = plan[t + 1] - row0
    off = vocab[V_NPRE] if (flags & F_SPECIALS) != 0 else 0
    m = copy_pieces(t, pieces, piece_off, rows, row0, off, content, step, nwin)
    frame_rows(t, m, rows, mapping, row0, nwin, content, step, flags, vocab)


PACK_PIECES = K.kernel(wp_pack_item)
