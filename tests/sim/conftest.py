"""The GPU kernels in numba-cuda's CUDA simulator: `make test` runs this folder in its own pytest process
with ``NUMBA_ENABLE_CUDASIM=1`` (the variable must be set before numba is imported). Without it the
folder collects nothing: the main test process has numba's real targets."""

from __future__ import annotations

import os

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    from triton_textops.bundled import austen_paragraphs
    from triton_textops.bundled import vocab_path as bundled_vocab

    @pytest.fixture(scope="session")
    def austen() -> list[str]:
        return austen_paragraphs()

    @pytest.fixture(scope="session")
    def vocab_path() -> str:
        return str(bundled_vocab())
