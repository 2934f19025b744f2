"""Every example in README.md and the docs it links (issue 26: docs cannot rot).

Each fenced block has an info string that says what it is, and the test treats it accordingly:

* ``python``: run, as written, on this CPU-only machine (no CUDA device visible): a document's blocks run in
  order in one fresh directory and one namespace, as a reader pasting them one after the other;
* ``bash``: every command is checked: ``triton-textops ...`` and the ``envs/pack_env.sh`` /
  ``stub_build/build_stub.sh`` wrappers parse with the real command line (options and choices exist), ``make X``
  names a Makefile target, ``pip install 'triton-textops[x]'`` a real extra; other tools (aws, kubectl, cmake, ...)
  are listed as external and not run;
* ``pbtxt``: parses with Triton's config schema (a fragment of a ``config.pbtxt``);
* ``text``: program output, not run.

A block may be left out only with ``<!-- docs-test: skip (reason) -->`` right above it (a cloud account, a
cluster, a real server); the reasons are part of the test. Program output without an info string is allowed only
in benchmarks/RESULTS.md (results, not examples).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
KINDS = {"python", "bash", "pbtxt", "text"}
OUTPUT_ONLY = {"benchmarks/RESULTS.md"}  # blocks there are measured output
EXTERNAL = {"aws", "gsutil", "kubectl", "curl", "git", "cmake", "install", "readelf", "ldd", "echo"}
WRAPPERS = {"envs/pack_env.sh": ["env", "pack"], "stub_build/build_stub.sh": ["stub", "build"]}


@dataclass
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    kind: str
    code: str
    skip: str | None  # the reason given in the skip marker

    @property
    def label(self) -> str:
        return f"{self.doc}:{self.line}"


def linked_docs() -> list[str]:
    """README.md and the repository's markdown files it links to."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = ["README.md"]
    for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")) and (REPO / target).is_file() and target not in out:
            out.append(target)
    return out


