"""`triton-textops stub build`: compile a `triton_python_backend_stub` for a target Python and Triton release.

Why: the Python backend runs `model.py` in a stub process linked against ONE libpython (3.10 in containers
23.05-24.10, 3.12 from 24.11). An execution environment with another Python needs a stub compiled from
python_backend's `r<YY.MM>` branch, with the common/core/backend tags of the same release, against that
Python's shared libpython. This module holds the release facts (server version <-> container release,
default Python, numpy bound), makes the build plan, checks every requirement up front (saying what is
missing and how to get it), runs the build, verifies which libpython the binary links, and prints where to
put the stub. `stub_build/build_stub.sh` is a thin wrapper around this.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from triton_textops.errors import InputError

PB_REPO = "https://github.com/triton-inference-server/python_backend"
STUB_NAME = "triton_python_backend_stub"
STUB_TARGET = "triton-python-backend-stub"
CMAKE_POLICY_VERSION_MINIMUM = "3.17"

# --------------------------------------------------------------------------------------------------
# Release facts (python_backend README, server build.py, release notes; see stub_build/README.md)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Release:
    """A Triton container release YY.MM (= python_backend branch rYY.MM)."""

    year: int
    month: int

    @property
    def name(self) -> str:
        return f"{self.year:02d}.{self.month:02d}"

    @property
    def branch(self) -> str:
        return f"r{self.name}"

    def _index(self) -> int:
        return self.year * 12 + self.month - 1

    def __str__(self) -> str:
        return self.name


FIRST_RELEASE = Release(21, 2)  # first release of the documented server-version table
LAST_KNOWN_RELEASE = Release(26, 8)  # last rYY.MM in the table; later ones are extrapolated (+1 minor/month)
_R25_06, _R25_07, _R25_08 = Release(25, 6), Release(25, 7), Release(25, 8)
NUMPY2_FIRST_RELEASE = Release(24, 11)  # pybind11 v2.12.0: stubs before r24.11 (pybind11 2.10) break with numpy 2
CMAKE_3_31_FIRST_RELEASE = _R25_08  # cmake_minimum_required(VERSION 3.31.8) from r25.08
BOOST_URL_FIRST_RELEASE = Release(25, 11)  # TRITON_BOOST_URL cache variable exists from r25.11 (boost 1.80.0)
REPO_ORGANIZATION_FIRST_RELEASE = Release(24, 3)  # TRITON_REPO_ORGANIZATION exists from r24.03
# From r23.10 TRITONBACKEND_Initialize (src/python_be.cc) fails unless a stub file exists in the backend's directory
# (backends/python/): "triton_python_backend_stub is not found. Searched paths: ...", even if every model has its own.
BACKEND_DIR_STUB_FIRST_RELEASE = Release(23, 10)

# (first release, default python of tritonserver:<YY.MM>-py3)
_DEFAULT_PYTHON = [
    (Release(0, 1), "3.6"),  # 20.11 and older: Ubuntu 18.04
    (Release(20, 12), "3.8"),  # 20.12 - 23.04: Ubuntu 20.04
    (Release(23, 5), "3.10"),  # 23.05 - 24.10: Ubuntu 22.04
    (Release(24, 11), "3.12"),  # 24.11 - today: Ubuntu 24.04
]


def parse_release(text: str) -> Release:
    """Parse a container release `YY.MM` (or python_backend branch `rYY.MM`)."""
    m = re.fullmatch(r"r?(\d{2})\.(\d{1,2})", text.strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise InputError(f"not a Triton release: {text!r} (expected YY.MM such as 24.10, or a server version 2.X.Y)")
    rel = Release(int(m.group(1)), int(m.group(2)))
    if rel < FIRST_RELEASE:
        raise InputError(f"release {rel} is older than {FIRST_RELEASE}, the first one this tool knows")
    return rel


def server_version_for(release: Release) -> str:
    """Server version (TRITON_VERSION) of a container release: 2.(YY-21)*12+MM+5 to 25.06, 25.07 = 2.59.1, then +1/month."""
    if release < FIRST_RELEASE:
        raise InputError(f"release {release} is older than {FIRST_RELEASE}, the first one this tool knows")
    if release <= _R25_06:
        return f"2.{(release.year - 21) * 12 + release.month + 5}.0"
    if release == _R25_07:
        return "2.59.1"
    return f"2.{60 + release._index() - _R25_08._index()}.0"


def release_for_server(version: str) -> Release:
    """Container release of a server version such as `2.51.0` (a `dev` suffix is ignored)."""
    m = re.fullmatch(r"2\.(\d+)\.(\d+)(?:dev\d*|\.dev\d*|-dev)?", version.strip())
    if not m:
        raise InputError(f"not a Triton server version: {version!r} (expected 2.X.Y such as 2.51.0)")
    minor, patch = int(m.group(1)), int(m.group(2))
    if minor < 7:
        raise InputError(f"server version {version} is older than 2.7.0 ({FIRST_RELEASE}), the first one this tool knows")
    if (minor, patch) == (59, 1):
        return _R25_07
    if patch != 0:
        raise InputError(
            f"unknown server version {version}: releases are 2.X.0 except 2.59.1 (25.07); "
            "pass the container release (YY.MM) instead"
        )
    if minor <= 59:
        idx = FIRST_RELEASE._index() + (minor - 7)
    else:
        idx = _R25_08._index() + (minor - 60)
    return Release(idx // 12, idx % 12 + 1)


def resolve_release(text: str) -> Release:
    """Accept either form: container release `24.10`/`r24.10` or server version `2.51.0`."""
    text = text.strip()
    if re.fullmatch(r"2\.\d+\.\d+.*", text):
        return release_for_server(text)
    return parse_release(text)


def default_python_for(release: Release) -> str:
    """Python major.minor of the stock stub in `nvcr.io/nvidia/tritonserver:<release>-py3`."""
    result = _DEFAULT_PYTHON[0][1]
    for first, py in _DEFAULT_PYTHON:
        if release >= first:
            result = py
    return result


def numpy_requirement(release: Release) -> str:
    """pip requirement for numpy inside an env used by a stub of `release` (numpy 2 needs pybind11 >= 2.12, r24.11+)."""
    return "numpy>=1.21,<2" if release < NUMPY2_FIRST_RELEASE else "numpy>=1.26,<3"


def pybind11_for(release: Release) -> str:
    """pybind11 version python_backend fetches on that branch."""
    if release < Release(23, 1):
        return "v2.6"
    if release < Release(23, 7):
        return "v2.10 (branch)"
    if release < NUMPY2_FIRST_RELEASE:
        return "v2.10.0 (aa304c9)"
    return "v2.12.0 (3e9dfa2)"


def cmake_minimum_for(release: Release) -> tuple[int, ...]:
    """Oldest CMake python_backend's top CMakeLists.txt accepts on that branch."""
    return (3, 31, 8) if release >= CMAKE_3_31_FIRST_RELEASE else (3, 17)


