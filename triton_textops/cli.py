"""`triton-textops` command line. Each tool module contributes its subcommands via ``add_parser``."""

from __future__ import annotations

import argparse
import importlib
import sys

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="triton-textops", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
