"""A wheel of this checkout for the tests that install triton-textops as a pip user does (tests/envs,
tests/server/test_exec_env.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERSION_LINE = '\nversion = "0.1.0"\n'


def build_textops_wheel(tmp: Path, version: str | None = None) -> Path:
    """Build the wheel in ``tmp`` from a copy of the checkout (pip builds in the source tree: never in the shared
    checkout); ``version`` replaces pyproject's. The test venv's setuptools is tried first (no build isolation:
    3 s instead of 10 here), then pip's isolated build."""
    src = tmp / "src"
    src.mkdir(parents=True)
    shutil.copy2(REPO / "README.md", src / "README.md")
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert VERSION_LINE in pyproject
    if version is not None:
        pyproject = pyproject.replace(VERSION_LINE, f'\nversion = "{version}"\n')
    (src / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    shutil.copytree(REPO / "triton_textops", src / "triton_textops",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    out = tmp / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)]
    if subprocess.run([*build, "--no-build-isolation"], capture_output=True, cwd=tmp).returncode != 0:
        subprocess.run(build, check=True, cwd=tmp)
    shutil.rmtree(src)
    return next(out.glob("triton_textops-*.whl"))
