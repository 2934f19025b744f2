"""Suite-wide pytest setup: `gpu` tests skip cleanly without CuPy + a CUDA device."""

from __future__ import annotations

import pytest

from triton_textops.ops.core.xp import gpu_available


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
