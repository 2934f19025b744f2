"""Fixtures for the repository-generator tests: a features artifact fitted once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A features artifact fitted on every 4th bundled Austen paragraph (the others stay unseen)."""
    from triton_textops import ReadabilityFeatures

    path = tmp_path_factory.mktemp("artifacts") / "features.json"
    ReadabilityFeatures.fit(austen()[::4]).save(path)
    return path


@pytest.fixture(scope="session")
def vocab() -> Path:
    return vocab_path()
