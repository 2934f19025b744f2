"""Model directories for the model tests, written the way a user would (config.pbtxt + one-line model.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_dirs import fit_features

from triton_textops.bundled import vocab_path


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory) -> Path:
    return fit_features(tmp_path_factory.mktemp("artifacts") / "features.json")


@pytest.fixture(scope="session")
def vocab() -> Path:
    return vocab_path()
