"""The build plan: clone, configure and build commands for a release and a target Python, local sources."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.interpreter import PythonInfo
from triton_textops.tools.stub.boost import BoostSetup, BoostSource, boost_setup, inspect_boost
from triton_textops.tools.stub.releases import (
    CMAKE_POLICY_VERSION_MINIMUM,
    PB_REPO,
    REPO_ORGANIZATION_FIRST_RELEASE,
    STUB_NAME,
    STUB_TARGET,
    Release,
    boost_for,
    cmake_minimum_for,
    default_python_for,
    numpy_requirement,
    pybind11_for,
    release_notes,
    server_version_for,
)

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


