"""Pre-tokenizer scanners: the BPE families' regular expressions as hand-written device functions.

Each scanner returns the end of the pre-token that starts at ``i``, exactly where the family's pattern
(:data:`~triton_textops.ops.bpe.formats.PATTERNS`) would end its leftmost match there (every pattern matches
at every position, so pre-tokens tile a segment). The regex engines' backtracking is spelled out: ``\\s+(?!\\S)``
leaves a run's last whitespace character to the next token, ``\\s*[\\r\\n]+`` ends after the run's last
line break, o200k's ``[UP]*[LO]+`` gives back the run's last character that is also ``LO``.

Classes come from ``data/bpe_classes.npz``, measured on tiktoken and cross-checked on HF tokenizers by
``scripts/gen_bpe_tables.py`` (never from the running Python's ``unicodedata``). The input is valid UTF-8
(checked before), so code points are decoded without checks, but never past ``end``.

The small helpers are inlined into the scanners (a call passes the class tables' arrays field by field, as costly
as the rest of the kernel's work when nothing was inlined); the four scanners are not inlined into the kernel (one
call per pre-token; inlining them all added compile time for no measurable speed). Figures: benchmarks/RESULTS.md,
Design measurements, ops/bpe/pretok.py.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import numpy as np

from triton_textops.ops.bpe.formats import CL100K, GPT2, O200K, QWEN2
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.words import U1, U7, word_at

CL_L, CL_N, CL_S, CL_UP, CL_LO, CL_W = 1, 2, 4, 8, 16, 32  # bits of the class table (see the script)
APOS, CR, LF, SPACE, SLASH = 39, 13, 10, 32, 47


@functools.cache
def _host_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with resources.as_file(resources.files("triton_textops") / "data" / "bpe_classes.npz") as p:
        z = np.load(p)
        return z["classes"], z["fold_cp"].astype(np.int64), z["fold_to"].astype(np.int64)


def class_tables(target: str, xp: Any) -> tuple:
    """(classes uint8 per code point, fold_cp, fold_to) on ``target``'s device, as one tuple argument."""
    return tuple(K.to_device(a, target, xp) for a in _host_tables())


@K.device(inline=True)
def cp_at(buf, i, end):
    """(code point, byte length) at ``buf[i]`` of valid UTF-8 (never reads at or past ``end``)."""
    b0 = int(buf[np.uint64(i)])  # (i >= 0: unsigned indices skip numba's negative-index wrap)
    if b0 < 0x80:
        return b0, 1
    n = 2 if b0 < 0xE0 else (3 if b0 < 0xF0 else 4)
    if i + n > end:
        return 0xFFFD, end - i
    cp = b0 & (0x1F if n == 2 else (0x0F if n == 3 else 0x07))
    for j in range(1, n):
        cp = (cp << 6) | (int(buf[np.uint64(i + j)]) & 0x3F)
    return cp, n


@K.device(inline=True)
def cls_at(buf, i, end, ctab):
    """(class bits, byte length, code point) of the character at ``buf[i]``."""
    cp, n = cp_at(buf, i, end)
    return int(ctab[0][np.uint64(cp)]), n, cp


@K.device(inline=True)
def fold_letter(cp, ctab):
    """The ASCII lower-case letter ``cp`` matches case-insensitively in a contraction, or 0."""
    if cp < 0x80:
        return cp | 0x20 if 65 <= cp <= 90 else cp
    fcp = ctab[1]
    for k in range(fcp.shape[0]):
        if fcp[k] == cp:
            return int(ctab[2][k])
    return 0


@K.device(inline=True)
def contraction(buf, i, end, fold, ctab):
    """End of ``'s|'t|'re|'ve|'m|'ll|'d`` at ``buf[i]`` (an apostrophe), case-insensitive when ``fold``, or -1."""
    if i + 1 >= end or buf[i] != APOS:
        return -1
    c1, n1 = cp_at(buf, i + 1, end)
    a = fold_letter(c1, ctab) if fold else c1
    j = i + 1 + n1
    if a == 115 or a == 116 or a == 109 or a == 100:  # s t m d
        return j
    if j >= end or (a != 114 and a != 118 and a != 108):  # r v l
        return -1
    c2, n2 = cp_at(buf, j, end)
    b = fold_letter(c2, ctab) if fold else c2
    if (a == 108 and b == 108) or (a != 108 and b == 101):  # ll, re, ve
        return j + n2
    return -1


