"""Stages (b) WordPiece and (c) BERT packing, as kernels over stage (a)'s :class:`PreTokens`.

WordPiece is HuggingFace's greedy longest-match-first with the ``##`` continuation prefix: a word with
no full decomposition becomes one ``[UNK]``, and so does a word of more than 100 characters. A thread
handles one text: it looks each word up whole first (most words are one vocabulary piece), otherwise
extends a 32-bit FNV-1a hash byte by byte from the piece's start and probes the vocabulary's
open-addressing table at every character boundary, keeping the longest hit. Every hit is verified on
the bytes, so a hash collision can never give a wrong id.

Pieces are written straight into their places in the output rows (``[CLS]``, the pieces, ``[SEP]``,
padding; with overflow, every window that holds the piece) through :func:`put`, which ignores positions
outside the rows: fixed-length rows need no piece array at all, and a text stops once its row is full.
The same device code counts the pieces (overflow windows, the flat ``wordpiece`` output) and writes them.
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops import kernels as K
from triton_textops.ops.hashtable import find_bytes
from triton_textops.ops.text import (
    END,
    HASH,
    NCHARS,
    NTOK,
    SPECIAL,
    START,
    STATUS,
    PreTokens,
    pos_at,
    pretok_text,
    pretokens_ok,
)

try:
    from numba import cuda
except ImportError:  # pragma: no cover
    cuda = None

MAX_INPUT_CHARS_PER_WORD = 100  # HF WordPiece: a longer word becomes one [UNK]
# ------------------------------------------------------------------------------------ device code


@K.device(inline=True)
def put(out, row0, off, content, step, nwin, pos, val):
    """Write piece ``pos`` of a text into every window that holds it: window ``k`` (``k < nwin``) is row
    ``row0 + k`` of ``out[0]`` and holds pieces ``k*step .. k*step + content - 1`` from column ``off``.
    Positions outside the rows (or the array) are ignored, so callers may run past a row's end."""
    if nwin <= 0:
        return
    if nwin == 1:  # one row (no overflow windows, or the flat piece array): no division
        if pos < content and row0 < out.shape[1] and off + pos < out.shape[2]:
            out[0, row0, off + pos] = val
        return
    k = pos // step
    if k > nwin - 1:
        k = nwin - 1
    while k >= 0 and pos - k * step < content:
        r = row0 + k
        c = off + pos - k * step
        if r < out.shape[1] and c < out.shape[2]:
            out[0, r, c] = val
        k -= 1


@K.device
def wp_split(data, s, e, slots, pool, mask, max_probe, max_len, unk, out, row0, off, content, step, nwin, pos):
    """WordPiece of a word ``data[s:e]`` that is not one vocabulary piece, as pieces ``pos, pos+1, ...``:
    greedy longest match, each piece's candidates probed at every character boundary while its hash is
    extended byte by byte. Returns the next position."""
    p = s
    npc = 0
    while p < e:
        plen = 0 if npc == 0 else 2
        h = 0x811C9DC5 if npc == 0 else 0x16C89023  # FNV state after "" or after "##"
        lim = min(e, p + max_len - plen)
        best = -1
        blen = 0
        q = p
        while q < lim:
            h = ((h ^ int(data[q])) * 0x01000193) & 0xFFFFFFFF
            q += 1
            if q < e and (int(data[q]) & 0xC0) == 0x80:
                continue  # inside a character: pieces end at character boundaries
            f = find_bytes(h, data, p, q - p, plen, slots, pool, mask, max_probe)
            if f >= 0:
                best = f
                blen = q - p
        if best < 0:  # no full decomposition: the word is one [UNK] (the pieces written are overwritten)
            put(out, row0, off, content, step, nwin, pos, unk)
            return pos + 1
        put(out, row0, off, content, step, nwin, pos + npc, best)
        npc += 1
        p += blen
    return pos + npc


