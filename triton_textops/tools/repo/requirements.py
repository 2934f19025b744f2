"""The record of what a repository's python models import (``requirements.txt`` at the repository's top).

A leaf module (standard library only): :mod:`triton_textops.tools.repo.generate` writes the record,
:mod:`triton_textops.tools.server` reads it to build the model env, and neither has to import the other.
Triton ignores files at the top of a repository, so the record travels with it without being read as a model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["REQUIREMENTS_FILE", "SHARED_ENV", "read_requirements", "requirements_text"]

# The repository-level record of what its python models need (pip requirements format), and the name of the env
# shared by all its python models (--pack-env).
REQUIREMENTS_FILE = "requirements.txt"
SHARED_ENV = "python_env.tar.gz"


def requirements_text(models: Sequence[str], requirements: Sequence[str]) -> bytes:
    """The repository's requirements record (pip format, comments say what it is for)."""
    lines = [
        "# What the python-backend models of this model repository import besides numpy (<2 for stubs built before",
        "# r24.11) and triton-textops. Written by triton-textops; `triton-textops serve` / TritonServer install it into",
        "# the cached model env, `--pack-env` into the packed EXECUTION_ENV_PATH env (pip install -r works too).",
        f"# python models: {', '.join(models)}",
        *requirements,
    ]
    return ("\n".join(lines) + "\n").encode()


def read_requirements(repository: str | os.PathLike[str]) -> list[str] | None:
    """The requirements recorded in ``repository`` (None when it has no record): pip requirement strings."""
    path = Path(repository) / REQUIREMENTS_FILE
    if not path.is_file():
        return None
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        req = line.split(" #", 1)[0].strip()
        if req and not req.startswith("#"):
            out.append(req)
    return out