@K.device(inline=True)
def run_of(buf, j, end, ctab, mask, limit):
    """End of the run of at most ``limit`` characters from ``j`` whose class has a bit of ``mask`` (``mask``
    negative: whose class has none of ``-mask``'s bits)."""
    k = 0
    while j < end and k < limit:
        c, n, cp = cls_at(buf, j, end, ctab)
        if (c & mask) == 0 if mask > 0 else (c & -mask) != 0:
            break
        j += n
        k += 1
    return j


# eight ASCII bytes at a time (word_at's int64): per byte the case bit, the low 7 bits, the high bit; a range's
# low end and (0x80 | its high end) per byte, for bytes_in; the multiplier of first_byte
_CASE8, _LOW8, _HIGH8 = np.uint64(0x2020202020202020), np.uint64(0x7F7F7F7F7F7F7F7F), np.uint64(0x8080808080808080)
_A8, _Z8 = np.uint64(0x6161616161616161), np.uint64(0xFAFAFAFAFAFAFAFA)  # a-z
_UA8, _UZ8 = np.uint64(0x4141414141414141), np.uint64(0xDADADADADADADADA)  # A-Z
_BYTE_INDEX, _ALL = np.uint64(0x0001020304050607), np.uint64(0xFFFFFFFFFFFFFFFF)
_U8, _U56 = np.uint64(8), np.uint64(56)  # (1 and 7: merge's U1, U7)


@K.device(inline=True)
def bytes_in(w, lo8, hi8):
    """The high bit of each byte of ``w`` (eight bytes) that is ASCII and in the range of ``lo8`` (its low end
    repeated) and ``hi8`` (0x80 | its high end, repeated); no borrow crosses a byte."""
    y = w & _LOW8
    return ((y | _HIGH8) - lo8) & (hi8 - y) & ~w & _HIGH8


@K.device(inline=True)
def first_byte(stop):
    """The index of the lowest byte whose high bit is set in ``stop`` (not 0): its lowest bit isolated, moved to
    bit 0 of its byte, times a constant whose top byte is then that index (no count-trailing-zeros on both
    targets)."""
    return np.int64((((stop & (~stop + U1)) >> U7) * _BYTE_INDEX) >> _U56)


@K.device(inline=True)
def letters_end(buf, j, end, ctab):
    """End of the ``\\p{L}`` run from ``j``: ASCII letters eight bytes at a time (:func:`bytes_in`: no branch per
    byte, whose exit at each word's end the CPU mispredicted), other characters by the class table."""
    while j < end:
        if buf[np.uint64(j)] >= 0x80:  # a non-ASCII character: by the class table
            c, n, cp = cls_at(buf, j, end, ctab)
            if (c & CL_L) == 0:
                return j
            j += n
            if j < end:  # (a non-ASCII word's end: its next byte tested alone, not eight)
                b = np.int64(buf[np.uint64(j)])
                if b < 0x80 and np.uint64((b | 0x20) - 97) >= np.uint64(26):
                    return j
            continue
        stop = bytes_in(np.uint64(word_at(buf, j, end)) | _CASE8, _A8, _Z8) ^ _HIGH8  # (zero bytes past ``end``)
        if stop == 0:
            j += 8
            continue
        j += first_byte(stop)
        if j >= end or buf[np.uint64(j)] < 0x80:
            return j
    return j


@K.device(inline=True)
def line_breaks(buf, j, end, slash):
    """End of the run of ``\\r`` / ``\\n`` (and ``/`` when ``slash``) from ``j``."""
    while j < end and (buf[j] == CR or buf[j] == LF or (slash and buf[j] == SLASH)):
        j += 1
    return j