@dataclass(frozen=True)
class BoostPin:
    """The boost tarball a python_backend branch downloads (ExternalProject `boostorg`, URL + URL_HASH)."""

    first: Release  # first branch with this pin
    version: str
    sha256: str

    @property
    def tarball(self) -> str:
        return f"boost_{self.version.replace('.', '_')}.tar.gz"


# From python_backend's CMakeLists.txt on each branch: no boost before r21.06; 1.76.0 r21.06-r23.01;
# 1.79.0 r23.02-r25.10; 1.80.0 from r25.11, the first branch with the TRITON_BOOST_URL cache variable.
_BOOST_PINS = [
    BoostPin(Release(21, 6), "1.76.0", "7bd7ddceec1a1dfdcbdb3e609b60d01739c38390a5f956385a12f3122049f0ca"),
    BoostPin(Release(23, 2), "1.79.0", "273f1be93238a068aba4f9735a4a2b003019af067b9c183ed227780b8f36062c"),
    BoostPin(BOOST_URL_FIRST_RELEASE, "1.80.0", "4b2136f98bdd1f5857f1c3dea9ac2018effe65286cf251534b6ae20cc45e1847"),
]


def boost_for(release: Release) -> BoostPin | None:
    """The boost python_backend downloads at build time on that branch (None: the branch uses no boost)."""
    pin = None
    for p in _BOOST_PINS:
        if release >= p.first:
            pin = p
    return pin


def release_notes(release: Release) -> list[str]:
    """Caveats for releases outside the documented table."""
    if release > LAST_KNOWN_RELEASE:
        return [
            f"release {release} is newer than the last one in the table ({LAST_KNOWN_RELEASE}); "
            f"server version {server_version_for(release)} is extrapolated (+1 minor per month)"
        ]
    return []


# --------------------------------------------------------------------------------------------------
# Detecting the target release
# --------------------------------------------------------------------------------------------------


def release_from_server(url: str, timeout: float = 5.0) -> tuple[Release, str]:
    """Ask a running server (`GET <url>/v2`, the metadata endpoint) for its version; returns (release, version)."""
    base = url if "://" in url else f"http://{url}"
    endpoint = base.rstrip("/") + "/v2"
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as resp:
            meta = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InputError(f"cannot read server metadata from {endpoint}: {exc}") from exc
    version = str(meta.get("version", ""))
    if not version:
        raise InputError(f"{endpoint} answered without a 'version' field: {meta!r}")
    return release_for_server(version), version


def detect_release(
    triton: str | None = None, server_url: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Release, str]:
    """Target release from (in order) `--triton`, a running server, NVIDIA_TRITON_SERVER_VERSION / TRITON_SERVER_VERSION.

    Returns the release and a sentence saying where it came from.
    """
    env = os.environ if environ is None else environ
    if triton:
        return resolve_release(triton), f"given: {triton}"
    if server_url:
        rel, version = release_from_server(server_url)
        return rel, f"server {server_url} reports version {version}"
    for var in ("NVIDIA_TRITON_SERVER_VERSION", "TRITON_SERVER_VERSION"):
        if env.get(var):
            return resolve_release(env[var]), f"${var}={env[var]}"
    raise InputError(
        "no target Triton release: pass --triton 24.10 (or a server version such as 2.51.0), "
        "--server-url http://HOST:8000, or run inside the tritonserver container (NVIDIA_TRITON_SERVER_VERSION)"
    )


# --------------------------------------------------------------------------------------------------
# The target Python
# --------------------------------------------------------------------------------------------------

_PY_QUERY = (
    "import json, sys, sysconfig\n"
    "v = sysconfig.get_config_var\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable,"
    " 'include': sysconfig.get_path('include'), 'libdir': v('LIBDIR'), 'instsoname': v('INSTSONAME'),"
    " 'ldlibrary': v('LDLIBRARY'), 'shared': bool(v('Py_ENABLE_SHARED')), 'multiarch': v('MULTIARCH')}))\n"
)


@dataclass(frozen=True)
class PythonInfo:
    """What the build needs to know about the target interpreter (from its own sysconfig)."""

    executable: str
    version: str  # 3.11.7
    include: str
    libdir: str
    instsoname: str  # libpython3.11.so.1.0 (what the stub will have as DT_NEEDED)
    ldlibrary: str  # libpython3.11.so (what the linker uses)
    shared: bool
    multiarch: str | None = None

    @property
    def major_minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def libpython(self) -> Path:
        return Path(self.libdir) / self.instsoname


def query_python(executable: str) -> PythonInfo:
    """Run the interpreter and read its sysconfig. `executable` becomes the interpreter's own sys.executable, so a
    launcher such as a pyenv shim is replaced by the real binary it runs (that is what CMake must be given)."""
    try:
        out = subprocess.run([executable, "-c", _PY_QUERY], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"cannot run Python interpreter {executable}: {exc}") from exc
    d = json.loads(out.stdout)
    return PythonInfo(
        executable=d["executable"] or executable,
        version=d["version"],
        include=d["include"] or "",
        libdir=d["libdir"] or "",
        instsoname=d["instsoname"] or "",
        ldlibrary=d["ldlibrary"] or "",
        shared=bool(d["shared"]),
        multiarch=d.get("multiarch"),
    )


def find_python(spec: str | None, environ: Mapping[str, str] | None = None) -> PythonInfo:
    """Resolve `--python`: a version (`3.11`, `3.11.7`: pyenv, then PATH), a command name looked up on PATH like a
    shell does (`python3.11`, as virtualenv and uv accept), an interpreter path, or None (this Python)."""
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


# --------------------------------------------------------------------------------------------------
# Boost (python_backend downloads it at build time; --boost gives a local one)
# --------------------------------------------------------------------------------------------------

_ARCHIVE_SUFFIX = re.compile(r"\.(tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz|tar|zip|7z)$")


@dataclass(frozen=True)
class BoostSource:
    """A local boost given with `--boost`: a release tarball, or a directory holding `boost/version.hpp`
    (an unpacked boost tree such as boost_1_79_0/, or a headers directory such as /usr/include)."""

    path: Path  # the tarball, or the directory that contains boost/
    kind: str  # "tarball" or "directory"
    version: str | None  # 1.79.0 (from boost/version.hpp, the tarball's name or its SHA256); None if unknown
    sha256: str | None = None  # tarballs only

    def describe(self) -> str:
        what = "tarball" if self.kind == "tarball" else "headers"
        return f"boost {self.version or '(version unknown)'} {what} {self.path}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _boost_header_version(version_hpp: Path) -> str | None:
    m = re.search(r"#\s*define\s+BOOST_VERSION\s+(\d+)", version_hpp.read_text(errors="replace"))
    if not m:
        return None
    v = int(m.group(1))
    return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"


