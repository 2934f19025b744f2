"""Model directories written the way a user writes them: ``config.pbtxt`` + a one-line ``1/model.py``.

Shared by the in-process model tests (tests/models) and the real-server tests (tests/server), so the very
same directory layout is what both load. (``tests/`` is on ``sys.path``: it holds the root conftest.)
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path


def write_model(root: Path, name: str, module: str, config: str, files: Mapping[str, Path] | None = None) -> Path:
    """``root/name`` with config.pbtxt, ``1/model.py`` importing ``triton_textops.models.<module>``, and files."""
    d = root / name
    (d / "1").mkdir(parents=True)
    (d / "1" / "model.py").write_text(f"from triton_textops.models.{module} import TritonPythonModel  # noqa: F401\n")
    (d / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n' + textwrap.dedent(config))
    for target, src in (files or {}).items():
        shutil.copy(src, d / target)
    return d
