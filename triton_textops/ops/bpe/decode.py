"""Ids -> bytes: each text's tokens' bytes, concatenated (two kernels: byte counts, then the bytes).

A token's bytes are its vocabulary bytes (an added token's: what HF's ByteLevel decoder makes of its text).
Byte-level BPE tokens are raw bytes, so a text's bytes never depend on its neighbours: a stream's deltas decoded
this way concatenate to exactly the decode of the whole stream.
"""

from __future__ import annotations

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.decode import BAD_SPAN

D_POOL, D_OFF, D_SKIP = range(3)  # the decode tuple: byte pool, offsets per id (n_ids + 1), skip flag per id


@K.device
def count_text(t, ids, offsets, dec, skip, counts):
    """Bytes of text ``t``'s tokens into ``counts[t]``; -1 - k when its k-th token is not an id of the vocabulary
    (or its span is bad: -1 - BAD_SPAN)."""
    a = offsets[t]
    b = offsets[t + 1]
    if a < 0 or b < a or b > ids.shape[0]:
        counts[t] = -1 - BAD_SPAN
        return
    off = dec[D_OFF]
    n_ids = off.shape[0] - 1
    total = 0
    for k in range(a, b):
        i = ids[k]
        if i < 0 or i >= n_ids:
            counts[t] = -1 - (k - a)
            return
        if skip and dec[D_SKIP][i] != 0:
            continue
        total += off[i + 1] - off[i]
    counts[t] = total


@K.device
def write_text(t, ids, offsets, dec, skip, out_off, out):
    """Text ``t``'s bytes into ``out[out_off[t]:]`` (counted and checked by :func:`count_text`)."""
    pool = dec[D_POOL]
    off = dec[D_OFF]
    o = out_off[t]
    for k in range(offsets[t], offsets[t + 1]):
        i = ids[k]
        if skip and dec[D_SKIP][i] != 0:
            continue
        for j in range(off[i], off[i + 1]):
            out[o] = pool[j]
            o += 1


DECODE_COUNT = K.kernel(count_text)
DECODE_WRITE = K.kernel(write_text)
