"""Inspecting and verifying a stub binary: its DT_NEEDED libpython, RUNPATH and where they resolve."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.interpreter import PythonInfo
from triton_textops.tools.stub.releases import (
    BACKEND_DIR_STUB_FIRST_RELEASE,
    STUB_NAME,
    Release,
    numpy_requirement,
    server_version_for,
)


@dataclass(frozen=True)
class StubInfo:
    """DT_NEEDED/RUNPATH of a stub and how the dynamic loader resolves its libpython here."""

    path: Path
    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    libpython_soname: str | None
    python_version: str | None  # major.minor from the libpython soname
    resolved_libpython: str | None  # what ldd finds here (None if not found)


def read_dynamic(path: str | os.PathLike[str]) -> tuple[list[str], list[str]]:
    """(DT_NEEDED, RUNPATH+RPATH entries as written, empty ones included) of an ELF file, via `readelf -d`."""
    exe = shutil.which("readelf")
    if not exe:
        raise InputError("readelf not found: apt-get install binutils")
    res = subprocess.run([exe, "-d", str(path)], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise InputError(f"{path} is not an ELF binary readelf can read: {res.stderr.strip()}")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", res.stdout)
    runpath: list[str] = []
    for m in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", res.stdout):
        runpath += m.split(":")
    return needed, runpath


def unsafe_runpath(entries: Sequence[str]) -> list[str]:
    """RUNPATH/RPATH entries the dynamic loader resolves against the process's current directory: empty ones (read
    as ".") and relative ones. A stub started by a server in any working directory would then load e.g. a planted
    libstdc++.so.6 from there. Absolute directories and $ORIGIN-based ones are safe."""
    return [e for e in entries if not (e.startswith("/") or e.startswith(("$ORIGIN", "${ORIGIN}")))]


def _ldd(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    exe = shutil.which("ldd")
    if not exe:
        return {}
    res = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ if environ is None else environ))
    out: dict[str, str | None] = {}
    for line in res.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+))", line)
        if m:
            out[m.group(1)] = None if m.group(2) == "not found" else m.group(3)
    return out


def inspect_stub(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> StubInfo:
    """Which Python a stub embeds (from its DT_NEEDED libpython) and where that resolves on this machine."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such stub file")
    needed, runpath = read_dynamic(p)
    soname = next((n for n in needed if re.match(r"libpython\d+\.\d+", n)), None)
    version = None
    resolved = None
    if soname:
        m = re.match(r"libpython(\d+\.\d+)", soname)
        version = m.group(1) if m else None
        resolved = _ldd(p, environ).get(soname)
    return StubInfo(p, tuple(needed), tuple(runpath), soname, version, resolved)


@dataclass(frozen=True)
class Verification:
    """Outcome of checking a built stub against the intended Python."""

    ok: bool
    info: StubInfo
    messages: tuple[str, ...]


def verify_stub(path: str | os.PathLike[str], python: PythonInfo,
                environ: Mapping[str, str] | None = None) -> Verification:
    """The stub must need the target's libpython soname and resolve it to the target's file, and carry no empty or
    relative RUNPATH entries."""
    info = inspect_stub(path, environ)
    msgs: list[str] = []
    ok = True
    bad = unsafe_runpath(info.runpath)
    if bad:
        ok = False
        shown = ", ".join(repr(e) for e in bad)
        msgs.append(f"{path} has RUNPATH {':'.join(info.runpath)!r} with empty or relative entries ({shown}): the "
                    "loader resolves them against the working directory of the process, so libraries planted there "
                    "would be loaded")
    if info.libpython_soname is None:
        ok = False
        msgs.append(f"{path} has no libpython in DT_NEEDED ({', '.join(info.needed)}): it does not embed a shared "
                    "libpython (static link or wrong binary)")
    elif info.libpython_soname != python.instsoname:
        ok = False
        msgs.append(f"{path} needs {info.libpython_soname}, but the target Python {python.version} provides "
                    f"{python.instsoname}")
    else:
        want = os.path.realpath(python.libpython)
        if info.resolved_libpython is None:
            ok = False
            msgs.append(f"{info.libpython_soname} does not resolve here (RUNPATH {':'.join(info.runpath) or 'none'}); "
                        f"set LD_LIBRARY_PATH={python.libdir}")
        elif os.path.realpath(info.resolved_libpython) != want:
            ok = False
            msgs.append(f"{info.libpython_soname} resolves to {info.resolved_libpython}, not the intended {want} "
                        f"(check LD_LIBRARY_PATH; RUNPATH is {':'.join(info.runpath) or 'none'})")
        else:
            msgs.append(f"links {info.libpython_soname} -> {info.resolved_libpython} (Python {python.version})")
    return Verification(ok, info, tuple(msgs))


def deployment_instructions(stub: Path, python: PythonInfo, release: Release, runpath: Sequence[str] = ()) -> str:
    """Where Triton looks for the stub, the config to use with it, and what the env must contain."""
    mm = python.major_minor
    rp = f" (its RUNPATH {':'.join(runpath)} only helps if that path exists on the server)" if runpath else ""
    return "\n".join([
        f"Stub for Triton {release} (server {server_version_for(release)}), Python {mm}: {stub}",
        "Put it where the Python backend looks for it (ship it with mode 0755):",
        f"  one model:  <model_repository>/<model>/{STUB_NAME}   (checked first)",
        f"  all models: <backend dir>/python/{STUB_NAME}   (e.g. /opt/tritonserver/backends/python/, replaces "
        "the stock stub)",
        *([f"  {release.branch} also needs a {STUB_NAME} file in <backend dir>/python/ (the stock one will do) even when "
           "every model has its own: without it the backend does not initialize and every model fails with "
           f"'{STUB_NAME} is not found'"] if release >= BACKEND_DIR_STUB_FIRST_RELEASE else []),
        f"The server must find {python.instsoname}{rp}: keep it at {python.libdir} on the server or add its "
        "directory to LD_LIBRARY_PATH; an EXECUTION_ENV_PATH env that contains lib/"
        f"{python.instsoname} provides it too (conda-pack envs do).",
        "config.pbtxt of each python model using it:",
        '  backend: "python"',
        '  parameters: { key: "EXECUTION_ENV_PATH", value: { string_value: "$$TRITON_MODEL_DIRECTORY/custom_env.tar.gz" } }',
        f"The env must use Python {mm} and {numpy_requirement(release)}; check it with:",
        f"  triton-textops env check custom_env.tar.gz --stub {stub}",
        f"The stub must come from the same release as the server's libtriton_python.so ({release.branch}).",
    ])


