"""The package's layout after the tools moved into ``triton_textops.tools``: the library layers stay free of the
operator's tools, the old top-level tool modules are gone (no aliases), and every command is still there."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import triton_textops
from triton_textops.cli import build_parser

PKG = Path(triton_textops.__file__).resolve().parent
LIBRARY = ("ops", "models", "triton", "testing")
COMMANDS = {"demo", "example", "fit-features", "stub", "env", "serve", "probe", "repo", "deploy", "perf-analyzer"}


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return out


@pytest.mark.parametrize("layer", LIBRARY)
def test_library_layers_never_import_the_tools(layer: str) -> None:
    bad = [f"{f.relative_to(PKG)}: {m}" for f in sorted((PKG / layer).rglob("*.py"))
           for m in _imports(f) if m == "triton_textops.tools" or m.startswith("triton_textops.tools.")]
    assert bad == []


@pytest.mark.parametrize("name", ["server", "stub", "envs", "probe", "repo", "deploy", "example", "examples", "demo",
                                  "features_cli"])
def test_old_top_level_tool_modules_are_gone(name: str) -> None:
    assert importlib.util.find_spec(f"triton_textops.{name}") is None
    assert not (PKG / name).exists() and not (PKG / f"{name}.py").exists()


def test_every_command_is_registered_from_the_tools() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == COMMANDS
    for name, p in sub.choices.items():
        module = p.get_default("func").__module__ if p.get_default("func") else None
        if module is not None:  # commands with sub-subcommands set func one level down
            assert module.startswith("triton_textops.tools."), (name, module)
