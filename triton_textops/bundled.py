"""The data files shipped in the package (``triton_textops/data``, provenance in ``data/PROVENANCE.md``)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

_DATA = resources.files("triton_textops") / "data"


def vocab_path() -> Path:
    """The bert-base-uncased WordPiece ``vocab.txt`` (30,522 tokens)."""
    return Path(str(_DATA / "bert-base-uncased-vocab.txt"))


def austen_paragraphs() -> list[str]:
    """The public-domain Austen paragraphs (3,967 texts of 60–300 words): the corpus of the tests,
    benchmarks and the example."""
    lines = (_DATA / "austen-paragraphs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]
