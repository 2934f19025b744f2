"""`--python`: a command name resolved through PATH (as virtualenv and uv accept), a path, or a version; a launcher
(pyenv shim) is replaced by the interpreter it runs, which is what CMake is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.errors import InputError
from triton_textops.tools.stub import PythonInfo, find_python, main


def _launcher(bindir: Path, name: str, target: str) -> Path:
    """A shell script that execs `target`, like a pyenv shim."""
    bindir.mkdir(parents=True, exist_ok=True)
    p = bindir / name
    p.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
    p.chmod(0o755)
    return p


def test_name_is_looked_up_on_path(target_python: PythonInfo, tmp_path: Path) -> None:
    name = f"python{target_python.major_minor}"
    _launcher(tmp_path / "bin", name, target_python.executable)
    info = find_python(name, environ={"PATH": str(tmp_path / "bin")})
    assert info.version == target_python.version
    assert info.executable == target_python.executable  # the real interpreter, not the launcher script
    assert info.libpython == target_python.libpython


def test_path_lookup_order_and_misses(target_python: PythonInfo, this_python: PythonInfo, tmp_path: Path) -> None:
    _launcher(tmp_path / "a", "mypy3", target_python.executable)
    _launcher(tmp_path / "b", "mypy3", this_python.executable)
    first = find_python("mypy3", environ={"PATH": f"{tmp_path / 'b'}:{tmp_path / 'a'}"})
    assert first.executable == this_python.executable  # the first PATH entry wins, as in a shell
    with pytest.raises(InputError, match="no command 'nosuchpython' on PATH"):
        find_python("nosuchpython", environ={"PATH": str(tmp_path / "a")})
    (tmp_path / "a" / "plain").write_text("not executable")
    with pytest.raises(InputError, match="not an executable file"):
        find_python(str(tmp_path / "a" / "plain"))


def test_paths_and_versions_still_work(target_python: PythonInfo) -> None:
    assert find_python(target_python.executable).version == target_python.version
    assert find_python(target_python.version).version == target_python.version


def test_cli_python_name(target_python: PythonInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    name = f"python{target_python.major_minor}"
    _launcher(tmp_path / "bin", name, target_python.executable)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert main(["stub", "build", "--triton", "24.10", "--python", name, "--no-gpu",
                 "--work-dir", str(tmp_path / "w"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"target Python:    {target_python.version} ({target_python.executable})" in out
    assert f"-DPYTHON_EXECUTABLE={target_python.executable}" in out
