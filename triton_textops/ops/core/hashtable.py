"""Exact byte-string lookup for kernels: an open-addressing hash table keyed by a 32-bit FNV-1a hash.

Used by WordPiece (the vocabulary) and the readability features (stop words and corpus words). A query is
a span of bytes (optionally behind the table's prefix, ``##`` by default: WordPiece's continuation prefix) plus its
hash, which the caller extends byte by byte; every hit is verified on the bytes, so a hash collision can
never give a wrong answer. Probes are bounded by the longest run measured when the table is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.ops.core import kernels as K

FNV_OFFSET, FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv_host(data: bytes, h: int = FNV_OFFSET) -> int:
    """The 32-bit FNV-1a hash the kernels compute (host version, for building the table)."""
    for c in data:
        h = ((h ^ c) * FNV_PRIME) & 0xFFFFFFFF
    return h


FNV_CONT = fnv_host(b"##")
if FNV_CONT != 0x16C89023:  # the constant wp_split starts continuation pieces from
    raise RuntimeError("FNV state after '##' does not match the kernels' constant")


def slot_of(h: int, mask: int) -> int:
    """Home slot of a hash (host version of the kernels' arithmetic)."""
    return (h ^ (h >> 15)) & mask


HEAD = 4  # bytes of each string kept in its slot: short strings are verified without reading the pool
KEY, OFF, LEN, ID, PREFIXED, HEAD_AFTER_PREFIX, HEAD_OF_STRING = range(7)  # columns of a slot


def _head(b: bytes) -> int:
    """The first ``HEAD`` bytes, little-endian, zeros after (the kernels' ``head_of``)."""
    return int.from_bytes(b[:HEAD].ljust(HEAD, b"\0"), "little")


class ByteTable:
    """Strings -> ids as an open-addressing table for the kernels.

    ``slots`` (S, 8) int32, one 32-byte row per slot: 31-bit key (-1: empty), offset of the string in
    ``pool``, its byte length, its id, whether it starts with ``prefix`` (WordPiece's continuation prefix, ``##``
    by default; none when empty), the first 4 bytes after that prefix, the first 4 bytes of the string. A probe
    reads one cache line; strings of up to 4 bytes (after the prefix) are verified from the slot alone.
    ``max_probe``: the longest probe run."""

    def __init__(self, strings: dict[str, int], prefix: bytes = b"##") -> None:
        ids = list(strings.values())
        strings = [t.encode("utf-8") for t in strings]
        size = 1 << max(4, (2 * max(len(strings), 1) - 1).bit_length())  # load factor <= 1/2
        mask = size - 1
        taken = bytearray(size)
        rows: list[tuple[int, ...]] = []
        where: list[int] = []
        pool = bytearray()
        max_probe = 0
        for s, i in zip(strings, ids):
            h = fnv_host(s)
            j, probes = slot_of(h, mask), 0
            while taken[j]:
                j, probes = (j + 1) & mask, probes + 1
            taken[j] = 1
            pre = bool(prefix) and s.startswith(prefix)
            rows.append((h & 0x7FFFFFFF, len(pool), len(s), i, int(pre), _head(s[len(prefix):] if pre else b""),
                         _head(s), 0))
            where.append(j)
            pool += s
            max_probe = max(max_probe, probes)
        if len(pool) > 0x7FFFFFFF or len(strings) > 0x7FFFFFFF:  # slots hold int32 offsets and ids
            raise ValueError(f"{len(strings)} strings of {len(pool)} bytes: a table holds at most 2**31 - 1 of each")
        slots = np.full((size, 8), -1, dtype=np.int32)
        if rows:
            slots[where] = np.array(rows, dtype=np.int64).astype(np.uint32).view(np.int32)
        self.slots = slots
        self.pool = np.frombuffer(bytes(pool) or b"\0", dtype=np.uint8).copy()
        self.mask = mask
        self.max_probe = max_probe
        self.max_len = max((len(s) for s in strings), default=0)

    def on(self, target: str, xp: Any) -> tuple[Any, Any]:
        """(slots, pool) on ``target``'s device."""
        return K.to_device(self.slots, target, xp), K.to_device(self.pool, target, xp)


@K.device(inline=True)
def head_of(data, p, ln):
    """The first min(ln, 4) bytes of ``data[p:]``, little-endian (zeros after), as the slots keep them."""
    h = 0
    m = ln if ln < 4 else 4
    for j in range(m):
        h |= int(data[p + j]) << (8 * j)
    return h


@K.device(inline=True)
def find_bytes(h, data, p, ln, plen, slots, pool, mask, max_probe):
    """Id of the string equal to ``data[p:p+ln]`` (``plen`` 0) or to the table's prefix + ``data[p:p+ln]``
    (``plen``: the prefix's length; ``h``: the string's hash), or -1."""
    key = h & 0x7FFFFFFF
    s = (h ^ (h >> 15)) & mask
    head = -1
    for _ in range(max_probe + 1):
        sk = slots[s, KEY]
        if sk < 0:
            return -1
        if sk == key and slots[s, LEN] == ln + plen and (plen == 0 or slots[s, PREFIXED] == 1):
            if head < 0:
                head = head_of(data, p, ln)
            want = slots[s, HEAD_AFTER_PREFIX] if plen else slots[s, HEAD_OF_STRING]
            if (int(want) & 0xFFFFFFFF) == head:
                ok = True
                off = slots[s, OFF] + plen
                for j in range(4, ln):
                    if pool[off + j] != data[p + j]:
                        ok = False
                        break
                if ok:
                    return slots[s, ID]
        s = (s + 1) & mask
    return -1
