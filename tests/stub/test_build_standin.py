"""A REAL build through `build_stub` of the stand-in CMake project (stub_build/standin/): configure flags,
target, output, libpython verification and the reported Python version, with the cmake and compiler here."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
from stub_fakes import FAKE_BOOST_VERSION

from triton_textops.tools.stub import (
    BOOST_OVERRIDE_MARKER,
    BuildError,
    BuildResult,
    PythonInfo,
    build_stub,
    deployment_instructions,
    inspect_stub,
    main,
    make_plan,
    parse_release,
    unsafe_runpath,
    verify_stub,
)

STANDIN = Path(__file__).resolve().parents[2] / "stub_build" / "standin"

pytestmark = pytest.mark.skipif(
    shutil.which("cmake") is None or (shutil.which("c++") is None and shutil.which("g++") is None),
    reason="needs cmake and a C++ compiler",
)
STANDIN_REQUIREMENTS = ("cmake", "compiler", "python")  # the stand-in needs no rapidjson/libarchive/zlib


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, target_python: PythonInfo) -> tuple[BuildResult, Path, list[str]]:
    tmp = tmp_path_factory.mktemp("standin")
    (tmp / "deploy" / "my_model").mkdir(parents=True)  # an existing directory: the stub goes inside it
    plan = make_plan(parse_release("24.10"), target_python, gpu=False, work_dir=tmp / "work",
                     output=tmp / "deploy" / "my_model", python_backend_src=STANDIN,
                     requirements=STANDIN_REQUIREMENTS, jobs=2)
    logs: list[str] = []
    return build_stub(plan, log=logs.append), tmp, logs


def test_build_output_and_verification(built: tuple[BuildResult, Path, list[str]], target_python: PythonInfo) -> None:
    result, tmp, logs = built
    stub = tmp / "deploy" / "my_model" / "triton_python_backend_stub"
    assert result.stub == stub and stub.is_file()
    assert stub.stat().st_mode & 0o777 == 0o755
    # the given source directory (the stand-in) is checked first
    assert [c.name for c in result.checks] == ["sources", *STANDIN_REQUIREMENTS] and all(c.ok for c in result.checks)
    assert any(line.startswith("$ cmake -S") and "-DTRITON_CORE_REPO_TAG=r24.10" in line for line in logs)
    assert any("--target triton-python-backend-stub" in line for line in logs)
    v = result.verification
    assert v.ok, v.messages
    assert v.info.libpython_soname == target_python.instsoname
    assert v.info.python_version == target_python.major_minor
    assert Path(v.info.resolved_libpython).resolve() == target_python.libpython.resolve()
    assert f"Python {target_python.version}" in " ".join(v.messages)
    # exactly libpython's directory: no empty entry (CMake's build-tree ':' padding) and nothing relative
    assert v.info.runpath == (target_python.libdir,)
    assert unsafe_runpath(v.info.runpath) == []


def test_the_built_stub_embeds_the_target_python_and_got_the_flags(
    built: tuple[BuildResult, Path, list[str]], target_python: PythonInfo
) -> None:
    result, _, _ = built
    out = subprocess.run([str(result.stub)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "tags: backend=r24.10 common=r24.10 core=r24.10 gpu=0" in out.stdout
    assert f"libpython: {target_python.version} " in out.stdout
    assert f"python {target_python.version}" in out.stdout  # interpreter initialized and ran code


def test_verification_rejects_another_python(built: tuple[BuildResult, Path, list[str]],
                                             target_python: PythonInfo, this_python: PythonInfo) -> None:
    result, tmp, _ = built
    other = this_python if this_python.major_minor != target_python.major_minor else dataclasses.replace(
        target_python, instsoname="libpython3.99.so.1.0")
    v = verify_stub(result.stub, other)
    assert not v.ok and "provides" in v.messages[0]
    # same soname but a different file than intended
    elsewhere = dataclasses.replace(target_python, libdir=str(tmp))
    v = verify_stub(result.stub, elsewhere)
    assert not v.ok and "not the intended" in v.messages[0]


def test_inspect_cli_and_deployment_text(built: tuple[BuildResult, Path, list[str]], target_python: PythonInfo,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    result, _, _ = built
    assert inspect_stub(result.stub).python_version == target_python.major_minor
    assert main(["stub", "inspect", str(result.stub)]) == 0
    assert f"python:    {target_python.major_minor}" in capsys.readouterr().out
    text = deployment_instructions(result.stub, target_python, parse_release("24.10"), result.verification.info.runpath)
    assert "<model_repository>/<model>/triton_python_backend_stub" in text
    assert "<backend dir>/python/triton_python_backend_stub" in text
    assert '$$TRITON_MODEL_DIRECTORY/custom_env.tar.gz' in text and "numpy>=1.21,<2" in text
    assert "r24.10 also needs a triton_python_backend_stub file in <backend dir>/python/" in text
    assert "also needs" not in deployment_instructions(result.stub, target_python, parse_release("23.09"))


def test_inspect_rejects_a_binary_without_libpython(capsys: pytest.CaptureFixture[str]) -> None:
    exe = shutil.which("readelf")  # an ELF binary that is sure to be here (cmake may be a pip entry-point script)
    assert main(["stub", "inspect", exe]) == 1
    assert "no libpython" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA toolkit (nvcc)")
def test_gpu_build_links_cudart(tmp_path: Path, target_python: PythonInfo) -> None:
    plan = make_plan(parse_release("24.11"), target_python, gpu=True, work_dir=tmp_path / "w",
                     output=tmp_path / "stub", python_backend_src=STANDIN,
                     requirements=("cmake", "compiler", "python", "cuda"), jobs=2)
    result = build_stub(plan, log=lambda _: None)
    assert result.verification.ok
    assert any(n.startswith("libcudart") for n in result.verification.info.needed)
    assert "gpu=1" in subprocess.run([str(result.stub), "--no-init"], capture_output=True, text=True).stdout


def _tree(d: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(d)), p.stat().st_mtime_ns) for p in d.rglob("*"))


@pytest.mark.parametrize(("release", "shape", "source"), [
    ("24.10", "pinned", "boost_headers"),  # r21.06-r25.10: the CMake project include redirects boostorg
    ("24.10", "pinned", "boost_tarball"),
    ("25.11", "url", "boost_headers"),  # r25.11+: TRITON_BOOST_URL
])
def test_boost_reaches_the_build_without_download(release: str, shape: str, source: str, tmp_path: Path,
                                                  target_python: PythonInfo, request: pytest.FixtureRequest) -> None:
    """The stand-in downloads boost from boost.invalid exactly as python_backend does; only --boost makes it build.
    --cmake-arg switches that download on (so this also shows --cmake-arg reaching configure)."""
    boost = request.getfixturevalue(source)
    before = _tree(STANDIN)
    plan = make_plan(parse_release(release), target_python, gpu=False, work_dir=tmp_path / "w",
                     output=tmp_path / "stub", python_backend_src=STANDIN, requirements=STANDIN_REQUIREMENTS,
                     jobs=2, boost=boost, extra_cmake_args=[f"-DSTANDIN_BOOST={shape}"])
    # r25.11 needs CMake >= 3.31.8; the stand-in itself needs 3.17 (3.18 for the override), whatever is here
    plan = dataclasses.replace(plan, cmake_minimum=(3, 18))
    logs: list[str] = []
    result = build_stub(plan, log=logs.append)
    out = subprocess.run([str(result.stub), "--no-init"], capture_output=True, text=True, timeout=60)
    assert "boost: {}_{}_{}".format(*FAKE_BOOST_VERSION) in out.stdout, out.stdout
    build = tmp_path / "w" / "build"
    assert (build / "standin-other-built").is_file()  # another ExternalProject passed through intact
    assert (build / BOOST_OVERRIDE_MARKER).is_file() == (shape == "pinned")
    assert any(line.startswith("boost: boost 1.23.4") for line in logs)
    assert _tree(STANDIN) == before  # the python_backend source tree is not modified


def test_boost_override_that_did_not_apply_stops_the_build(tmp_path: Path, target_python: PythonInfo,
                                                          boost_headers: Path) -> None:
    src = tmp_path / "other"  # not project(tritonpythonbackend): the project include never runs
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.17)\nproject(other LANGUAGES C CXX)\n")
    plan = make_plan(parse_release("24.10"), target_python, gpu=False, work_dir=tmp_path / "w",
                     output=tmp_path / "stub", python_backend_src=src, requirements=STANDIN_REQUIREMENTS,
                     boost=boost_headers)
    with pytest.raises(BuildError, match="did not apply the boost override"):
        build_stub(plan, log=lambda _: None)


def test_verification_fails_on_an_empty_runpath_entry(tmp_path: Path, target_python: PythonInfo) -> None:
    """CMake pads the build-tree RUNPATH with ':' (what a plain build-tree stub carries): turning our flag off again
    with --cmake-arg (the user's -D comes last and wins) reproduces it, and the build must refuse the result."""
    plan = make_plan(parse_release("24.10"), target_python, gpu=False, work_dir=tmp_path / "w",
                     output=tmp_path / "stub", python_backend_src=STANDIN, requirements=STANDIN_REQUIREMENTS,
                     jobs=2, extra_cmake_args=["-DCMAKE_BUILD_WITH_INSTALL_RPATH=OFF"])
    with pytest.raises(BuildError, match="empty or relative entries") as exc:
        build_stub(plan, log=lambda _: None)
    assert f"RUNPATH '{target_python.libdir}:'" in str(exc.value)
    assert main(["stub", "inspect", str(tmp_path / "stub")]) == 1


def test_verification_fails_on_a_relative_runpath_entry(tmp_path: Path, target_python: PythonInfo) -> None:
    plan = make_plan(parse_release("24.10"), target_python, gpu=False, work_dir=tmp_path / "w",
                     output=tmp_path / "stub", python_backend_src=STANDIN, requirements=STANDIN_REQUIREMENTS,
                     jobs=2, extra_cmake_args=["-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath,lib/here"])
    with pytest.raises(BuildError, match=r"empty or relative entries \('lib/here'\)"):
        build_stub(plan, log=lambda _: None)
    assert unsafe_runpath(["/abs", "$ORIGIN/../lib", "${ORIGIN}", "", "rel", "./x"]) == ["", "rel", "./x"]
