"""`triton-textops stub build`: compile a `triton_python_backend_stub` for a target Python and Triton release.

Why: the Python backend runs `model.py` in a stub process linked against ONE libpython (3.10 in containers
23.05-24.10, 3.12 from 24.11). An execution environment with another Python needs a stub compiled from
python_backend's `r<YY.MM>` branch, with the common/core/backend tags of the same release, against that
Python's shared libpython. One module per layer: `releases` (server version <-> container release, default
Python, numpy bound), `detect` (which release), `boost`, `plan` (the commands), `requirements` (every
requirement checked up front, saying what is missing and how to get it), `build`, `elf` (which libpython the
binary links, where to put it) and `cli`. `stub_build/build_stub.sh` is a thin wrapper around the CLI."""

from __future__ import annotations

from triton_textops.tools.interpreter import PythonInfo, find_python, query_python
from triton_textops.tools.stub.boost import (
    BOOST_OVERRIDE_MARKER,
    BoostSetup,
    BoostSource,
    boost_setup,
    inspect_boost,
)
from triton_textops.tools.stub.build import BuildError, BuildResult, build_stub
from triton_textops.tools.stub.cli import (
    add_parser,
    main,
    plan_from_args,
    run_build,
    run_inspect,
    run_releases,
)
from triton_textops.tools.stub.detect import detect_release, release_from_server
from triton_textops.tools.stub.elf import (
    StubInfo,
    Verification,
    deployment_instructions,
    inspect_stub,
    read_dynamic,
    unsafe_runpath,
    verify_stub,
)
from triton_textops.tools.stub.plan import ALL_REQUIREMENTS, FETCH_DEPS, StubPlan, make_plan
from triton_textops.tools.stub.releases import (
    BACKEND_DIR_STUB_FIRST_RELEASE,
    BOOST_URL_FIRST_RELEASE,
    CMAKE_3_31_FIRST_RELEASE,
    CMAKE_POLICY_VERSION_MINIMUM,
    FIRST_RELEASE,
    LAST_KNOWN_RELEASE,
    NUMPY2_FIRST_RELEASE,
    PB_REPO,
    REPO_ORGANIZATION_FIRST_RELEASE,
    STUB_NAME,
    STUB_TARGET,
    BoostPin,
    Release,
    boost_for,
    cmake_minimum_for,
    default_python_for,
    numpy_requirement,
    parse_release,
    pybind11_for,
    release_for_server,
    release_notes,
    resolve_release,
    server_version_for,
)
from triton_textops.tools.stub.requirements import (
    Check,
    check_boost,
    check_cmake,
    check_compiler,
    check_cuda,
    check_git,
    check_libarchive,
    check_python,
    check_rapidjson,
    check_requirements,
    check_sources,
    check_zlib,
    search_prefixes,
)

__all__ = [  # every public name of the module this package replaced
    "PythonInfo", "find_python", "query_python", "PB_REPO", "STUB_NAME", "STUB_TARGET",
    "CMAKE_POLICY_VERSION_MINIMUM", "Release", "FIRST_RELEASE", "LAST_KNOWN_RELEASE", "NUMPY2_FIRST_RELEASE",
    "CMAKE_3_31_FIRST_RELEASE", "BOOST_URL_FIRST_RELEASE", "REPO_ORGANIZATION_FIRST_RELEASE",
    "BACKEND_DIR_STUB_FIRST_RELEASE", "parse_release", "server_version_for", "release_for_server",
    "resolve_release", "default_python_for", "numpy_requirement", "pybind11_for", "cmake_minimum_for",
    "BoostPin", "boost_for", "release_notes", "release_from_server", "detect_release", "BoostSource",
    "inspect_boost", "BOOST_OVERRIDE_MARKER", "BoostSetup", "boost_setup", "FETCH_DEPS", "ALL_REQUIREMENTS",
    "StubPlan", "make_plan", "Check", "search_prefixes", "check_cmake", "check_compiler", "check_git",
    "check_rapidjson", "check_libarchive", "check_zlib", "check_boost", "check_python", "check_cuda",
    "check_sources", "check_requirements", "StubInfo", "read_dynamic", "unsafe_runpath", "inspect_stub",
    "Verification", "verify_stub", "deployment_instructions", "BuildError", "BuildResult", "build_stub",
    "add_parser", "plan_from_args", "run_build", "run_inspect", "run_releases", "main",
]
