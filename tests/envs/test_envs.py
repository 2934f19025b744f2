"""`env pack` / `env check` on a REAL venv-pack tarball and on broken variants of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from triton_textops.errors import InputError
from triton_textops.tools.envs import check_env, main, make_pack_plan, render_spec
from triton_textops.tools.stub import PythonInfo, parse_release

REPO = Path(__file__).resolve().parents[2]


def _levels(rep) -> dict[str, str]:
    return {f.what: f.level for f in rep.findings}


def _fails(rep) -> str:
    return "\n".join(f.what for f in rep.failures)


def _other_release(py: PythonInfo) -> str:
    """A release whose stock stub has another Python than the env."""
    return "24.10" if py.major_minor != "3.10" else "24.11"


def test_good_env_tarball_passes_against_its_stub(packed_env: Path, env_stub: Path, env_python: PythonInfo) -> None:
    rep = check_env(packed_env, stub=env_stub, release=parse_release("24.11"))
    assert rep.ok, rep.render()
    text = rep.render()
    assert "bin/activate present" in text
    assert f"Python {env_python.major_minor} in the env = Python of the stub" in text
    assert "activates in place: sys.prefix = the env" in text  # extracted to a temp dir, still works
    assert "import triton_textops 0.1.0" in text and "numpy 2." in text
    assert "venv: bin/python3 links to the interpreter" in text  # the venv-pack caveat is reported
    assert str(rep.root) != str(packed_env) and not rep.root.exists()  # temp extraction is cleaned up


def test_packed_env_holds_bytecode(packed_env: Path, env_python: PythonInfo) -> None:
    """The pack compiles the bytecode: the server extracts the env anew at each start, and without it every model
    load imports numba, numpy and ours from source (numba: 1.4-1.6 s instead of 0.45 s here)."""
    tag = f"cpython-{env_python.major_minor.replace('.', '')}"
    with tarfile.open(packed_env) as tar:
        names = set(tar.getnames())
    for module in ("numba/__init__", "numpy/__init__", "triton_textops/ops/core/kernels"):
        package, _, name = module.rpartition("/")
        assert any(n.endswith(f"site-packages/{package}/__pycache__/{name}.{tag}.pyc") for n in names), module


def test_cli_exit_codes(packed_env: Path, packed_dir: Path, env_stub: Path, env_python: PythonInfo,
                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "check", str(packed_env), "--stub", str(env_stub), "--triton", "2.52.0"]) == 0
    assert "result: OK" in capsys.readouterr().out
    assert main(["env", "check", str(packed_dir), "--triton", _other_release(env_python)]) == 1
    out = capsys.readouterr().out
    assert "[FAIL]" in out and "fix: build a matching stub: triton-textops stub build" in out
    assert main(["env", "check", str(packed_env.parent / "nope.tar.gz")]) == 2


def test_numpy2_against_a_24_10_stub_fails(packed_dir: Path, env_stub: Path) -> None:
    rep = check_env(packed_dir, stub=env_stub, release=parse_release("24.10"))
    assert len(rep.failures) == 1, rep.render() and "break with numpy 2" in rep.failures[0].what
    assert "numpy>=1.21,<2" in rep.failures[0].fix


def test_wrong_python_against_the_stock_stub(packed_dir: Path, env_python: PythonInfo) -> None:
    rel = _other_release(env_python)
    rep = check_env(packed_dir, release=parse_release(rel))
    assert f"the env has Python {env_python.major_minor}, the stock stub of tritonserver:{rel}-py3" in _fails(rep)


def test_wrong_python_against_a_stub(env_dir: Path, env_stub: Path, env_python: PythonInfo) -> None:
    libdir = env_dir / "lib" / f"python{env_python.major_minor}"
    libdir.rename(env_dir / "lib" / "python3.99")
    rep = check_env(env_dir, stub=env_stub, run=False)
    assert f"the env has Python 3.99, the stub {env_stub} embeds Python {env_python.major_minor}" in _fails(rep)


def test_missing_activate(env_dir: Path) -> None:
    (env_dir / "bin" / "activate").unlink()
    rep = check_env(env_dir, release=parse_release("24.11"))
    assert "bin/activate missing" in _fails(rep)
    assert _levels(rep).get("triton_textops is installed (import not tried: the env was not run here)") == "warn"


def test_missing_triton_textops(env_dir: Path, env_python: PythonInfo) -> None:
    sp = env_dir / "lib" / f"python{env_python.major_minor}" / "site-packages"
    shutil.rmtree(sp / "triton_textops")
    for d in sp.glob("triton_textops-*.dist-info"):
        shutil.rmtree(d)
    rep = check_env(env_dir, release=parse_release("24.11"))
    assert "import triton_textops failed: ModuleNotFoundError" in _fails(rep)
    fix = next(f.fix for f in rep.failures if "triton_textops" in f.what)
    assert "pip install" in fix


def test_chosen_backend_must_import(packed_dir: Path) -> None:
    rep = check_env(packed_dir, release=parse_release("24.11"), backends=["numpy", "cupy"])
    assert "import cupy failed: ModuleNotFoundError" in _fails(rep)
    with pytest.raises(InputError):
        check_env(packed_dir, backends=["torch"])


def test_editable_install_left_behind(env_dir: Path, env_python: PythonInfo) -> None:
    sp = env_dir / "lib" / f"python{env_python.major_minor}" / "site-packages"
    (sp / "__editable__.mypkg-0.1.pth").write_text("/home/builder/src/mypkg\n")
    rep = check_env(env_dir, release=parse_release("24.11"), run=False)
    assert "refers to /home/builder/src/mypkg" in _fails(rep)


def test_plain_tar_of_a_venv_is_not_relocatable(tmp_path: Path, env_python: PythonInfo) -> None:
    orig = tmp_path / "build-machine" / "venv"
    subprocess.run([env_python.executable, "-m", "venv", "--without-pip", str(orig)], check=True)
    tarball = tmp_path / "plain.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(orig, arcname=".")
    rep = check_env(tarball, release=parse_release("24.11"))
    fails = _fails(rep)
    assert f"bin/activate contains {orig}" in fails  # VIRTUAL_ENV hard-coded
    assert f"Python uses {orig}, not this env" in fails  # activation points back to the original
    assert "numpy" in fails  # and it has no numpy


def test_top_level_directory_in_archive(tmp_path: Path) -> None:
    env = _skeleton(tmp_path / "env", b"")
    tarball = tmp_path / "nested.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(env, arcname="myenv")
    rep = check_env(tarball, run=False)
    f = next(f for f in rep.failures if "bin/activate missing" in f.what)
    assert "top-level directory myenv/" in f.fix


def test_absolute_symlink_rejected_from_26_06(tmp_path: Path) -> None:
    env = _skeleton(tmp_path / "env", b"")
    (env / "bin" / "python3").symlink_to(sys.executable)  # what venv-pack keeps: a link to the base interpreter
    tarball = tmp_path / "venvlike.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(env, arcname=".")
    rep = check_env(tarball, release=parse_release("26.06"), run=False)
    assert "link escapes the env" in _fails(rep)
    rep = check_env(tarball, release=parse_release("24.11"), run=False)
    assert "link escapes the env" not in _fails(rep)
    assert any(f.level == "warn" and "link escapes the env" in f.what for f in rep.findings)


def _skeleton(root: Path, glibcxx: bytes) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "activate").write_text("# activate\n")
    (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (root / "lib" / "libstdc++.so.6").write_bytes(b"\x7fELF\0" + glibcxx)
    return root


def test_old_libstdcxx_in_a_conda_env(tmp_path: Path) -> None:
    env = _skeleton(tmp_path / "env", b"GLIBCXX_3.4.29\0GLIBCXX_3.4.30\0")
    rep = check_env(env, release=parse_release("24.12"), run=False)
    f = next(f for f in rep.failures if "GLIBCXX" in f.what)
    assert "up to GLIBCXX_3.4.30" in f.what and "GLIBCXX_3.4.32" in f.what
    assert f.fix == "conda install -c conda-forge libstdcxx-ng=13"
    rep = check_env(env, release=parse_release("24.10"), run=False)
    assert not any("GLIBCXX" in f.what for f in rep.failures)


@pytest.mark.parametrize("fmt,kind,name", [("conda", "cpu", "environment-cpu.yml"),
                                           ("conda", "gpu", "environment-gpu.yml"),
                                           ("pip", "cpu", "requirements-cpu.txt"),
                                           ("pip", "gpu", "requirements-gpu.txt")])
def test_spec_files_are_what_the_generator_makes(fmt: str, kind: str, name: str) -> None:
    text = (REPO / "envs" / name).read_text()
    assert text == render_spec(fmt, kind, parse_release("24.10"), "3.11")
    assert "numpy>=1.21,<2" in text and "triton-textops" in text
    assert ("cupy" in text) == (kind == "gpu")


def test_spec_pins_follow_the_release() -> None:
    text = render_spec("conda", "gpu", parse_release("25.01"), "3.12")
    assert "numpy>=1.26,<3" in text and "libstdcxx-ng>=13" in text and "python=3.12" in text


def test_pack_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], env_python: PythonInfo) -> None:
    pytest.importorskip("venv_pack")
    rc = main(["env", "pack", "--triton", "24.10", "--python", env_python.executable, "--tool", "venv",
               "--kind", "gpu", "-o", str(tmp_path / "out.tar.gz"), "--work-dir", str(tmp_path / "w"), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and not (tmp_path / "out.tar.gz").exists()
    assert "-m venv --without-pip" in out and "'numpy>=1.21,<2' 'cupy-cuda12x>=13'" in out
    assert "venv_pack -p" in out and "same path" in out


def test_pack_refuses_conda_without_conda(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="conda not found"):
        make_pack_plan(release=parse_release("24.10"), tool="conda", work_dir=tmp_path)


def test_shell_wrapper_dry_run(tmp_path: Path, env_python: PythonInfo) -> None:
    pytest.importorskip("venv_pack")
    out = subprocess.run([str(REPO / "envs" / "pack_env.sh"), "--triton", "24.10", "--python", env_python.executable,
                          "--tool", "venv", "--work-dir", str(tmp_path / "w"), "--dry-run"],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tool: venv" in out.stdout


def test_pack_installs_the_package_dependencies_next_to_the_pinned_numpy(tmp_path: Path) -> None:
    """triton-textops goes in with --no-deps, so its own runtime requirements (pyproject) are listed explicitly;
    numpy stays pinned for the stub, the gpu extra's join for --kind gpu."""
    import tomllib

    from triton_textops.tools.envs import package_dependencies

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [r for r in project["dependencies"] if not r.startswith("numpy")]
    assert declared and package_dependencies() == declared
    gpu = package_dependencies("gpu")
    assert gpu[: len(declared)] == declared and set(project["optional-dependencies"]["gpu"]) <= set(gpu)
    py = shutil.which("python3") or sys.executable
    plan = make_pack_plan(kind="cpu", release=parse_release("24.10"), python=py, tool="venv",
                          output=tmp_path / "env.tar.gz", work_dir=tmp_path / "w")
    install = next(c for c in plan.commands if "install" in c and "--no-deps" not in c)
    assert install[-1 - len(declared):] == ["numpy>=1.21,<2", *declared]
