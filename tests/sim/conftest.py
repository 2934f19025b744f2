"""The GPU kernels in numba-cuda's CUDA simulator: `make test` runs this folder in its own pytest process
with ``NUMBA_ENABLE_CUDASIM=1`` (the variable must be set before numba is imported). Without it the
folder collects nothing: the main test process has numba's real targets."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    # The simulator runs every GPU thread as a Python thread that hands the GIL on at barriers; with the default
    # 5 ms switch interval the threads mostly wait for it. 0.1 ms: the slowest tests here 36 -> 3 s (measured).
    sys.setswitchinterval(1e-4)

    @pytest.fixture(scope="session", autouse=True)
    def gpu_kernels_for_every_batch():
        """These tests check the GPU kernels, mostly on batches smaller than the placement rule's crossover
        (ops.core.kernels.GPU_MIN_BATCH), which would send them to the CPU kernels: the rule is off here, and the
        tests of the rule pass ``gpu_min_batch`` explicitly."""
        from triton_textops.ops.core import kernels as K

        saved, K.GPU_MIN_BATCH = K.GPU_MIN_BATCH, 0
        yield
        K.GPU_MIN_BATCH = saved

    def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
        """The simulator runs device code as Python on NumPy scalars: the BPE hashes' uint64 products wrap, as on
        the GPU, with a RuntimeWarning each (a mark: it covers the module fixtures' setup too)."""
        here = Path(__file__).parent
        for item in items:
            if here in item.path.parents:
                item.add_marker(pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning"))
