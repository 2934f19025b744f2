"""`triton-textops serve` in the real server when models fail to load (issue 26): one line per failed model with
the server's reason, and tritonserver arguments after `--` (here --exit-on-error=false: it serves the others)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from triton_helpers import TIMINGS, Runtime, make_repository

pytestmark = pytest.mark.server

BROKEN = """name: "broken"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""
ONNX_REASON = "  broken: Invalid argument: unable to find backend library for backend 'onnxruntime'"


@pytest.fixture(scope="module")
def broken_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repository(tmp_path_factory.mktemp("serve_cli"), "add_sub")
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "config.pbtxt").write_text(BROKEN)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"")
    (repo / "pybad" / "1").mkdir(parents=True)
    (repo / "pybad" / "config.pbtxt").write_text(
        (repo / "add_sub" / "config.pbtxt").read_text().replace('name: "add_sub"', 'name: "pybad"'))
    (repo / "pybad" / "1" / "model.py").write_text('raise RuntimeError("no model here")\n')
    return repo


def _serve(repo: Path, runtime: Runtime, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "triton_textops.cli", "serve", str(repo), "--python-env",
                             str(runtime.python_env), "--startup-timeout", "120", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo.parent)


def test_serve_names_each_failed_model_and_passes_server_args(triton_runtime: Runtime, broken_repo: Path) -> None:
    t0 = time.monotonic()
    proc = _serve(broken_repo, triton_runtime)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, out + err
    lines = err.splitlines()
    assert lines[0] == "tritonserver could not load 2 model(s):", err
    assert lines[1].startswith(ONNX_REASON), err
    assert lines[2] == "  pybad: Internal: RuntimeError: no model here", err
    assert lines[3].startswith("full server log: ") and len(lines) == 4 and "55 MB" not in out  # no 20 KB of log
    log = Path(lines[3].split(": ", 1)[1])
    assert "failed to load 'pybad'" in log.read_text()
    log.unlink()

    # --exit-on-error=false after --: the server comes up, says which models failed, serves add_sub
    proc = _serve(broken_repo, triton_runtime, "--", "--exit-on-error=false", "--log-verbose=1")
    try:
        assert proc.stdout is not None
        seen = []
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:  # bounded: the process exits (EOF) if the server does not come up
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("Press Ctrl-C"):
                break
        assert seen and seen[-1].startswith("Press Ctrl-C"), "".join(seen) + (proc.stderr.read() if proc.poll() else "")
        url = next(s.split()[-1] for s in seen if s.strip().startswith("HTTP")).removeprefix("http://")  # host:port
        import tritonclient.http as http  # noqa: PLC0415

        client = http.InferenceServerClient(url)
        assert client.is_model_ready("add_sub") and not client.is_model_ready("broken")
        assert client.get_log_settings()["log_verbose_level"] == 1  # the passed flag won over serve's own 0
        client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err.splitlines()[:3] == ["tritonserver could not load 2 model(s):", err.splitlines()[1],
                                    "  pybad: Internal: RuntimeError: no model here"]
    assert err.splitlines()[1].startswith(ONNX_REASON)
    TIMINGS["serve CLI: failing start + --exit-on-error=false"] = time.monotonic() - t0
