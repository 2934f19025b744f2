"""Fixtures for the ops tests: only data bundled in the package (a fresh clone has nothing else)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

DATA = resources.files("triton_textops") / "data"
VOCAB = str(DATA / "bert-base-uncased-vocab.txt")


@pytest.fixture(scope="session")
def austen() -> list[str]:
    with (DATA / "austen-paragraphs.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.fixture(scope="session")
def vocab_path() -> str:
    return VOCAB
