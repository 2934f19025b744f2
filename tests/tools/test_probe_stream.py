"""The probe of decoupled models: its stdlib gRPC streaming call against a real gRPC server (grpcio serving
Triton's ``GRPCInferenceService`` from tritonclient's generated code) that plays a decoupled model answering right,
with an error (a dead stub), with nothing, with a NaN, the wrong output, or too late; and the exec-probe script the
KServe manifest runs taking that path for a decoupled config (read from the config, not its text)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from triton_textops.tools.probe import exec_probe_command, is_decoupled, probe_request, probe_stream

CONFIG = {
    "name": "postprocessing", "backend": "python", "max_batch_size": 8,
    "model_transaction_policy": {"decoupled": True},
    "input": [{"name": "TOKENS_BATCH", "data_type": "TYPE_INT32", "dims": ["-1", "-1"]},
              {"name": "SEQUENCE_LENGTH", "data_type": "TYPE_INT32", "dims": ["-1"]},
              {"name": "TEXT", "data_type": "TYPE_STRING", "dims": ["1"]}],
    "output": [{"name": "OUTPUT", "data_type": "TYPE_STRING", "dims": ["-1"]},
               {"name": "SCORE", "data_type": "TYPE_FP32", "dims": ["1"]}],
}


@pytest.fixture(scope="module")
def port():
    """The fake's port (tests/tools/fake_grpc_triton.py, its own process: the model name picks its answer)."""
    import importlib.util

    if importlib.util.find_spec("grpc") is None or importlib.util.find_spec("tritonclient") is None:
        pytest.skip("needs grpcio and tritonclient[grpc] (the fake's process imports them, not this one)")
    fake = Path(__file__).with_name("fake_grpc_triton.py")
    with subprocess.Popen([sys.executable, str(fake)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as proc:
        try:
            yield int(proc.stdout.readline())
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)


def test_decoupled_is_read_from_the_config() -> None:
    assert is_decoupled(CONFIG) and probe_request("m", CONFIG).decoupled
    assert not probe_request("m", {**CONFIG, "model_transaction_policy": {"decoupled": False}}).decoupled
    assert not probe_request("m", {k: v for k, v in CONFIG.items() if k != "model_transaction_policy"}).decoupled


@pytest.mark.parametrize(("mode", "why"), [
    ("good", None), ("good_no_final", None),
    ("dead", "Stub process 'postprocessing_0_0' is not healthy"), ("silent", "ended without a response"),
    ("nan", "SCORE is not finite"), ("wrong", "SCORE is FP64, expected FP32"), ("slow", "within 1 s"),
])
def test_probe_stream_answers(port: int, mode: str, why: str | None) -> None:
    target = probe_request(mode, CONFIG)  # (the fake checks the request of the "good" ones)
    t0 = time.monotonic()
    error = probe_stream("127.0.0.1", port, mode, target.body, target.expect, 1.0)
    assert time.monotonic() - t0 < 2.5  # bounded by the timeout (the slow answer comes after 3 s)
    assert (error is None) if why is None else (why in str(error)), error


def test_nothing_listening_fails_fast() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    target = probe_request("postprocessing", CONFIG)
    assert "no answer" in probe_stream("127.0.0.1", port, "postprocessing", target.body, target.expect, 1.0)


def test_exec_probe_script_streams_to_decoupled_models(port: int) -> None:
    """The KServe manifest's script (the Triton image's python3, no grpcio needed: -S -I, no site-packages) probes
    the decoupled model over gRPC: exit 0 while it answers, 1 naming it once its stub is dead."""
    for model, rc in (("good", 0), ("dead", 1)):
        cmd = exec_probe_command([probe_request(model, CONFIG)], port=1, grpc_port=port, timeout=5)  # (no HTTP)
        res = subprocess.run([sys.executable, "-S", "-I", *cmd[1:]], capture_output=True, text=True, timeout=60)
        assert res.returncode == rc, res.stderr
        if rc:
            assert "liveness probe: dead:" in res.stderr and "not healthy" in res.stderr