def inspect_boost(spec: str | os.PathLike[str]) -> BoostSource:
    """Classify `--boost SRC`: a boost tarball, or a directory with `boost/version.hpp` (SRC/boost itself is
    accepted too); reads the version from version.hpp, the tarball's name or its SHA256."""
    p = Path(spec).expanduser().absolute()
    if p.is_dir():
        root = p
        if not (root / "boost" / "version.hpp").is_file() and p.name == "boost" and (p / "version.hpp").is_file():
            root = p.parent
        hdr = root / "boost" / "version.hpp"
        if not hdr.is_file():
            raise InputError(f"--boost {spec}: {hdr} does not exist; give a boost tarball, an unpacked boost tree "
                             "(boost_1_79_0/) or a headers directory that holds boost/ (/usr/include with "
                             "libboost-dev)")
        return BoostSource(root, "directory", _boost_header_version(hdr))
    if p.is_file():
        if not _ARCHIVE_SUFFIX.search(p.name):
            raise InputError(f"--boost {spec}: not a directory and not an archive ExternalProject can unpack "
                             "(.tar.gz, .tar.bz2, .tar.xz, .zip, .7z)")
        sha = _sha256(p)
        m = re.search(r"boost_(\d+)_(\d+)_(\d+)", p.name)
        version = ".".join(m.groups()) if m else next((b.version for b in _BOOST_PINS if b.sha256 == sha), None)
        return BoostSource(p, "tarball", version, sha)
    raise InputError(f"--boost {spec}: no such file or directory")


BOOST_OVERRIDE_MARKER = "textops-boost-override.txt"

# The wrapper passes every other ExternalProject_Add call through with its arguments intact (empty ones
# included), hence the bracket-quoted re-call through cmake_language (CMake >= 3.18).
_BOOST_OVERRIDE_CMAKE = """\
# Written by `triton-textops stub build` and given to CMake as CMAKE_PROJECT_tritonpythonbackend_INCLUDE, so it
# runs right after python_backend's project() call. python_backend {branch} downloads boost {version} in
# ExternalProject_Add(boostorg URL ... URL_HASH ...) and has no variable to change that URL (TRITON_BOOST_URL
# exists from r25.11). This wraps ExternalProject_Add: `boostorg` takes the boost given with --boost, with the same
# prefix and steps as python_backend's own call (copy <SOURCE_DIR>/boost/ to <build>/boost); every other
# ExternalProject_Add call passes through unchanged. The python_backend checkout itself is not modified.
cmake_minimum_required(VERSION 3.18)
include(ExternalProject)  # has include_guard(GLOBAL): python_backend's own include() keeps this wrapper
function(ExternalProject_Add name)
  if(NOT name STREQUAL "boostorg")
    set(_textops_call "_ExternalProject_Add(")
    math(EXPR _textops_last "${{ARGC}} - 1")
    foreach(_textops_i RANGE 0 ${{_textops_last}})
      string(APPEND _textops_call " [==[${{ARGV${{_textops_i}}}}]==]")
    endforeach()
    cmake_language(EVAL CODE "${{_textops_call}})")
    return()
  endif()
  _ExternalProject_Add(boostorg
    PREFIX "boost-src"
{source}
    CONFIGURE_COMMAND ${{CMAKE_COMMAND}} -E copy_directory <SOURCE_DIR>/boost/ ${{CMAKE_BINARY_DIR}}/boost
    BUILD_COMMAND ""
    INSTALL_COMMAND "")
  message(STATUS "boostorg: local boost {what} (--boost), not {url_file}")
  file(WRITE "${{CMAKE_BINARY_DIR}}/{marker}" [==[{path}]==])
endfunction()
"""


def _cmake_quote(text: str) -> str:
    return "[==[" + text + "]==]"


@dataclass(frozen=True)
class BoostSetup:
    """How the build gets a local boost instead of downloading it: the cache flags, the files the build writes
    into the work dir first (nothing goes into the python_backend checkout), and how to tell it took effect."""

    source: BoostSource
    mechanism: str  # one line for the plan
    flags: Mapping[str, str]
    files: Mapping[Path, str] = field(default_factory=dict)  # written before configure
    links: Mapping[Path, Path] = field(default_factory=dict)  # symlink -> target, made before configure
    marker: Path | None = None  # configure must create it (the override ran)

    def apply(self) -> None:
        """Write the files and links (idempotent)."""
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for link, target in self.links.items():
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target, target_is_directory=True)
        if self.marker is not None and self.marker.exists():
            self.marker.unlink()  # only this configure run may vouch for the override


def boost_setup(release: Release, source: BoostSource, work: Path, build_dir: Path) -> BoostSetup | None:
    """The mechanism for `release`: TRITON_BOOST_URL from r25.11; before that a CMake project include that
    redirects ExternalProject `boostorg`. None for branches that download no boost."""
    pin = boost_for(release)
    if pin is None:
        return None
    if release >= BOOST_URL_FIRST_RELEASE:
        if source.kind == "tarball":
            if source.sha256 != pin.sha256:
                raise InputError(
                    f"--boost {source.path}: SHA256 {source.sha256} is not that of {pin.tarball} "
                    f"({pin.sha256}), which {release.branch} pins with URL_HASH next to TRITON_BOOST_URL; give that "
                    "tarball, or unpack yours and pass the directory (a directory needs no hash)")
            return BoostSetup(source, f"TRITON_BOOST_URL={source.path} (the tarball {release.branch} pins)",
                              {"TRITON_BOOST_URL": str(source.path)})
        # ExternalProject copies a directory URL into its source dir (no hash check): a directory holding
        # only a link to boost/ keeps that copy to the headers (not all of /usr/include or a full boost tree).
        local = work / "boost-local"
        return BoostSetup(source, f"TRITON_BOOST_URL={local} (holds boost -> {source.path / 'boost'})",
                          {"TRITON_BOOST_URL": str(local)}, links={local / "boost": source.path / "boost"})
    override = work / "boost-override.cmake"
    if source.kind == "tarball":
        src = f"    URL {_cmake_quote(str(source.path))}\n    URL_HASH SHA256={source.sha256}"
    else:
        src = f"    SOURCE_DIR {_cmake_quote(str(source.path))}\n    DOWNLOAD_COMMAND \"\""
    text = _BOOST_OVERRIDE_CMAKE.format(branch=release.branch, version=pin.version, source=src,
                                        what=source.kind, url_file=pin.tarball, marker=BOOST_OVERRIDE_MARKER,
                                        path=str(source.path))
    return BoostSetup(
        source,
        f"CMAKE_PROJECT_tritonpythonbackend_INCLUDE={override}: a CMake include written into the work dir that "
        f"redirects ExternalProject boostorg ({pin.tarball}) to the local boost; the python_backend checkout is "
        "not modified",
        {"CMAKE_PROJECT_tritonpythonbackend_INCLUDE": str(override)},
        files={override: text},
        marker=build_dir / BOOST_OVERRIDE_MARKER,
    )


