"""Reading an env (a directory or a tarball): unsafe archive entries, its Python and modules (run inside it),
build-machine paths left in it, the GLIBCXX versions a stub and a libstdc++ need and have.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from triton_textops.errors import InputError


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


def env_python_versions(root: Path) -> list[str]:
    return sorted(d.name[len("python"):] for d in (root / "lib").glob("python3.*") if d.is_dir())


def pyvenv_cfg(root: Path) -> dict[str, str]:
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
    m = re.search(r"-m\s+venv\s+(?:--?\S+\s+)*(/\S+)", pyvenv_cfg(root).get("command", ""))
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


def glibcxx_versions(lib: Path) -> list[tuple[int, ...]]:
    data = lib.read_bytes()
    return sorted({tuple(int(x) for x in m.split(b".")) for m in re.findall(rb"GLIBCXX_(\d+\.\d+(?:\.\d+)?)", data)})


def stub_glibcxx(stub: Path) -> tuple[int, ...] | None:
    exe = shutil.which("readelf")
    if not exe:
        return None
    out = subprocess.run([exe, "-V", "--wide", str(stub)], capture_output=True, text=True, timeout=60).stdout
    vers = [tuple(int(x) for x in v.split(".")) for v in re.findall(r"Name: GLIBCXX_(\d+\.\d+(?:\.\d+)?)", out)]
    return max(vers) if vers else None

