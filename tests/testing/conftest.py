"""Shared fixtures for the testing-layer tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.testing import pb_utils as pb

MODELS = Path(__file__).parent / "models"
ENSEMBLE_REPO = Path(__file__).parent / "ensemble_repo"


@pytest.fixture(autouse=True)
def _reset_mock_options():
    yield
    pb.configure(numpy_from_dlpack="error", triton_version="24.10")
