"""Requirement checks with tools made missing (empty PATH, fake tool dirs) or present (fake prefixes)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from triton_textops.tools.stub import (
    BuildError,
    PythonInfo,
    build_stub,
    check_cmake,
    check_compiler,
    check_cuda,
    check_git,
    check_libarchive,
    check_python,
    check_rapidjson,
    check_requirements,
    check_zlib,
    make_plan,
    parse_release,
)


def _tool(d: Path, name: str, body: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)


def test_everything_missing_on_empty_path(tmp_path: Path, this_python: PythonInfo) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    plan = make_plan(parse_release("24.10"), this_python, gpu=True, work_dir=tmp_path)
    checks = {c.name: c for c in check_requirements(plan, path=str(empty), prefixes=[tmp_path / "prefix"],
                                                     environ={})}
    for name in ("cmake", "compiler", "git", "rapidjson", "libarchive", "zlib"):
        assert not checks[name].ok, name
        assert "install" in checks[name].fix
    assert "cmake not found" in checks["cmake"].detail and "pip install 'cmake>=3.17'" in checks["cmake"].fix
    assert "build-essential" in checks["compiler"].fix
    assert "rapidjson-dev" in checks["rapidjson"].fix
    assert "libarchive-dev" in checks["libarchive"].fix and "archive.h" in checks["libarchive"].detail
    assert "zlib1g-dev" in checks["zlib"].fix


def test_cmake_version_gate(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    _tool(old, "cmake", 'echo "cmake version 3.25.1"')
    _tool(new, "cmake", 'echo "cmake version 3.31.8"')
    assert check_cmake((3, 17), str(old)).ok
    c = check_cmake((3, 31, 8), str(old))
    assert not c.ok and "3.25.1, need >= 3.31.8" in c.detail and "pip install 'cmake>=3.31.8'" in c.fix
    assert check_cmake((3, 31, 8), str(new)).ok


def test_compiler_that_cannot_do_cxx17(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    _tool(bad, "c++", 'echo "error: unrecognized command-line option -std=c++17" >&2; exit 1')
    _tool(bad, "cc", "exit 0")
    c = check_compiler(str(bad), environ={})
    assert not c.ok and "cannot compile C++17" in c.detail


@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="no C++ compiler here")
def test_real_compiler_passes() -> None:
    assert check_compiler().ok


def test_git_missing_and_present(tmp_path: Path) -> None:
    assert not check_git(str(tmp_path)).ok
    _tool(tmp_path / "g", "git", "exit 0")
    assert check_git(str(tmp_path / "g")).ok


def test_libraries_found_in_a_prefix(tmp_path: Path) -> None:
    pre = tmp_path / "prefix"
    for rel in ("include/archive.h", "include/zlib.h", "lib/libarchive.so", "lib/libz.so",
                "lib/cmake/RapidJSON/RapidJSONConfig.cmake"):
        (pre / rel).parent.mkdir(parents=True, exist_ok=True)
        (pre / rel).write_text("")
    assert check_rapidjson([pre]).ok and check_libarchive([pre]).ok and check_zlib([pre]).ok
    (pre / "lib/libarchive.so").unlink()
    c = check_libarchive([pre])
    assert not c.ok and c.detail == "libarchive.so not found"


def test_cmake_prefix_path_is_searched(tmp_path: Path, this_python: PythonInfo) -> None:
    pre = tmp_path / "conda"
    (pre / "share/cmake/RapidJSON").mkdir(parents=True)
    (pre / "share/cmake/RapidJSON/RapidJSONConfig.cmake").write_text("")
    plan = dataclasses.replace(make_plan(parse_release("24.10"), this_python, work_dir=tmp_path),
                               requirements=("rapidjson",))
    assert check_requirements(plan, environ={"CMAKE_PREFIX_PATH": str(pre)})[0].ok


def test_python_without_shared_libpython(this_python: PythonInfo, tmp_path: Path) -> None:
    static = dataclasses.replace(this_python, shared=False)
    c = check_python(static)
    assert not c.ok and "--enable-shared" in c.detail and "PYTHON_CONFIGURE_OPTS=--enable-shared" in c.fix
    no_headers = dataclasses.replace(this_python, include=str(tmp_path))
    c = check_python(no_headers)
    assert not c.ok and "Python.h not in" in c.detail and "-dev" in c.fix
    gone = dataclasses.replace(this_python, shared=True, libdir=str(tmp_path))
    assert not check_python(gone).ok


def test_cuda_missing_and_fake_nvcc(tmp_path: Path) -> None:
    c = check_cuda(str(tmp_path), environ={}, default_roots=())
    assert not c.ok and "--no-gpu" in c.fix
    _tool(tmp_path / "cuda" / "bin", "nvcc", 'echo "Cuda compilation tools, release 12.6, V12.6.77"')
    c = check_cuda(str(tmp_path), environ={"CUDA_HOME": str(tmp_path / "cuda")}, default_roots=())
    assert c.ok and "CUDA 12.6" in c.detail


def test_build_stops_before_running_anything_when_requirements_miss(
    tmp_path: Path, this_python: PythonInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    plan = make_plan(parse_release("24.10"), this_python, gpu=False, work_dir=tmp_path / "w",
                     output=tmp_path / "o" / "stub")
    logs: list[str] = []
    with pytest.raises(BuildError, match="missing requirements") as exc:
        build_stub(plan, log=logs.append)
    assert "cmake not found" in str(exc.value)
    assert not (tmp_path / "w").exists() and not (tmp_path / "o").exists()
    assert os.environ["PATH"] == str(empty)
