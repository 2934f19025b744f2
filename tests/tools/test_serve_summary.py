"""`triton-textops serve` without a server: the load-failure summary, the pass-through of tritonserver arguments
and the download note (issue 26). tests/server/test_serve_cli.py runs the same in the real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_textops.cli import main
from triton_textops.tools.server import cli as srv  # the CLI module: what `serve` looks up at run time
from triton_textops.tools.server.process import exit_on_error

# Two lines of a real tritonserver 2.51 log (24.x quotes each message and escapes its newlines and quotes).
LOG = r'''I1201 17:53:27.900000 30209 model_lifecycle.cc:472] "loading: broken:1"
E1201 17:53:27.917843 30209 model_lifecycle.cc:642] "failed to load 'broken' version 1: Invalid argument: unable to find backend library for backend 'onnxruntime', try specifying runtime on the model configuration."
I1201 17:53:27.917896 30209 model_lifecycle.cc:777] "failed to load 'broken'"
E1201 17:53:28.077571 30209 model_lifecycle.cc:642] "failed to load 'pybad' version 1: Internal: RuntimeError: boom \"quoted\" here\n\nAt:\n  /tmp/srvexp/repo/pybad/1/model.py(1): <module>\n"
'''


def test_load_failures_gives_one_line_per_model_with_the_reason() -> None:
    assert srv.load_failures(LOG) == {
        "broken": "Invalid argument: unable to find backend library for backend 'onnxruntime', try specifying "
                  "runtime on the model configuration.",
        "pybad": 'Internal: RuntimeError: boom "quoted" here',
    }
    assert srv.load_failures("I1201 all good\n") == {}


class _FakeServer:
    """Stands in for TritonServer: records its arguments, fails like a server whose models did not load."""

    seen: dict = {}

    def __init__(self, repository: str, **kw: object) -> None:
        _FakeServer.seen = dict(kw, repository=repository)
        self.log = ("x" * 20000) + LOG
        Path(kw["log_path"]).write_text(self.log)  # type: ignore[arg-type]  # as the server writes its log

    def start(self) -> None:
        raise srv.TritonServerError("tritonserver exited with code 1 during startup\n" + self.log,
                                    srv.load_failures(self.log))

    def stop(self) -> None:
        pass


def test_serve_prints_one_line_per_failed_model_and_passes_server_args(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setattr(srv, "TritonServer", _FakeServer)
    monkeypatch.setattr(srv, "find_server", lambda install=True: None)  # installed: no download note
    rc = main(["serve", str(tmp_path), "--log-file", str(tmp_path / "s.log"), "--",
               "--exit-on-error=true", "--log-verbose=1"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert _FakeServer.seen["extra_args"] == ["--exit-on-error=true", "--log-verbose=1"]
    assert err.splitlines() == [
        "tritonserver could not load 2 model(s):",
        "  broken: Invalid argument: unable to find backend library for backend 'onnxruntime', try specifying "
        "runtime on the model configuration.",
        "  pybad: Internal: RuntimeError: boom \"quoted\" here",
        f"full server log: {tmp_path / 's.log'}",
    ]
    assert "downloads" not in out


def test_download_note_only_when_the_server_is_not_there(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-repo"

    def absent(install: bool = True) -> None:
        raise srv.TritonServerError("not installed")

    monkeypatch.setattr(srv, "find_server", absent)
    monkeypatch.setattr(srv.tempfile, "tempdir", str(tmp_path))  # where serve's own log file goes
    assert main(["serve", str(missing)]) == 1  # fails before any server is needed: no repository
    assert "downloads the nvidia-pytriton wheel, ~55 MB" in capsys.readouterr().out
    monkeypatch.setattr(srv, "find_server", lambda install=True: None)
    assert main(["serve", str(missing)]) == 1
    out, err = capsys.readouterr()
    assert "55 MB" not in out and "is not a directory" in err
    assert "full server log" not in err and list(tmp_path.glob("triton-textops-serve-*")) == []  # nothing ran


def test_serve_refuses_a_stray_argument(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["serve", str(tmp_path), "--", "exit-on-error=false"]) == 2
    assert "tritonserver arguments go after --" in capsys.readouterr().err


def test_exit_on_error_as_the_last_argument_leaves_it() -> None:
    assert exit_on_error([]) is True
    assert exit_on_error(["--exit-on-error=false"]) is False
    assert exit_on_error(["--exit-on-error=false", "--exit-on-error=true"]) is True


def test_a_slow_start_reports_progress(tmp_path, monkeypatch) -> None:
    """Issue 47: the first serve of a packed env waited 83 s in silence; TritonServer.progress gets a line every
    progress_every_s seconds while the server is still starting."""
    import subprocess
    import sys

    from triton_textops.tools.server import TritonServer, TritonServerError
    from triton_textops.tools.server import process as proc_mod

    server = TritonServer(tmp_path, startup_timeout=0.5)
    server.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    lines: list[str] = []
    server.progress, server.progress_every_s = lines.append, 0.1
    monkeypatch.setattr(proc_mod, "_answers", lambda call: None)  # never ready
    try:
        with pytest.raises(TritonServerError, match="not ready after"):
            server._wait_ready()
    finally:
        server.process.kill()
        server.process.wait()
    assert lines and all(line.startswith("still starting (") for line in lines), lines
