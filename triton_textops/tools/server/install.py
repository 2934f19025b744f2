"""Finding a tritonserver (system, NGC container) or installing 2.51.0 from the nvidia-pytriton wheel."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from triton_textops.tools.proc import run
from triton_textops.tools.server.cache import COMPLETE_MARKER, cache_dir, locked, pip_cmd
from triton_textops.tools.server.errors import TritonServerError

TRITON_VERSION = "2.51.0"
PYTRITON_REQUIREMENT = "nvidia-pytriton==0.7.0"
_WHEEL_PREFIXES = ("pytriton/tritonserver/", "nvidia_pytriton.libs/")

@dataclass(frozen=True)
class ServerInstall:
    """A usable tritonserver: binary, backend directory root and library directories."""

    executable: Path
    backends: Path  # the --backend-directory for a system install; the wheel's pristine backends/ otherwise
    lib_dirs: tuple[Path, ...]
    stubs: Path | None  # python_backend_stubs/ of the wheel install (None for a system install)
    origin: str  # "env", "path", "opt" or "wheel"

    @property
    def from_wheel(self) -> bool:
        return self.stubs is not None

    def backend_directory(self, python_version: str | None) -> Path:
        """``--backend-directory`` to use; for the wheel a per-Python copy with the matching stub placed in it."""
        if self.stubs is None or python_version is None:
            return self.backends
        return _prepare_wheel_backends(self, python_version)


def _system_server() -> ServerInstall | None:
    for origin, cand in (
        ("env", os.environ.get("TRITON_TEXTOPS_SERVER")),
        ("path", shutil.which("tritonserver")),
        ("opt", "/opt/tritonserver/bin/tritonserver"),
    ):
        if cand and os.access(cand, os.X_OK) and Path(cand).is_file():
            exe = Path(cand).resolve()
            root = exe.parent.parent
            return ServerInstall(exe, root / "backends", (root / "lib",), None, origin)
    return None


def _wheel_layout(root: Path) -> ServerInstall:
    ts = root / "pytriton" / "tritonserver"
    return ServerInstall(ts / "bin" / "tritonserver", ts / "backends", (root / "nvidia_pytriton.libs",),
                         ts / "python_backend_stubs", "wheel")


def install_server(cache: Path | None = None, wheel: str | os.PathLike[str] | None = None) -> ServerInstall:
    """Unpack Triton from the nvidia-pytriton wheel into the cache (once) and return it.

    ``wheel`` (or ``$TRITON_TEXTOPS_PYTRITON_WHEEL``) may point at an already downloaded wheel (offline use);
    otherwise ``pip download --no-deps`` fetches it. Unpacked into a temporary directory and renamed into
    place, so an interrupted install never looks complete.
    """
    root = cache or cache_dir()
    final = root / f"tritonserver-{TRITON_VERSION}"
    if (final / COMPLETE_MARKER).is_file():
        return _wheel_layout(final)
    with locked(root / f".{final.name}.lock"):
        if (final / COMPLETE_MARKER).is_file():
            return _wheel_layout(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=root))
        try:
            wheel = wheel or os.environ.get("TRITON_TEXTOPS_PYTRITON_WHEEL")
            if wheel is None:
                dl = tmp / "download"
                run([*pip_cmd(), "download", "--no-deps", "--only-binary=:all:", "--platform",
                     "manylinux_2_35_x86_64", "--python-version", "3.11", "-d", str(dl), PYTRITON_REQUIREMENT],
                    f"pip download {PYTRITON_REQUIREMENT}", error=TritonServerError)
                wheels = sorted(dl.glob("nvidia_pytriton-*.whl"))
                if not wheels:
                    raise TritonServerError(f"pip download produced no wheel in {dl}")
                wheel = wheels[0]
            unpacked = tmp / "unpacked"
            with zipfile.ZipFile(wheel) as zf:
                for zi in zf.infolist():
                    if not zi.filename.startswith(_WHEEL_PREFIXES):
                        continue
                    target = Path(zf.extract(zi, unpacked))
                    mode = (zi.external_attr >> 16) & 0o777
                    if mode and not zi.is_dir():
                        target.chmod(mode | 0o444)
            layout = _wheel_layout(unpacked)
            if not layout.executable.is_file():
                raise TritonServerError(f"{wheel} has no pytriton/tritonserver/bin/tritonserver")
            layout.executable.chmod(0o755)
            (unpacked / COMPLETE_MARKER).write_text(json.dumps({"wheel": Path(wheel).name, "triton": TRITON_VERSION}))
            if final.exists():  # a leftover without marker
                shutil.rmtree(final)
            os.rename(unpacked, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _wheel_layout(final)


def _prepare_wheel_backends(install: ServerInstall, version: str) -> Path:
    """``backends-py<ver>/python/``: libtriton_python.so + utils + the stub for ``version``, mode 0755."""
    assert install.stubs is not None
    stub = install.stubs / version / "triton_python_backend_stub"
    if not stub.is_file():
        have = sorted(p.name for p in install.stubs.iterdir())
        raise TritonServerError(f"the Triton wheel has no Python-backend stub for Python {version} (has {have})")
    final = install.backends.parent / f"backends-py{version}"
    if (final / COMPLETE_MARKER).is_file():
        return final
    with locked(final.parent / f".{final.name}.lock"):
        if (final / COMPLETE_MARKER).is_file():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
        try:
            # same depth as backends/python, so the libraries' $ORIGIN/../../../../nvidia_pytriton.libs still works
            shutil.copytree(install.backends, tmp / "b")
            dst = tmp / "b" / "python" / "triton_python_backend_stub"
            shutil.copy2(stub, dst)
            dst.chmod(0o755)
            (tmp / "b" / COMPLETE_MARKER).write_text(version)
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp / "b", final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def find_server(*, install: bool = True, cache: Path | None = None) -> ServerInstall:
    """A system tritonserver if there is one, else the cached wheel install (installing it if ``install``)."""
    system = _system_server()
    if system is not None:
        return system
    final = (cache or cache_dir()) / f"tritonserver-{TRITON_VERSION}"
    if (final / COMPLETE_MARKER).is_file():
        return _wheel_layout(final)
    if not install:
        raise TritonServerError("no tritonserver found (PATH, /opt/tritonserver) and the wheel is not installed")
    return install_server(cache)


