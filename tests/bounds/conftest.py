"""Kernels with numba's bounds checking on: `make test` runs this folder in its own pytest process with
``NUMBA_BOUNDSCHECK=1`` (and a private ``NUMBA_CACHE_DIR``), so an out-of-range index raises IndexError
instead of reading or writing arbitrary memory. Without the variable the folder collects nothing."""

from __future__ import annotations

import os

if os.environ.get("NUMBA_BOUNDSCHECK") != "1":
    collect_ignore_glob = ["test_*.py"]
