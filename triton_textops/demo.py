"""`triton-textops demo`: the main job (replaced by the real-server demo once it exists)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the example pipeline on bundled text")
    p.add_argument("input", nargs="?", help="file with one excerpt per line ('-' for stdin)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise SystemExit("demo: not built yet")
