"""Fixtures for the ops tests: only data bundled in the package (a fresh clone has nothing else)."""

from __future__ import annotations

import pytest

from triton_textops.bundled import austen_paragraphs
from triton_textops.bundled import vocab_path as bundled_vocab

VOCAB = str(bundled_vocab())


@pytest.fixture(scope="session")
def austen() -> list[str]:
    return austen_paragraphs()


@pytest.fixture(scope="session")
def vocab_path() -> str:
    return VOCAB
