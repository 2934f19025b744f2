"""The array-module switch's shared primitives behave the same on NumPy and (with a GPU) CuPy."""

from __future__ import annotations

import numpy as np
import pytest

from triton_textops.ops.core.xp import bincount


def test_bincount_counts_and_accepts_empty():
    assert bincount(np, np.array([0, 2, 2, 4]), 6).tolist() == [1, 0, 2, 0, 1, 0]
    out = bincount(np, np.zeros(0, dtype=np.int64), 3)
    assert out.tolist() == [0, 0, 0] and out.dtype == np.int64


@pytest.mark.gpu
def test_gpu_primitives_equal_numpy():
    import cupy as cp

    assert cp.asnumpy(bincount(cp, cp.zeros(0, dtype=cp.int64), 3)).tolist() == [0, 0, 0]
    x = np.random.default_rng(0).integers(0, 50, 1000)
    np.testing.assert_array_equal(cp.asnumpy(bincount(cp, cp.asarray(x), 60)), bincount(np, x, 60))