@K.device
def wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, out, row0, off, content, step, nwin, stop):
    """Pieces of text ``t`` (special ids, [UNK] for long words, WordPiece) written through :func:`put`,
    until ``stop`` pieces; returns how many there are (capped by ``stop``). ``vocab``: (mask, max_probe,
    max_len, unk, cls, sep, pad, then the special tokens' ids); token positions are relative to the text's
    region of ``data``, which starts at ``expand * offs[t]``."""
    mask = vocab[0]
    max_probe = vocab[1]
    max_len = vocab[2]
    unk = vocab[3]
    pos = 0
    k0 = offs[t]
    base = k0 * expand if txt[NTOK, t] > 0 else 0  # (a text with tokens has a checked span: no overflow)
    for k in range(k0, k0 + txt[NTOK, t]):
        if pos >= stop:
            break
        sp = tok[SPECIAL, k]
        if sp == -2:
            continue
        if sp >= 0:  # a special the vocabulary does not list (pre-tokens made elsewhere) reads as [UNK]
            put(out, row0, off, content, step, nwin, pos, vocab[7 + sp] if 7 + sp < vocab.shape[0] else unk)
            pos += 1
        elif tok[NCHARS, k] > MAX_INPUT_CHARS_PER_WORD:
            put(out, row0, off, content, step, nwin, pos, unk)
            pos += 1
        else:  # most words are one vocabulary piece: one lookup settles them
            s = base + pos_at(tok, START, k)
            e = base + pos_at(tok, END, k)
            wid = -1
            if e - s <= max_len:  # stage (a) hashed the token's bytes as it wrote them
                wid = find_bytes(int(tok[HASH, k]) & 0xFFFFFFFF, data, s, e - s, 0, slots, pool, mask, max_probe)
            if wid >= 0:
                put(out, row0, off, content, step, nwin, pos, wid)
                pos += 1
            else:
                pos = wp_split(data, s, e, slots, pool, mask, max_probe, max_len, unk,
                               out, row0, off, content, step, nwin, pos)
    return pos


@K.device
def frame_rows(t, n, rows, mapping, row0, nwin, content, step, specials, vocab):
    """[CLS]/[SEP], padding, attention mask (``rows[1]``), token types (``rows[2]``) and row->text mapping
    of text ``t``'s ``nwin`` rows, whose ``n`` pieces are already in place in ``rows[0]``."""
    width = rows.shape[2]
    for k in range(nwin):
        r = row0 + k
        if r >= rows.shape[1]:
            return
        length = n - k * step
        if length > content:
            length = content
        if length < 0:
            length = 0
        used = length
        if specials:
            rows[0, r, 0] = vocab[4]
            rows[0, r, length + 1] = vocab[5]
            used = length + 2
        for j in range(width):
            if j >= used:
                rows[0, r, j] = vocab[6]
            rows[1, r, j] = 1 if j < used else 0
            rows[2, r, j] = 0
        mapping[r] = t


@K.device
def encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, row0, nwin, content, step, specials):
    """Stages (b)+(c) of text ``t``: its pieces straight into its ``nwin`` rows from ``row0``, framed."""
    off = 1 if specials else 0
    stop = content if nwin == 1 else 1 << 62  # one row: the pieces past it are never needed
    m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, row0, off, content, step, nwin, stop)
    frame_rows(t, m, rows, mapping, row0, nwin, content, step, specials, vocab)


def _rows_cpu(share, shares, n, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, content, specials):
    for t in range(share, n, shares):
        pretokens_ok(t, data, expand, offs, tok, txt)
        encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, specials)


def _rows_gpu(n, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, content, specials):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretokens_ok(t, data, expand, offs, tok, txt)
        encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, specials)


ENCODE_ROWS = (K.cpu(_rows_cpu), K.gpu(_rows_gpu))


def _fused_cpu(share, shares, n, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt,
               vocab, slots, pool, rows, mapping, content, specials):
    for t in range(share, n, shares):
        pretok_text(t, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, content)
        encode_text(t, out, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, specials)


def _fused_gpu(n, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt,
               vocab, slots, pool, rows, mapping, content, specials):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretok_text(t, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, content)
        encode_text(t, out, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, specials)


ENCODE_FUSED = (K.cpu(_fused_cpu), K.gpu(_fused_gpu))  # stages (a)+(b)+(c), fixed-length rows: one launch


