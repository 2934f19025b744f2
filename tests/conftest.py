"""Suite-wide pytest setup: `gpu` tests skip cleanly without CuPy + a CUDA device; `timing` tests (wall-clock
ratios) run only with ``--timing`` (``make bench-check``); the fixtures several test folders share."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.bundled import austen_paragraphs
from triton_textops.bundled import vocab_path as bundled_vocab
from triton_textops.ops.core.xp import gpu_available


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--timing", action="store_true", default=False,
                     help="also run the `timing` tests (wall-clock ratios; noisy on a shared machine)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips = {}
    if not gpu_available():
        skips["gpu"] = pytest.mark.skip(reason="needs CuPy and a CUDA GPU")
    if not config.getoption("--timing"):
        skips["timing"] = pytest.mark.skip(reason="wall-clock ratio test: run with --timing (make bench-check)")
    for item in items:
        for mark, skip in skips.items():
            if mark in item.keywords:
                item.add_marker(skip)


# ------------------------------------------------------------------------------- shared data and tokenizer


@pytest.fixture(scope="session")
def austen() -> list[str]:
    """The bundled Austen paragraphs (the package's own data: a fresh clone has nothing else)."""
    return austen_paragraphs()


@pytest.fixture(scope="session")
def vocab_path() -> str:
    """The bundled bert-base-uncased vocab.txt, as a str."""
    return str(bundled_vocab())


@pytest.fixture(scope="session")
def vocab() -> Path:
    """The bundled bert-base-uncased vocab.txt, as a Path."""
    return bundled_vocab()


@pytest.fixture(scope="session")
def tok(vocab_path: str):
    """bert-base-uncased WordPiece on the CPU (lowercase), shared read-only by the ops, bounds and model tests."""
    from triton_textops import BertTokenizer

    return BertTokenizer.from_vocab(vocab_path, lowercase=True, device="cpu")


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The readability-features artifact fitted on every other bundled Austen paragraph (``model_dirs``)."""
    from model_dirs import fit_features

    return fit_features(tmp_path_factory.mktemp("artifacts") / "features.json")
