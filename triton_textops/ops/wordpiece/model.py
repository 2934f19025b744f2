"""The WordPiece model: the pre-tokenizer's pre-tokens (:class:`PreTokens`) into vocabulary ids, as device code.

WordPiece is HuggingFace's greedy longest-match-first with a continuation prefix (``continuing_subword_prefix``,
``##`` for BERT): a word with no full decomposition becomes one unknown token, and so does a word of more than
``max_input_chars_per_word`` (100) characters. A thread handles one text: it looks each word up whole first (most
words are one vocabulary piece), otherwise extends a 32-bit FNV-1a hash byte by byte from the piece's start (for a
continuation piece, from the hash state after the prefix) and probes the vocabulary's open-addressing table at
every character boundary, keeping the longest hit. Every hit is verified on the bytes, so a hash collision can
never give a wrong id.

Pieces are written straight into their places in the output rows (with overflow, every window that holds the
piece) through :func:`put`, which ignores positions outside the rows: fixed-length rows need no piece array at
all, and a text stops once its row is full. The same device code counts the pieces (overflow windows, the flat
``wordpiece`` output) and writes them; :mod:`~triton_textops.ops.wordpiece.postprocess` frames the rows.

Kernel group VOCAB: ``(consts int64 (:func:`vocab_consts`: the ``V_*`` entries, then the added tokens' ids, the
template's ids and types); slots int32 (S, 8); pool uint8)`` (:class:`~triton_textops.ops.core.hashtable.ByteTable`).
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.hashtable import FNV_OFFSET, find_bytes, fnv_host
from triton_textops.ops.wordpiece.pretokenize import END, HASH, NCHARS, NTOK, SPECIAL, START, pos_at

MAX_INPUT_CHARS_PER_WORD = 100  # HF WordPiece's default: a longer word becomes one [UNK]
# the VOCAB consts (int64): table mask and longest probe, longest string, the unknown and pad ids, the longest word,
# the continuation prefix's length and FNV-1a state, how many added tokens, template ids before / after the text,
# the text's token type, where the template's ids start (before: ids then types; after: ids then types)
(V_MASK, V_PROBE, V_MAXLEN, V_UNK, V_PAD, V_MAXCHARS, V_PLEN, V_PHASH, V_NSP, V_NPRE, V_NSUF, V_SEQTYPE, V_PRE,
 V_SUF) = range(14)
V_HEAD = 14  # the added tokens' ids start here


def vocab_consts(mask: int, max_probe: int, max_len: int, unk: int, pad: int, max_chars: int, prefix: bytes,
                 special_ids: list[int], pre: list[tuple[int, int]], suf: list[tuple[int, int]],
                 seq_type: int) -> np.ndarray:
    """The VOCAB group's consts: the table's parameters, the model's (``prefix``: the continuation prefix's bytes),
    the ids of the added tokens a kernel matches (in the order of its special tables), and the template's
    (id, type id) pairs before (``pre``) and after (``suf``) the text with the text's type id."""
    head = [mask, max_probe, max_len, unk, pad, max_chars, len(prefix), fnv_host(prefix, FNV_OFFSET),
            len(special_ids), len(pre), len(suf), seq_type, 0, 0]
    head[V_PRE] = V_HEAD + len(special_ids)
    head[V_SUF] = head[V_PRE] + 2 * len(pre)
    body = list(special_ids) + [i for i, _ in pre] + [y for _, y in pre] + [i for i, _ in suf] + [y for _, y in suf]
    return np.asarray(head + body, dtype=np.int64)


# ------------------------------------------------------------------------------------ device code


