"""Ids -> bytes for SentencePiece: each token's decoded bytes (its piece with the decoder's replacements, a
``<0xXX>`` piece its byte), the first token's from a second table (HF's Metaspace decoder drops the replacement
there), then the text's leading spaces stripped (HF's Strip after Fuse, sentencepiece's dummy prefix). Two
kernels, as byte-level BPE's: byte counts, then the bytes (:func:`~triton_textops.ops.core.decode.decode_batch`).

What ``errors="replace"`` makes of invalid bytes differs by reference and is applied on the host to the rows that
are not UTF-8 (:func:`replace_invalid`): HF's ByteFallback gives one U+FFFD per byte of a run of byte pieces that
is not UTF-8 as a whole; sentencepiece one per invalid byte, the run's valid characters kept.
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.decode import BAD_SPAN

D_POOL, D_OFF, D_SKIP, D_FPOOL, D_FOFF, D_STRIP = range(6)  # the decode tuple (D_STRIP: leading spaces to strip,
# the first table's use: 0 the first token (HF), 1 every token until the text has a byte, 2 also until one took
# its leading space (sentencepiece with / without remove_extra_whitespaces))


@K.device
def sp_token_span(dec, i, first):
    """(pool, start, end) of token ``i``'s bytes (the first token's table when ``first``)."""
    if first:
        off = dec[D_FOFF]
        return dec[D_FPOOL], off[i], off[i + 1]
    off = dec[D_OFF]
    return dec[D_POOL], off[i], off[i + 1]


@K.device
def sp_walk(t, ids, offsets, dec, skip, out, o):
    """Text ``t``'s bytes written to ``out[o:]`` when ``o`` >= 0, else only counted: the count, or -1 - k when
    its k-th token is not an id (-1 - BAD_SPAN: a bad span)."""
    a = offsets[t]
    b = offsets[t + 1]
    if a < 0 or b < a or b > ids.shape[0]:
        return -1 - BAD_SPAN
    n_ids = dec[D_OFF].shape[0] - 1
    strip = dec[D_STRIP][0]
    mode = dec[D_STRIP][1]  # (sentencepiece: the first table until there is output; 2: until it took a space too)
    first = True
    took = False
    total = 0
    for k in range(a, b):
        i = ids[k]
        if i < 0 or i >= n_ids:
            return -1 - (k - a)
        if skip and dec[D_SKIP][i] != 0:
            continue
        use = first if mode == 0 else total == 0 and not took
        pool, s, e = sp_token_span(dec, i, use)
        if use and mode == 2 and dec[D_FOFF][i + 1] - dec[D_FOFF][i] != dec[D_OFF][i + 1] - dec[D_OFF][i]:
            took = True
        first = False
        for j in range(s, e):
            c = pool[j]
            if strip > 0 and total == 0 and c == 32:
                strip -= 1
                continue
            if o >= 0:
                out[o + total] = c
            total += 1
    return total


@K.device
def sp_count_text(t, ids, offsets, dec, skip, counts):
    counts[t] = sp_walk(t, ids, offsets, dec, skip, counts, -1)


@K.device
def sp_write_text(t, ids, offsets, dec, skip, out_off, out):
    sp_walk(t, ids, offsets, dec, skip, out, out_off[t])


SP_DECODE_COUNT = K.kernel(sp_count_text)
SP_DECODE_WRITE = K.kernel(sp_write_text)


def token_bytes(piece: str, replace: list[tuple[str, str]], byte_fallback: bool, drop: str | None,
                lead: str | None = None) -> bytes:
    """What the decoder makes of one piece: a ``<0xXX>`` piece its byte (with byte fallback), else the piece with
    each replacement applied (``drop``: a character removed first, the first token's Metaspace rule; ``lead``: one
    leading one, sentencepiece's rule at the text's start)."""
    if byte_fallback and len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    if drop is not None:
        piece = piece.replace(drop, "")
    if lead is not None and piece.startswith(lead):
        piece = piece[len(lead):]
    for a, b in replace:
        piece = piece.replace(a, b)
    return piece.encode("utf-8", "surrogatepass")


def replace_invalid(pieces: list[bytes], from_byte: list[bool], spm: bool) -> str:
    """The text of one row whose bytes are not UTF-8, as the reference writes U+FFFD: ``pieces`` each token's
    bytes after the first-token rule and strip, ``from_byte`` whether it was a byte piece. HF (``spm`` False):
    each run of byte pieces that is not UTF-8 as a whole is one U+FFFD per byte; sentencepiece: one per invalid
    byte."""
    out = []
    run = bytearray()

    def flush() -> None:
        if not run:
            return
        try:
            out.append(run.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(_spm_run(bytes(run)) if spm else "\ufffd" * len(run))
        run.clear()

    for p, byte in zip(pieces, from_byte):
        if byte:
            run.extend(p)
        else:
            flush()
            out.append(p.decode("utf-8", "replace"))
    flush()
    return "".join(out)


def _spm_run(run: bytes) -> str:
    """sentencepiece's surface of a byte run: each valid UTF-8 character kept, each byte that starts none U+FFFD."""
    out = []
    i = 0
    while i < len(run):
        for n in (1, 2, 3, 4):
            try:
                out.append(run[i:i + n].decode("utf-8"))
                i += n
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def tables(pieces: list[str | None], special: np.ndarray, replace: list[tuple[str, str]], byte_fallback: bool,
           drop: str | None, strip: int, lead: str | None = None, mode: int = 0
           ) -> tuple[tuple[np.ndarray, ...], list[bool]]:
    """The decode tuple (host arrays) and which ids are byte pieces. ``lead``: sentencepiece's start rule (one
    leading ``lead`` dropped from a token at the text's start, ``mode`` 1 or 2) instead of ``drop`` / ``strip``."""
    toks = [token_bytes(p or "", replace, byte_fallback, None) for p in pieces]
    first = [token_bytes(p or "", replace, byte_fallback, drop, lead) for p in pieces] \
        if drop is not None or lead is not None else toks
    is_byte = [byte_fallback and p is not None and len(p) == 6 and p.startswith("<0x") and p.endswith(">")
               and len(t) == 1 for p, t in zip(pieces, toks)]

    def pooled(ts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        off = np.zeros(len(ts) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ts], out=off[1:])
        return np.frombuffer(b"".join(ts) or b"\0", dtype=np.uint8).copy(), off

    pool, off = pooled(toks)
    fpool, foff = pooled(first)
    return (pool, off, special.astype(np.uint8), fpool, foff,
            np.array([strip, mode], dtype=np.int64)), is_byte
