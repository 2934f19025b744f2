"""A REAL build through `build_stub` of the stand-in CMake project (stub_build/standin/): configure flags,
target, output, libpython verification and the reported Python version, with the cmake and compiler here."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from triton_textops.stub import (
    BuildResult,
    PythonInfo,
    build_stub,
    deployment_instructions,
    inspect_stub,
    main,
    make_plan,
    parse_release,
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
    assert [c.name for c in result.checks] == list(STANDIN_REQUIREMENTS) and all(c.ok for c in result.checks)
    assert any(line.startswith("$ cmake -S") and "-DTRITON_CORE_REPO_TAG=r24.10" in line for line in logs)
    assert any("--target triton-python-backend-stub" in line for line in logs)
    v = result.verification
    assert v.ok, v.messages
    assert v.info.libpython_soname == target_python.instsoname
    assert v.info.python_version == target_python.major_minor
    assert Path(v.info.resolved_libpython).resolve() == target_python.libpython.resolve()
    assert f"Python {target_python.version}" in " ".join(v.messages)


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


def test_inspect_rejects_a_binary_without_libpython(capsys: pytest.CaptureFixture[str]) -> None:
    exe = shutil.which("cmake")
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