@K.device(inline=True)
def put(out, row0, off, content, step, nwin, skip, pos, val):
    """Write piece ``pos`` of a text into every window that holds it: pieces before ``skip`` are dropped (left
    truncation), and piece ``q = pos - skip`` goes to window ``k`` (``k < nwin``), row ``row0 + k`` of ``out[0]``,
    which holds pieces ``k*step .. k*step + content - 1`` from column ``off``. Positions outside the rows (or the
    array) are ignored, so callers may run past a row's end."""
    q = pos - skip
    if nwin <= 0 or q < 0 or row0 < 0 or off < 0:
        return
    if nwin == 1:  # one row (no overflow windows, or the flat piece array): no division
        if q < content and row0 < out.shape[1] and off + q < out.shape[2]:
            out[0, row0, off + q] = val
        return
    k = q // step
    if k > nwin - 1:
        k = nwin - 1
    while k >= 0 and q - k * step < content:
        r = row0 + k
        c = off + q - k * step
        if r < out.shape[1] and c < out.shape[2]:
            out[0, r, c] = val
        k -= 1


@K.device
def wp_split(data, s, e, vocab, slots, pool, out, row0, off, content, step, nwin, skip, pos):
    """WordPiece of a word ``data[s:e]`` that is not one vocabulary piece, as pieces ``pos, pos+1, ...``:
    greedy longest match, each piece's candidates probed at every character boundary while its hash is
    extended byte by byte (a continuation piece's from the state after the prefix). Returns the next position."""
    mask = vocab[V_MASK]
    max_probe = vocab[V_PROBE]
    max_len = vocab[V_MAXLEN]
    p = s
    npc = 0
    while p < e:
        plen = 0 if npc == 0 else vocab[V_PLEN]
        h = 0x811C9DC5 if npc == 0 else vocab[V_PHASH]  # FNV state after "" or after the prefix
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
            put(out, row0, off, content, step, nwin, skip, pos, vocab[V_UNK])
            return pos + 1
        put(out, row0, off, content, step, nwin, skip, pos + npc, best)
        npc += 1
        p += blen
    return pos + npc


@K.device
def wp_text(t, data, expand, offs, tok, txt, vocab, slots, pool, out, row0, off, content, step, nwin, skip, stop):
    """Pieces of text ``t`` (added tokens' ids, the unknown id for long words, WordPiece) written through
    :func:`put`, until ``stop`` pieces; returns how many there are (capped by ``stop``). ``vocab``: the consts
    (:func:`vocab_consts`); token positions are relative to the text's region of ``data``, which starts at
    ``expand * offs[t]``."""
    unk = vocab[V_UNK]
    max_chars = vocab[V_MAXCHARS]
    nsp = vocab[V_NSP]
    pos = 0
    k0 = offs[t]
    base = k0 * expand if txt[NTOK, t] > 0 else 0  # (a text with tokens has a checked span: no overflow)
    for k in range(k0, k0 + txt[NTOK, t]):
        if pos >= stop:
            break
        sp = tok[SPECIAL, k]
        if sp == -2:
            continue
        if sp >= 0:  # an added token this tokenizer does not list (pre-tokens made elsewhere) reads as [UNK]
            put(out, row0, off, content, step, nwin, skip, pos, vocab[V_HEAD + sp] if sp < nsp else unk)
            pos += 1
        elif tok[NCHARS, k] > max_chars:
            put(out, row0, off, content, step, nwin, skip, pos, unk)
            pos += 1
        else:  # most words are one vocabulary piece: one lookup settles them
            s = base + pos_at(tok, START, k)
            e = base + pos_at(tok, END, k)
            wid = -1
            if e - s <= vocab[V_MAXLEN]:  # the pre-tokenizer hashed the token's bytes as it wrote them
                wid = find_bytes(int(tok[HASH, k]) & 0xFFFFFFFF, data, s, e - s, 0, slots, pool, vocab[V_MASK],
                                 vocab[V_PROBE])
            if wid >= 0:
                put(out, row0, off, content, step, nwin, skip, pos, wid)
                pos += 1
            else:
                pos = wp_split(data, s, e, vocab, slots, pool, out, row0, off, content, step, nwin, skip, pos)
    return pos