# --------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------

# FetchContent names python_backend (and backend/common) declare, and the CLI option for each local source.
FETCH_DEPS = {
    "REPO-COMMON": "common_src",
    "REPO-CORE": "core_src",
    "REPO-BACKEND": "backend_src",
    "PYBIND11": "pybind11_src",
    "DLPACK": "dlpack_src",
    "GOOGLETEST": "googletest_src",
}

ALL_REQUIREMENTS = ("cmake", "compiler", "git", "rapidjson", "libarchive", "zlib", "boost", "python", "cuda")


@dataclass
class StubPlan:
    """Everything `build` will do; `render()` is what --dry-run prints."""

    release: Release
    release_source: str
    python: PythonInfo
    gpu: bool
    work_dir: Path
    source_dir: Path
    build_dir: Path
    output: Path
    clone: list[str] | None
    configure: list[str]
    build: list[str]
    cmake_minimum: tuple[int, ...]
    requirements: tuple[str, ...]
    notes: list[str] = field(default_factory=list)
    boost: BoostSetup | None = None

    @property
    def server_version(self) -> str:
        return server_version_for(self.release)

    def boost_line(self) -> str:
        """Where boost comes from: downloaded by the build, or the local one and the mechanism."""
        pin = boost_for(self.release)
        if pin is None:
            return f"not used by {self.release.branch}"
        if self.boost is None:
            return f"{pin.version}, downloaded at build time ({pin.tarball})"
        return f"{self.boost.source.describe()} via {self.boost.mechanism}"

    def commands(self) -> list[list[str]]:
        """The external commands, in order."""
        cmds = [self.clone] if self.clone else []
        return [*cmds, self.configure, self.build]

    def prepare_lines(self) -> list[str]:
        """What the build writes into the work dir before configuring (boost redirection), as shell lines."""
        if self.boost is None:
            return []
        lines = [f"# write {shlex.quote(str(path))} (see stub_build/README.md, Offline builds)" for path in self.boost.files]
        lines += [f"ln -sfn {shlex.quote(str(t))} {shlex.quote(str(link))}" for link, t in self.boost.links.items()]
        return lines

    def render(self) -> str:
        """Human-readable plan with copy-pasteable commands."""
        py = self.python
        lines = [
            f"Triton release:   {self.release} (server {self.server_version}; {self.release_source})",
            f"python_backend:   {self.release.branch} (common/core/backend tags {self.release.branch}, "
            f"pybind11 {pybind11_for(self.release)})",
            f"target Python:    {py.version} ({py.executable}); libpython {py.libpython}",
            f"container Python: {default_python_for(self.release)} (stock stub of tritonserver:{self.release}-py3)",
            f"GPU support:      {'ON' if self.gpu else 'OFF'}",
            f"CMake required:   >= {'.'.join(map(str, self.cmake_minimum))}",
            f"boost:            {self.boost_line()}",
            f"source:           {self.source_dir}",
            f"build directory:  {self.build_dir}",
            f"output:           {self.output}",
            "commands:",
        ]
        lines.extend("  " + line for line in self.prepare_lines())
        for cmd in self.commands():
            lines.append("  " + shlex.join(cmd))
        lines.append(f"  install -m 0755 {shlex.quote(str(self.build_dir / STUB_NAME))} {shlex.quote(str(self.output))}")
        lines.append(f"  readelf -d {shlex.quote(str(self.output))}; ldd {shlex.quote(str(self.output))}   "
                     "# libpython, no empty or relative RUNPATH entries")
        if self.notes:
            lines.append("notes:")
            lines.extend(f"  - {n}" for n in self.notes)
        return "\n".join(lines)


