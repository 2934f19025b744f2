"""`triton-textops env pack|check|spec` (also `python -m triton_textops.tools.envs env ...`)."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence

from triton_textops.errors import InputError
from triton_textops.tools.envs.check import check_env
from triton_textops.tools.envs.pack import make_pack_plan, pack_env
from triton_textops.tools.envs.spec import BACKEND_MODULES, render_spec
from triton_textops.tools.stub.detect import detect_release
from triton_textops.tools.stub.elf import inspect_stub
from triton_textops.tools.stub.releases import default_python_for, resolve_release


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`triton-textops env pack|check|spec`."""
    p = sub.add_parser("env", help="pack or check a Python execution environment for EXECUTION_ENV_PATH")
    esub = p.add_subparsers(dest="env_command", required=True)

    k = esub.add_parser("pack", help="build an env (conda+conda-pack, else venv+venv-pack) -> custom_env.tar.gz",
                        description="Build a Python execution environment for EXECUTION_ENV_PATH (conda + "
                        "conda-pack when conda is on PATH, else venv + venv-pack: pip install 'triton-textops[pack]') "
                        "with the numpy the target Triton release's stub needs and triton-textops, pack it as a "
                        "tarball (or --dir) and check the result with `env check`. See envs/README.md.")
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

    c = esub.add_parser("check", help="check an env (tarball or directory) against a stub / Triton release",
                        description="Check an execution environment (a .tar.gz as EXECUTION_ENV_PATH names it, or "
                        "a directory) against the stub that will run it or a Triton release: Python version, "
                        "numpy bound, array libraries that import, paths of the build machine. Exit status 1 on a "
                        "failure, 2 on bad input.")
    c.add_argument("env", help="the env: a .tar.gz (as EXECUTION_ENV_PATH names it) or a directory")
    c.add_argument("--stub", help="the stub that will run it (Python read from its DT_NEEDED libpython)")
    c.add_argument("--triton", help="server release (24.10) or version (2.51.0): stock-stub Python and numpy bound")
    c.add_argument("--backend", action="append", choices=sorted(BACKEND_MODULES), default=None,
                   help="array libraries that must import (repeatable; default numpy)")
    c.add_argument("--build-prefix", action="append", default=[], help="path of the env on the build machine")
    c.set_defaults(func=run_check)

    s = esub.add_parser("spec", help="print a conda environment.yml or pip requirements.txt for a target",
                        description="Print a conda environment.yml or a pip requirements.txt for an execution "
                        "environment that a Triton release (--triton) can run: its Python, the numpy and "
                        "libstdc++ pins, triton-textops (and cupy with --kind gpu). Nothing is installed.")
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
    print(plan.render(commands=args.dry_run))  # a real run prints each command as it runs it
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

