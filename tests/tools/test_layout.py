"""The package's layout after the tools moved into ``triton_textops.tools``: the library layers stay free of the
operator's tools, the old top-level tool modules are gone (no aliases), and every command is still there."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
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


def _tool_module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _tools_import_graph() -> dict[str, set[str]]:
    """module -> the tools modules it imports anywhere (top level, in functions, under TYPE_CHECKING)."""
    files = {_tool_module(f): f for f in sorted((PKG / "tools").rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, f in files.items():
        deps = set()
        for m in _imports(f):
            while m and m not in files:  # `from pkg.mod import name` lists pkg.mod.name too
                m = m.rpartition(".")[0]
            if m and m != name and m != "triton_textops.tools":
                deps.add(m)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_tools_import_graph_has_no_cycle() -> None:
    """Issue 26: server, envs and repo.generate imported each other in a circle (also through lazy imports)."""
    graph = _tools_import_graph()
    assert "triton_textops.tools.repo.requirements" in graph["triton_textops.tools.server.runtime_env"]
    assert "triton_textops.tools.envs" in graph["triton_textops.tools.repo.generate"]  # the check sees lazy imports
    assert _cycles(graph) == []


@pytest.mark.parametrize("module,absent", [
    ("triton_textops.tools.server", ("triton_textops.tools.envs", "triton_textops.tools.repo.generate")),
    ("triton_textops.tools.envs", ("triton_textops.tools.server", "triton_textops.tools.repo.generate")),
    ("triton_textops.tools.repo.generate", ("triton_textops.tools.server",)),
])
def test_each_tool_module_imports_alone(module: str, absent: tuple[str, ...]) -> None:
    """In a fresh interpreter, each of the three imports without pulling in the others at import time."""
    code = (f"import sys, {module}; bad = [m for m in {list(absent)!r} if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