def make_plan(
    release: Release,
    python: PythonInfo,
    *,
    gpu: bool = True,
    output: str | os.PathLike[str] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    python_backend_src: str | os.PathLike[str] | None = None,
    dep_sources: Mapping[str, str | os.PathLike[str] | None] | None = None,
    offline: bool = False,
    boost: str | os.PathLike[str] | BoostSource | None = None,
    repo_organization: str | None = None,
    cuda_root: str | None = None,
    jobs: int | None = None,
    release_source: str = "given",
    requirements: Sequence[str] | None = None,
    extra_cmake_args: Sequence[str] = (),
) -> StubPlan:
    """Build the plan: clone (unless a local python_backend checkout is given), configure flags, target, output.

    `dep_sources` maps FetchContent names (`REPO-COMMON`, `PYBIND11`, ... see FETCH_DEPS) to local directories;
    `boost` is a local boost (tarball, unpacked tree or headers directory, see `boost_setup` for how it reaches
    the build); `offline` adds FETCHCONTENT_FULLY_DISCONNECTED=ON and requires all of them. `extra_cmake_args` go
    last on the configure command line (a `-D` there wins over the same one of ours). `requirements` narrows the
    checks (default: all that apply; used to build projects that are not python_backend, such as the test stand-in).
    """
    tag = f"{python.major_minor}"
    work = Path(work_dir) if work_dir else Path.cwd() / "build" / f"stub-{release.branch}-py{tag}"
    work = work.absolute()
    notes = release_notes(release)
    if python_backend_src:
        src = Path(python_backend_src).absolute()
        clone = None
    else:
        src = work / "python_backend"
        clone = ["git", "clone", "--depth", "1", "--branch", release.branch, f"{PB_REPO}.git", str(src)]
    build_dir = work / "build"
    if output is None:
        out = Path.cwd() / f"stub-{release.branch}-py{tag}" / STUB_NAME
    else:
        out = Path(output)
        if out.is_dir() or str(output).endswith(os.sep):
            out = out / STUB_NAME
    out = out.absolute()

    flags = {
        "CMAKE_BUILD_TYPE": "Release",
        "TRITON_ENABLE_GPU": "ON" if gpu else "OFF",
        "TRITON_BACKEND_REPO_TAG": release.branch,
        "TRITON_COMMON_REPO_TAG": release.branch,
        "TRITON_CORE_REPO_TAG": release.branch,
        # pybind11 classic mode (FindPythonLibsNew) reads PYTHON_EXECUTABLE; FindPython mode reads Python_EXECUTABLE.
        "PYTHON_EXECUTABLE": python.executable,
        "Python_EXECUTABLE": python.executable,
        # CMake 4 refuses cmake_minimum_required(<3.5) in fetched deps (old pybind11/dlpack) without this.
        "CMAKE_POLICY_VERSION_MINIMUM": CMAKE_POLICY_VERSION_MINIMUM,
        # The stub is taken from the build tree, whose RUNPATH CMake pads with a trailing ':' (room for an install
        # step to rewrite it): an empty entry, which the loader reads as the working directory. Linking with the
        # install RPATH instead gives exactly the directories of the linked libraries outside the build tree
        # (libpython's, CUDA's), no padding.
        "CMAKE_BUILD_WITH_INSTALL_RPATH": "ON",
        "CMAKE_INSTALL_RPATH_USE_LINK_PATH": "ON",
    }
    if repo_organization:
        if release < REPO_ORGANIZATION_FIRST_RELEASE:
            notes.append(f"TRITON_REPO_ORGANIZATION only exists from {REPO_ORGANIZATION_FIRST_RELEASE}; "
                         "it is ignored by this branch")
        flags["TRITON_REPO_ORGANIZATION"] = repo_organization
    cuda = cuda_root or os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if gpu and cuda:
        flags["CUDAToolkit_ROOT"] = cuda
    deps = {k.upper(): v for k, v in (dep_sources or {}).items() if v}
    unknown = sorted(set(deps) - set(FETCH_DEPS))
    if unknown:
        raise InputError(f"unknown FetchContent names {unknown}; known: {sorted(FETCH_DEPS)}")
    for name in FETCH_DEPS:
        if name in deps:
            flags[f"FETCHCONTENT_SOURCE_DIR_{name}"] = str(Path(deps[name]).absolute())
    pin = boost_for(release)
    if offline:
        # Everything the build would download must be local, or it fails minutes in ("Could not resolve host").
        missing = [] if python_backend_src else [f"--python-backend-src (a python_backend checkout at {release.branch})"]
        missing += [f"--{FETCH_DEPS[n].replace('_', '-')} ({n})" for n in FETCH_DEPS if n not in deps]
        if pin is not None and boost is None:
            missing.append(f"--boost (boost headers: {pin.tarball}, an unpacked boost tree or a headers directory "
                           "such as /usr/include from libboost-dev)")
        if missing:
            raise InputError("--offline needs every source the build would download; missing: " + "; ".join(missing))
        flags["FETCHCONTENT_FULLY_DISCONNECTED"] = "ON"
    boost_plan = None
    if boost is not None:
        bsrc = boost if isinstance(boost, BoostSource) else inspect_boost(boost)
        boost_plan = boost_setup(release, bsrc, work, build_dir)
        if boost_plan is None:
            notes.append(f"--boost ignored: {release.branch} downloads no boost")
        else:
            flags.update(boost_plan.flags)
            assert pin is not None
            if bsrc.version != pin.version:
                notes.append(f"boost {bsrc.version or '(version unknown)'} given; {release.branch} pins {pin.version} "
                             "(python_backend uses boost header-only: interprocess, asio, thread, uuid; other versions "
                             "may build, stub_build/README.md lists the combinations built so far)")
    elif pin is not None:
        notes.append(f"boost {pin.version} is downloaded at build time ({pin.tarball}); --boost gives a local one")
    if gpu:
        notes.append("GPU ON needs the CUDA toolkit at build time and libcudart.so.12 at run time; --no-gpu builds "
                     "a CPU-only stub (works next to a GPU-enabled server; inputs then always arrive on CPU)")
    if python.major_minor == default_python_for(release):
        notes.append(f"Python {python.major_minor} is the container's own Python: the stock stub of "
                     f"tritonserver:{release}-py3 already matches it, a custom stub is only needed outside that container")
    notes.append(f"an env for this stub needs Python {python.major_minor} and {numpy_requirement(release)}")
    notes.append(f"build inside nvcr.io/nvidia/tritonserver:{release}-py3 (or an older glibc/libstdc++) so the stub "
                 "runs in the container")

    configure = ["cmake", "-S", str(src), "-B", str(build_dir)]
    configure += [f"-D{k}={v}" for k, v in flags.items()]
    configure += list(extra_cmake_args)
    cmake_min = cmake_minimum_for(release)
    if boost_plan is not None and boost_plan.marker is not None:
        cmake_min = max(cmake_min, (3, 18))  # the boostorg override re-calls ExternalProject_Add via cmake_language
    build = ["cmake", "--build", str(build_dir), "--target", STUB_TARGET, "--parallel", str(jobs or os.cpu_count() or 1)]
    reqs = tuple(requirements) if requirements is not None else tuple(
        r for r in ALL_REQUIREMENTS if (r != "git" or clone) and (r != "cuda" or gpu)
    )
    return StubPlan(
        release=release,
        release_source=release_source,
        python=python,
        gpu=gpu,
        work_dir=work,
        source_dir=src,
        build_dir=build_dir,
        output=out,
        clone=clone,
        configure=configure,
        build=build,
        cmake_minimum=cmake_min,
        requirements=reqs,
        notes=notes,
        boost=boost_plan,
    )


