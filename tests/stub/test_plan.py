"""Build plans for several releases: clone, tags, cmake flags, offline sources, notes, --dry-run output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from triton_textops.errors import InputError
from triton_textops.tools.stub import STUB_TARGET, PythonInfo, main, make_plan, parse_release, resolve_release


def _flags(cmd: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in cmd if a.startswith("-D"))


def test_plan_24_10_gpu(this_python: PythonInfo, tmp_path: Path) -> None:
    plan = make_plan(parse_release("24.10"), this_python, gpu=True, work_dir=tmp_path / "w", output=f"{tmp_path}/out/")
    assert plan.clone == ["git", "clone", "--depth", "1", "--branch", "r24.10",
                          "https://github.com/triton-inference-server/python_backend.git",
                          str(tmp_path / "w" / "python_backend")]
    f = _flags(plan.configure)
    assert f["TRITON_ENABLE_GPU"] == "ON"
    assert {f[k] for k in ("TRITON_BACKEND_REPO_TAG", "TRITON_COMMON_REPO_TAG", "TRITON_CORE_REPO_TAG")} == {"r24.10"}
    assert f["PYTHON_EXECUTABLE"] == this_python.executable
    assert f["CMAKE_POLICY_VERSION_MINIMUM"] == "3.17"
    # the stub is taken from the build tree: linked with the install RPATH, no ':' padding (an empty entry)
    assert f["CMAKE_BUILD_WITH_INSTALL_RPATH"] == "ON" and f["CMAKE_INSTALL_RPATH_USE_LINK_PATH"] == "ON"
    assert "FETCHCONTENT_FULLY_DISCONNECTED" not in f
    assert plan.build[:5] == ["cmake", "--build", str(tmp_path / "w" / "build"), "--target", STUB_TARGET]
    assert plan.output == tmp_path / "out" / "triton_python_backend_stub"
    assert plan.cmake_minimum == (3, 17)
    assert plan.requirements == ("cmake", "compiler", "git", "rapidjson", "libarchive", "zlib", "boost", "python",
                                 "cuda")
    assert any("boost 1.79.0 is downloaded at build time" in n for n in plan.notes)
    assert any("numpy>=1.21,<2" in n for n in plan.notes)


def test_plan_25_08_needs_new_cmake_and_no_gpu_skips_cuda(this_python: PythonInfo, tmp_path: Path) -> None:
    plan = make_plan(resolve_release("2.60.0"), this_python, gpu=False, work_dir=tmp_path)
    assert plan.cmake_minimum == (3, 31, 8)
    assert _flags(plan.configure)["TRITON_ENABLE_GPU"] == "OFF"
    assert "cuda" not in plan.requirements
    assert plan.server_version == "2.60.0"
    assert any("numpy>=1.26,<3" in n for n in plan.notes)


def test_plan_25_07_is_pre_25_08(this_python: PythonInfo, tmp_path: Path) -> None:
    plan = make_plan(parse_release("25.07"), this_python, gpu=False, work_dir=tmp_path)
    assert plan.cmake_minimum == (3, 17) and plan.server_version == "2.59.1"
    assert "r25.07" in plan.render()


def _offline_sources(tmp_path: Path) -> dict[str, Path]:
    names = {"REPO-COMMON": "common", "REPO-CORE": "core", "REPO-BACKEND": "backend", "PYBIND11": "pybind11",
             "DLPACK": "dlpack", "GOOGLETEST": "googletest"}
    return {k: tmp_path / "src" / v for k, v in names.items()}


def test_offline_plan_24_10(this_python: PythonInfo, boost_headers: Path, tmp_path: Path) -> None:
    deps = _offline_sources(tmp_path)
    plan = make_plan(parse_release("24.10"), this_python, gpu=False, work_dir=tmp_path / "w",
                     python_backend_src=tmp_path / "src" / "pb", dep_sources=deps, offline=True, boost=boost_headers)
    assert plan.clone is None and "git" not in plan.requirements
    assert plan.configure[:3] == ["cmake", "-S", str(tmp_path / "src" / "pb")]
    f = _flags(plan.configure)
    assert f["FETCHCONTENT_FULLY_DISCONNECTED"] == "ON"
    for name, d in deps.items():
        assert f[f"FETCHCONTENT_SOURCE_DIR_{name}"] == str(d)
    assert "TRITON_BOOST_URL" not in f and "CMAKE_PROJECT_tritonpythonbackend_INCLUDE" in f


def test_offline_plan_25_12_gpu(this_python: PythonInfo, boost_headers: Path, tmp_path: Path) -> None:
    plan = make_plan(parse_release("25.12"), this_python, gpu=True, work_dir=tmp_path, cuda_root="/opt/cuda",
                     python_backend_src=tmp_path / "pb", dep_sources=_offline_sources(tmp_path), offline=True,
                     boost=boost_headers)
    f = _flags(plan.configure)
    assert f["TRITON_BOOST_URL"] == str(tmp_path / "boost-local") and f["CUDAToolkit_ROOT"] == "/opt/cuda"
    assert plan.cmake_minimum == (3, 31, 8)


def test_cmake_args_go_last_in_order(this_python: PythonInfo, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["-DCMAKE_CXX_FLAGS=-O1 -g", "-DTRITON_ENABLE_GPU=ON", "-Wno-dev"]
    plan = make_plan(parse_release("24.10"), this_python, gpu=False, work_dir=tmp_path, extra_cmake_args=extra)
    assert plan.configure[-3:] == extra  # after ours: CMake keeps the last -D, so the user's wins
    rc = main(["stub", "build", "--triton", "24.10", "--python", this_python.executable, "--no-gpu",
               "--work-dir", str(tmp_path / "w"), "--dry-run"] + [f"--cmake-arg={a}" for a in extra])
    assert rc == 0
    configure = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  cmake -S"))
    assert configure.endswith(" '-DCMAKE_CXX_FLAGS=-O1 -g' -DTRITON_ENABLE_GPU=ON -Wno-dev")


def test_offline_errors(this_python: PythonInfo, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="python-backend-src"):
        make_plan(parse_release("24.10"), this_python, offline=True, work_dir=tmp_path)
    with pytest.raises(InputError, match="--dlpack-src"):
        deps = _offline_sources(tmp_path)
        del deps["DLPACK"]
        make_plan(parse_release("24.10"), this_python, offline=True, work_dir=tmp_path,
                  python_backend_src=tmp_path, dep_sources=deps)
    with pytest.raises(InputError, match="unknown FetchContent"):
        make_plan(parse_release("24.10"), this_python, dep_sources={"BOOST": tmp_path})


def test_partial_local_sources_without_offline(this_python: PythonInfo, tmp_path: Path) -> None:
    plan = make_plan(parse_release("23.05"), this_python, dep_sources={"PYBIND11": tmp_path / "pb11"}, work_dir=tmp_path)
    f = _flags(plan.configure)
    assert f["FETCHCONTENT_SOURCE_DIR_PYBIND11"] == str(tmp_path / "pb11")
    assert "FETCHCONTENT_FULLY_DISCONNECTED" not in f and plan.clone is not None


def test_cli_dry_run_prints_plan_and_checks(this_python: PythonInfo, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["stub", "build", "--triton", "2.51.0", "--python", this_python.executable, "--no-gpu",
               "--work-dir", str(tmp_path / "w"), "--output", str(tmp_path / "o" / "stub"), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Triton release:   24.10 (server 2.51.0" in out
    assert "git clone --depth 1 --branch r24.10" in out
    assert "-DTRITON_CORE_REPO_TAG=r24.10" in out and "-DTRITON_ENABLE_GPU=OFF" in out
    assert f"--target {STUB_TARGET}" in out
    assert "requirements:" in out and "] cmake:" in out and "] rapidjson:" in out
    assert not (tmp_path / "w").exists() and not (tmp_path / "o").exists()  # dry run builds nothing


def test_cli_bad_release_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stub", "build", "--triton", "19.01", "--dry-run"]) == 2
    assert "older than" in capsys.readouterr().err


WRAPPER = Path(__file__).resolve().parents[2] / "stub_build" / "build_stub.sh"


def test_shell_wrapper_dry_run_from_a_checkout(this_python: PythonInfo, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "PYTHON": sys.executable, "HOME": str(tmp_path)}
    out = subprocess.run([str(WRAPPER), "--triton", "25.07", "--python", this_python.executable, "--no-gpu",
                          "--work-dir", str(tmp_path / "w"), "--dry-run"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "25.07 (server 2.59.1" in out.stdout and "--branch r25.07" in out.stdout


def test_shell_wrapper_build_reports_missing_tools_and_exits_1(this_python: PythonInfo, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"  # only the interpreters: no cmake, compiler or git
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {"PATH": str(bindir), "HOME": str(tmp_path)}
    out = subprocess.run(["/bin/bash", str(WRAPPER), "--triton", "24.10", "--python", this_python.executable,
                          "--no-gpu", "--work-dir", str(tmp_path / "w")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "missing requirements" in out.stderr and "cmake not found" in out.stderr
    assert "fix: pip install 'cmake>=3.17'" in out.stderr
    assert not (tmp_path / "w").exists()


def test_dry_run_refuses_source_directories_that_do_not_exist(this_python: PythonInfo, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26: a mistyped --googletest-src used to pass every check and fail at CMake's configure."""
    (tmp_path / "pb").mkdir()
    rc = main(["stub", "build", "--triton", "24.10", "--python", this_python.executable, "--no-gpu",
               "--work-dir", str(tmp_path / "w"), "--python-backend-src", str(tmp_path / "pb"),
               "--googletest-src", "/nonexistent/gt", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "[MISSING] sources: no such directory: --googletest-src /nonexistent/gt" in out
    assert "stub build: no such directory: --googletest-src /nonexistent/gt" in err
    assert "--python-backend-src" not in err  # that one exists
    rc = main(["stub", "build", "--triton", "24.10", "--python", this_python.executable, "--no-gpu",
               "--work-dir", str(tmp_path / "w"), "--python-backend-src", str(tmp_path / "pb"), "--dry-run"])
    assert "[ok] sources: 1 local source directory exist" in capsys.readouterr().out
