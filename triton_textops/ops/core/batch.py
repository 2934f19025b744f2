"""The text batch every tokenizer takes: raw UTF-8 bytes of ``n`` texts in one buffer plus offsets, on one device.

:class:`TextBatch` accepts what a caller or a Triton request holds (a list of str / bytes, a NumPy object array of
bytes, a ``(data, offsets)`` pair on the host or the device) and checks its structure once; the kernels check each
text's span as they read it. :func:`pack_host` is the host packing, :func:`runs_on_cpu` the GPU placement rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import check_int


@dataclass
class TextBatch:
    """Raw UTF-8 bytes of ``n`` texts: ``data`` (uint8, 1-D) and ``offsets`` (int64, n+1), on one device.

    Text ``i`` is ``data[offsets[i]:offsets[i+1]]``. Its structure (arrays, dtypes, dims, one device) is
    checked when a batch is made; the offsets' values are checked by the tokenizers' kernels for each text as
    it reads it (non-decreasing, inside ``data``), at no extra copy: a bad span is an :class:`InputError`
    naming the row, never an access outside the arrays."""

    data: Any
    offsets: Any
    xp: ModuleType

    def __post_init__(self) -> None:
        data, offsets = self.data, self.offsets
        on_host = self.xp is np
        for name, a in (("data", data), ("offsets", offsets)):
            if not hasattr(a, "dtype") or not hasattr(a, "ndim") or isinstance(a, np.ndarray) != on_host:
                where = "NumPy arrays" if on_host else "arrays of the batch's device"
                raise InputError(f"TextBatch.{name} must be one of {where}, got {type(a).__name__}")
        if data.dtype != np.uint8 or data.ndim != 1:
            raise InputError(f"TextBatch.data must be a 1-D uint8 array, got {data.ndim}-D {data.dtype}")
        if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets.dtype.kind not in "iu":
            raise InputError(f"TextBatch.offsets must be a 1-D integer array of n+1 entries, got "
                             f"{offsets.ndim}-D {offsets.dtype} of shape {tuple(offsets.shape)}")
        if offsets.dtype != np.int64 or not offsets.flags.c_contiguous:
            self.offsets = self.xp.ascontiguousarray(offsets, dtype=np.int64)  # (uint64 >= 2**63: negative, refused)
        if not data.flags.c_contiguous:
            self.data = self.xp.ascontiguousarray(data)

    @property
    def n(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @classmethod
    def from_texts(cls, texts: Any, xp: ModuleType = np, target: str | None = None) -> TextBatch:
        """Build a batch from a list of str/bytes, a NumPy object array of bytes (shape [n] or [n, 1]),
        a ``(data uint8, offsets int n+1)`` pair of arrays, or a :class:`TextBatch`, for the kernels of
        ``target`` ("cpu" / "cuda"; default: that of ``xp``; in the CUDA simulator both are NumPy). Host
        bytes go to the device as ONE copy. UTF-8 and the offsets' values are checked by the tokenizers' kernels,
        which names the row."""
        target = target or ("cpu" if xp is np else "cuda")
        if isinstance(texts, TextBatch):
            return cls._placed(texts.data, texts.offsets, xp, target)
        if _is_buffer_pair(texts):
            data, offsets = texts
            if isinstance(offsets, (list, tuple)):  # offsets written out: on the buffer's device
                offsets = np.asarray(offsets) if isinstance(data, np.ndarray) else xp.asarray(offsets)
            if isinstance(data, np.ndarray) != isinstance(offsets, np.ndarray):
                raise InputError("the byte buffer and its offsets must be on the same device")
            return cls._placed(data, offsets, xp, target)
        data_h, offsets_h = pack_host(texts)
        return cls._upload(data_h, offsets_h, xp, target)

    @classmethod
    def _placed(cls, data: Any, offsets: Any, xp: ModuleType, target: str) -> TextBatch:
        """A caller's buffer and offsets, checked (:meth:`__post_init__`) and on ``target``'s device as the
        kernels take them: read-only NumPy on the CPU, writable copies in the simulator (it writes kernel
        arguments back), device arrays on a GPU (host ones uploaded as one copy)."""
        on_host = isinstance(data, np.ndarray)
        batch = cls(data, offsets, np if on_host else xp)
        if target == "cpu":
            if not on_host:
                return cls(_read_only(batch.data.get()), batch.offsets.get(), np)
            return cls(_read_only(batch.data), batch.offsets, np)
        if K.SIMULATOR:
            return cls(batch.data.copy(), batch.offsets.copy(), xp)
        if on_host and xp is not np:
            return cls._upload(batch.data, batch.offsets, xp, target)
        return batch

    @classmethod
    def upload(cls, data: np.ndarray, offsets: np.ndarray, xp: ModuleType, target: str = "cpu") -> TextBatch:
        """Host bytes + offsets for ``target``: on the GPU as ONE copy (offsets first, 8-byte aligned)."""
        host = cls(data, offsets, np)  # checked
        return cls._upload(host.data, host.offsets, xp, target)

    @classmethod
    def _upload(cls, data: np.ndarray, offsets: np.ndarray, xp: ModuleType, target: str) -> TextBatch:
        """:meth:`upload` of arrays made as the kernels take them (:func:`pack_host`'s, or checked)."""
        if target == "cpu":
            return cls._made(_read_only(data), offsets.astype(np.int64, copy=False), np)
        head = offsets.shape[0] * 8
        buf = np.empty(head + data.shape[0], dtype=np.uint8)
        buf[:head] = offsets.astype(np.int64, copy=False).view(np.uint8)
        buf[head:] = data
        dev = K.to_device(buf, "cuda", xp)
        return cls._made(dev[head:], dev[:head].view(np.int64), xp)

    @classmethod
    def _made(cls, data: Any, offsets: Any, xp: ModuleType) -> TextBatch:
        """A batch of arrays made here as the kernels take them (1-D contiguous uint8 and int64): the structure
        needs no check (which a one-text call would notice); the kernels still check the spans."""
        batch = cls.__new__(cls)
        batch.data, batch.offsets, batch.xp = data, offsets, xp
        return batch


def count_texts(texts: Any) -> int:
    """How many texts ``texts`` holds, in any form :meth:`TextBatch.from_texts` takes (nothing is packed)."""
    if isinstance(texts, TextBatch):
        return texts.n
    if _is_buffer_pair(texts):
        return len(texts[1]) - 1
    if isinstance(texts, np.ndarray):
        return int(texts.shape[0]) if texts.ndim else 1
    return len(texts) if hasattr(texts, "__len__") else 0


def runs_on_cpu(target: str, texts: Any, gpu_min_batch: Any) -> bool:
    """The GPU placement rule: a batch for ``target`` "cuda" runs on the CPU kernels when it has fewer than
    ``gpu_min_batch`` texts (None: :data:`~triton_textops.ops.core.kernels.GPU_MIN_BATCH`, which says why)."""
    gpu_min_batch = check_int("gpu_min_batch", K.GPU_MIN_BATCH if gpu_min_batch is None else gpu_min_batch, 0)
    return target != "cpu" and count_texts(texts) < gpu_min_batch


def _is_buffer_pair(texts: Any) -> bool:
    """``(data, offsets)``: a byte array (NumPy or device) and its offsets (an array, or a list of ints), not a
    tuple of two texts."""
    if not (isinstance(texts, tuple) and len(texts) == 2):
        return False
    data, offsets = texts
    return ((isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"))
            and (isinstance(offsets, (np.ndarray, list, tuple)) or hasattr(offsets, "__cuda_array_interface__")))


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of host bytes: numba compiles a kernel once per argument type, read-only or not,
    so every text buffer reaches the CPU kernels as the one type ``initialize`` compiled for."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


def _as_row_list(texts: Any) -> list:
    if isinstance(texts, (str, bytes)):
        raise InputError("texts must be a sequence of str or bytes, not a single string")
    if isinstance(texts, np.ndarray):
        if texts.ndim == 2 and texts.shape[1] == 1:
            texts = texts[:, 0]
        elif texts.ndim != 1:
            raise InputError(f"texts must have shape [n] or [n, 1], got {list(texts.shape)}")
        return texts.tolist()
    return list(texts)


def pack_host(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate texts (str encoded as UTF-8, bytes as-is) into one uint8 buffer plus int64 offsets."""
    one = None  # a batch of one str or bytes (a list, or a request's [1] / [1, 1] object array): the fast path
    if type(texts) is list and len(texts) == 1:
        one = texts[0]
    elif isinstance(texts, np.ndarray) and texts.dtype == np.object_ and texts.size == 1 and texts.ndim in (1, 2):
        one = texts.reshape(-1)[0]
    if type(one) is str or type(one) is bytes:
        try:
            raw = one.encode("utf-8") if type(one) is str else one
        except UnicodeEncodeError:
            raw = None  # the general path names the row
        if raw is not None:
            return np.frombuffer(raw, dtype=np.uint8), np.array([0, len(raw)], dtype=np.int64)
    rows = _as_row_list(texts)
    try:
        ascii_only = all(map(str.isascii, rows))  # TypeError: a row is not a str
    except TypeError:
        ascii_only = False
    if ascii_only:  # ASCII is its own UTF-8: one join, lengths in characters (no encode a row)
        enc: list = rows
        raw = "".join(rows).encode("ascii")
    else:
        try:  # the usual case: all str (one list comprehension)
            enc = [t.encode("utf-8") for t in rows] if all(type(t) is str for t in rows) else None
        except UnicodeEncodeError:
            enc = None  # the loop below names the row
        if enc is None:
            enc = _encode_rows(rows)
        raw = None
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    if enc:
        np.cumsum(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)), out=offsets[1:])
    return np.frombuffer(b"".join(enc) if raw is None else raw, dtype=np.uint8), offsets


def _encode_rows(rows: list) -> list[bytes]:
    enc: list[bytes] = []
    for i, t in enumerate(rows):
        if isinstance(t, bytes):
            enc.append(t)
        elif isinstance(t, str):
            try:
                enc.append(t.encode("utf-8"))
            except UnicodeEncodeError as e:
                raise InputError(f"row {i}: text is not valid UTF-8 ({e.reason})", rows=np.array([i])) from None
        elif isinstance(t, (bytearray, memoryview, np.bytes_)):
            enc.append(bytes(t))
        else:
            raise InputError(f"row {i}: expected str or bytes, got {type(t).__name__}", rows=np.array([i]))
    return enc
