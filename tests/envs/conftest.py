"""One REAL venv, packed once per session with `triton-textops env pack` (venv + venv-pack), plus a stand-in stub
built for the same Python, shared by the env tests."""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path

import pytest
from wheels import build_textops_wheel

from triton_textops.tools.stub import PythonInfo, build_stub, make_plan, parse_release, query_python

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def env_python() -> PythonInfo:
    """The interpreter behind the test venv: the packed env uses it (venv-pack symlinks it)."""
    return query_python(getattr(sys, "_base_executable", sys.executable))


@pytest.fixture(scope="session")
def textops_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout, built from a copy (keeps build/ out of the shared tree)."""
    return build_textops_wheel(tmp_path_factory.mktemp("textops_src"))


@pytest.fixture(scope="session")
def packed_env(tmp_path_factory: pytest.TempPathFactory, env_python: PythonInfo, textops_wheel: Path) -> Path:
    """custom_env.tar.gz: numpy 2 (from the pip cache) + triton_textops (--no-deps), packed with venv-pack."""
    pytest.importorskip("venv_pack")
    from triton_textops.tools.envs import make_pack_plan, pack_env

    out = tmp_path_factory.mktemp("packed") / "custom_env.tar.gz"
    plan = make_pack_plan(kind="cpu", release=parse_release("24.11"), python=env_python.executable, output=out,
                          textops=str(textops_wheel), tool="venv")
    assert plan.tool == "venv"
    pack_env(plan, log=lambda _: None)
    return out


@pytest.fixture(scope="session")
def env_stub(tmp_path_factory: pytest.TempPathFactory, env_python: PythonInfo) -> Path:
    """A stand-in stub (stub_build/standin) linked to the env's Python, as `stub build` makes it."""
    if shutil.which("cmake") is None or (shutil.which("c++") is None and shutil.which("g++") is None):
        pytest.skip("needs cmake and a C++ compiler")
    if not (env_python.shared and env_python.libpython.exists()):
        pytest.skip(f"{env_python.executable} has no shared libpython")
    tmp = tmp_path_factory.mktemp("stub")
    plan = make_plan(parse_release("24.11"), env_python, gpu=False, work_dir=tmp / "w", output=tmp / "stub",
                     python_backend_src=REPO / "stub_build" / "standin", requirements=("cmake", "compiler", "python"),
                     jobs=2)
    return build_stub(plan, log=lambda _: None).stub


@pytest.fixture(scope="session")
def packed_dir(tmp_path_factory: pytest.TempPathFactory, packed_env: Path) -> Path:
    """The packed env extracted once (a directory env; do not modify)."""
    d = tmp_path_factory.mktemp("extracted") / "env"
    d.mkdir()
    with tarfile.open(packed_env) as tar:
        tar.extractall(d, filter="tar") if hasattr(tarfile, "tar_filter") else tar.extractall(d)
    return d


@pytest.fixture()
def env_dir(tmp_path: Path, packed_dir: Path) -> Path:
    """A fresh copy of the extracted env (to break in one test)."""
    d = tmp_path / "env"
    shutil.copytree(packed_dir, d, symlinks=True)
    return d
