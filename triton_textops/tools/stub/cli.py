"""`triton-textops stub build|inspect|releases` (also `python -m triton_textops.tools.stub stub ...`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from triton_textops.errors import InputError
from triton_textops.tools.interpreter import find_python
from triton_textops.tools.stub.build import BuildError, build_stub
from triton_textops.tools.stub.detect import detect_release
from triton_textops.tools.stub.elf import deployment_instructions, inspect_stub, unsafe_runpath
from triton_textops.tools.stub.plan import FETCH_DEPS, StubPlan, make_plan
from triton_textops.tools.stub.releases import (
    BOOST_URL_FIRST_RELEASE,
    FIRST_RELEASE,
    LAST_KNOWN_RELEASE,
    Release,
    boost_for,
    cmake_minimum_for,
    default_python_for,
    numpy_requirement,
    pybind11_for,
    server_version_for,
)
from triton_textops.tools.stub.requirements import check_requirements


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`triton-textops stub build|inspect|releases`."""
    p = sub.add_parser("stub", help="build or inspect a triton_python_backend_stub for another Python")
    ssub = p.add_subparsers(dest="stub_command", required=True)

    b = ssub.add_parser("build", help="compile triton_python_backend_stub for a target Python and Triton release",
                        description="Compile Triton's triton_python_backend_stub from python_backend's sources for "
                        "a target Python (--python) and Triton release (--triton, or asked of --server-url), so a "
                        "server runs Python models in that Python (the stock stub embeds the container's). Checks "
                        "cmake, a C++ compiler and the Python's headers first; see stub_build/README.md.")
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

    i = ssub.add_parser("inspect", help="which Python a stub embeds and where its libpython resolves",
                        description="Read a triton_python_backend_stub binary (ELF, not run): the Python it embeds "
                        "(its DT_NEEDED libpython) and where that library resolves on this machine.")
    i.add_argument("stub", help="path of a triton_python_backend_stub binary")
    i.set_defaults(func=run_inspect)

    r = ssub.add_parser("releases", help="print container release -> server version -> Python -> numpy table",
                        description="Print the table of Triton container releases: server version, the stock "
                        "stub's Python and the numpy it needs.")
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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m triton_textops.tools.stub build ...`: the same commands without importing the other CLI modules
    (what `stub_build/build_stub.sh` uses, so it runs from a source checkout with only the standard library)."""
    parser = argparse.ArgumentParser(prog="triton-textops")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv) if argv is not None else None)
    return int(args.func(args) or 0)
