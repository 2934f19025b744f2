"""The one description of a Python interpreter the tools share (``stub build``, ``env``, the server runner): what
its own sysconfig says about its version, headers and shared libpython, and how ``--python`` finds one."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.proc import run

_PY_QUERY = (
    "import json, sys, sysconfig\n"
    "v = sysconfig.get_config_var\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable,"
    " 'include': sysconfig.get_path('include'), 'libdir': v('LIBDIR'), 'instsoname': v('INSTSONAME'),"
    " 'ldlibrary': v('LDLIBRARY'), 'shared': bool(v('Py_ENABLE_SHARED')), 'multiarch': v('MULTIARCH')}))\n"
)
# where distributions put libpython when LIBDIR does not hold it (Debian's multiarch dir, Fedora's lib64)
_SYSTEM_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")


@dataclass(frozen=True)
class PythonInfo:
    """An interpreter as its own sysconfig describes it (what a stub build, an env check and the server need)."""

    executable: str
    version: str  # 3.11.7
    include: str
    libdir: str
    instsoname: str  # libpython3.11.so.1.0 (what the stub has as DT_NEEDED)
    ldlibrary: str  # libpython3.11.so (what the linker uses)
    shared: bool
    multiarch: str | None = None

    @property
    def major_minor(self) -> str:
        """``3.11``: what selects a stub."""
        return ".".join(self.version.split(".")[:2])

    @property
    def libpython(self) -> Path:
        """Where sysconfig says the shared libpython is (it may not exist: see :meth:`find_libpython`)."""
        return Path(self.libdir) / self.instsoname

    def find_libpython(self) -> Path | None:
        """The shared libpython a stub for this Python loads, in LIBDIR or the system's library directories."""
        candidates = [self.libpython] if self.instsoname else []
        candidates += [Path(d) / f"libpython{self.major_minor}.so.1.0" for d in (self.libdir, *_SYSTEM_LIB_DIRS)]
        return next((c for c in candidates if c.is_file()), None)


def query_python(executable: str | os.PathLike[str], *,
                 error: Callable[[str], Exception] = InputError) -> PythonInfo:
    """Run the interpreter and read its sysconfig. ``executable`` becomes the interpreter's own sys.executable, so
    a launcher such as a pyenv shim is replaced by the real binary it runs (that is what CMake must be given).
    ``error``: the caller's error type when the interpreter cannot run."""
    out = run([executable, "-c", _PY_QUERY], f"querying Python interpreter {executable}", error=error,
              timeout=60).stdout
    d = json.loads(out.strip().splitlines()[-1])
    return PythonInfo(
        executable=d["executable"] or os.fspath(executable),
        version=d["version"],
        include=d["include"] or "",
        libdir=d["libdir"] or "",
        instsoname=d["instsoname"] or "",
        ldlibrary=d["ldlibrary"] or "",
        shared=bool(d["shared"]),
        multiarch=d.get("multiarch"),
    )


def find_python(spec: str | None, environ: Mapping[str, str] | None = None) -> PythonInfo:
    """Resolve ``--python``: a version (``3.11``, ``3.11.7``: pyenv, then PATH), a command name looked up on PATH
    like a shell does (``python3.11``, as virtualenv and uv accept), an interpreter path, or None (this Python)."""
    env = os.environ if environ is None else environ
    if not spec:
        return query_python(sys.executable)
    if re.fullmatch(r"\d+\.\d+(\.\d+)?", spec):
        mm = ".".join(spec.split(".")[:2])
        candidates: list[str] = []
        pyenv_root = Path(env.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
        pattern = spec if spec.count(".") == 2 else f"{spec}.*"
        for d in sorted(glob.glob(str(pyenv_root / "versions" / pattern)), reverse=True):
            candidates.append(str(Path(d) / "bin" / f"python{mm}"))
        found = shutil.which(f"python{mm}", path=env.get("PATH"))
        if found:
            candidates.append(found)
        for cand in candidates:
            if os.access(cand, os.X_OK):
                info = query_python(cand)
                if info.version == spec or (spec.count(".") == 1 and info.major_minor == spec):
                    return info
        raise InputError(
            f"no Python {spec} found (looked for python{mm} on PATH and in {pyenv_root}/versions); install it, "
            f"e.g. `env PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {spec if spec.count('.') == 2 else mm}` "
            f"or `conda create -p ./py{mm} python={mm}`, then pass --python /path/to/python{mm}"
        )
    if "/" not in spec:  # a command name, as a shell resolves it: PATH only
        found = shutil.which(spec, path=env.get("PATH"))
        if not found:
            raise InputError(f"--python {spec}: no command {spec!r} on PATH (give a path such as ./{spec} for a file "
                             "in this directory, or a version such as 3.11)")
        return query_python(found)
    path = os.path.expanduser(spec)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise InputError(f"--python {spec}: not an executable file")
    return query_python(path)
