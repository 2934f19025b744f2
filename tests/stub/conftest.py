"""Shared helpers for the stub-build tests: target Pythons with a shared libpython."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import pytest
from stub_fakes import write_boost_headers, write_boost_tarball

from triton_textops.tools.stub import PythonInfo, query_python


def shared_pythons() -> list[PythonInfo]:
    """Interpreters here whose shared libpython and headers exist (this one first, then pyenv ones)."""
    cands = [sys.executable] + sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.*/bin/python3.[0-9]*")))
    out: list[PythonInfo] = []
    seen: set[str] = set()
    for exe in cands:
        if exe.endswith("-config"):
            continue
        try:
            info = query_python(exe)
        except Exception:
            continue
        if (info.shared and info.libpython.exists() and (Path(info.include) / "Python.h").exists()
                and info.version not in seen and tuple(map(int, info.major_minor.split("."))) >= (3, 8)):
            seen.add(info.version)
            out.append(info)
    return out


@pytest.fixture(scope="session")
def target_python() -> PythonInfo:
    """A shared-libpython Python, preferably NOT the one running the tests (to show the target is honoured)."""
    found = shared_pythons()
    if not found:
        pytest.skip("no Python with a shared libpython and headers on this machine")
    others = [p for p in found if p.major_minor != ".".join(map(str, sys.version_info[:2]))]
    return (others or found)[0]


@pytest.fixture(scope="session")
def this_python() -> PythonInfo:
    return query_python(sys.executable)


@pytest.fixture(scope="session")
def boost_headers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A headers directory like /usr/include with libboost-dev (fake version 1.23.4)."""
    return write_boost_headers(tmp_path_factory.mktemp("include"))


@pytest.fixture(scope="session")
def boost_tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """boost_1_23_4.tar.gz (fake version 1.23.4)."""
    return write_boost_tarball(tmp_path_factory.mktemp("boost_dl") / "boost_1_23_4.tar.gz")