def blocks(doc: str) -> list[Block]:
    lines = (REPO / doc).read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```\s*(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, kind = i, m.group(1)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        skip = None
        if start > 0 and lines[start - 1].rstrip().endswith("-->"):
            k = start - 1
            while "<!--" not in lines[k]:
                k -= 1
            comment = " ".join(x.strip() for x in lines[k:start])
            sm = re.match(r"<!-- docs-test: skip \((.+)\) -->$", comment)
            assert sm, f"{doc}:{k + 1}: a comment right above a code block must be <!-- docs-test: skip (reason) -->"
            skip = sm.group(1)
        out.append(Block(doc, start + 1, kind, "\n".join(lines[start + 1:end]) + "\n", skip))
        i = end + 1
    return out


DOCS = linked_docs()
ALL = [b for d in DOCS for b in blocks(d)]


def test_the_readme_opens_with_how_to_install() -> None:
    """Issue 47: the first lines say how to install from a clone and from the wheel (no release on the index
    yet); `make wheel` writes the wheel they name."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = blocks("README.md")[0]
    assert first.line < 5 and first.kind == "bash", first
    commands = _commands(first.code)
    assert any(c.split("#")[0].split() == ["pip", "install", "."] for c in commands), commands
    assert any(c.split("#")[0].split() == ["make", "wheel"] for c in commands), commands
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f"dist/triton_textops-{version}-py3-none-any.whl" in text.split("## ")[0]
    assert re.search(r"^wheel:.*\n\t.*pip wheel --no-deps -w dist \.$", (REPO / "Makefile").read_text(), re.M)


def test_clients_connect_to_the_ports_serve_is_given() -> None:
    """Issue 47: `serve` picks free ports unless told; a client block connecting to a fixed port follows a serve
    command that sets it (--grpc-port / --http-port), or it gets Connection refused."""
    checked = 0
    bs = blocks("README.md")
    for i, b in enumerate(bs):
        for port in re.findall(r'InferenceServerClient\("127\.0\.0\.1:(\d+)"', b.code):
            kind = "grpc" if "grpc" in b.code else "http"
            before = [c for p in bs[:i] if p.kind == "bash" for c in _commands(p.code) if " serve " in c]
            assert before and f"--{kind}-port {port}" in before[-1], (b.label, port, before[-1:])
            checked += 1
    assert checked


def test_the_readme_links_its_docs() -> None:
    assert {"envs/README.md", "deploy/README.md", "stub_build/README.md", "examples/README.md", "docs/features.md",
            "docs/models.md"} <= set(DOCS)


def test_every_block_says_what_it_is() -> None:
    bad = [b.label for b in ALL if b.kind not in KINDS and not (b.kind == "" and b.doc in OUTPUT_ONLY)]
    assert bad == [], f"tag these blocks with one of {sorted(KINDS)}"
    skipped = [(b.label, b.skip) for b in ALL if b.skip is not None]
    assert all(len(reason) > 20 for _, reason in skipped), skipped


# ------------------------------------------------------------------------------------------------ python

_RUNNER = r"""
import json, sys, traceback
ns = {"__name__": "__main__"}
for label, code in json.load(open(sys.argv[1])):
    try:
        exec(compile(code, label, "exec"), ns)
    except BaseException:
        print("EXAMPLE FAILED: " + label, file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


@pytest.mark.parametrize("doc", [d for d in DOCS if any(b.kind == "python" and b.skip is None for b in blocks(d))])
def test_python_examples_run_as_written(doc: str, tmp_path: Path) -> None:
    runnable = [(b.label, b.code) for b in blocks(doc) if b.kind == "python" and b.skip is None]
    script = tmp_path / "examples.json"
    script.write_text(json.dumps(runnable))
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", NUMBA_DISABLE_CUDA="1")  # a CPU-only machine
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    res = subprocess.run([sys.executable, "-c", _RUNNER, str(script)], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-6000:]


# ------------------------------------------------------------------------------------------------ bash


def _commands(code: str) -> list[str]:
    """Logical command lines: backslash continuations and quotes spanning lines joined, blank lines dropped."""
    out, cur = [], ""
    for line in code.splitlines():
        cur = f"{cur}\n{line}" if cur else line
        if cur.rstrip().endswith("\\"):
            cur = cur.rstrip()[:-1]
            continue
        try:
            shlex.split(cur, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        if cur.strip():
            out.append(cur)
        cur = ""
    assert not cur.strip(), f"unterminated command: {cur!r}"
    return out


def _cli_args(tokens: list[str]) -> list[str]:
    """Doc notation to arguments: [optional] brackets dropped, `a|b` choices -> a, `...` dropped."""
    out = []
    for t in tokens:
        t = t.strip("[]")
        if t in ("", "..."):
            continue
        out.append(t.split("|")[0] if "|" in t and not t.startswith("-") else t)
    return out


def _check_cli(args: list[str]) -> str | None:
    from triton_textops.cli import build_parser

    if "--" in args:
        args = args[:args.index("--")]
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        return f"triton-textops {shlex.join(args)} does not parse (exit {exc.code})"
    return None


def _check_segment(tokens: list[str]) -> str | None:
    while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):  # VAR=value prefixes
        tokens = tokens[1:]
    if not tokens:
        return None
    cmd, args = tokens[0], tokens[1:]
    if cmd == "triton-textops":
        return _check_cli(_cli_args(args))
    if cmd in WRAPPERS:
        if not (REPO / cmd).is_file() or not os.access(REPO / cmd, os.X_OK):
            return f"{cmd} is not an executable script of the repository"
        return _check_cli(WRAPPERS[cmd] + _cli_args(args))
    if cmd == "make":
        targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
        wanted = [a for a in args if "=" not in a] or ["test"]
        missing = [t for t in wanted if t not in targets]
        return f"make: no target {missing}" if missing else None
    if cmd == "pip":
        extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for a in args:
            if a == "triton-textops" or a.startswith("triton-textops["):
                return f"pip install {a}: no release is on the package index; install from a clone or the wheel"
            # a clone ('.[x]') or the wheel ('dist/triton_textops-...whl[x]'): the extras must exist
            m = re.match(r"^(?:\.|\S*triton_textops-\S+\.whl)(?:\[([\w,-]+)\])?$", a)
            if m and m.group(1):
                bad = [e for e in m.group(1).split(",") if e not in extras]
                if bad:
                    return f"pip install {a}: no extra {bad} in pyproject.toml"
        return None
    if cmd in EXTERNAL:
        return None
    return f"unknown command {cmd!r}: a triton-textops command, a repository script, make, pip or {sorted(EXTERNAL)}"


@pytest.mark.parametrize("doc", [d for d in DOCS if any(b.kind == "bash" for b in blocks(d))])
def test_shell_examples_name_real_commands_and_options(doc: str) -> None:
    problems, checked = [], 0
    for b in blocks(doc):
        if b.kind != "bash" or b.skip is not None:
            continue
        for command in _commands(b.code):
            tokens = shlex.split(command, comments=True)
            segment: list[str] = []
            for t in [*tokens, "|"]:
                if t in ("|", "&&", ";"):
                    why = _check_segment(segment)
                    checked += bool(segment)
                    if why:
                        problems.append(f"{b.label}: {why}")
                    segment = []
                else:
                    segment.append(t)
    assert checked and problems == []


# ------------------------------------------------------------------------------------------------ pbtxt


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "pbtxt"], ids=lambda b: b.label)
def test_config_fragments_parse_with_tritons_schema(block: Block) -> None:
    from triton_textops.triton.config import parse_config_text

    cfg = parse_config_text(block.code, block.label)
    assert cfg.ListFields(), block.code
