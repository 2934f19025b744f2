"""Fixtures for the repository-generator tests: a features artifact fitted once per session."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

DATA = resources.files("triton_textops") / "data"


def austen() -> list[str]:
    with (DATA / "austen-paragraphs.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A features artifact fitted on every 4th bundled Austen paragraph (the others stay unseen)."""
    from triton_textops import ReadabilityFeatures

    path = tmp_path_factory.mktemp("artifacts") / "features.json"
    ReadabilityFeatures.fit(austen()[::4]).save(path)
    return path


@pytest.fixture(scope="session")
def vocab() -> Path:
    return Path(str(DATA / "bert-base-uncased-vocab.txt"))
