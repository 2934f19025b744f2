"""Strict UTF-8 (RFC 3629) in the kernels: decode one sequence, check a span, and find the bad rows of a host batch."""

from __future__ import annotations

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.batch import _read_only


@K.device
def utf8_at(data, i, end):
    """(code point, byte length) of the UTF-8 sequence at ``data[i]`` (``i < end``); code point -1 when
    the bytes there are not strict UTF-8 (RFC 3629: no overlongs, surrogates or values past U+10FFFF)."""
    b0 = int(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xC2 or b0 > 0xF4:
        return -1, 1
    need = 4
    lo = 0x80
    hi = 0xBF
    cp = b0 & 0x07
    if b0 < 0xE0:
        need = 2
        cp = b0 & 0x1F
    elif b0 < 0xF0:
        need = 3
        cp = b0 & 0x0F
        if b0 == 0xE0:
            lo = 0xA0
        elif b0 == 0xED:
            hi = 0x9F
    elif b0 == 0xF0:
        lo = 0x90
    elif b0 == 0xF4:
        hi = 0x8F
    if i + need > end:
        return -1, 1
    b1 = int(data[i + 1])
    if b1 < lo or b1 > hi:
        return -1, 1
    cp = (cp << 6) | (b1 & 0x3F)
    for j in range(2, need):
        bj = int(data[i + j])
        if (bj & 0xC0) != 0x80:
            return -1, 1
        cp = (cp << 6) | (bj & 0x3F)
    return cp, need


@K.device
def utf8_valid(data, lo, hi):
    """True when ``data[lo:hi]`` is strict UTF-8."""
    i = lo
    while i < hi:
        if i + 8 <= hi:  # ASCII eight bytes at a time (unsigned indices: no negative-index wrap per load)
            u = np.uint64(i)
            if (data[u] | data[u + np.uint64(1)] | data[u + np.uint64(2)] | data[u + np.uint64(3)]
                    | data[u + np.uint64(4)] | data[u + np.uint64(5)] | data[u + np.uint64(6)]
                    | data[u + np.uint64(7)]) < 0x80:
                i += 8
                continue
        if data[i] < 0x80:
            i += 1
            continue
        cp, ln = utf8_at(data, i, hi)
        if cp < 0:
            return False
        i += ln
    return True


@K.device
def utf8_row(t, data, offs, bad):
    """``bad[t]`` = 1 when row ``t`` is not a span inside ``data`` or not strict UTF-8."""
    lo = offs[t]
    hi = offs[t + 1]
    bad[t] = 0 if 0 <= lo <= hi <= data.shape[0] and utf8_valid(data, lo, hi) else 1


UTF8_ROWS = K.cpu_kernel(utf8_row)  # (host rows: Triton's BYTES tensors are CPU tensors)


def invalid_utf8_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted indices of the host rows ``data[offsets[i]:offsets[i+1]]`` that are not strict UTF-8, or not a
    span inside ``data`` (the tokenizers' kernels' checks, for callers that reject bad rows before batching)."""
    n = offsets.shape[0] - 1
    bad = np.zeros(n, dtype=np.uint8)
    nb = data.shape[0]
    spans_ok = offsets[0] == 0 and offsets[-1] == nb and (n == 1 or bool((np.diff(offsets) >= 0).all()))
    if n and (not spans_ok or (nb and int(data.max()) >= 0x80)):  # all-ASCII bytes are valid UTF-8: no launch
        K.COUNTS["launch"] += 1
        K.run_cpu(UTF8_ROWS, n, _read_only(data), offsets.astype(np.int64, copy=False), bad)
    return bad.nonzero()[0].astype(np.int64)
