"""The one array-module switch: every op is written once against ``xp`` (NumPy or CuPy).

Ops never import CuPy directly; they ask this module for the array module of a device
or of an array, so the same code path runs on the CPU and on the GPU.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

Device = str  # "cpu" | "cuda" | "auto" | "cuda:N"


@functools.lru_cache(maxsize=1)
def _cupy() -> ModuleType | None:
    try:
        import cupy  # noqa: PLC0415

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, CUDARuntimeError without a driver, ...
        return None


def simulated() -> bool:
    """True under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``): "cuda" runs the GPU kernels on the
    CPU with NumPy arrays, so a machine without a GPU can check the GPU code's output."""
    import numba  # noqa: PLC0415

    return bool(numba.config.ENABLE_CUDASIM)


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device (never in the CUDA simulator)."""
    return not simulated() and _cupy() is not None


def target_of(device: Device) -> str:
    """The kernel target of a device: "cpu" or "cuda" (after resolving "auto")."""
    return "cpu" if resolve_device(device) == "cpu" else "cuda"


def get_xp(device: Device = "cpu") -> ModuleType:
    """Return the array module for ``device`` ("cpu", "cuda", "cuda:N" or "auto"); NumPy for "cuda" in
    the CUDA simulator."""
    if device == "cpu":
        return np
    if device == "auto":
        return np if simulated() else (_cupy() or np)
    if device == "cuda" or device.startswith("cuda:"):
        if simulated():
            return np
        cp = _cupy()
        if cp is None:
            raise RuntimeError(
                f"device={device!r} needs CuPy and a CUDA GPU; install 'triton-textops[gpu]' "
                "or use device='cpu'"
            )
        return cp
    raise ValueError(f"unknown device {device!r}: expected 'cpu', 'cuda', 'cuda:N' or 'auto'")


def resolve_device(device: Device) -> str:
    """Map "auto" to the concrete device name ("cpu" or "cuda")."""
    if device == "auto":
        return "cuda" if gpu_available() or simulated() else "cpu"
    get_xp(device)  # validates
    return device


def array_module(arr: Any) -> ModuleType:
    """NumPy or CuPy, whichever owns ``arr``."""
    if isinstance(arr, np.ndarray) or np.isscalar(arr):
        return np
    mod = type(arr).__module__.split(".")[0]
    if mod == "cupy":
        return _cupy() or np
    return np


def to_numpy(arr: Any) -> np.ndarray:
    """Copy a device array to the host (no-op for NumPy arrays)."""
    if isinstance(arr, np.ndarray):
        return arr
    if hasattr(arr, "get"):
        return arr.get()
    return np.asarray(arr)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters


@functools.lru_cache(maxsize=1)
def tune_host_allocator(threshold: int = 1 << 30) -> bool:
    """Keep large NumPy temporaries on glibc's heap instead of fresh ``mmap`` pages.

    Why: every batch allocates a few arrays of a few MB; once glibc's *dynamic* mmap threshold is low
    (which depends on what the process allocated and freed before), each of them is a new mapping whose
    pages fault in on first touch, which can take as long as the batch's work (figures: benchmarks/RESULTS.md,
    Design measurements, ops/core/xp.py: tune_host_allocator). Raising the mmap and trim thresholds makes the
    fast case the only case. It changes the whole process, so our Triton models call it in ``initialize`` (a
    stub process serves one model instance) and the benchmarks call it; a library user decides for their own
    process. Returns False where glibc's ``mallopt`` is not available.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


def bincount(xp: ModuleType, x: Any, size: int) -> Any:
    """Occurrences of each value ``0 .. size-1`` in ``x`` (int, all values < ``size``), as int64.

    ``xp.bincount`` except that an empty ``x`` works on CuPy too (its bincount takes ``max(x)``)."""
    if x.shape[0] == 0:
        return xp.zeros(size, dtype=np.int64)
    return xp.bincount(x, minlength=size).astype(np.int64, copy=False)
