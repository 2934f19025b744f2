"""Checks of the ops' keyword arguments: a wrong type or value is one :class:`InputError` that names the
parameter, raised before anything is compiled, allocated or launched (never a numba TypingError from a
float that reached a kernel, a MemoryError, or a silent truncation of ``2.5`` to ``2``)."""

from __future__ import annotations

import functools
import math
import os
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError

IDS_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def check_int(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int: a Python or NumPy integer (not a bool, a float or a string) within the bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise InputError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool: True / False (or a NumPy bool), nothing that is merely truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_ids_dtype(value: Any) -> np.dtype:
    """The integer type of token ids and masks: int64 or int32, given as a name ("int32") or a NumPy type."""
    try:
        dt = np.dtype(value) if value is not None else None
    except TypeError:
        dt = None
    if dt not in IDS_DTYPES:
        raise InputError(f"dtype must be int64 or int32 (a name or a NumPy type), got {value!r}")
    return dt


@functools.cache
def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a POSIX system that says
        return None


def allocate(xp: ModuleType, shape: tuple[int, ...], dtype: Any, why: str, *, filled: bool = True) -> Any:
    """``xp.empty(shape, dtype)``, or an :class:`InputError` saying ``why`` it is that large when it cannot
    be had: an allocation the array module refuses or, for an array the kernels fill (``filled``), more than
    this machine's memory (NumPy would grant it, and the process would be killed as the kernels fill it).
    Scratch arrays of which the kernels touch only what a text needs pass ``filled=False``."""
    if filled and xp is np:
        phys = _physical_memory()
        size = math.prod(shape) * np.dtype(dtype).itemsize
        if phys is not None and size > phys:
            raise InputError(f"{why}: {size / 2**30:.1f} GiB, more than this machine's {phys / 2**30:.1f} GiB of memory")
    try:
        return xp.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as e:  # cupy's OutOfMemoryError is a MemoryError
        size = math.prod(shape) * np.dtype(dtype).itemsize
        raise InputError(f"{why}: {size / 2**30:.1f} GiB cannot be allocated ({e})") from None