@K.device(inline=True)
def whitespace_end(buf, i, end, ctab, breaks):
    """The whitespace alternatives at ``i`` (a whitespace character): ``\\s*[\\r\\n]+`` when ``breaks``, then
    ``\\s+(?!\\S)``, then ``\\s+``."""
    j = i
    last = i  # start of the run's last character
    after_break = -1
    while j < end:
        c, n, cp = cls_at(buf, j, end, ctab)
        if (c & CL_S) == 0:
            break
        last = j
        j += n
        if cp == CR or cp == LF:
            after_break = j
    if breaks and after_break > 0:
        return after_break
    if j == end or last == i:
        return j
    return last


@K.device(inline=True)
def punct_end(buf, j, end, ctab, breaks, slash):
    """``[^\\s\\p{L}\\p{N}]+`` from ``j`` then, when ``breaks``, ``[\\r\\n]*`` (``[\\r\\n/]*`` with ``slash``)."""
    j = run_of(buf, j, end, ctab, -(CL_S | CL_L | CL_N), 1 << 62)
    return line_breaks(buf, j, end, slash) if breaks else j


@K.device(inline=True)
def scan_gpt2(buf, i, end, ctab):
    """``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``"""
    c, n, cp = cls_at(buf, i, end, ctab)
    if cp == APOS:
        e = contraction(buf, i, end, False, ctab)
        if e > 0:
            return e
    j = i
    if cp == SPACE and i + 1 < end:
        c2, n2, cp2 = cls_at(buf, i + 1, end, ctab)
        if (c2 & CL_S) == 0:
            c, n, j = c2, n2, i + 1
    if c & CL_L:
        return letters_end(buf, j + n, end, ctab)
    if c & CL_N:
        return run_of(buf, j + n, end, ctab, CL_N, 1 << 62)
    if (c & CL_S) == 0:
        return punct_end(buf, j + n, end, ctab, False, False)
    return whitespace_end(buf, i, end, ctab, False)


@K.device(inline=True)
def scan_cl100k(buf, i, end, ctab, digits):
    """cl100k / Llama-3 (``digits`` 3) and Qwen2 (``digits`` 1): ``(?i:'s|'t|'re|'ve|'m|'ll|'d)|
    [^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``"""
    c, n, cp = cls_at(buf, i, end, ctab)
    if cp == APOS:
        e = contraction(buf, i, end, True, ctab)
        if e > 0:
            return e
    if c & CL_L:
        return letters_end(buf, i + n, end, ctab)
    if c & CL_N:
        return run_of(buf, i + n, end, ctab, CL_N, digits - 1)
    c2 = 0
    n2 = 0
    if i + n < end:
        c2, n2, cp2 = cls_at(buf, i + n, end, ctab)
        if cp != CR and cp != LF and (c2 & CL_L):
            return letters_end(buf, i + n + n2, end, ctab)
    if cp == SPACE and n2 > 0 and (c2 & (CL_S | CL_L | CL_N)) == 0:
        return punct_end(buf, i + 1 + n2, end, ctab, True, False)
    if (c & CL_S) == 0:
        return punct_end(buf, i + n, end, ctab, True, False)
    return whitespace_end(buf, i, end, ctab, True)


@K.device(inline=True)
def o200k_letters(buf, q, end, ctab, alt):
    """End of o200k's letter alternative ``alt`` from ``q`` (1: ``[UP]*[LO]+``, 2: ``[UP]+[LO]*``), or -1."""
    j = q
    last_lo = -1  # end of the UP run's last character that is also LO (where [LO]+ can take over)
    while j < end:
        c, n, cp = cls_at(buf, j, end, ctab)
        if (c & CL_UP) == 0:
            break
        j += n
        if c & CL_LO:
            last_lo = j
    if alt == 2 and j == q:
        return -1
    lo_end = run_of(buf, j, end, ctab, CL_LO, 1 << 62)
    if alt == 2 or lo_end > j:
        return lo_end
    return last_lo


