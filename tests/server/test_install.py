"""Installing the server from the wheel into the cache: only the server parts, atomic, stub placement.

Uses a small fake wheel with the real layout, so it runs offline and fast (no server is started).
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from triton_textops.tools.server import TRITON_VERSION, TritonServerError, install_server

FILES = {
    "pytriton/__init__.py": (b"", 0o644),
    "pytriton/tritonserver/bin/tritonserver": (b"#!/bin/sh\n", 0o755),
    "pytriton/tritonserver/backends/python/libtriton_python.so": (b"so", 0o666),
    "pytriton/tritonserver/backends/python/triton_python_backend_utils.py": (b"# utils\n", 0o666),
    "pytriton/tritonserver/python_backend_stubs/3.10/triton_python_backend_stub": (b"stub310", 0o755),
    "pytriton/tritonserver/python_backend_stubs/3.11/triton_python_backend_stub": (b"stub311", 0o644),
    "nvidia_pytriton.libs/libtritonserver-x.so": (b"lib", 0o666),
    "nvidia_pytriton-0.7.0.dist-info/METADATA": (b"Name: nvidia-pytriton\n", 0o644),
}


def fake_wheel(path: Path, skip: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, mode) in FILES.items():
            if name == skip:
                continue
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(info, data)
    return path


def test_install_unpacks_only_the_server_and_replaces_a_half_finished_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    final = cache / f"tritonserver-{TRITON_VERSION}"
    (final / "pytriton").mkdir(parents=True)  # left over by an interrupted run: no completion marker
    (final / "junk").write_text("x")
    inst = install_server(cache, wheel=fake_wheel(tmp_path / "w.whl"))
    assert inst.executable == final / "pytriton/tritonserver/bin/tritonserver"
    assert inst.executable.stat().st_mode & 0o777 == 0o755
    assert not (final / "junk").exists()
    assert not (final / "pytriton/__init__.py").exists()  # pytriton's Python package is not installed
    assert not (final / "nvidia_pytriton-0.7.0.dist-info").exists()
    assert (final / "nvidia_pytriton.libs/libtritonserver-x.so").is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".") and "tmp" in p.name] == []
    # the Python-3.11 backend dir: utils + backend library + the 3.11 stub at mode 0755
    bdir = inst.backend_directory("3.11")
    assert bdir == final / "pytriton/tritonserver/backends-py3.11"
    stub = bdir / "python" / "triton_python_backend_stub"
    assert stub.read_bytes() == b"stub311" and stub.stat().st_mode & 0o777 == 0o755
    assert (bdir / "python" / "libtriton_python.so").is_file()
    assert not (inst.backends / "python" / "triton_python_backend_stub").exists()  # pristine copy untouched
    assert inst.backend_directory("3.11") == bdir  # cached
    with pytest.raises(TritonServerError, match=r"no Python-backend stub for Python 3.9 \(has \['3.10', '3.11'\]\)"):
        inst.backend_directory("3.9")
    # second call: already complete, the wheel is not needed
    assert install_server(cache, wheel=tmp_path / "does-not-exist.whl").executable == inst.executable


def test_failed_install_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    broken = fake_wheel(tmp_path / "broken.whl", skip="pytriton/tritonserver/bin/tritonserver")
    with pytest.raises(TritonServerError, match="has no pytriton/tritonserver/bin/tritonserver"):
        install_server(cache, wheel=broken)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
