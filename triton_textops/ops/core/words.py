"""Bytes read eight at a time: the 8-byte word loads the BPE pieces' hashing and the added-token scans share."""

from __future__ import annotations

import numpy as np

from triton_textops.ops.core import kernels as K

U1, U2, U3, U4, U5, U6, U7 = (np.uint64(k) for k in range(1, 8))
LOW_BYTES, HIGH_BITS = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)
U8, U16, U24, U32, U40, U48, U56 = (np.uint64(8 * k) for k in range(1, 8))  # (byte shifts of a word)


@K.device(inline=True)
def word_at(buf, i, hi):
    """The bytes ``buf[i:min(i + 8, hi)]`` little-endian in an int64, zero above (``i <= hi``). Eight loads of fixed
    count where the buffer has eight bytes from ``i``, the piece's end masked: no loop on the piece's length."""
    if i + 8 <= buf.shape[0]:
        u = np.uint64(i)  # (an unsigned index: numba adds no negative-index wrap to each load)
        w = np.int64(buf[u]) | (np.int64(buf[u + U1]) << 8) | (np.int64(buf[u + U2]) << 16) \
            | (np.int64(buf[u + U3]) << 24) | (np.int64(buf[u + U4]) << 32) | (np.int64(buf[u + U5]) << 40) \
            | (np.int64(buf[u + U6]) << 48) | (np.int64(buf[u + U7]) << 56)  # (np.int64: numba's int() of a
        r = hi - i                                                                # uint8 stays uint8)
        if r < 8:
            w &= (np.int64(1) << (8 * r)) - 1
        return w
    w = np.int64(0)
    for k in range(min(hi - i, 8)):
        w |= np.int64(buf[i + k]) << (8 * k)
    return w


@K.device(inline=True)
def skip_to_byte(buf, j, stop, rep):
    """The first position from ``j`` whose 8-byte word (from ``j``, before ``stop``) may hold the byte that
    ``rep`` (``byte * LOW_BYTES``) repeats: whole words without it are skipped, eight bytes a test (the
    has-zero-byte test of ``word ^ rep``). Stops early at the last partial word; the caller reads on byte by byte.
    Each word is whole (eight loads at fixed offsets, no mask: LLVM makes them one load)."""
    stop = min(stop, buf.shape[0])
    while j + 8 <= stop:
        u = np.uint64(j)  # (an unsigned index: numba adds no negative-index wrap to each load)
        w = np.uint64(buf[u]) | (np.uint64(buf[u + U1]) << U8) | (np.uint64(buf[u + U2]) << U16) \
            | (np.uint64(buf[u + U3]) << U24) | (np.uint64(buf[u + U4]) << U32) | (np.uint64(buf[u + U5]) << U40) \
            | (np.uint64(buf[u + U6]) << U48) | (np.uint64(buf[u + U7]) << U56)
        x = w ^ rep
        if ((x - LOW_BYTES) & ~x & HIGH_BITS) != 0:
            break
        j += 8
    return j
