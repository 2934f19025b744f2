"""Requirement checks run before a build: each says what is missing and how to get it."""

from __future__ import annotations

import glob
import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.interpreter import PythonInfo
from triton_textops.tools.stub.plan import FETCH_DEPS, StubPlan
from triton_textops.tools.stub.releases import boost_for


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


