"""Model directories for the model tests, written the way a user would (config.pbtxt + one-line model.py)."""

from __future__ import annotations

import json
import shutil
import textwrap
from importlib import resources
from pathlib import Path

import pytest

DATA = resources.files("triton_textops") / "data"


def austen() -> list[str]:
    with (DATA / "austen-paragraphs.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def write_model(root: Path, name: str, module: str, config: str, files: dict[str, Path] | None = None) -> Path:
    d = root / name
    (d / "1").mkdir(parents=True)
    (d / "1" / "model.py").write_text(f"from triton_textops.models.{module} import TritonPythonModel  # noqa: F401\n")
    (d / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n' + textwrap.dedent(config))
    for target, src in (files or {}).items():
        shutil.copy(src, d / target)
    return d


@pytest.fixture(scope="session")
def features_artifact(tmp_path_factory) -> Path:
    from triton_textops import ReadabilityFeatures

    path = tmp_path_factory.mktemp("artifacts") / "features.json"
    ReadabilityFeatures.fit(austen()[::2]).save(path)
    return path


@pytest.fixture(scope="session")
def vocab() -> Path:
    return Path(str(DATA / "bert-base-uncased-vocab.txt"))
