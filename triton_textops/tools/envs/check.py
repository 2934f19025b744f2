"""`env check`: an env against a stub and/or a release; each finding says what to fix."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.envs.inspect import (
    env_python_versions,
    find_build_paths,
    glibcxx_versions,
    open_env,
    probe_env,
    pyvenv_cfg,
    stub_glibcxx,
)
from triton_textops.tools.envs.spec import ARCHIVE_CHECK_FIRST_RELEASE, BACKEND_MODULES, required_glibcxx
from triton_textops.tools.stub.elf import inspect_stub
from triton_textops.tools.stub.releases import (
    NUMPY2_FIRST_RELEASE,
    Release,
    default_python_for,
    numpy_requirement,
)


@dataclass(frozen=True)
class Finding:
    """One result line: level ok / warn / fail, what was found, and how to fix it."""

    level: str
    what: str
    fix: str = ""

    def render(self) -> str:
        tag = {"ok": "[ok]  ", "warn": "[warn]", "fail": "[FAIL]"}[self.level]
        return f"{tag} {self.what}" + (f"\n       fix: {self.fix}" if self.fix and self.level != "ok" else "")


@dataclass
class EnvReport:
    """All findings for one environment."""

    source: str
    root: Path
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.level != "fail" for f in self.findings)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "fail"]

    def add(self, level: str, what: str, fix: str = "") -> None:
        self.findings.append(Finding(level, what, fix))

    def render(self) -> str:
        lines = [f"env: {self.source}" + (f" (extracted to {self.root})" if str(self.root) != self.source else "")]
        lines += [f.render() for f in self.findings]
        n = len(self.failures)
        lines.append("result: OK" if not n else f"result: {n} problem{'s' if n > 1 else ''}")
        return "\n".join(lines)

def check_env(
    env: str | os.PathLike[str],
    *,
    stub: str | os.PathLike[str] | None = None,
    release: Release | None = None,
    backends: Sequence[str] = ("numpy",),
    build_prefixes: Sequence[str] = (),
    run: bool = True,
    stub_python: str | None = None,
) -> EnvReport:
    """Check an env (directory or tarball) against a stub and/or a Triton release; see the module docstring.

    ``stub_python`` (no ``stub``): the env is meant for a custom stub of that Python, still to be built (what
    ``env pack --python 3.11`` for 24.10 asks for): the env is compared with it, and the stock stub's other
    Python is a warning with the build command instead of a failure."""
    unknown = [b for b in backends if b not in BACKEND_MODULES]
    if unknown:
        raise InputError(f"unknown backend(s) {unknown}; choose from {sorted(BACKEND_MODULES)}")
    with open_env(env) as (root, archive_problems):
        rep = EnvReport(str(env), root)
        _check(rep, root, archive_problems, stub, release, backends, build_prefixes, run, stub_python)
        return rep


def _check(rep: EnvReport, root: Path, archive_problems: list[str], stub: str | os.PathLike[str] | None,
           release: Release | None, backends: Sequence[str], build_prefixes: Sequence[str], run: bool,
           stub_python: str | None = None) -> None:
    fix_pack = ("pack the env with conda-pack (`conda pack -p ENV -o custom_env.tar.gz`) or venv-pack "
                "(`venv-pack -p ENV -o custom_env.tar.gz`), or use `triton-textops env pack`")
    # archive layout
    if archive_problems:
        level = "fail" if release and release >= ARCHIVE_CHECK_FIRST_RELEASE else "warn"
        shown = "; ".join(archive_problems[:3]) + (" ..." if len(archive_problems) > 3 else "")
        rep.add(level, f"archive entries python_backend r{ARCHIVE_CHECK_FIRST_RELEASE}+ rejects: {shown}",
                "use conda-pack (bundles the interpreter) or a directory env instead of a venv-pack tarball")
    # bin/activate
    if (root / "bin" / "activate").is_file():
        rep.add("ok", "bin/activate present")
    else:
        nested = [d.name for d in root.iterdir() if (d / "bin" / "activate").is_file()] if root.is_dir() else []
        hint = (f"the archive has a top-level directory {nested[0]}/; pack the env's contents at the root"
                if nested else fix_pack)
        rep.add("fail", "bin/activate missing (python_backend: 'The Python environment should contain an "
                "'activate' script.')", hint)
    # Python version
    versions = env_python_versions(root)
    env_py = versions[0] if len(versions) == 1 else None
    if not versions:
        rep.add("fail", "no lib/python3.X in the env: not a Python environment", fix_pack)
    elif len(versions) > 1:
        rep.add("fail", f"several Pythons in the env: {', '.join(versions)}", "build the env with one Python")
    stub_py = None
    stub_path = Path(stub) if stub else None
    if stub_path:
        info = inspect_stub(stub_path)
        stub_py = info.python_version
        if stub_py is None:
            rep.add("fail", f"{stub_path} links no libpython; cannot tell its Python", "pass --triton instead")
    elif stub_python:
        stub_py = stub_python
        stock = default_python_for(release) if release else None
        if stock and stock != stub_python:
            rep.add("warn", f"Python {stub_python} asked for: the stock stub of tritonserver:{release}-py3 embeds "
                    f"Python {stock}, so this env needs a custom stub built for Python {stub_python}",
                    f"triton-textops stub build --triton {release} --python {stub_python}; then "
                    f"triton-textops env check ENV --stub STUB --triton {release}")
    elif release:
        stub_py = default_python_for(release)
    where = (f"stub {stub_path}" if stub_path else f"custom stub it needs (Python {stub_python})" if stub_python
             else (f"stock stub of tritonserver:{release}-py3" if release else ""))
    if env_py and stub_py:
        if env_py == stub_py:
            rep.add("ok", f"Python {env_py} in the env = Python of the {where}")
        else:
            rel = release or "<YY.MM>"
            rep.add("fail", f"the env has Python {env_py}, the {where} embeds Python {stub_py}",
                    f"build a matching stub: triton-textops stub build --triton {rel} --python {env_py}; "
                    f"or rebuild the env with Python {stub_py}")
    elif env_py:
        rep.add("warn", f"Python {env_py} in the env; no --stub/--triton given, so not compared with the stub")
    cfg = pyvenv_cfg(root)
    if cfg.get("home"):
        rep.add("warn", f"venv: bin/python3 links to the interpreter in {cfg['home']} (not packed); the server "
                f"needs Python {cfg.get('version', cfg.get('version_info', env_py))} at that same path, with its "
                "shared libpython", "to avoid this, use conda + conda-pack, which bundle the interpreter")
    # absolute build-machine paths
    hits = find_build_paths(root, build_prefixes)
    if hits:
        shown = "; ".join(hits[:4]) + (f" (+{len(hits) - 4} more)" if len(hits) > 4 else "")
        rep.add("fail", f"absolute paths of the build machine left in the env: {shown}",
                fix_pack + "; install packages without -e (editable installs point back to the source tree)")
    else:
        rep.add("ok", "no build-machine absolute paths in bin/ scripts, activate or *.pth files")
    # libstdc++ (conda envs ship one; the env's lib/ comes first on LD_LIBRARY_PATH)
    libstd = root / "lib" / "libstdc++.so.6"
    if libstd.exists():
        need = stub_glibcxx(stub_path) if stub_path else None
        need = need or (required_glibcxx(release) if release else None)
        have = glibcxx_versions(libstd.resolve()) if libstd.resolve().is_file() else []
        if need and have and max(have) < tuple(need):
            n = ".".join(map(str, need))
            pin = "13" if tuple(need) >= (3, 4, 32) else "12"
            rep.add("fail", f"lib/libstdc++.so.6 provides up to GLIBCXX_{'.'.join(map(str, max(have)))}, "
                    f"the server needs GLIBCXX_{n}", f"conda install -c conda-forge libstdcxx-ng={pin}")
        elif need and have:
            rep.add("ok", f"lib/libstdc++.so.6 provides GLIBCXX_{'.'.join(map(str, max(have)))}")
    # run it
    modules = ["numpy", "triton_textops", *(BACKEND_MODULES[b] for b in backends if b != "numpy")]
    probe = None
    if run and (root / "bin" / "activate").is_file():
        try:
            probe = probe_env(root, modules)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            rep.add("fail", f"`source bin/activate && python3` does not run here: {exc}",
                    f"the interpreter must exist: venv -> Python at {cfg.get('home', '?')}; conda-pack -> "
                    "bin/python3 inside the env")
    if probe:
        pref = os.path.realpath(probe["prefix"])
        if pref != os.path.realpath(root):
            rep.add("fail", f"after `source bin/activate` Python uses {probe['prefix']}, not this env: the env is "
                    "not relocatable (activate hard-codes its original path)", fix_pack)
        else:
            rep.add("ok", f"activates in place: sys.prefix = the env (Python {probe['version']})")
        mods = probe["modules"]
    else:
        mods = {}
    _check_numpy(rep, root, mods.get("numpy"), release, stub_path is not None, run and probe is not None)
    for name in modules[1:]:
        res = mods.get(name)
        if res is None:  # the env was not run: look at site-packages only
            if _static_has(root, name):
                rep.add("warn", f"{name} is installed (import not tried: the env was not run here)")
            else:
                rep.add("fail", f"{name} is not installed in the env", _fix_install(name))
            continue
        if res["ok"]:
            outside = not os.path.realpath(res["file"]).startswith(os.path.realpath(root))
            if outside:
                rep.add("fail", f"{name} is imported from {res['file']}, outside the env", _fix_install(name))
            else:
                rep.add("ok", f"import {name} {res['version']}".rstrip())
        else:
            rep.add("fail", f"import {name} failed: {res['error']}", _fix_install(name))


def _fix_install(module: str) -> str:
    return {
        "triton_textops": "install it into the env: ENV/bin/python -m pip install /path/to/triton-textops "
                          "(not -e), then pack again",
        "cupy": "pip install cupy-cuda12x (or conda install -c conda-forge cupy cuda-version=12) into the env",
        "cudf": "pip install cudf-cu12 --extra-index-url=https://pypi.nvidia.com (or conda install -c rapidsai cudf); "
                "cudf needs a GPU at import time",
        "numpy": "install numpy into the env",
    }.get(module, f"install {module} into the env")


def _static_has(root: Path, dist: str) -> bool:
    return any(root.glob(f"lib/python3.*/site-packages/{dist}")) or any(
        root.glob(f"lib/python3.*/site-packages/{dist}-*.dist-info"))


def _static_numpy_version(root: Path) -> str | None:
    for d in root.glob("lib/python3.*/site-packages/numpy-*.dist-info"):
        return d.name[len("numpy-"):-len(".dist-info")]
    return None


def _check_numpy(rep: EnvReport, root: Path, res: dict | None, release: Release | None, has_stub: bool,
                 ran: bool) -> None:
    version = None
    if res is not None:
        if not res["ok"]:
            rep.add("fail", f"import numpy failed: {res['error']} (the stub imports numpy at start)",
                    _fix_install("numpy") + (f" ({_numpy_pin(release)})" if release else ""))
            return
        version = res["version"]
    elif not ran:
        version = _static_numpy_version(root)
    if version is None:
        if not ran:
            rep.add("fail", "numpy is not installed in the env (the stub imports numpy at start)",
                    f"pip install '{_numpy_pin(release)}' into the env" if release else _fix_install("numpy"))
        return
    major = int(version.split(".")[0])
    if release is None:
        level = "warn" if major >= 2 else "ok"
        rep.add(level, f"numpy {version}" + (": fine only with stubs from r24.11 on; pass --triton to check"
                                             if major >= 2 else ""))
    elif major >= 2 and release < NUMPY2_FIRST_RELEASE:
        rep.add("fail", f"numpy {version} with a stub of {release}: stubs before r{NUMPY2_FIRST_RELEASE} use "
                "pybind11 2.10 and break with numpy 2 (garbage as_numpy(), aborts on BYTES inputs)",
                f"pip install '{_numpy_pin(release)}' into the env")
    else:
        rep.add("ok", f"numpy {version} (compatible with {release}: {_numpy_pin(release)})")


def _numpy_pin(release: Release | None) -> str:
    return numpy_requirement(release) if release else "numpy"


