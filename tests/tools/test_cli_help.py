"""What `--help` shows a user (issue 26): no developer docstrings or Sphinx markup, every option described."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from triton_textops.cli import _walk, build_parser, main, plain_text

ROOT = Path(__file__).resolve().parents[2]

PARSERS = {p.prog: p for p in _walk(build_parser())}
MARKUP = re.compile(r":(?:func|mod|class|meth|attr|data|exc|obj):`|``")


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_help_is_plain_and_every_option_is_described(prog: str) -> None:
    parser = PARSERS[prog]
    text = parser.format_help()
    assert not MARKUP.search(text), MARKUP.search(text)
    assert "add_parser" not in text
    bare = [a.option_strings or [a.dest] for a in parser._actions
            if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert bare == []


@pytest.mark.parametrize("prog", sorted(p for p, parser in PARSERS.items()
                                         if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)))
def test_every_command_has_a_description(prog: str) -> None:
    """Issue 47: `stub build`, `env pack|check|spec` showed only their options in --help."""
    description = PARSERS[prog].description
    assert description and len(description) > 40, (prog, description)


def test_top_level_and_probe_help() -> None:
    top = PARSERS["triton-textops"].format_help()
    assert "serve, probe, pack and deploy" in top and "subcommands" not in top
    probe = PARSERS["triton-textops probe"].format_help()
    assert "exit status 1" in probe and "probe_request" not in probe


def test_serve_options_say_their_defaults() -> None:
    serve = PARSERS["triton-textops serve"]
    for action in serve._actions:
        if action.option_strings and action.dest != "help":
            assert "default" in action.help, action.option_strings


def test_plain_text() -> None:
    assert plain_text("see :func:`probe_model` and ``x``") == "see probe_model and `x`"
    assert plain_text(":class:`~triton_textops.tools.server.TritonServer`") == "TritonServer"
    assert plain_text(":mod:`triton_textops.tools.probe`") == "triton_textops.tools.probe"


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_command_runs_with_help(prog: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`triton-textops ... --help` exits 0 and prints that command's usage (issue 48: the CLI kept through the
    tools' split into packages)."""
    with pytest.raises(SystemExit) as exc:
        main([*prog.split()[1:], "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {prog}"), out[:200]


@pytest.mark.parametrize("module,args", [
    ("triton_textops.tools.stub", ["stub", "build"]),
    ("triton_textops.tools.envs", ["env", "pack"]),
])
def test_module_entry_points_used_by_the_shell_wrappers(module: str, args: list[str]) -> None:
    """stub_build/build_stub.sh and envs/pack_env.sh run `python -m <package> ...`."""
    res = subprocess.run([sys.executable, "-m", module, *args, "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: triton-textops {' '.join(args)}"), res.stdout[:200]