def _count_cpu(share, shares, n, data, expand, offs, tok, txt, vocab, slots, pool, dummy, counts):
    for t in range(share, n, shares):
        pretokens_ok(t, data, expand, offs, tok, txt)
        m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, dummy, 0, 0, 0, 1, 0, 1 << 62)
        counts[t] = m if txt[STATUS, t] == 0 else -1 - txt[STATUS, t]


def _count_gpu(n, data, expand, offs, tok, txt, vocab, slots, pool, dummy, counts):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretokens_ok(t, data, expand, offs, tok, txt)
        m = wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, dummy, 0, 0, 0, 1, 0, 1 << 62)
        counts[t] = m if txt[STATUS, t] == 0 else -1 - txt[STATUS, t]


COUNT_PIECES = (K.cpu(_count_cpu), K.gpu(_count_gpu))


def _windows_cpu(share, shares, n, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, plan, content, step,
                 specials):
    for t in range(share, n, shares):
        pretokens_ok(t, data, expand, offs, tok, txt)
        encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, plan[t], plan[t + 1] - plan[t],
                    content, step, specials)


def _windows_gpu(n, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, plan, content, step, specials):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretokens_ok(t, data, expand, offs, tok, txt)
        encode_text(t, data, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, plan[t], plan[t + 1] - plan[t],
                    content, step, specials)


ENCODE_WINDOWS = (K.cpu(_windows_cpu), K.gpu(_windows_gpu))


def _pieces_cpu(share, shares, n, data, expand, offs, tok, txt, vocab, slots, pool, pieces, piece_off):
    for t in range(share, n, shares):
        pretokens_ok(t, data, expand, offs, tok, txt)
        wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, pieces, 0, piece_off[t],
                piece_off[t + 1] - piece_off[t], 1 << 62, 1, 1 << 62)


def _pieces_gpu(n, data, expand, offs, tok, txt, vocab, slots, pool, pieces, piece_off):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretokens_ok(t, data, expand, offs, tok, txt)
        wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, pieces, 0, piece_off[t],
                piece_off[t + 1] - piece_off[t], 1 << 62, 1, 1 << 62)


WRITE_PIECES = (K.cpu(_pieces_cpu), K.gpu(_pieces_gpu))


@K.device
def copy_pieces(t, pieces, piece_off, rows, row0, off, content, step, nwin):
    """Text ``t``'s pieces from the flat array into its rows; returns how many it has."""
    lo = piece_off[t]
    m = piece_off[t + 1] - lo
    for p in range(m):
        put(rows, row0, off, content, step, nwin, p, pieces[lo + p])
    return m


def _pack_cpu(share, shares, n, pieces, piece_off, vocab, rows, mapping, plan, content, step, specials):
    for t in range(share, n, shares):
        row0 = plan[t]
        nwin = plan[t + 1] - row0
        m = copy_pieces(t, pieces, piece_off, rows, row0, 1 if specials else 0, content, step, nwin)
        frame_rows(t, m, rows, mapping, row0, nwin, content, step, specials, vocab)


def _pack_gpu(n, pieces, piece_off, vocab, rows, mapping, plan, content, step, specials):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        row0 = plan[t]
        nwin = plan[t + 1] - row0
        m = copy_pieces(t, pieces, piece_off, rows, row0, 1 if specials else 0, content, step, nwin)
        frame_rows(t, m, rows, mapping, row0, nwin, content, step, specials, vocab)


PACK_PIECES = (K.cpu(_pack_cpu), K.gpu(_pack_gpu))


def pre_args(pre: PreTokens) -> tuple:
    """The stage-(a) arrays the WordPiece kernels read."""
    return (pre.data, pre.expand, pre.offs, pre.tok, pre.txt)


def window_plan(counts: np.ndarray, content: int, step: int, overflow: bool) -> np.ndarray:
    """First row of each text's windows (n+1 entries, host int64): HF's overflow windows of ``content``
    pieces starting every ``step`` pieces, or one row per text."""
    lens = np.maximum(counts, 0)
    if overflow:
        wins = np.where(lens <= content, 1, 1 + (lens - content + step - 1) // step)
    else:
        wins = np.ones(lens.shape[0], dtype=np.int64)
    plan = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(wins, out=plan[1:])
    return plan
