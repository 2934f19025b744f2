"""Model directories for the model tests, written the way a user would (config.pbtxt + one-line model.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory) -> Path:
    from triton_textops import ReadabilityFeatures

    path = tmp_path_factory.mktemp("artifacts") / "features.json"
    ReadabilityFeatures.fit(austen()[::2]).save(path)
    return path


@pytest.fixture(scope="session")
def vocab() -> Path:
    return vocab_path()
