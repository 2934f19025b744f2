"""The env a repository's python models share (`repo create --pack-env`, `example readability --pack-env`)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from triton_textops.tools.envs.check import check_env
from triton_textops.tools.envs.pack import default_textops_source, make_pack_plan, pack_env
from triton_textops.tools.stub.releases import default_python_for, resolve_release

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


