"""`triton-textops env pack|check|spec`: the execution environment a python model runs in (EXECUTION_ENV_PATH).

Why: a model that needs cupy/cudf/triton-textops in a Python other than the container's runs with
`EXECUTION_ENV_PATH` pointing at a packed environment. What goes wrong in practice: the env's Python minor differs
from the stub's, numpy 2 with a stub built before r24.11, no `bin/activate`, build-machine absolute paths left in
the env (plain tar of a venv, editable installs), an old `libstdc++` in a conda env (GLIBCXX_3.4.30/32 not found).
`pack` builds the env (conda + conda-pack when conda exists, else venv + venv-pack) and `check` verifies all of the
above on a tarball or a directory. `envs/pack_env.sh` is a thin wrapper around `pack`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.stub import (
    NUMPY2_FIRST_RELEASE,
    Release,
    default_python_for,
    detect_release,
    find_python,
    inspect_stub,
    numpy_requirement,
    resolve_release,
)

ARCHIVE_CHECK_FIRST_RELEASE = Release(26, 6)  # PB #437: entries with '..', absolute paths, symlink escapes rejected
BACKEND_MODULES = {"numpy": "numpy", "cupy": "cupy", "cudf": "cudf"}
GPU_PIP = ["cupy-cuda12x>=13"]
CUDF_PIP = ["cudf-cu12>=25.10"]
_REPO_ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------------------------------
# Specifications (envs/*.yml, envs/*.txt are generated from these; tests/envs checks they match)
# --------------------------------------------------------------------------------------------------


def libstdcxx_requirement(release: Release) -> str | None:
    """conda `libstdcxx-ng` pin so the env's lib/ (first on LD_LIBRARY_PATH) is not older than the container's.

    Ubuntu 24.04 containers (24.11+) need GLIBCXX_3.4.32 (gcc 13, server#7913), Ubuntu 22.04 ones (23.05-24.10)
    GLIBCXX_3.4.30 (gcc 12, server#5933); older containers are satisfied by any current conda-forge build.
    """
    if release >= NUMPY2_FIRST_RELEASE:
        return "libstdcxx-ng>=13"
    if release >= Release(23, 5):
        return "libstdcxx-ng>=12"
    return None


def required_glibcxx(release: Release) -> tuple[int, int, int] | None:
    """Newest GLIBCXX symbol version the container's own binaries may need from a libstdc++ in the env."""
    if release >= NUMPY2_FIRST_RELEASE:
        return (3, 4, 32)
    if release >= Release(23, 5):
        return (3, 4, 30)
    return None


def pip_requirements(kind: str, release: Release, *, cudf: bool = False) -> list[str]:
    """Third-party requirements of the env (triton-textops itself is installed separately)."""
    if kind not in ("cpu", "gpu"):
        raise InputError(f"--kind must be cpu or gpu, not {kind!r}")
    reqs = [numpy_requirement(release)]
    if kind == "gpu":
        reqs += GPU_PIP + (CUDF_PIP if cudf else [])
    return reqs


def _name(requirement: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else requirement


def package_dependencies(kind: str = "cpu") -> list[str]:
    """triton-textops's own runtime requirements (its metadata; the checkout's pyproject.toml when not installed),
    plus the ``gpu`` extra's for ``kind="gpu"``, numpy left out (the env pins it for the stub). ``pack`` installs
    triton-textops with ``--no-deps`` (a checkout or wheel path), so these go in explicitly."""
    try:
        declared = metadata.requires("triton-textops") or []
    except metadata.PackageNotFoundError:
        import tomllib  # noqa: PLC0415

        project = tomllib.loads((_REPO_ROOT / "pyproject.toml").read_text())["project"]
        declared = list(project.get("dependencies", []))
        declared += [f'{r}; extra == "gpu"' for r in project.get("optional-dependencies", {}).get("gpu", [])]
    out = []
    for req in declared:
        spec, _, marker = req.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if (extra is None or (kind == "gpu" and extra.group(1) == "gpu")) and _name(spec) != "numpy":
            out.append(spec.strip())
    return out


def render_spec(fmt: str, kind: str, release: Release, python: str, *, cudf: bool = False) -> str:
    """Text of a conda environment.yml (`fmt="conda"`) or a pip requirements.txt (`fmt="pip"`)."""
    cmd = f"triton-textops env spec --format {fmt} --kind {kind} --triton {release} --python {python}"
    head = [
        f"# Execution environment ({kind.upper()}) for Triton {release} python models with a Python {python} stub.",
        f"# Generated by: {cmd}",
        f"# numpy pin: {numpy_requirement(release)} (stubs before r{NUMPY2_FIRST_RELEASE} are built with pybind11 2.10,"
        " which breaks with numpy 2).",
        "# Build and pack it with envs/pack_env.sh (installs triton-textops from this checkout).",
    ]
    reqs = pip_requirements(kind, release, cudf=False)
    if fmt == "pip":
        lines = head + [f"# Needs Python {python} (the stub's). venv + venv-pack: same Python at the same path on "
                        "the server.", *reqs, "triton-textops"]
        if kind == "gpu":
            lines.append(f"# optional: {CUDF_PIP[0]}")
        return "\n".join(lines) + "\n"
    if fmt != "conda":
        raise InputError(f"--format must be conda or pip, not {fmt!r}")
    conda = [f"python={python}", *(r for r in reqs if not r.startswith("cupy"))]
    std = libstdcxx_requirement(release)
    if std:
        conda.append(std)
    if kind == "gpu":
        conda += ["cuda-version=12", "cupy>=13"]
    lines = head + [f"name: triton-textops-{kind}", "channels:", "  - conda-forge"]
    if kind == "gpu":
        lines.insert(len(head) + 1, "# optional cudf: add the rapidsai channel and `cudf=25.10`")
    lines += ["dependencies:", *(f"  - {d}" for d in conda), "  - pip", "  - pip:", "      - triton-textops"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------------


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


def _archive_problems(tar: tarfile.TarFile) -> list[str]:
    """Entries python_backend r26.06+ refuses: absolute paths, '..', symlinks escaping the env."""
    bad = []
    for m in tar.getmembers():
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts:
            bad.append(f"{m.name} (path escapes the env)")
        elif m.issym() or m.islnk():
            target = m.linkname
            if target.startswith("/") or ".." in Path(os.path.normpath(os.path.join(os.path.dirname(m.name), target))).parts:
                bad.append(f"{m.name} -> {target} (link escapes the env)")
    return bad


@contextmanager
def open_env(path: str | os.PathLike[str]) -> Iterator[tuple[Path, list[str]]]:
    """Yield (env root, archive problems); a tarball is extracted into a temporary directory like Triton does."""
    p = Path(path)
    if p.is_dir():
        yield p.absolute(), []
        return
    if not p.is_file():
        raise InputError(f"{p}: no such environment (a directory or a .tar.gz)")
    try:
        tar = tarfile.open(p, "r:*")
    except tarfile.TarError as exc:
        raise InputError(f"{p}: not a tar archive ({exc}); Triton extracts gzip+tar archives only") from exc
    with tar, tempfile.TemporaryDirectory(prefix="python_env_") as tmp:
        problems = _archive_problems(tar)
        safe = [m for m in tar.getmembers() if not (m.name.startswith("/") or ".." in Path(m.name).parts)]
        if sys.version_info >= (3, 12) or hasattr(tarfile, "tar_filter"):
            tar.extractall(tmp, members=safe, filter="tar")  # keeps absolute symlinks (the venv interpreter)
        else:  # pragma: no cover - Pythons without extraction filters
            tar.extractall(tmp, members=safe)
        yield Path(tmp), problems


def _env_python_versions(root: Path) -> list[str]:
    return sorted(d.name[len("python"):] for d in (root / "lib").glob("python3.*") if d.is_dir())


def _pyvenv_cfg(root: Path) -> dict[str, str]:
    cfg = root / "pyvenv.cfg"
    out: dict[str, str] = {}
    if cfg.is_file():
        for line in cfg.read_text(errors="replace").splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


_PROBE = r"""
import importlib, json, sys
out = {"version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix, "executable": sys.executable,
       "modules": {}}
for name in sys.argv[1:]:
    try:
        mod = importlib.import_module(name)
        out["modules"][name] = {"ok": True, "version": str(getattr(mod, "__version__", "")),
                                "file": str(getattr(mod, "__file__", ""))}
    except BaseException as exc:
        out["modules"][name] = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
print("@@PROBE@@" + json.dumps(out))
"""


def probe_env(root: Path, modules: Sequence[str], timeout: float = 300) -> dict:
    """Activate the env like python_backend <= r25.07 (`source bin/activate`) and import `modules` in isolated mode.

    Raises RuntimeError with the output when the interpreter cannot run.
    """
    script = 'source "$1/bin/activate" && shift && exec python3 -I -c "$@"'
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    res = subprocess.run(["bash", "-c", script, "_", str(root), _PROBE, *modules], capture_output=True, text=True,
                         timeout=timeout, env=env, cwd=str(root))
    for line in res.stdout.splitlines():
        if line.startswith("@@PROBE@@"):
            return json.loads(line[len("@@PROBE@@"):])
    raise RuntimeError((res.stdout + res.stderr).strip()[-800:] or f"exit status {res.returncode}")


def _is_text(path: Path, limit: int = 1 << 20) -> bool:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > limit:
            return False
        with open(path, "rb") as fh:
            return b"\0" not in fh.read(4096)
    except OSError:
        return False


def _detect_build_prefixes(root: Path) -> list[str]:
    """Where the env was created, from pyvenv.cfg's `command` and a literal VIRTUAL_ENV= in bin/activate."""
    out = []
    m = re.search(r"-m\s+venv\s+(?:--?\S+\s+)*(/\S+)", _pyvenv_cfg(root).get("command", ""))
    if m:
        out.append(m.group(1).rstrip("/"))
    act = root / "bin" / "activate"
    if act.is_file():
        for m in re.finditer(r"""^\s*(?:export\s+)?VIRTUAL_ENV=["']?(/[^"'\s]+)""", act.read_text(errors="replace"),
                             re.M):
            out.append(m.group(1).rstrip("/"))
    return [p for p in dict.fromkeys(out) if os.path.realpath(p) != os.path.realpath(root)]


def find_build_paths(root: Path, extra_prefixes: Sequence[str] = ()) -> list[str]:
    """Build-machine absolute paths that would be used on the server: in bin/ scripts and activate, in *.pth /
    editable-install files of site-packages. pyvenv.cfg (informational) and .pyc files are not searched."""
    prefixes = [p.rstrip("/") for p in (*extra_prefixes, *_detect_build_prefixes(root)) if p]
    hits: list[str] = []
    bindir = root / "bin"
    if bindir.is_dir():
        for f in sorted(bindir.iterdir()):
            if not _is_text(f):
                continue
            text = f.read_text(errors="replace")
            first = text.splitlines()[0] if text else ""
            for pref in prefixes:
                if pref in text:
                    hits.append(f"bin/{f.name} contains {pref}")
                    break
            else:
                m = re.match(r"#!\s*(/\S+)", first)
                if m and re.search(r"/bin/python[\d.]*$", m.group(1)) and not m.group(1).startswith(
                        (str(root), "/usr/bin/", "/bin/")):
                    hits.append(f"bin/{f.name} has shebang {m.group(1)}")
    for sp in root.glob("lib/python3.*/site-packages"):
        for f in sorted(sp.iterdir()):
            name = f.name
            if not (name.endswith((".pth", ".egg-link")) or name.startswith("__editable__")) or not _is_text(f):
                continue
            for line in f.read_text(errors="replace").splitlines():
                for path in re.findall(r"(?<![\w.])(/[\w./-]+)", line):
                    if not path.startswith(str(root)) and (
                        any(path.startswith(p) for p in prefixes) or Path(path).is_absolute()
                    ):
                        hits.append(f"{sp.relative_to(root)}/{name} refers to {path}")
                        break
        for du in sp.glob("*.dist-info/direct_url.json"):
            try:
                data = json.loads(du.read_text())
            except ValueError:
                continue
            if data.get("dir_info", {}).get("editable"):
                hits.append(f"{du.parent.name} is an editable install of {data.get('url')}")
    return list(dict.fromkeys(hits))


def _glibcxx_versions(lib: Path) -> list[tuple[int, ...]]:
    data = lib.read_bytes()
    return sorted({tuple(int(x) for x in m.split(b".")) for m in re.findall(rb"GLIBCXX_(\d+\.\d+(?:\.\d+)?)", data)})


def _stub_glibcxx(stub: Path) -> tuple[int, ...] | None:
    exe = shutil.which("readelf")
    if not exe:
        return None
    out = subprocess.run([exe, "-V", "--wide", str(stub)], capture_output=True, text=True, timeout=60).stdout
    vers = [tuple(int(x) for x in v.split(".")) for v in re.findall(r"Name: GLIBCXX_(\d+\.\d+(?:\.\d+)?)", out)]
    return max(vers) if vers else None


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
    versions = _env_python_versions(root)
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
    cfg = _pyvenv_cfg(root)
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
        need = _stub_glibcxx(stub_path) if stub_path else None
        need = need or (required_glibcxx(release) if release else None)
        have = _glibcxx_versions(libstd.resolve()) if libstd.resolve().is_file() else []
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


# --------------------------------------------------------------------------------------------------
# pack
# --------------------------------------------------------------------------------------------------


@dataclass
class PackPlan:
    """The commands `pack` runs, and what it means for the server."""

    tool: str  # conda | venv
    prefix: Path  # where the env is built
    output: Path
    as_dir: bool
    commands: list[list[str]]
    implications: list[str]
    release: Release
    python_version: str
    backends: tuple[str, ...]
    work_dir: Path | None = None  # removed after packing (only when we created it)
    textops_wheel: Path | None = None  # written from the installed distribution before the commands run

    def render(self) -> str:
        lines = [f"tool: {self.tool}; env built at {self.prefix}; output {self.output}"
                 + (" (directory)" if self.as_dir else ""), "commands:"]
        if self.textops_wheel is not None:
            dist = installed_distribution()
            lines.append(f"  (write {self.textops_wheel} from the installed triton-textops {dist.version} in "
                         f"{dist.locate_file('')}: its own files, no package index)")
        lines += ["  " + shlex.join(c) for c in self.commands]
        if self.as_dir:
            lines.append(f"  extract the archive into {self.output}")
        lines += ["what this implies:", *(f"  - {i}" for i in self.implications)]
        return "\n".join(lines)


def default_textops_source() -> str | None:
    """This checkout when triton_textops runs from one (a source tree or an editable install), else None: the
    installed distribution, which :func:`make_pack_plan` repacks as a wheel (:func:`wheel_from_installed`)."""
    if (_REPO_ROOT / "pyproject.toml").is_file() and (_REPO_ROOT / "triton_textops").is_dir():
        return str(_REPO_ROOT)
    return None


# dist-info files pip writes at install time (a wheel must not carry them; RECORD is written anew)
_INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def installed_distribution() -> metadata.Distribution:
    """The installed triton-textops distribution whose files are the running ``triton_textops`` package.

    Raises InputError when there is none (e.g. the package is imported from a copied tree): then give
    ``--textops`` a path or wheel."""
    import triton_textops  # noqa: PLC0415

    here = Path(triton_textops.__file__).resolve()
    try:
        dist = metadata.distribution("triton-textops")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is None or not dist.files or Path(str(dist.locate_file("triton_textops/__init__.py"))).resolve() != here:
        raise InputError(f"triton_textops is imported from {here.parent}, which is neither a source checkout nor "
                         "an installed triton-textops distribution: give --textops PATH_OR_WHEEL")
    return dist


def _wheel_name(dist: metadata.Distribution) -> str:
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    return f"{name}-{dist.version.replace('-', '_')}-{tags[0] if tags else 'py3-none-any'}.whl"


def _record_hash(data: bytes) -> str:
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415

    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_from_installed(dest_dir: str | os.PathLike[str]) -> Path:
    """Write a wheel of the installed triton-textops (:func:`installed_distribution`) into ``dest_dir``.

    Why: a pip user's package has no source tree and may be on no index (a wheel built in-house, a pre-release),
    so ``env pack`` installs exactly the installed version from its own files, offline. The wheel holds the
    files the install's RECORD lists inside site-packages (no ``__pycache__``, no console scripts: pip makes them
    again from ``entry_points.txt``) and a new RECORD with their hashes."""
    import zipfile  # noqa: PLC0415

    dist = installed_distribution()
    base = Path(str(dist.locate_file("")))
    info_dir = next((str(f).split("/", 1)[0] for f in dist.files or () if str(f).split("/", 1)[0].endswith(
        ".dist-info")), None)
    if info_dir is None:
        raise InputError(f"the installed triton-textops in {base} has no .dist-info: give --textops PATH_OR_WHEEL")
    files = []
    for f in dist.files or ():
        rel = str(f).replace(os.sep, "/")
        parts = rel.split("/")
        if rel.startswith("../") or "__pycache__" in parts or rel.endswith((".pyc", ".pyo")):
            continue
        if parts[0] == info_dir and parts[-1] in _INSTALL_ONLY:
            continue
        if (base / rel).is_file():
            files.append(rel)
    if f"{info_dir}/METADATA" not in files:
        raise InputError(f"{base / info_dir}: no METADATA; cannot rebuild a wheel of the installed triton-textops")
    files.sort(key=lambda r: (r.startswith(info_dir + "/"), r))  # package files first, dist-info last
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / _wheel_name(dist)
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in files:
            data = (base / rel).read_bytes()
            zf.writestr(rel, data)
            record.append(f"{rel},{_record_hash(data)},{len(data)}")
        record.append(f"{info_dir}/RECORD,,")
        zf.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return out


def _venv_pack_cmd() -> list[str] | None:
    try:
        import venv_pack  # noqa: F401
    except ImportError:
        exe = shutil.which("venv-pack")
        return [exe] if exe else None
    return [sys.executable, "-m", "venv_pack"]


def _conda_pack_cmd(conda: str) -> list[str] | None:
    exe = shutil.which("conda-pack")
    if exe:
        return [exe]
    try:
        import conda_pack  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "conda_pack"]


def _outer_pip_supports_python() -> bool:
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.match(r"pip (\d+)\.(\d+)", out.stdout)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (22, 3)


def make_pack_plan(
    *,
    kind: str = "cpu",
    release: Release,
    python: str | None = None,
    output: str | os.PathLike[str] = "custom_env.tar.gz",
    as_dir: bool = False,
    tool: str = "auto",
    textops: str | None = None,
    cudf: bool = False,
    extra: Sequence[str] = (),
    pip_args: Sequence[str] = (),
    work_dir: str | os.PathLike[str] | None = None,
) -> PackPlan:
    """Decide conda vs venv and list the commands. `python` is a version or interpreter path (venv) / version (conda)."""
    conda = shutil.which("conda") or shutil.which("mamba")
    if tool == "auto":
        tool = "conda" if conda else "venv"
    if tool not in ("conda", "venv"):
        raise InputError(f"--tool must be auto, conda or venv, not {tool!r}")
    reqs = pip_requirements(kind, release, cudf=cudf)
    have = {_name(r) for r in reqs}
    reqs += [r for r in package_dependencies(kind) if _name(r) not in have] + list(extra)
    textops = textops or default_textops_source()
    wheel_name = _wheel_name(installed_distribution()) if textops is None else None
    temp_work = None if work_dir else Path(tempfile.mkdtemp(prefix="textops-env-"))
    work = Path(work_dir) if work_dir else temp_work
    textops_wheel = None
    if wheel_name is not None:  # a pip user's install: pack that version from its own files, no index
        textops_wheel = (work / "wheels" / wheel_name).absolute()
        textops = str(textops_wheel)
    prefix = (work / "env").absolute()
    out = Path(output).absolute()
    archive = (work / "custom_env.tar.gz").absolute() if as_dir else out
    backends = ("numpy", "cupy", "cudf") if (kind == "gpu" and cudf) else (("numpy", "cupy") if kind == "gpu"
                                                                           else ("numpy",))
    implications = [
        f"in config.pbtxt: parameters: {{ key: \"EXECUTION_ENV_PATH\", value: {{ string_value: "
        f"\"$$TRITON_MODEL_DIRECTORY/{out.name}\" }} }} with the env inside the model directory",
    ]
    if tool == "conda":
        if not conda:
            raise InputError("--tool conda: conda not found on PATH (install miniforge, or use --tool venv)")
        py_version = python if python and re.fullmatch(r"\d+\.\d+(\.\d+)?", python) else None
        if python and not py_version:
            raise InputError("with conda, --python is a version such as 3.11")
        py_version = py_version or default_python_for(release)
        cp = _conda_pack_cmd(conda)
        if cp is None:
            raise InputError("conda-pack not found: conda install -c conda-forge conda-pack")
        spec = work / "environment.yml"
        commands = [
            [conda, "env", "create", "-p", str(prefix), "-f", str(spec)],
            [conda, "run", "-p", str(prefix), "python", "-m", "pip", "install", *pip_args, *reqs[1:]] if len(reqs) > 1
            else [],
            [conda, "run", "-p", str(prefix), "python", "-m", "pip", "install", "--no-deps", *pip_args, textops],
            [*cp, "-p", str(prefix), "-o", str(archive), "--force"],
        ]
        commands = [c for c in commands if c]
        implications += [
            "conda-pack bundles the interpreter and its shared libpython: the server needs no matching Python, only "
            f"a stub built for Python {py_version} (the stock stub if that is the container's Python)",
            "conda-unpack is never run by Triton: prefix-dependent text files keep the build prefix",
        ]
        return PackPlan("conda", prefix, out, as_dir, commands, implications, release, py_version, backends, temp_work,
                        textops_wheel)
    info = find_python(python or default_python_for(release))
    pip_env = [sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python")]
    if _outer_pip_supports_python():
        commands = [[info.executable, "-m", "venv", "--without-pip", str(prefix)]]
        pip = pip_env
    else:
        commands = [[info.executable, "-m", "venv", str(prefix)]]
        pip = [str(prefix / "bin" / "python"), "-m", "pip"]
    vp = _venv_pack_cmd()
    if vp is None:
        raise InputError("venv-pack not found: pip install 'triton-textops[pack]' (or venv-pack, into the Python "
                         "running triton-textops)")
    commands += [  # (pip compiles the bytecode: without it every server start imports numba from source, ~1 s more
        # per model load here: the env is extracted anew and the stub's Python may not write __pycache__)
        [*pip, "install", *pip_args, *reqs],
        [*pip, "install", "--no-deps", *pip_args, textops],
        [*vp, "-p", str(prefix), "-o", str(archive), "--force"],
    ]
    implications += [
        f"venv-pack does not pack the interpreter: bin/python3 is a symlink to {Path(info.executable).parent}; the "
        f"server must have Python {info.version} at that same path, with {info.libpython} (what a custom stub for "
        f"Python {info.major_minor} links)",
        "Triton documents only conda-pack; venv-pack's activate locates itself, so extraction under "
        "/tmp/python_env_* works (<= r25.07 sources it; >= r25.08 sets PATH/VIRTUAL_ENV itself)",
        f"build a stub for it: triton-textops stub build --triton {release} --python {info.executable}",
    ]
    return PackPlan("venv", prefix, out, as_dir, commands, implications, release, info.major_minor, backends,
                    temp_work, textops_wheel)


def pack_env(plan: PackPlan, *, log: Callable[[str], None] = print) -> Path:
    """Run the plan; returns the tarball or directory."""
    plan.prefix.parent.mkdir(parents=True, exist_ok=True)
    if plan.tool == "conda":
        py = plan.python_version
        spec = plan.commands[0][plan.commands[0].index("-f") + 1]
        conda_deps = [f"python={py}", numpy_requirement(plan.release), "pip"]
        std = libstdcxx_requirement(plan.release)
        if std:
            conda_deps.append(std)
        Path(spec).write_text("channels:\n  - conda-forge\ndependencies:\n"
                              + "".join(f"  - {d}\n" for d in conda_deps))
    try:
        if plan.textops_wheel is not None:
            built = wheel_from_installed(plan.textops_wheel.parent)
            log(f"wrote {built} from the installed triton-textops (no package index)")
        _run_pack(plan, log)
    finally:
        if plan.work_dir is not None:
            shutil.rmtree(plan.work_dir, ignore_errors=True)
    return plan.output


def _run_pack(plan: PackPlan, log: Callable[[str], None]) -> None:
    plan.output.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONNOUSERSITE="True", PIP_DISABLE_PIP_VERSION_CHECK="1")
    for cmd in plan.commands:
        log("$ " + shlex.join(cmd))
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if res.returncode != 0:
            raise RuntimeError(f"failed (exit {res.returncode}): {shlex.join(cmd)}\n"
                               + "\n".join(res.stdout.splitlines()[-30:]))
    archive = plan.commands[-1][plan.commands[-1].index("-o") + 1]
    # venv-pack and conda-pack write through a private temporary file (mode 0600): give the tarball the
    # permissions any new file gets here (0644 with the usual umask), so a server running as another user reads it
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(archive, 0o666 & ~umask)
    if plan.as_dir:
        if plan.output.exists():
            raise RuntimeError(f"{plan.output} exists; remove it first")
        plan.output.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            if sys.version_info >= (3, 12) or hasattr(tarfile, "tar_filter"):
                tar.extractall(plan.output, filter="tar")
            else:  # pragma: no cover
                tar.extractall(plan.output)
        log(f"extracted into {plan.output}")


# --------------------------------------------------------------------------------------------------
# the env a repository's python models share (repo create / example readability --pack-env)
# --------------------------------------------------------------------------------------------------

REPOSITORY_RELEASE = "24.10"  # the release of the server TritonServer runs (Triton 2.51.0)


def add_pack_env_options(p: argparse.ArgumentParser) -> None:
    """``--pack-env`` and its options, shared by ``repo create``, ``example readability`` and ``demo``."""
    p.add_argument("--pack-env", action="store_true",
                   help="pack the python models' requirements into python_env.tar.gz at the repository's top, "
                        "named by every python model's EXECUTION_ENV_PATH ($$TRITON_MODEL_DIRECTORY/../)")
    p.add_argument("--env-python", default=None,
                   help="--pack-env: the env's Python (version or interpreter; default: the one running this, "
                        "which the local server's stub matches; 3.10 for an NGC 24.10 container)")
    p.add_argument("--env-triton", default=REPOSITORY_RELEASE,
                   help=f"--pack-env: the serving Triton release (numpy pin; default {REPOSITORY_RELEASE})")
    p.add_argument("--env-tool", choices=("auto", "conda", "venv"), default="auto",
                   help="--pack-env: conda+conda-pack (auto when conda exists) or venv+venv-pack")


def pack_env_options(args: argparse.Namespace) -> dict[str, str | None] | None:
    """The ``pack_env`` options of ``create_repository`` from the parsed ``--pack-env`` flags (None: not asked)."""
    if not getattr(args, "pack_env", False):
        return None
    return {"triton": args.env_triton, "python": args.env_python, "tool": args.env_tool}


def _copy_source(src: Path, dst: Path) -> Path:
    """pip builds a local project in its tree (build/, *.egg-info): build a copy, never the caller's checkout."""
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    shutil.copytree(src / "triton_textops", dst / "triton_textops",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


def pack_repository_env(
    requirements: Sequence[str],
    output: str | os.PathLike[str],
    *,
    kind: str = "cpu",
    triton: str = REPOSITORY_RELEASE,
    python: str | None = None,
    tool: str = "auto",
    textops: str | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Pack the env every python model of a repository runs in: numpy (pinned for ``triton``), ``requirements``
    (the repository's record) and triton-textops, as a tarball at ``output``; then ``env check`` it.

    ``python`` defaults to the interpreter running this (what the local wheel server's stub is chosen for).
    Raises RuntimeError when packing or the check fails.
    """
    release = resolve_release(triton)
    conda = tool == "conda" or (tool == "auto" and bool(shutil.which("conda") or shutil.which("mamba")))
    if python is None:
        python = "{}.{}".format(*sys.version_info[:2]) if conda else getattr(sys, "_base_executable", sys.executable)
    with tempfile.TemporaryDirectory(prefix="textops-repo-env-") as tmp:
        source = textops or default_textops_source()  # None: the installed distribution (make_pack_plan)
        if source is not None and Path(source).is_dir():
            source = str(_copy_source(Path(source), Path(tmp) / "src"))
        plan = make_pack_plan(kind=kind, release=release, python=python, output=output, tool=tool, textops=source,
                              extra=list(requirements), work_dir=Path(tmp) / "work")
        log(plan.render())
        out = pack_env(plan, log=log)
    stub = None
    if plan.python_version != default_python_for(release):
        # not the stock stub's Python: fine for the server that runs here (its stub matches), which is checked
        stub = _local_stub(plan.python_version)
        log(f"note: the env has Python {plan.python_version}; tritonserver:{release}-py3 embeds Python "
            f"{default_python_for(release)} (use --env-python {default_python_for(release)} for that image)"
            + (f"; checked against the local server's stub {stub}" if stub else ""))
    rep = check_env(out, stub=stub, release=release, backends=plan.backends)
    log(rep.render())
    if not rep.ok:
        raise RuntimeError(f"the packed env {out} does not pass env check (see above)")
    return out


def _local_stub(python_version: str) -> Path | None:
    """The stub the local server (:func:`triton_textops.tools.server.find_server`) runs for ``python_version``."""
    from triton_textops.tools.server import TritonServerError, find_server  # noqa: PLC0415

    try:
        install = find_server()
    except TritonServerError:
        return None
    if install.stubs is not None:
        stub = install.stubs / python_version / "triton_python_backend_stub"
    else:
        stub = install.backends / "python" / "triton_python_backend_stub"
    return stub if stub.is_file() else None


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`triton-textops env pack|check|spec`."""
    p = sub.add_parser("env", help="pack or check a Python execution environment for EXECUTION_ENV_PATH")
    esub = p.add_subparsers(dest="env_command", required=True)

    k = esub.add_parser("pack", help="build an env (conda+conda-pack, else venv+venv-pack) -> custom_env.tar.gz")
    k.add_argument("--kind", choices=("cpu", "gpu"), default="cpu", help="gpu adds cupy (and --with-cudf cudf)")
    k.add_argument("--with-cudf", action="store_true", help="gpu: also install cudf-cu12")
    k.add_argument("--triton", help="target release (24.10) or server version; default $NVIDIA_TRITON_SERVER_VERSION")
    k.add_argument("--stub", help="custom stub: its Python becomes the env's Python; checked against the result")
    k.add_argument("--python", help="env Python (version or interpreter path); default: the stub's / container's")
    k.add_argument("--output", "-o", default="custom_env.tar.gz", help="tarball (default custom_env.tar.gz)")
    k.add_argument("--dir", dest="as_dir", action="store_true", help="write a directory env at --output instead")
    k.add_argument("--tool", choices=("auto", "conda", "venv"), default="auto",
                   help="conda + conda-pack, or venv + venv-pack (default auto: conda when it is on PATH)")
    k.add_argument("--textops", help="pip requirement, path or wheel for triton-textops (default: this checkout "
                   "when running from one, else a wheel written from the installed package: no index)")
    k.add_argument("--extra", action="append", default=[], help="more pip requirements (repeatable)")
    k.add_argument("--pip-arg", action="append", default=[], help="extra pip argument (repeatable), e.g. --no-index")
    k.add_argument("--work-dir", help="where the env is built before packing (default: a temp dir)")
    k.add_argument("--dry-run", action="store_true", help="print the commands, do nothing")
    k.add_argument("--no-check", action="store_true", help="skip `env check` on the result")
    k.set_defaults(func=run_pack)

    c = esub.add_parser("check", help="check an env (tarball or directory) against a stub / Triton release")
    c.add_argument("env", help="the env: a .tar.gz (as EXECUTION_ENV_PATH names it) or a directory")
    c.add_argument("--stub", help="the stub that will run it (Python read from its DT_NEEDED libpython)")
    c.add_argument("--triton", help="server release (24.10) or version (2.51.0): stock-stub Python and numpy bound")
    c.add_argument("--backend", action="append", choices=sorted(BACKEND_MODULES), default=None,
                   help="array libraries that must import (repeatable; default numpy)")
    c.add_argument("--build-prefix", action="append", default=[], help="path of the env on the build machine")
    c.set_defaults(func=run_check)

    s = esub.add_parser("spec", help="print a conda environment.yml or pip requirements.txt for a target")
    s.add_argument("--format", choices=("conda", "pip"), default="conda",
                   help="conda environment.yml or pip requirements.txt (default conda)")
    s.add_argument("--kind", choices=("cpu", "gpu"), default="cpu", help="gpu adds cupy (default cpu)")
    s.add_argument("--triton", required=True, help="the serving Triton release, e.g. 24.10 (numpy and libstdc++ pins)")
    s.add_argument("--python", help="default: the container's Python")
    s.set_defaults(func=run_spec)


def run_check(args: argparse.Namespace) -> int:
    """CLI: print findings; exit 1 on any failure, 2 on bad input."""
    try:
        release = resolve_release(args.triton) if args.triton else None
        rep = check_env(args.env, stub=args.stub, release=release, backends=args.backend or ["numpy"],
                        build_prefixes=args.build_prefix)
    except InputError as exc:
        print(f"env check: {exc}", file=sys.stderr)
        return 2
    print(rep.render())
    return 0 if rep.ok else 1


def run_spec(args: argparse.Namespace) -> int:
    """CLI: print the spec text."""
    try:
        release = resolve_release(args.triton)
        print(render_spec(args.format, args.kind, release, args.python or default_python_for(release)), end="")
    except InputError as exc:
        print(f"env spec: {exc}", file=sys.stderr)
        return 2
    return 0


def run_pack(args: argparse.Namespace) -> int:
    """CLI: plan, build, pack, then check the result."""
    try:
        release, _ = detect_release(args.triton, None)
        python = args.python
        if args.stub and not python:
            python = inspect_stub(args.stub).python_version
        plan = make_pack_plan(kind=args.kind, release=release, python=python, output=args.output,
                              as_dir=args.as_dir, tool=args.tool, textops=args.textops, cudf=args.with_cudf,
                              extra=args.extra, pip_args=args.pip_arg, work_dir=args.work_dir)
    except InputError as exc:
        print(f"env pack: {exc}", file=sys.stderr)
        return 2
    print(plan.render())
    if args.dry_run:
        if plan.work_dir is not None:
            shutil.rmtree(plan.work_dir, ignore_errors=True)
        return 0
    try:
        out = pack_env(plan)
    except RuntimeError as exc:
        print(f"env pack: {exc}", file=sys.stderr)
        return 1
    print(f"packed: {out}")
    if args.no_check:
        return 0
    # an explicit --python other than the stock stub's is what the user asked for: checked as an env for a custom
    # stub of that Python (a warning says how to build it), not failed against the stock stub
    custom = (plan.python_version if args.python and not args.stub
              and plan.python_version != default_python_for(release) else None)
    rep = check_env(out, stub=args.stub, release=release, backends=plan.backends, stub_python=custom)
    print(rep.render())
    return 0 if rep.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m triton_textops.tools.envs env ...` (used by envs/pack_env.sh from a source checkout)."""
    parser = argparse.ArgumentParser(prog="triton-textops")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv) if argv is not None else None)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
