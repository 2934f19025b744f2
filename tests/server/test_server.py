"""TritonServer against a real tritonserver: inference over HTTP and gRPC, the model environment, errors, stop."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from triton_helpers import Runtime, make_repository, server_infer, start_server

import triton_textops
from triton_textops.tools.server import TritonServer, TritonServerError, port_is_free

pytestmark = pytest.mark.server

TEXTS = ["hello", "héllo wörld", ""]


def add_sub_inputs(n_rows: int = 3, width: int = 4) -> dict[str, np.ndarray]:
    in0 = (np.arange(n_rows * width, dtype=np.float32).reshape(n_rows, width) / 4).astype(np.float32)
    in1 = np.arange(n_rows * width, dtype=np.int32).reshape(n_rows, width)[::-1].copy() - 5
    text = np.array([[t.encode()] for t in TEXTS[:n_rows]], dtype=np.object_)
    return {"INPUT0": in0, "INPUT1": in1, "TEXT": text}


def expected_add_sub(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    in0, in1 = inputs["INPUT0"], inputs["INPUT1"]
    texts = [t.decode() for t in inputs["TEXT"].reshape(-1)]
    return {
        "OUTPUT0": (in0 + in1).astype(np.float32),
        "OUTPUT1": (in0 - in1).astype(np.float32),
        "TEXT_OUT": np.array([[f"{t.upper()}|{len(t)}".encode()] for t in texts], dtype=np.object_),
    }


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_add_sub(server: TritonServer, protocol: str) -> None:
    inputs = add_sub_inputs()
    url = server.http_url if protocol == "http" else server.grpc_url
    out, err = server_infer(url, "add_sub", inputs, ["OUTPUT0", "OUTPUT1", "TEXT_OUT"], protocol=protocol)
    assert err is None
    want = expected_add_sub(inputs)
    for name in ("OUTPUT0", "OUTPUT1"):
        assert out[name].dtype == np.float32
        np.testing.assert_array_equal(out[name], want[name])
    assert out["TEXT_OUT"].shape == (3, 1)
    assert out["TEXT_OUT"].tolist() == want["TEXT_OUT"].tolist()
    assert out["TEXT_OUT"][1, 0].decode() == "HÉLLO WÖRLD|11"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_requested_outputs_are_pruned(server: TritonServer, protocol: str) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    out, err = server_infer(url, "add_sub", add_sub_inputs(1), None, protocol=protocol)
    assert err is None and set(out) == {"OUTPUT0", "OUTPUT1", "TEXT_OUT"}
    import tritonclient.http as http
    from tritonclient.utils import np_to_triton_dtype

    client = http.InferenceServerClient(server.http_url)
    try:
        ins = []
        for name, arr in add_sub_inputs(1).items():
            ii = http.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
            ii.set_data_from_numpy(arr)
            ins.append(ii)
        res = client.infer("add_sub", ins, outputs=[http.InferRequestedOutput("OUTPUT1")])
        assert [o["name"] for o in res.get_response()["outputs"]] == ["OUTPUT1"]
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bad_request_gets_error_and_server_keeps_serving(server: TritonServer, protocol: str) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    bad = add_sub_inputs(1)
    bad["INPUT1"] = bad["INPUT1"][:, :3].copy()
    out, err = server_infer(url, "add_sub", bad, ["OUTPUT0"], protocol=protocol)
    assert out == {}
    assert err == "INPUT0 and INPUT1 must have the same shape, got [1, 4] and [1, 3]"
    # a request the server itself rejects (missing input) never reaches the model
    missing = {k: v for k, v in add_sub_inputs(1).items() if k != "TEXT"}
    out, err = server_infer(url, "add_sub", missing, ["OUTPUT0"], protocol=protocol)
    assert out == {} and err is not None and "expected 3 inputs but got 2 inputs" in err
    good = add_sub_inputs(2)
    out, err = server_infer(url, "add_sub", good, ["OUTPUT0"], protocol=protocol)
    assert err is None
    np.testing.assert_array_equal(out["OUTPUT0"], expected_add_sub(good)["OUTPUT0"])


def test_models_run_in_model_runtime_env(server: TritonServer, triton_runtime: Runtime, server_repo: Path) -> None:
    out, err = server_infer(server.http_url, "env_probe", {"X": np.array([7], dtype=np.int32)}, ["INFO"])
    assert err is None
    info = json.loads(out["INFO"][0])
    assert info["x"] == [7]
    assert Path(info["sys_prefix"]) == triton_runtime.python_env
    assert int(info["numpy"].split(".")[0]) < 2
    assert info["triton_textops"] == os.path.realpath(triton_textops.__file__)
    args = info["args"]
    assert set(args) == {"model_config", "model_instance_device_id", "model_instance_kind", "model_instance_name",
                         "model_name", "model_repository", "model_version"}
    assert args["model_repository"] == str(server_repo / "env_probe")
    assert args["model_version"] == "1" and args["model_name"] == "env_probe"
    assert args["model_instance_kind"] == "CPU" and args["model_instance_device_id"] == "0"
    config = json.loads(args["model_config"])
    assert config["input"][0]["dims"] == [1] and config["output"][0]["data_type"] == "TYPE_STRING"
    assert info["model_dir"] == str(server_repo / "env_probe" / "1")


def test_log_and_metrics(server: TritonServer) -> None:
    log = server.log
    assert "successfully loaded 'add_sub'" in log and "successfully loaded 'env_probe'" in log
    assert server.log_path is not None and server.log_path.is_file()
    server_infer(server.http_url, "add_sub", add_sub_inputs(1), ["OUTPUT0"])
    with urllib.request.urlopen(server.metrics_url, timeout=10) as resp:
        metrics = resp.read().decode()
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in metrics


def test_broken_repository_raises_with_log(triton_runtime: Runtime, tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "env_probe")
    (repo / "env_probe" / "1" / "model.py").write_text("def broken(:\n")
    server = TritonServer(repo, install=triton_runtime.install, python_env=triton_runtime.python_env,
                          startup_timeout=60)
    with pytest.raises(TritonServerError) as info:
        server.start()
    msg = str(info.value)
    assert "exited with code" in msg and "--- tritonserver log ---" in msg
    assert "SyntaxError" in msg and "env_probe" in msg
    assert server.process is None and not server.running
    assert "SyntaxError" in server.log
    assert _processes_using(repo) == []  # neither the server nor a stub outlives the failed start
    for port in (server.http_port, server.grpc_port, server.metrics_port):
        assert port_is_free(port)


def _processes_using(path: Path) -> list[str]:
    """Command lines of live (non-zombie) processes that mention ``path`` (server and stubs name the repo)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(path) in cmd and state != "Z":
                found.append(cmd)
    return found


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def test_stop_frees_ports_and_leaves_no_process(triton_runtime: Runtime, tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "env_probe")
    server = start_server(triton_runtime, repo, "stop test (env_probe)")
    with server:
        assert server.running and server.process is not None
        pid = server.process.pid
        stubs = _children(pid)
        assert stubs, "the python model should run in a stub process under the server"
        ports = (server.http_port, server.grpc_port, server.metrics_port)
        assert not any(port_is_free(p) for p in ports)
        log_path = server.log_path
    assert not server.running and server.process is None
    assert all(port_is_free(p) for p in ports)
    assert _processes_using(repo) == []
    for p in (pid, *stubs):
        assert not Path(f"/proc/{p}").exists() or "zombie" in Path(f"/proc/{p}/status").read_text()
    assert log_path is not None and not log_path.exists()  # temp log removed, text kept
    assert "successfully loaded 'env_probe'" in server.log
    assert "Signal (2) received" in server.log  # stopped gracefully with SIGINT
