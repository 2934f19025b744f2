"""`make demo ARGS=-` / `demo FILE`: excerpts are read as UTF-8 lines; a line that is not valid UTF-8 is skipped
with a message naming it, never a traceback (issue 26)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from triton_textops.tools.example.demo import read_excerpts


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_non_utf8_line_on_stdin_is_skipped_with_a_message(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"It was a fine day.\nbad \xff line\n\n" + "naïve café\r\n".encode()))
    texts, where = read_excerpts("-", 10)
    assert (texts, where) == (["It was a fine day.", "naïve café"], "stdin")
    assert capsys.readouterr().err == "demo: stdin line 2 is not valid UTF-8 (byte 0xff at offset 4): skipped\n"


def test_only_invalid_lines_is_a_clear_exit(tmp_path: Path) -> None:
    path = tmp_path / "excerpts.txt"
    path.write_bytes(b"\xff\xfe\n")
    with pytest.raises(SystemExit, match=f"demo: no excerpts in {path}"):
        read_excerpts(str(path), 10)


def test_demo_command_with_a_bad_stdin_line_ends_without_a_traceback(tmp_path: Path) -> None:
    """The CLI as `make demo ARGS=-` runs it, under the C locale, stopped before it trains (no excerpt left)."""
    res = subprocess.run([sys.executable, "-m", "triton_textops.cli", "demo", "-"], input=b"\xff\xfe bad\n",
                         capture_output=True, timeout=120, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    err = res.stderr.decode()
    assert res.returncode == 1 and "Traceback" not in err, err
    assert "demo: stdin line 1 is not valid UTF-8 (byte 0xff at offset 0): skipped" in err
    assert "demo: no excerpts in stdin" in err
