"""Fixtures for the deploy tests: complete ensemble_all repositories (python backends, env folder, stub)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from triton_textops import ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs, vocab_path
from triton_textops.tools.repo.generate import create_repository


@pytest.fixture(scope="session")
def deploy_features(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = austen_paragraphs()[::16]
    path = tmp_path_factory.mktemp("deploy-artifacts") / "features.json"
    ReadabilityFeatures.fit(texts, n_common=20, n_rare=20).save(path)
    return path


@pytest.fixture
def make_repo(tmp_path: Path, deploy_features: Path) -> Callable[..., Path]:
    """``make_repo(device, backends="python", env=True, stub=True)`` -> a complete repository.

    The model files are placeholders (deployment never loads them); the execution environment is a folder
    with an ``activate`` script and a symlinked interpreter, as a venv-style env is; the stub is 0755.
    """

    def make(device: str = "cpu", *, backends: str = "python", env: bool = True, stub: bool = True,
             name: str = "repo") -> Path:
        src = tmp_path / f"src-{name}"
        src.mkdir()
        onnx = src / "model.onnx"
        onnx.write_bytes(b"\x08\x07placeholder onnx bytes\x00\xff")
        forest = src / "checkpoint.tl"
        forest.write_bytes(bytes(range(256)))
        env_dir = None
        if env:
            env_dir = src / "textops-env"
            (env_dir / "bin").mkdir(parents=True)
            (env_dir / "bin" / "activate").write_text("# activate\nexport PATH=\"$(dirname \"$BASH_SOURCE\"):$PATH\"\n")
            os.symlink("/usr/bin/python3", env_dir / "bin" / "python3")
            (env_dir / "lib").mkdir()
            (env_dir / "lib" / "site.txt").write_text("packages\n")
            pkg = env_dir / "lib" / "python3.10" / "site-packages" / "triton_textops"
            pkg.mkdir(parents=True)
            (pkg / "__init__.py").write_text("")
            for dist in ("onnxruntime-1.18.0", "treelite-4.4.1"):  # what bert-large and cuml import (deploy checks)
                (pkg.parent / f"{dist}.dist-info").mkdir()
        stub_file = None
        if stub:
            stub_file = src / "triton_python_backend_stub"
            stub_file.write_bytes(b"\x7fELF fake stub")
        return create_repository(
            tmp_path / name,
            device=device,
            vocab=vocab_path(),
            features=deploy_features,
            bert_model=onnx,
            forest=forest,
            backends=backends,
            env=env_dir,
            stub=stub_file,
        )

    return make
