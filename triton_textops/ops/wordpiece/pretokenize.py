"""The WordPiece pre-tokenizer stage: strict UTF-8 check, BERT normalization and pre-tokenization, in one kernel.

One kernel (:data:`PRETOKENIZE`), one thread per text, reads each text's bytes once: it checks the UTF-8, maps
every code point through the normalization table (:mod:`~triton_textops.ops.wordpiece.normalize`), writes the
normalized bytes, splits them into BERT pre-tokens (whitespace splits, each punctuation character is its own
token) and marks the tokens covered by raw added tokens such as ``[CLS]`` (HF's non-normalized added tokens,
matched leftmost-longest in the raw text; the text is split at each match, as HF splits it, and a ``single_word``
one that touches a word character is text). Its output, :class:`PreTokens`, feeds both WordPiece
(:mod:`triton_textops.ops.wordpiece.model`) and the readability features. The table is that of one
``BertNormalizer`` option set (:class:`~triton_textops.ops.wordpiece.normalize.NormOptions`).

Sizes are known before the launch, so no count pass is needed: a text of ``b`` input bytes yields at most
``expand * b`` normalized bytes (``expand`` is measured from the tables) and at most ``b`` tokens (no code point
normalizes to more than one pre-token: a property of the shipped tables, checked by the test-suite; the kernel
also checks both bounds as it writes and never overruns them). Each text writes into its own region of those
sizes; ``text_len`` and ``ntok`` say how much it used. Token positions are relative to their text's region
(32-bit each, so a batch has no size limit), and the kernel checks each text's span in the caller's offsets
before it reads it (a bad one is an InputError naming the row, never an access outside the arrays).

The one thing a per-code-point table cannot do, NFD's canonical ordering of the combining marks that survive
a normalizer that strips accents (``x U+302E U+1B44`` -> ``x U+1B44 U+302E``), the kernel does from the measured combining
classes: a run of marks is sorted once when it ends (:func:`settle_run`).

Kernel argument groups (tuples, one convention for the package): TEXT ``(data uint8, offsets int64 n+1)``;
NORM ``(info int32 table, pool uint8, sp_first uint8[256 + n_sp]: first-byte flags then each added token's flags,
sp_bytes uint8, sp_off int64, n_sp)``; PRE ``(data: the normalized bytes uint8, expand, offs int64 n+1, tok int32
(N_TOK_ROWS, bytes), txt int64 (3, n))``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.status import (
    BAD_PRETOKENS,
    BAD_SPAN,
    BAD_UTF8,
    MAX_NORMALIZED_POS,
    NORMALIZED_TOO_LONG,
    OK,
    SIZE_BOUND,
    raise_bad_rows,
)
from triton_textops.ops.core.utf8 import utf8_at, utf8_valid
from triton_textops.ops.core.words import LOW_BYTES, skip_to_byte
from triton_textops.ops.wordpiece.normalize import (
    A_CLASS_SHIFT,
    AMAP,
    CLASS_SHIFT,
    LEN_MASK,
    POOL_MASK,
    POOL_SHIFT,
    PUNCT,
    RANK_MASK,
    RANK_SHIFT,
    SP_FLAGS,
    SP_SINGLE_WORD,
    WORD,
    NormalizerTables,
    NormOptions,
)

NOT_SPECIAL, ABSORBED = -1, -2  # PreTokens.special: no raw special token / covered by one, not its first
# rows of PreTokens.tok (TOK_DTYPE, one column per token slot); HASH: 32-bit FNV-1a of the token's bytes
START, END, NCHARS, KIND, SPECIAL, HASH = range(6)
N_TOK_ROWS = 6
TEXT_LEN, NTOK, STATUS = range(3)  # rows of PreTokens.txt (int64, one column per text)
UNSORTED = 32  # pretok_text's run state: a mark followed one of a higher rank
FULL = 1 << 62  # pretok_text's ``limit`` when every token is needed
# token rows are int32 (24 bytes of scratch per input byte). A token's start/end is its position in its own
# text's normalized region, stored as an unsigned 32-bit value (:func:`pos_at`): a batch has no size limit
# (absolute int32 positions overflowed past ~716 MB) and a text may normalize to MAX_TEXT_POS bytes (~1.4 GB
# of input; a longer one is refused, status NORMALIZED_TOO_LONG)
TOK_DTYPE = np.int32
MAX_TEXT_POS = MAX_NORMALIZED_POS


@K.device
def special_at(data, i, end, sp_bytes, sp_off, n_sp):
    """Index of the longest raw special token starting at ``data[i]`` (HF's leftmost-longest match), or -1."""
    best = -1
    best_len = 0
    for s in range(n_sp):
        ln = sp_off[s + 1] - sp_off[s]
        if ln <= best_len or i + ln > end:
            continue
        ok = True
        for j in range(ln):
            if data[i + j] != sp_bytes[sp_off[s] + j]:
                ok = False
                break
        if ok:
            best = s
            best_len = ln
    return best


@K.device
def wp_word_before(data, lo, i, info):
    """Whether the character that ends at ``data[i]`` (after ``lo``, the text's start) is a word character
    (``\\w``, the table's sign bit); False at the text's start."""
    if i <= lo:
        return False
    j = i - 1
    while j > lo and (int(data[j]) & 0xC0) == 0x80:
        j -= 1
    cp, _ = utf8_at(data, j, i)
    return cp >= 0 and int(info[cp]) < 0


@K.device
def wp_word_at(data, i, end, info):
    """Whether the character at ``data[i]`` (before ``end``) is a word character; False at the end, or for bytes
    that are not UTF-8 (the text then fails when they are read)."""
    if i >= end:
        return False
    cp, _ = utf8_at(data, i, end)
    return cp >= 0 and int(info[cp]) < 0


@K.device
def next_match(data, i, stop, lo, info, sp_first, sp_bytes, sp_off, n_sp):
    """The next raw added token the text is split at, from ``data[i]``: ``(start, index, end)``, or
    ``(stop, -1, stop)`` when none is left. Matches are HF's: leftmost-longest, and a ``single_word`` one that
    touches a word character on either side (``lo``: the text's start) is text, no other match starting
    inside it. One tight scan of first-byte flags, so the pre-tokenizer's per-byte loop has no added-token test.
    """
    lead = int(sp_bytes[sp_off[0]]) if sp_off[1] > sp_off[0] else -1  # the first byte all matches share, or -1
    for s in range(1, n_sp):
        if sp_off[s + 1] == sp_off[s] or int(sp_bytes[sp_off[s]]) != lead:
            lead = -1
    rep = np.uint64(max(lead, 0)) * LOW_BYTES
    j = i
    while j < stop:
        if lead >= 0:  # eight bytes at a time to the next ``lead`` byte (BERT's "[")
            j = skip_to_byte(data, j, stop, rep)
            if j >= stop:
                break
        if sp_first[int(data[j])] == 0:
            j += 1
            continue
        m = special_at(data, j, stop, sp_bytes, sp_off, n_sp)
        if m < 0:
            j += 1
            continue
        e = j + sp_off[m + 1] - sp_off[m]
        if (sp_first.shape[0] <= SP_FLAGS + m or (sp_first[SP_FLAGS + m] & SP_SINGLE_WORD) == 0
                or not (wp_word_before(data, lo, j, info) or wp_word_at(data, e, stop, info))):
            return j, m, e
        j = e
    return stop, -1, stop


@K.device(inline=True)
def fail_text(txt, t, status):
    """Mark text ``t`` bad (1: invalid UTF-8, 2: a size bound exceeded) with no tokens."""
    txt[STATUS, t] = status
    txt[TEXT_LEN, t] = 0
    txt[NTOK, t] = 0


@K.device(inline=True)
def as_int32(h):
    """A value in ``0 .. 2**32 - 1`` (a hash, a position) as the int32 a token row stores."""
    return h - 0x100000000 if h >= 0x80000000 else h


@K.device(inline=True)
def pos_at(tok, row, k):
    """Token ``k``'s START or END (``row``): its position in its text's normalized region, which the int32 row
    stores as an unsigned 32-bit value."""
    return int(tok[row, k]) & 0xFFFFFFFF


@K.device(inline=True)
def open_token(tok, k, o, kind, mark):
    """Start token ``k`` at normalized position ``o``: ``kind`` 0 word / 1 punctuation, ``mark`` its special
    token (or NOT_SPECIAL / ABSORBED)."""
    tok[START, k] = as_int32(o)
    tok[KIND, k] = kind
    tok[SPECIAL, k] = mark


@K.device(inline=True)
def close_token(tok, k, o, n, h):
    """End token ``k`` at normalized position ``o``: ``n`` characters, FNV-1a hash ``h``."""
    tok[END, k] = as_int32(o)
    tok[NCHARS, k] = n
    tok[HASH, k] = as_int32(h)


@K.device
def settle_run(run, out, lo, hi, h, th, info, tok, k, k_cap, txt, t):
    """End the combining run ``out[lo:hi]`` (``run``: its highest rank, | UNSORTED when a mark followed one of
    a higher rank). An unsorted run is sorted stably by rank, as NFD's canonical ordering does, and the
    token's hash is recomputed from ``h`` (its value before the run) over the sorted bytes. Returns the
    token's hash (``th`` when nothing moved), or -1 when the scratch is too small (the text is then marked
    SIZE_BOUND).

    Linear in the run (one pass per rank present, at most 30), never quadratic: the run's bytes are first
    copied to the free token columns ``k .. k_cap - 1`` of ``tok`` (6 entries per column). A text has
    one token column per input byte and each token took at least one input byte, none of the run's but the
    first, so at least (the run's input bytes - 1) columns are free; the run's bytes are at most ``expand``
    (3) times its input bytes, and a run to sort has two marks of two bytes or more. Checked anyway: a run
    that does not fit fails the text, it never overruns.
    """
    if run & UNSORTED == 0:
        return th
    ln = hi - lo
    if ln > N_TOK_ROWS * (k_cap - k):
        fail_text(txt, t, SIZE_BOUND)
        return -1
    for j in range(ln):
        tok[j % N_TOK_ROWS, k + j // N_TOK_ROWS] = out[lo + j]
    w = lo
    for r in range(1, (run & RANK_MASK) + 1):
        j = 0
        while j < ln:
            b0 = int(tok[j % N_TOK_ROWS, k + j // N_TOK_ROWS])
            n = 1
            cp = b0
            if b0 >= 0xF0:
                n = 4
                cp = b0 & 0x07
            elif b0 >= 0xE0:
                n = 3
                cp = b0 & 0x0F
            elif b0 >= 0xC0:
                n = 2
                cp = b0 & 0x1F
            for q in range(1, n):
                cp = (cp << 6) | (int(tok[(j + q) % N_TOK_ROWS, k + (j + q) // N_TOK_ROWS]) & 0x3F)
            if (int(info[cp]) >> RANK_SHIFT) & RANK_MASK == r:
                for q in range(n):
                    c = int(tok[(j + q) % N_TOK_ROWS, k + (j + q) // N_TOK_ROWS])
                    out[w] = c
                    h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
                    w += 1
            j += n
    return h


@K.device
def pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, limit):
    """Normalize and pre-tokenize text ``t``: UTF-8 check, normalization, pre-tokens, raw added tokens.

    The text's span ``offs[t] .. offs[t+1]`` is checked first (non-decreasing, inside ``data`` and the
    scratch regions; else status BAD_SPAN), so offsets from a caller never lead to an access outside the
    arrays. Token positions are relative to the text's normalized region (:func:`pos_at`).

    Combining marks that survive the uncased normalization are put in canonical order, as HF's NFD does: a
    mark of a lower combining rank than the run before it marks the run unsorted, and :func:`settle_run` sorts
    the run when it ends (a starter, a removed character that ends runs, or the end of the text).

    ``limit``: stop before the token that would be the ``limit + 1``-th one not absorbed by a raw special
    token (each such token gives at least one WordPiece piece, so rows of ``limit`` pieces need no more);
    the rest of the text is then only checked to be UTF-8. A text's tokens are all there when it has at
    most ``limit`` of them (callers that need every token pass ``FULL``)."""
    i = offs[t]
    stop = offs[t + 1]
    if i < 0 or stop < i or stop > data.shape[0] or stop > tok.shape[1] or stop * expand > out.shape[0]:
        fail_text(txt, t, BAD_SPAN)
        return
    if (stop - i) * expand > MAX_TEXT_POS:
        fail_text(txt, t, NORMALIZED_TOO_LONG)
        return
    base = i * expand  # the text's normalized region starts here; tokens store positions relative to it
    o = base
    o_cap = stop * expand
    k = i  # tokens of text t live at [offs[t], offs[t] + txt[NTOK, t])
    k_cap = stop
    cur = -1  # the word token being read, its characters so far and the FNV-1a hash of its bytes so far
    cur_n = 0
    th = 0
    # the next raw added-token match: its start, index and end (stop, -1, stop: none)
    nxt, sp_next, sp_end = stop, -1, stop
    if n_sp > 0:
        nxt, sp_next, sp_end = next_match(data, i, stop, offs[t], info, sp_first, sp_bytes, sp_off, n_sp)
    seg_end = nxt  # the segment's end: the next match's start, or (in_sp) the end of the match being read
    sp_idx = -1  # the match's index while its first token is still to come
    in_sp = False  # inside a match
    used = 0  # tokens started that a raw special token does not absorb
    early = False  # stopped at ``limit``
    run = 0  # the current combining run out[run_lo:o]: its highest rank | UNSORTED (0: no run)
    run_lo = 0
    run_h = 0  # the token's hash before the run
    while True:
        while i < seg_end:  # the characters of one segment: text between matches, or a match (in_sp)
            b = int(data[i])
            if b < 0x80 and not in_sp:  # ASCII outside an added token: one table entry, no token marks
                a = int(info[AMAP + b])  # normalized byte | class << 8 | A_KEPT (0: removed)
                i += 1
                if a == 0:  # removed before NFD (a control character): combining runs go on across it
                    continue
                if run != 0:  # an ASCII character is a starter: it ends the combining run
                    th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                    if th < 0:
                        return
                    run = 0
                if a >> A_CLASS_SHIFT == WORD:
                    if cur < 0:  # a word starts here
                        if used >= limit:
                            early = True
                            break
                        used += 1
                        if k >= k_cap:  # cannot happen with the measured bounds; never overrun
                            fail_text(txt, t, SIZE_BOUND)
                            return
                        open_token(tok, k, o - base, 0, NOT_SPECIAL)
                        cur = k
                        cur_n = 0
                        th = 0x811C9DC5
                        k += 1
                    # the hot loop: this byte and the word's next ASCII bytes, one output byte (one character)
                    # each at most, so the scratch is checked once for all of them (never fails: expand >= 1)
                    if o + 1 + seg_end - i > o_cap:
                        fail_text(txt, t, SIZE_BOUND)
                        return
                    o0 = o
                    while True:  # (unsigned indices: numba adds no negative-index wrap to each access)
                        if a != 0:
                            out[np.uint64(o)] = a & 0x7F
                            th = ((th ^ (a & 0x7F)) * 0x01000193) & 0xFFFFFFFF
                            o += 1
                        if i >= seg_end:
                            break
                        b = int(data[np.uint64(i)])
                        if b >= 0x80:
                            break
                        a = int(info[np.uint64(AMAP + b)])
                        if a >> A_CLASS_SHIFT != WORD:
                            break
                        i += 1
                    cur_n += o - o0
                    continue
                # a space or a punctuation character: it ends the word; punctuation is a token of its own
                if o >= o_cap or k >= k_cap:
                    fail_text(txt, t, SIZE_BOUND)
                    return
                if cur >= 0:
                    close_token(tok, cur, o - base, cur_n, th)
                    cur = -1
                if a >> A_CLASS_SHIFT == PUNCT:
                    if used >= limit:
                        early = True
                        break
                    used += 1
                ob = a & 0x7F
                out[o] = ob
                o += 1
                if a >> A_CLASS_SHIFT == PUNCT:
                    open_token(tok, k, o - 1 - base, 1, NOT_SPECIAL)
                    close_token(tok, k, o - base, 1, ((0x811C9DC5 ^ ob) * 0x01000193) & 0xFFFFFFFF)
                    k += 1
                continue
            mark = NOT_SPECIAL
            if in_sp:
                mark = ABSORBED if sp_idx < 0 else sp_idx
            if b < 0x80:  # ASCII inside a raw special token
                a = int(info[AMAP + b])
                i += 1
                if a == 0:
                    continue
                ln = 1
                nb = 1
                src = -2
                ob = a & 0x7F
                cls = a >> A_CLASS_SHIFT
                rank = 0
            else:
                cp, ln = utf8_at(data, i, stop)
                if cp < 0:
                    fail_text(txt, t, BAD_UTF8)
                    return
                inf = int(info[cp])
                ob = 0
                nb = inf & LEN_MASK
                src = ((inf >> POOL_SHIFT) & POOL_MASK) - 1  # replacement bytes in pool, or -1: kept as it is
                cls = (inf >> CLASS_SHIFT) & 3
                rank = (inf >> RANK_SHIFT) & RANK_MASK
                i += ln
                if nb == 0:  # removed: some characters end a combining run (rank 0), the others do not
                    if rank == 0 and run != 0:
                        th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                        if th < 0:
                            return
                        run = 0
                    continue
            # the normalized characters of this input character: its own bytes, one ASCII byte, or the pool's
            p = 0
            while p < nb:
                c_len = nb
                if src == -2:
                    c_len = 1
                elif src >= 0:
                    c_cp, c_len = utf8_at(pool, src + p, src + nb)
                    c_inf = int(info[c_cp])
                    cls = (c_inf >> CLASS_SHIFT) & 3
                    rank = (c_inf >> RANK_SHIFT) & RANK_MASK
                if o + c_len > o_cap or k >= k_cap:  # cannot happen with the measured bounds; never overrun
                    fail_text(txt, t, SIZE_BOUND)
                    return
                if rank == 0 and run != 0:  # a starter ends the combining run
                    th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                    if th < 0:
                        return
                    run = 0
                if cls != WORD and cur >= 0:  # a space or a punctuation character ends the word
                    close_token(tok, cur, o - base, cur_n, th)
                    cur = -1
                if cls == PUNCT or (cls == WORD and cur < 0):  # a token starts here
                    if mark != ABSORBED:
                        if used >= limit:
                            early = True
                            break
                        used += 1
                    open_token(tok, k, o - base, 1 if cls == PUNCT else 0, mark)
                    th = 0x811C9DC5
                    if cls != PUNCT:
                        cur = k
                        cur_n = 0
                    k += 1
                    if mark >= 0:  # the special token's first token is placed: the rest are absorbed
                        sp_idx = -1
                        mark = ABSORBED
                if rank != 0:  # a combining mark (a word character: checked with the tables)
                    if run == 0:
                        run_lo = o
                        run_h = th
                        run = rank
                    elif rank < run & RANK_MASK:
                        run |= UNSORTED
                    else:
                        run = (run & UNSORTED) | rank
                cur_n += 1
                for j in range(c_len):
                    if src == -2:
                        c = ob
                    elif src < 0:
                        c = int(data[i - ln + j])
                    else:
                        c = int(pool[src + p + j])
                    out[o + j] = c
                    th = ((th ^ c) * 0x01000193) & 0xFFFFFFFF
                if cls == PUNCT:
                    close_token(tok, k - 1, o + c_len - base, 1, th)
                o += c_len
                p += c_len
            if early:
                break
        if early:
            break
        # a segment ends here: an added token starts or ends (HF splits the text there), or the text does
        if run != 0:
            th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
            if th < 0:
                return
            run = 0
        if cur >= 0:
            close_token(tok, cur, o - base, cur_n, th)
            cur = -1
        if i >= stop:
            break
        if in_sp:  # the match ends: the text up to the next one follows
            in_sp = False
            nxt, sp_next, sp_end = next_match(data, i, stop, offs[t], info, sp_first, sp_bytes, sp_off, n_sp)
            seg_end = nxt
        else:  # a match starts (maybe right where the last one ended)
            in_sp = True
            sp_idx = sp_next
            seg_end = sp_end
    if early and not utf8_valid(data, i, stop):  # what the tokens did not need must still be UTF-8
        fail_text(txt, t, BAD_UTF8)
        return
    if run != 0:
        th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
        if th < 0:
            return
    if cur >= 0:
        close_token(tok, cur, o - base, cur_n, th)
    txt[TEXT_LEN, t] = o - base
    txt[NTOK, t] = k - offs[t]
    txt[STATUS, t] = OK


@K.device(inline="ir")
def pretokenize_item(t, text, norm, pre):
    """Normalize and pre-tokenize text ``t``: groups TEXT, NORM and PRE (the module's docstring)."""
    data, offs = text
    info, pool, sp_first, sp_bytes, sp_off, n_sp = norm
    out, expand, _, tok, txt = pre
    pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)


PRETOKENIZE = K.kernel(pretokenize_item)


@dataclass
class PreTokens:
    """Normalized text and its BERT pre-tokens for ``n`` texts (arrays of ``xp``, on the batch's device).

    Text ``t`` owns the normalized bytes ``data[base : base + text_len[t]]`` with ``base = expand * offs[t]``
    and the tokens ``offs[t] .. offs[t] + ntok[t] - 1`` (``offs``: the input offsets; regions are sized by the
    bounds in the module docstring). Per token (``tok``, int32 rows) and per text (``txt``, int64 rows): a
    token's ``start``/``end`` are positions in its text's region (add ``base``); ``kind`` is 1 for a
    one-character punctuation token, 0 for a word; ``special`` is the index of the raw special token whose
    first token it is, ``-2`` for the other tokens such a match covers, ``-1`` otherwise. ``status`` is OK (0)
    for a valid text, else why it has no tokens (BAD_UTF8, NORMALIZED_TOO_LONG, ...).

    The structure is checked when made; kernels that take pre-tokens check each text's span and tokens
    (:func:`pretokens_ok`) before they read them, so a caller's pre-tokens never lead outside the arrays."""

    xp: ModuleType
    target: str
    n: int
    data: Any
    expand: int
    offs: Any
    tok: Any
    txt: Any
    lowercase: bool = True
    options: NormOptions | None = None  # the normalizer's (None: pre-tokens made elsewhere, any)

    def __post_init__(self) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise InputError(f"PreTokens: {what}")

        arrays = {"data": self.data, "offs": self.offs, "tok": self.tok, "txt": self.txt}
        for name, a in arrays.items():
            need(hasattr(a, "dtype") and hasattr(a, "shape") and isinstance(a, np.ndarray) == (self.xp is np)
                 and a.flags.c_contiguous, f"{name} must be a C-contiguous array of the pre-tokens' device")
        need(type(self.n) is int and self.n >= 0, "n must be an int >= 0")
        need(type(self.expand) is int and 1 <= self.expand <= 255, "expand must be an int in 1..255")
        need(self.data.dtype == np.uint8 and self.data.ndim == 1, "data must be 1-D uint8")
        need(self.offs.dtype == np.int64 and self.offs.shape == (self.n + 1,), "offs must be int64 of n+1 entries")
        need(self.tok.dtype == TOK_DTYPE and self.tok.ndim == 2 and self.tok.shape[0] == N_TOK_ROWS,
             f"tok must be int32 of shape ({N_TOK_ROWS}, bytes)")
        need(self.txt.dtype == np.int64 and self.txt.shape == (3, self.n), "txt must be int64 of shape (3, n)")
        need(self.target == "cuda" or (self.target == "cpu" and self.xp is np),
             "target must be 'cpu' (NumPy arrays) or 'cuda'")

    start = property(lambda self: self.tok[START].view(np.uint32))
    end = property(lambda self: self.tok[END].view(np.uint32))
    nchars = property(lambda self: self.tok[NCHARS])
    kind = property(lambda self: self.tok[KIND])
    special = property(lambda self: self.tok[SPECIAL])
    text_len = property(lambda self: self.txt[TEXT_LEN])
    ntok = property(lambda self: self.txt[NTOK])
    status = property(lambda self: self.txt[STATUS])

    @property
    def group(self) -> tuple:
        """The kernels' PRE group: (data, expand, offs, tok, txt)."""
        return (self.data, self.expand, self.offs, self.tok, self.txt)

    def check(self) -> None:
        """Raise :class:`InputError` naming the first bad row (copies the status to the host once)."""
        raise_bad_rows(K.to_host(self.status, self.target))

    def token_index(self) -> np.ndarray:
        """Host indices of every token in use, text by text (the regions' used parts, in order)."""
        offs = K.to_host(self.offs, self.target)[:-1]
        cnt = K.to_host(self.ntok, self.target)
        ends = np.cumsum(cnt)
        return np.repeat(offs - (ends - cnt), cnt) + np.arange(int(ends[-1]) if cnt.shape[0] else 0)

    def word_bytes(self) -> list[bytes]:
        """Normalized bytes of every word token (not punctuation), text by text: what fitting counts."""
        offs = K.to_host(self.offs, self.target)[:-1]
        cnt = K.to_host(self.ntok, self.target)
        idx = self.token_index()
        base = np.repeat(offs * self.expand, cnt)
        kind = K.to_host(self.kind, self.target)[idx]
        keep = kind == 0
        raw = K.to_host(self.data, self.target).tobytes()
        start = K.to_host(self.start, self.target)[idx][keep] + base[keep]
        end = K.to_host(self.end, self.target)[idx][keep] + base[keep]
        return [raw[s:e] for s, e in zip(start.tolist(), end.tolist())]

    def tokens(self, t: int) -> list[bytes]:
        """Normalized bytes of text ``t``'s tokens (a host-side aid for tests and debugging)."""
        h = {f: K.to_host(getattr(self, f), self.target) for f in ("data", "offs", "ntok", "start", "end")}
        lo = int(h["offs"][t])
        base = lo * self.expand
        return [h["data"][base + h["start"][k] : base + h["end"][k]].tobytes() for k in range(lo, lo + int(h["ntok"][t]))]


@K.device
def pretokens_ok(t, data, expand, offs, tok, txt):
    """Whether text ``t`` of pre-tokens a caller may have made (or changed) can be read safely: its span is
    inside the arrays and every token a non-empty span of its region (the pre-tokenizer never makes an empty token,
    and readers such as ``punct_code`` read a token's first byte). If not, the text gets status BAD_PRETOKENS and no
    tokens, so the kernels skip it and the caller gets an InputError naming the row."""
    lo = offs[t]
    hi = offs[t + 1]
    ok = 0 <= lo <= hi <= tok.shape[1] and hi * expand <= data.shape[0]
    if ok:
        nt = txt[NTOK, t]
        size = (hi - lo) * expand
        ok = 0 <= nt <= hi - lo and size <= MAX_TEXT_POS
        if ok:
            for k in range(lo, lo + nt):
                if pos_at(tok, START, k) >= pos_at(tok, END, k) or pos_at(tok, END, k) > size:
                    ok = False
                    break
    if not ok:  # (a status already set, such as the span check's BAD_SPAN, is kept: it says more)
        fail_text(txt, t, BAD_PRETOKENS if txt[STATUS, t] == OK else txt[STATUS, t])
    return ok


class Normalizer(NormalizerTables):
    """The BERT normalizer + pre-tokenizer of one option set on one device: its tables and its kernel."""

    @classmethod
    def get(cls, lowercase: bool = True, device: str = "cpu", *, strip_accents: bool | None = None,
            clean_text: bool = True, handle_chinese_chars: bool = True,
            options: NormOptions | None = None) -> Normalizer:
        """Cached instance per (``BertNormalizer`` options, device): ``lowercase``, ``strip_accents`` (None: as
        ``lowercase``, HF's default), ``clean_text``, ``handle_chinese_chars``, or ``options`` for all of them."""
        return _normalizer(options or NormOptions.of(lowercase, strip_accents, clean_text, handle_chinese_chars),
                           device)

    def pretokenize(self, batch: TextBatch, specials: Any = None) -> PreTokens:
        """Normalize + pre-tokenize a batch in one kernel launch; ``specials`` are raw strings matched before
        normalization (HF's added tokens such as ``[CLS]``; :class:`~triton_textops.ops.wordpiece.normalize.Specials`
        with their ``single_word`` flags). Never raises for bad rows:
        ``PreTokens.status`` says which rows are not UTF-8 (:meth:`PreTokens.check`)."""
        if not isinstance(batch, TextBatch):
            raise InputError(f"batch must be a TextBatch (TextBatch.from_texts), got {type(batch).__name__}")
        batch = TextBatch.from_texts(batch, self.xp, self.target)
        n = batch.n
        groups = self.stage_args(batch, specials, self.xp.empty((3, n), dtype=np.int64))
        if n:
            K.launch(self.target, PRETOKENIZE, n, *groups)
        out, _, _, tok, txt = groups[2]
        return PreTokens(xp=self.xp, target=self.target, n=n, data=out, expand=self.expand, offs=batch.offsets,
                         tok=tok, txt=txt, lowercase=self.lowercase, options=self.options)

    def stage_args(self, batch: TextBatch, specials: Any, txt: Any) -> tuple:
        """The groups of the pre-tokenizer in a kernel: TEXT and NORM (:meth:`args`), then PRE, its outputs, new: the
        normalized bytes, ``expand``, the offsets, the token rows, and ``txt`` (an InputError when the scratch
        cannot be had)."""
        nb = int(batch.data.shape[0])
        xp = self.xp
        try:  # (the kernels touch only what each text needs of these)
            out = xp.empty(self.expand * nb, dtype=np.uint8)
            tok = xp.empty((N_TOK_ROWS, nb), dtype=TOK_DTYPE)
        except (MemoryError, ValueError) as e:
            raise InputError(f"a batch of {nb} bytes: its pre-tokenizer scratch ({nb * (self.expand + 24) / 2**30:.1f} "
                             f"GiB) cannot be allocated ({e}); send smaller batches") from None
        text, norm = self.args(batch, specials)
        return text, norm, (out, self.expand, batch.offsets, tok, txt)


@functools.lru_cache(maxsize=16)
def _normalizer(options: NormOptions, device: str) -> Normalizer:
    return Normalizer(device=device, options=options)