# --------------------------------------------------------------------------------------------------
# Requirement checks
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One requirement: ok or not, what was found, and how to get it when missing."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def render(self) -> str:
        head = f"[{'ok' if self.ok else 'MISSING'}] {self.name}: {self.detail}"
        return head if self.ok else f"{head}\n      fix: {self.fix}"


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def search_prefixes(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where CMake's find_package/find_path would look: CMAKE_PREFIX_PATH, CONDA_PREFIX, /usr/local, /usr."""
    env = os.environ if environ is None else environ
    out: list[Path] = []
    for p in env.get("CMAKE_PREFIX_PATH", "").split(os.pathsep):
        if p:
            out.append(Path(p))
    if env.get("CONDA_PREFIX"):
        out.append(Path(env["CONDA_PREFIX"]))
    out += [Path("/usr/local"), Path("/usr")]
    return out


def _lib_dirs(prefix: Path) -> list[Path]:
    multiarch = f"{platform.machine()}-linux-gnu"
    return [prefix / "lib", prefix / "lib64", prefix / "lib" / multiarch]


def _find_header(prefixes: Sequence[Path], header: str) -> Path | None:
    for p in prefixes:
        cand = p / "include" / header
        if cand.is_file():
            return cand
    return None


def _find_lib(prefixes: Sequence[Path], name: str) -> Path | None:
    for p in prefixes:
        for d in _lib_dirs(p):
            for cand in (d / f"lib{name}.so", d / f"lib{name}.a"):
                if cand.exists():
                    return cand
    return None


def _find_rapidjson_config(prefixes: Sequence[Path]) -> Path | None:
    names = ("RapidJSONConfig.cmake", "rapidjson-config.cmake")
    for p in prefixes:
        dirs = [d / "cmake" for d in _lib_dirs(p)] + [p / "share" / "cmake", p / "cmake"]
        for d in dirs:
            for name in names:
                hits = glob.glob(str(d / "[Rr]apid[Jj][Ss][Oo][Nn]*" / name)) + glob.glob(str(d / name))
                if hits:
                    return Path(hits[0])
    return None


def check_cmake(minimum: Sequence[int], path: str | None = None) -> Check:
    """`cmake` on PATH and at least `minimum`."""
    need = ".".join(map(str, minimum))
    fix = f"pip install 'cmake>={need}' (or a Kitware apt/tarball release); apt-get install cmake gives 3.25 on Debian 12"
    exe = shutil.which("cmake", path=path)
    if not exe:
        return Check("cmake", False, f"cmake not found on PATH (need >= {need})", fix)
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("cmake", False, f"{exe} --version failed: {exc}", fix)
    m = re.search(r"cmake version (\S+)", out)
    have = _version_tuple(m.group(1)) if m else ()
    if not have or have < tuple(minimum):
        return Check("cmake", False, f"{exe} is {m.group(1) if m else 'unknown'}, need >= {need}", fix)
    return Check("cmake", True, f"{exe} {m.group(1)} (>= {need})")


_CXX17_PROBE = "#include <optional>\nint main() { std::optional<int> x = 1; if constexpr (true) { return *x - 1; } }\n"


def check_compiler(path: str | None = None, environ: Mapping[str, str] | None = None) -> Check:
    """A C compiler and a C++ compiler that compiles a C++17 program."""
    env = os.environ if environ is None else environ
    fix = "apt-get install build-essential (gcc/g++ >= 8), or conda install -c conda-forge cxx-compiler"

    def first(candidates: Sequence[str]) -> str | None:
        for c in candidates:
            if c:
                exe = shutil.which(shlex.split(c)[0], path=path)
                if exe:
                    return exe
        return None

    cc = first([env.get("CC", ""), "cc", "gcc", "clang"])
    cxx = first([env.get("CXX", ""), "c++", "g++", "clang++"])
    if not cxx:
        return Check("compiler", False, "no C++ compiler (c++, g++, clang++ or $CXX) on PATH", fix)
    if not cc:
        return Check("compiler", False, "no C compiler (cc, gcc, clang or $CC) on PATH", fix)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cc"
        src.write_text(_CXX17_PROBE)
        try:
            res = subprocess.run([cxx, "-std=c++17", str(src), "-o", str(Path(tmp) / "probe")],
                                 capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            return Check("compiler", False, f"{cxx} failed to run: {exc}", fix)
    if res.returncode != 0:
        return Check("compiler", False, f"{cxx} cannot compile C++17: {res.stderr.strip()[:300]}", fix)
    return Check("compiler", True, f"{cxx} (C++17 ok), {cc}")


def check_git(path: str | None = None) -> Check:
    """git, to clone python_backend and for FetchContent."""
    exe = shutil.which("git", path=path)
    if not exe:
        return Check("git", False, "git not found on PATH (needed to clone python_backend and its dependencies)",
                     "apt-get install git, or pass --python-backend-src with a local checkout (plus --offline sources)")
    return Check("git", True, exe)


def check_rapidjson(prefixes: Sequence[Path]) -> Check:
    """RapidJSON CMake package (common's find_package(RapidJSON CONFIG REQUIRED))."""
    cfg = _find_rapidjson_config(prefixes)
    if cfg:
        return Check("rapidjson", True, str(cfg))
    where = ", ".join(map(str, prefixes))
    return Check("rapidjson", False, f"RapidJSONConfig.cmake not found under {where}",
                 "apt-get install rapidjson-dev, or conda install -c conda-forge rapidjson "
                 "(add its prefix to CMAKE_PREFIX_PATH)")


def check_libarchive(prefixes: Sequence[Path]) -> Check:
    """libarchive headers and library (the stub links -larchive to extract EXECUTION_ENV_PATH tarballs)."""
    h, lib = _find_header(prefixes, "archive.h"), _find_lib(prefixes, "archive")
    if h and lib:
        return Check("libarchive", True, f"{h}, {lib}")
    miss = " and ".join(x for x, found in (("archive.h", h), ("libarchive.so", lib)) if not found)
    return Check("libarchive", False, f"{miss} not found", "apt-get install libarchive-dev, or conda install -c "
                 "conda-forge libarchive (add its prefix to CMAKE_PREFIX_PATH)")


def check_zlib(prefixes: Sequence[Path]) -> Check:
    """zlib headers and library (find_package(ZLIB REQUIRED))."""
    h, lib = _find_header(prefixes, "zlib.h"), _find_lib(prefixes, "z")
    if h and lib:
        return Check("zlib", True, f"{h}, {lib}")
    miss = " and ".join(x for x, found in (("zlib.h", h), ("libz.so", lib)) if not found)
    return Check("zlib", False, f"{miss} not found", "apt-get install zlib1g-dev, or conda install -c conda-forge zlib")


def check_boost(plan: StubPlan) -> Check:
    """Boost headers: the local one given with --boost (already validated), or the build's own download."""
    pin = boost_for(plan.release)
    if pin is None:
        return Check("boost", True, f"not used by {plan.release.branch}")
    if plan.boost is not None:
        src = plan.boost.source
        if src.kind == "directory" and not (src.path / "boost" / "version.hpp").is_file():
            return Check("boost", False, f"{src.path}/boost/version.hpp is gone",
                         "apt-get install libboost-dev (then --boost /usr/include), or pass another --boost")
        return Check("boost", True, f"{src.describe()} ({plan.release.branch} pins {pin.version})")
    return Check("boost", True, f"{pin.version} downloaded by the build ({pin.tarball}; needs network, --boost for "
                 "a local one)")


def check_python(py: PythonInfo) -> Check:
    """The target Python's headers and its SHARED libpython (pybind11::embed links it dynamically)."""
    mm = py.major_minor
    problems = []
    if not (Path(py.include) / "Python.h").is_file():
        problems.append(f"Python.h not in {py.include}")
    if not py.shared:
        problems.append(f"{py.executable} was built without --enable-shared (no shared libpython)")
    else:
        if not py.libpython.exists():
            problems.append(f"{py.libpython} does not exist")
        if not (Path(py.libdir) / py.ldlibrary).exists():
            problems.append(f"{Path(py.libdir) / py.ldlibrary} (link-time name) does not exist")
    if problems:
        fix = (f"pyenv: env PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install --force {py.version}; "
               f"Debian/Ubuntu system Python: apt-get install python{mm}-dev libpython{mm}; "
               f"conda: conda create -p ./py{mm} python={mm} (conda Pythons are shared)")
        return Check("python", False, f"Python {py.version}: " + "; ".join(problems), fix)
    return Check("python", True, f"Python {py.version}: {py.include}/Python.h, {py.libpython}")


def check_cuda(path: str | None = None, environ: Mapping[str, str] | None = None,
               default_roots: Sequence[str] = ("/usr/local/cuda",)) -> Check:
    """CUDA toolkit (nvcc on PATH, under $CUDA_HOME/$CUDA_PATH or /usr/local/cuda) for TRITON_ENABLE_GPU=ON."""
    env = os.environ if environ is None else environ
    roots = [env.get("CUDA_HOME"), env.get("CUDA_PATH"), *default_roots]
    nvcc = shutil.which("nvcc", path=path)
    if not nvcc:
        for r in roots:
            if r and (Path(r) / "bin" / "nvcc").exists():
                nvcc = str(Path(r) / "bin" / "nvcc")
                break
    fix = ("install the CUDA 12 toolkit (NVIDIA apt repo: apt-get install cuda-toolkit-12-6; or "
           "conda install -c nvidia cuda-toolkit), set CUDA_HOME; or pass --no-gpu for a CPU-only stub")
    if not nvcc:
        return Check("cuda", False, "CUDA toolkit (nvcc) not found on PATH, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda",
                     fix)
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("cuda", False, f"{nvcc} --version failed: {exc}", fix)
    m = re.search(r"release (\d+\.\d+)", out)
    if not m:
        return Check("cuda", False, f"{nvcc} --version did not report a CUDA release", fix)
    return Check("cuda", True, f"{nvcc} (CUDA {m.group(1)}; the stub will need that libcudart at run time)")


def check_sources(plan: StubPlan) -> Check | None:
    """The local source directories the plan was given (--python-backend-src, --<dep>-src) exist; None when none
    were given. Why: a mistyped path otherwise passes every check and fails minutes later in CMake's configure."""
    given: list[tuple[str, Path]] = []
    if plan.clone is None:
        given.append(("--python-backend-src", plan.source_dir))
    head = "-DFETCHCONTENT_SOURCE_DIR_"
    for arg in plan.configure:
        if arg.startswith(head) and "=" in arg:
            name, value = arg[len(head):].split("=", 1)
            if name in FETCH_DEPS:
                given.append((f"--{FETCH_DEPS[name].replace('_', '-')}", Path(value)))
    if not given:
        return None
    missing = [f"{opt} {p}" for opt, p in given if not p.is_dir()]
    if missing:
        return Check("sources", False, "no such directory: " + "; ".join(missing),
                     "give existing source directories (a checkout at the release's branch)")
    return Check("sources", True, f"{len(given)} local source director{'y' if len(given) == 1 else 'ies'} exist")


def check_requirements(
    plan: StubPlan, *, path: str | None = None, prefixes: Sequence[Path] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Check]:
    """Run every check the plan needs (the given source directories first); `path`/`prefixes`/`environ` override
    PATH, search prefixes and env vars."""
    pref = list(prefixes) if prefixes is not None else search_prefixes(environ)
    checks: dict[str, Callable[[], Check]] = {
        "cmake": lambda: check_cmake(plan.cmake_minimum, path),
        "compiler": lambda: check_compiler(path, environ),
        "git": lambda: check_git(path),
        "rapidjson": lambda: check_rapidjson(pref),
        "libarchive": lambda: check_libarchive(pref),
        "zlib": lambda: check_zlib(pref),
        "boost": lambda: check_boost(plan),
        "python": lambda: check_python(plan.python),
        "cuda": lambda: check_cuda(path, environ),
    }
    unknown = set(plan.requirements) - set(checks)
    if unknown:
        raise InputError(f"unknown requirement(s) {sorted(unknown)}")
    sources = check_sources(plan)
    return ([sources] if sources is not None else []) + [checks[name]() for name in plan.requirements]


# --------------------------------------------------------------------------------------------------
# Inspecting / verifying a stub binary
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# Running the build
# --------------------------------------------------------------------------------------------------


class BuildError(RuntimeError):
    """A requirement is missing, a command failed, or the result does not link the intended libpython."""


@dataclass(frozen=True)
class BuildResult:
    """Where the stub went and what verification found."""

    stub: Path
    verification: Verification
    checks: tuple[Check, ...]


def _run(cmd: Sequence[str], log: Callable[[str], None], cwd: Path | None = None) -> None:
    log("$ " + shlex.join(cmd))
    res = subprocess.run(list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        tail = "\n".join(res.stdout.splitlines()[-40:])
        raise BuildError(f"command failed (exit {res.returncode}): {shlex.join(cmd)}\n{tail}")


def build_stub(plan: StubPlan, *, log: Callable[[str], None] = print) -> BuildResult:
    """Check requirements, clone, configure, build the stub target, install it at plan.output, verify it."""
    checks = check_requirements(plan)
    for c in checks:
        log(c.render())
    missing = [c for c in checks if not c.ok]
    if missing:
        raise BuildError("missing requirements:\n" + "\n".join(c.render() for c in missing))
    if plan.clone:
        if (plan.source_dir / ".git").exists():
            head = subprocess.run(["git", "-C", str(plan.source_dir), "rev-parse", "--abbrev-ref", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            if head != plan.release.branch:
                raise BuildError(f"{plan.source_dir} is a checkout of {head!r}, not {plan.release.branch}; "
                                 "remove it or use another --work-dir")
            log(f"reusing checkout {plan.source_dir} ({head})")
        else:
            plan.work_dir.mkdir(parents=True, exist_ok=True)
            _run(plan.clone, log)
    elif not (plan.source_dir / "CMakeLists.txt").is_file():
        raise BuildError(f"{plan.source_dir} has no CMakeLists.txt (not a python_backend checkout)")
    if plan.boost is not None:
        plan.boost.apply()
        log(f"boost: {plan.boost.source.describe()} via {plan.boost.mechanism}")
    _run(plan.configure, log)
    if plan.boost is not None and plan.boost.marker is not None and not plan.boost.marker.is_file():
        raise BuildError(f"configure did not apply the boost override (no {plan.boost.marker}): the build would "
                         f"download boost. Is {plan.source_dir} python_backend {plan.release.branch} (project "
                         "tritonpythonbackend, ExternalProject boostorg)?")
    _run(plan.build, log)
    built = plan.build_dir / STUB_NAME
    if not built.is_file():
        raise BuildError(f"the build finished but {built} does not exist")
    plan.output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, plan.output)
    os.chmod(plan.output, 0o755)
    ver = verify_stub(plan.output, plan.python)
    cudart = [n for n in ver.info.needed if n.startswith("libcudart")]
    if plan.gpu and not cudart:
        ver = Verification(False, ver.info, (*ver.messages, "built with TRITON_ENABLE_GPU=ON but the stub does "
                                             "not link libcudart"))
    elif cudart:
        ver = Verification(ver.ok, ver.info, (*ver.messages, f"GPU build: needs {', '.join(cudart)} at run time"))
    for m in ver.messages:
        log(m)
    if not ver.ok:
        raise BuildError("verification failed: " + "; ".join(ver.messages))
    return BuildResult(plan.output, ver, tuple(checks))


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`triton-textops stub build|inspect|releases`."""
    p = sub.add_parser("stub", help="build or inspect a triton_python_backend_stub for another Python")
    ssub = p.add_subparsers(dest="stub_command", required=True)

    b = ssub.add_parser("build", help="compile triton_python_backend_stub for a target Python and Triton release")
    b.add_argument("--triton", help="target release (24.10) or server version (2.51.0); default: "
                   "$NVIDIA_TRITON_SERVER_VERSION or --server-url")
    b.add_argument("--server-url", help="ask a running server (GET <url>/v2) for its version, e.g. http://localhost:8000")
    b.add_argument("--python", help="target interpreter path or version (3.11, 3.11.7); default: this Python")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--gpu", dest="gpu", action="store_true", default=True, help="TRITON_ENABLE_GPU=ON (default)")
    g.add_argument("--no-gpu", dest="gpu", action="store_false", help="CPU-only stub (no CUDA toolkit needed)")
    b.add_argument("--output", "-o", help="stub file or directory (default ./stub-r<YY.MM>-py<X.Y>/)")
    b.add_argument("--work-dir", help="clone/build directory (default ./build/stub-r<YY.MM>-py<X.Y>)")
    b.add_argument("--python-backend-src", help="local python_backend checkout at r<YY.MM> (skips the clone)")
    for name, dest in FETCH_DEPS.items():
        b.add_argument(f"--{dest.replace('_', '-')}", dest=dest, metavar="DIR",
                       help=f"local source for FetchContent {name} (FETCHCONTENT_SOURCE_DIR_{name})")
    b.add_argument("--boost", metavar="SRC",
                   help="local boost instead of the build's download: a boost tarball, an unpacked boost tree or a "
                   "headers directory holding boost/ (/usr/include with libboost-dev); any release")
    b.add_argument("--offline", action="store_true",
                   help="FETCHCONTENT_FULLY_DISCONNECTED=ON; refuses to start unless --python-backend-src, every "
                   "--*-src and --boost are given")
    b.add_argument("--cmake-arg", dest="cmake_args", action="append", default=[], metavar="ARG",
                   help="extra argument for the configure step, repeatable; placed last, so a -D here wins over ours. "
                   "Use the = form for values starting with '-': --cmake-arg=-DCMAKE_CXX_FLAGS=-O2")
    b.add_argument("--repo-organization", help="TRITON_REPO_ORGANIZATION (git base URL, r24.03+)")
    b.add_argument("--cuda-root", help="CUDAToolkit_ROOT (default $CUDA_HOME / $CUDA_PATH)")
    b.add_argument("--jobs", "-j", type=int, help="parallel build jobs (default: all cores)")
    b.add_argument("--dry-run", action="store_true", help="print the plan and the requirement checks, build nothing")
    b.set_defaults(func=run_build)

    i = ssub.add_parser("inspect", help="which Python a stub embeds and where its libpython resolves")
    i.add_argument("stub", help="path of a triton_python_backend_stub binary")
    i.set_defaults(func=run_inspect)

    r = ssub.add_parser("releases", help="print container release -> server version -> Python -> numpy table")
    r.set_defaults(func=run_releases)


def plan_from_args(args: argparse.Namespace) -> StubPlan:
    """Turn parsed CLI arguments into a plan (raises InputError on bad input)."""
    release, source = detect_release(args.triton, args.server_url)
    python = find_python(args.python)
    deps = {name: getattr(args, dest) for name, dest in FETCH_DEPS.items()}
    return make_plan(
        release, python, gpu=args.gpu, output=args.output, work_dir=args.work_dir,
        python_backend_src=args.python_backend_src, dep_sources=deps, offline=args.offline,
        boost=args.boost, repo_organization=args.repo_organization, cuda_root=args.cuda_root,
        jobs=args.jobs, release_source=source, extra_cmake_args=args.cmake_args,
    )


def run_build(args: argparse.Namespace) -> int:
    """CLI: plan, check, build, verify, print deployment instructions."""
    try:
        plan = plan_from_args(args)
    except InputError as exc:
        print(f"stub build: {exc}", file=sys.stderr)
        return 2
    print(plan.render())
    if args.dry_run:
        print("requirements:")
        checks = check_requirements(plan)
        for c in checks:
            print("  " + c.render())
        bad = [c for c in checks if c.name == "sources" and not c.ok]
        if bad:  # the caller's input is wrong: the real run would fail at configure
            print(f"stub build: {bad[0].detail}", file=sys.stderr)
            return 2
        return 0
    try:
        result = build_stub(plan)
    except BuildError as exc:
        print(f"stub build: {exc}", file=sys.stderr)
        return 1
    print(deployment_instructions(result.stub, plan.python, plan.release, result.verification.info.runpath))
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    """CLI: print a stub's libpython and Python version."""
    try:
        info = inspect_stub(args.stub)
    except InputError as exc:
        print(f"stub inspect: {exc}", file=sys.stderr)
        return 2
    print(f"stub:      {info.path}")
    print(f"python:    {info.python_version or 'unknown (no libpython in DT_NEEDED)'}")
    print(f"libpython: {info.libpython_soname} -> {info.resolved_libpython or 'NOT FOUND here'}")
    bad = unsafe_runpath(info.runpath)
    print(f"runpath:   {':'.join(info.runpath) or '-'}"
          + (f"   UNSAFE: empty or relative entries {bad} resolve against the working directory" if bad else ""))
    print(f"needed:    {', '.join(info.needed)}")
    return 0 if info.libpython_soname and not bad else 1


def run_releases(args: argparse.Namespace) -> int:
    """CLI: the release table this tool uses."""
    print(f"{'container':<10} {'server':<8} {'python':<7} {'numpy':<16} {'pybind11':<18} {'cmake>=':<8} boost")
    rel = FIRST_RELEASE
    while rel <= LAST_KNOWN_RELEASE:
        pin = boost_for(rel)
        boost = "-" if pin is None else pin.version + (" (TRITON_BOOST_URL)" if rel >= BOOST_URL_FIRST_RELEASE else "")
        print(f"{rel.name:<10} {server_version_for(rel):<8} {default_python_for(rel):<7} "
              f"{numpy_requirement(rel):<16} {pybind11_for(rel):<18} {'.'.join(map(str, cmake_minimum_for(rel))):<8} "
              f"{boost}")
        idx = rel._index() + 1
        rel = Release(idx // 12, idx % 12 + 1)
    return 0


__all__ = [
    "Release", "PythonInfo", "StubPlan", "Check", "StubInfo", "Verification", "BuildError", "BuildResult",
    "BoostPin", "BoostSource", "BoostSetup", "boost_for", "inspect_boost", "boost_setup", "unsafe_runpath",
    "parse_release", "server_version_for", "release_for_server", "resolve_release", "default_python_for",
    "numpy_requirement", "detect_release", "release_from_server", "find_python", "query_python", "make_plan",
    "check_requirements", "inspect_stub", "verify_stub", "build_stub", "deployment_instructions", "add_parser",
]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m triton_textops.tools.stub build ...`: the same commands without importing the other CLI modules
    (what `stub_build/build_stub.sh` uses, so it runs from a source checkout with only the standard library)."""
    parser = argparse.ArgumentParser(prog="triton-textops")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv) if argv is not None else None)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