@K.device(inline=True)
def ascii_word(buf, q, end):
    """o200k's ``[UP]*[LO]+C?`` from ``q`` where the text there is ASCII ``[A-Z]*[a-z]+`` followed by an ASCII
    byte other than an apostrophe (or by the end), as most English words are: its end (no contraction can
    follow, and ASCII upper / lower case letters are UP / LO only); else -1, and the general scanner decides.
    Eight bytes at a time (:func:`bytes_in`), as :func:`letters_end`."""
    if q >= end or np.uint64((np.int64(buf[np.uint64(q)]) | 0x20) - 97) >= np.uint64(26):
        return -1  # (not an ASCII letter: no word's eight bytes read)
    w = np.uint64(word_at(buf, q, end))
    stop = bytes_in(w, _UA8, _UZ8) ^ _HIGH8
    if stop == 0:  # eight capitals or more
        j = q + 8
        while j < end and np.uint64(np.int64(buf[np.uint64(j)]) - 65) < np.uint64(26):
            j += 1
        k = j
        while k < end and np.uint64(np.int64(buf[np.uint64(k)]) - 97) < np.uint64(26):
            k += 1
    else:
        u = first_byte(stop)
        j = q + u
        stop = (bytes_in(w, _A8, _Z8) ^ _HIGH8) & (_ALL << (np.uint64(u) * _U8))  # (u < 8)
        k = q
        while stop == 0:  # the small letters go on past the word's eight bytes
            k += 8
            stop = bytes_in(np.uint64(word_at(buf, k, end)), _A8, _Z8) ^ _HIGH8
        k += first_byte(stop)
    if k == j or (k < end and (buf[k] >= 0x80 or buf[k] == APOS)):
        return -1
    return k


@K.device(inline=True)
def scan_o200k(buf, i, end, ctab):
    """o200k_base: ``[^\\r\\n\\p{L}\\p{N}]?[UP]*[LO]+C?|[^\\r\\n\\p{L}\\p{N}]?[UP]+[LO]*C?|\\p{N}{1,3}|
    ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`` (C: a case-insensitive contraction)."""
    c, n, cp = cls_at(buf, i, end, ctab)
    lead = (c & (CL_L | CL_N)) == 0 and cp != CR and cp != LF
    e = ascii_word(buf, i + n if lead else i, end)
    if e > 0:  # (the first alternative, as the loop below would find it)
        return e
    for alt in range(1, 3):
        for take in range(2):
            if take == 0 and not lead:
                continue
            e = o200k_letters(buf, i + n if take == 0 else i, end, ctab, alt)
            if e > i:
                k = contraction(buf, e, end, True, ctab)
                return k if k > 0 else e
    if c & CL_N:
        return run_of(buf, i + n, end, ctab, CL_N, 2)
    if cp == SPACE and i + 1 < end:
        c2, n2, cp2 = cls_at(buf, i + 1, end, ctab)
        if (c2 & (CL_S | CL_L | CL_N)) == 0:
            return punct_end(buf, i + 1 + n2, end, ctab, True, True)
    if (c & CL_S) == 0:
        return punct_end(buf, i + n, end, ctab, True, True)
    return whitespace_end(buf, i, end, ctab, True)


@K.device(inline=True)
def pretoken_end(buf, i, end, ctab):
    """End of the pre-token that starts at ``buf[i]`` (``i < end``) for a format without a pattern (ByteLevel
    without its regex): the whole segment. An encode kernel's variant binds this name to its family's scanner
    (:data:`SCANNERS`)."""
    return end


@K.device(inline=True)
def pretoken_gpt2(buf, i, end, ctab):
    return scan_gpt2(buf, i, end, ctab)


@K.device(inline=True)
def pretoken_cl100k(buf, i, end, ctab):
    return scan_cl100k(buf, i, end, ctab, 3)


@K.device(inline=True)
def pretoken_qwen2(buf, i, end, ctab):
    return scan_cl100k(buf, i, end, ctab, 1)


@K.device(inline=True)
def pretoken_o200k(buf, i, end, ctab):
    return scan_o200k(buf, i, end, ctab)


# family -> the device function an encode kernel calls as ``pretoken_end`` (WHOLE: pretoken_end itself)
SCANNERS = {GPT2: "pretoken_gpt2", CL100K: "pretoken_cl100k", QWEN2: "pretoken_qwen2", O200K: "pretoken_o200k"}
