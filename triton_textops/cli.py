"""The ``triton-textops`` command line (developers: each tool module registers its commands with ``add_parser``)."""

from __future__ import annotations

import argparse
import importlib
import re
import sys

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
    parser = argparse.ArgumentParser(prog="triton-textops", description=DESCRIPTION)
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
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
