"""The same model directories in the real server and in the in-process harness give the same results.

``server_infer`` and ``load_model(dir).infer`` take the same ``{name: ndarray}`` inputs, so each case runs in
both and the outputs / error messages are compared exactly. Known differences between the mock and Triton 2.51
were turned into rules of the harness (request-id prefix, input visit order, model_config key order, ...) and are
checked here against the server.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from triton_helpers import server_infer

from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

harness = pytest.importorskip("triton_textops.testing.harness")


@pytest.fixture(scope="module")
def add_sub_harness(server_repo: Path) -> Iterator[object]:
    model = harness.load_model(server_repo / "add_sub")
    yield model
    model.finalize()


def harness_infer(model: object, inputs: dict[str, np.ndarray], outputs: list[str] | None = None,
                  request_id: str = "") -> tuple[dict[str, np.ndarray], str | None]:
    kw = {"request_id": request_id} if request_id else {}
    try:
        return model.infer(inputs, outputs, **kw), None  # type: ignore[attr-defined]
    except harness.InferError as err:
        return {}, str(err)


def rows(n: int, width: int, texts: list[str]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n * 100 + width)
    return {
        "INPUT0": rng.normal(size=(n, width)).astype(np.float32),
        "INPUT1": rng.integers(-1000, 1000, size=(n, width), dtype=np.int32),
        "TEXT": np.array([[t.encode()] for t in texts], dtype=np.object_),
    }


GOOD = {
    "one_row": rows(1, 4, ["hello"]),
    "utf8_and_empty": rows(3, 2, ["héllo wörld", "", "ß → SS, ǆ"]),
    "max_batch": rows(8, 1, [f"row {i}" for i in range(8)]),
}


def _bad(**changes: np.ndarray | None) -> dict[str, np.ndarray]:
    base = dict(rows(2, 4, ["a", "b"]))
    for k, v in changes.items():
        if v is None:
            del base[k]
        else:
            base[k] = v
    return base


# bad requests whose messages are identical in the server and the harness (request id set by the client)
BAD_SAME = {
    "model_error_shape_mismatch": _bad(INPUT1=np.zeros((2, 3), np.int32)),
    "wrong_dtype": _bad(INPUT1=np.zeros((2, 4), np.float32)),
    "wrong_rank": _bad(INPUT0=np.zeros((2, 4, 1), np.float32)),
    "no_batch_dim": _bad(TEXT=np.array([b"a", b"b"], dtype=np.object_)),
    "batch_too_big": rows(9, 1, ["x"] * 9),
}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("case", sorted(GOOD))
def test_outputs_identical(server: TritonServer, add_sub_harness: object, case: str, protocol: str) -> None:
    inputs = GOOD[case]
    url = server.http_url if protocol == "http" else server.grpc_url
    real, err = server_infer(url, "add_sub", inputs, ["OUTPUT0", "OUTPUT1", "TEXT_OUT"], protocol=protocol)
    assert err is None
    mock, merr = harness_infer(add_sub_harness, inputs, ["OUTPUT0", "OUTPUT1", "TEXT_OUT"])
    assert merr is None
    assert set(real) == set(mock)
    for name in real:
        assert real[name].dtype == mock[name].dtype and real[name].shape == mock[name].shape, name
        assert real[name].tolist() == mock[name].tolist(), name


@pytest.mark.parametrize("case", sorted(BAD_SAME))
def test_error_messages_identical(server: TritonServer, add_sub_harness: object, case: str) -> None:
    inputs = BAD_SAME[case]
    real, err = server_infer(server.grpc_url, "add_sub", inputs, ["OUTPUT0"], protocol="grpc", request_id="r-7")
    mock, merr = harness_infer(add_sub_harness, inputs, ["OUTPUT0"], request_id="r-7")
    assert real == {} and mock == {}
    assert err is not None and err == merr
    # and the server keeps serving
    out, err2 = server_infer(server.http_url, "add_sub", GOOD["one_row"], ["OUTPUT0"])
    assert err2 is None and out["OUTPUT0"].shape == (1, 4)


# request checks whose wording depends on what the server does without a request id, with the unknown-output
# error, and on the order in which it visits the inputs (a std::unordered_map, see harness.server_input_order)
SERVER_RULES = {
    # Triton prefixes validation errors with "[request id: <id_unknown>] " when the client sent no id.
    "no_request_id": (_bad(INPUT1=np.zeros((2, 4), np.float32)), None, ""),
    # Triton lists the received inputs in its hash-map order (here the reverse of the client's order).
    "missing_input_order": (_bad(TEXT=None), None, "r-7"),
    # Triton checks batch sizes in that same order, so it names a different input than the client's order would.
    "batch_mismatch_names_other_input": (_bad(TEXT=np.array([[b"a"]], dtype=np.object_)), None, "r-7"),
    # Triton never prefixes the unknown-output error with the request id.
    "unknown_output_no_prefix": (rows(1, 4, ["a"]), ["NOPE"], "r-7"),
    # nor the unknown-input error (both come from the model's tensor lookup)
    "unknown_input_no_prefix": (_bad(TEXT=None, EXTRA=np.zeros((2, 1), np.float32)), None, "r-7"),
}


@pytest.mark.parametrize("case", sorted(SERVER_RULES))
def test_request_id_and_input_order_rules(server: TritonServer, add_sub_harness: object, case: str) -> None:
    inputs, outputs, rid = SERVER_RULES[case]
    _, err = server_infer(server.http_url, "add_sub", inputs, outputs, request_id=rid)
    _, merr = harness_infer(add_sub_harness, inputs, outputs, request_id=rid)
    assert err is not None
    assert err == merr


def test_input_visit_order_matches_server(server: TritonServer, add_sub_harness: object) -> None:
    """Random input-name sets (1-16 names, known and unknown, shuffled): every message is identical."""
    names = ["INPUT0", "INPUT1", "TEXT", "E1", "x", "Zed", "a_long_input_name_17", "ß", "aa", "bb", "cc", "dd",
             "ee", "ff", "gg", "input__0"]
    rng = np.random.default_rng(2024)
    seen_non_reverse = False
    for n in list(range(1, 17)) * 2:
        chosen = [str(x) for x in rng.permutation(names)[:n]]
        inputs = {nm: np.zeros((int(rng.integers(1, 3)), 1), np.float32) for nm in chosen}
        _, err = server_infer(server.http_url, "add_sub", inputs, ["OUTPUT0"], request_id="q")
        _, merr = harness_infer(add_sub_harness, inputs, ["OUTPUT0"], request_id="q")
        assert err is not None and err == merr, chosen
        got = err.split("Got input(s) [")[1].split("]")[0] if "Got input(s)" in err else ""
        seen_non_reverse |= n > 3 and got != ",".join(f"'{x}'" for x in reversed(chosen))
    assert seen_non_reverse  # the rule is the hash-map order, not simply "reversed"


def test_unicode_arrays_cannot_be_sent(server: TritonServer, add_sub_harness: object) -> None:
    """tritonclient has no Triton type for NumPy ``<U`` arrays: the request fails (HTTP: the server cannot parse
    the null datatype; gRPC: the client raises), so the harness refuses them too, saying what to send."""
    inputs = dict(rows(1, 4, ["a"]), TEXT=np.array([["héllo"]]))  # dtype <U5
    out, err = server_infer(server.http_url, "add_sub", inputs, ["OUTPUT0"])
    assert out == {} and err == "Unable to parse 'datatype': attempt to access JSON non-string as string"
    with pytest.raises(TypeError):
        server_infer(server.grpc_url, "add_sub", inputs, ["OUTPUT0"], protocol="grpc")
    _, merr = harness_infer(add_sub_harness, inputs, ["OUTPUT0"])
    assert merr is not None and merr.startswith("input 'TEXT': a NumPy unicode array (dtype <U5)")
    assert "send bytes or an object array" in merr


def test_initialize_args_identical(server: TritonServer, server_repo: Path) -> None:
    real, err = server_infer(server.http_url, "env_probe", {"X": np.array([3], dtype=np.int32)}, ["INFO"])
    assert err is None
    model = harness.load_model(server_repo / "env_probe")
    try:
        mock, merr = harness_infer(model, {"X": np.array([3], dtype=np.int32)}, ["INFO"])
    finally:
        model.finalize()
    assert merr is None
    real_info, mock_info = json.loads(real["INFO"][0]), json.loads(mock["INFO"][0])
    real_args, mock_args = real_info["args"], mock_info["args"]
    assert {k: v for k, v in real_args.items() if k != "model_config"} == {
        k: v for k, v in mock_args.items() if k != "model_config"
    }
    # the same text: values, and keys in the schema's declaration order
    assert real_args["model_config"] == mock_args["model_config"]
    assert real_info["model_dir"] == mock_info["model_dir"]


def test_instance_name_matches_server_log(server: TritonServer, add_sub_harness: object) -> None:
    name = add_sub_harness.instance_name  # type: ignore[attr-defined]
    assert f"TRITONBACKEND_ModelInstanceInitialize: {name} (CPU device 0)" in server.log


KITCHEN_CONFIG = """
name: "kitchen"
backend: "python"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] },
        { name: "B" data_type: TYPE_FP32 dims: [ 2, -1 ] optional: true } ]
output [ { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters: { key: "zeta" value: { string_value: "1" } }
parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: { string_value: "no" } }
dynamic_batching { max_queue_delay_microseconds: 100 }
instance_group [ { count: 2 kind: KIND_CPU } ]
model_warmup [ { name: "w" batch_size: 1
                 inputs { key: "X" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } } ]
"""

# protobuf map fields: the server's Map iterates in a seeded hash order, so their entries are compared sorted
MAP_FIELDS = {"parameters", "inputs", "cc_model_filenames", "metric_tags", "priority_queue_policy"}


def _sorted_maps(pairs: list[tuple[str, object]]) -> dict[str, object]:
    d = dict(pairs)
    for key in MAP_FIELDS & set(d):
        if isinstance(d[key], dict):
            d[key] = dict(sorted(d[key].items()))
    return d


@pytest.fixture(scope="module")
def kitchen(triton_runtime: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Path]]:
    from triton_helpers import make_repository, start_server

    repo = make_repository(tmp_path_factory.mktemp("kitchen_repo"), "env_probe")
    (repo / "env_probe").rename(repo / "kitchen")
    (repo / "kitchen" / "config.pbtxt").write_text(KITCHEN_CONFIG)
    srv = start_server(triton_runtime, repo, "kitchen (parity of a fuller config)")  # type: ignore[arg-type]
    try:
        yield srv, repo / "kitchen"
    finally:
        srv.stop()


def test_fuller_config_json_and_instance_names(kitchen: tuple[TritonServer, Path]) -> None:
    srv, model_dir = kitchen
    real, err = server_infer(srv.http_url, "kitchen", {"X": np.array([[3]], dtype=np.int32)}, ["INFO"])
    assert err is None
    real_args = json.loads(real["INFO"][0])["args"]
    model = harness.load_model(model_dir)
    try:
        mock_args = model.args  # type: ignore[attr-defined]
    finally:
        model.finalize()
    real_cfg = json.loads(real_args["model_config"], object_pairs_hook=_sorted_maps)
    mock_cfg = json.loads(mock_args["model_config"], object_pairs_hook=_sorted_maps)
    assert json.dumps(real_cfg, separators=(",", ":")) == json.dumps(mock_cfg, separators=(",", ":"))
    # an explicit group without a name is "<model>_0"; its instances "<model>_0_<i>" (count 2: _0_0, _0_1)
    assert mock_args["model_instance_name"] == "kitchen_0_0"
    assert real_args["model_instance_name"] in ("kitchen_0_0", "kitchen_0_1")
    for i in (0, 1):
        assert f"TRITONBACKEND_ModelInstanceInitialize: kitchen_0_{i} (CPU device 0)" in srv.log


# ---------------------------------------------------------------------------------------------------------------
# Issue #19: the behaviours where the harness used to differ from the server, on the models of tests/testing/models
# (late decoupled responses, bytes in the BLS constructor, DLPack identity, rescheduling, zero-row inputs, a model
# that answers through its sender and then raises, custom metrics). The harness loads the server's copy of each model
# directory, so paths in tracebacks are identical.

FIDELITY_MODELS = ["late_repeat", "bls_late_sum", "dlpack_identity", "iterative", "iterative_decoupled",
                   "send_then_raise", "metrics_probe"]
TESTING_MODELS = Path(__file__).parents[1] / "testing" / "models"
RESCHEDULE_REFUSED = (
    "Failed to release request: Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
    "is not configured to handle such a flag."
)


@pytest.fixture(scope="module")
def fidelity(triton_runtime: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TritonServer, Path]]:
    from triton_helpers import make_repository, start_server

    repo = make_repository(tmp_path_factory.mktemp("fidelity_repo"), *[TESTING_MODELS / m for m in FIDELITY_MODELS])
    for src, dst in (("iterative", "reschedule_plain"), ("iterative_decoupled", "reschedule_plain_decoupled")):
        shutil.copytree(repo / src, repo / dst)  # the same model without sequence batching
        cfg = (repo / dst / "config.pbtxt").read_text()
        cfg = cfg.replace(f'name: "{src}"', f'name: "{dst}"').replace("sequence_batching { iterative_sequence: true }", "")
        (repo / dst / "config.pbtxt").write_text(cfg)
    srv = start_server(triton_runtime, repo, "fidelity models (#19)")  # type: ignore[arg-type]
    try:
        yield srv, repo
    finally:
        srv.stop()


@pytest.fixture
def loaded(fidelity: tuple[TritonServer, Path]) -> Iterator[Callable[[str], object]]:
    created: list[object] = []

    def load(name: str, **kw: object) -> object:
        model = harness.load_model(fidelity[1] / name, **kw)
        created.append(model)
        return model

    yield load
    for model in reversed(created):
        model.finalize()  # type: ignore[attr-defined]


def grpc_stream(url: str, model: str, inputs: dict[str, np.ndarray], timeout: float = 30) -> list[object]:
    """Every response of one streamed request: ``{output: list}`` per data response, ``"ERR: <msg>"`` per error,
    ``"TIMEOUT"`` if the final response did not come (the empty final response itself is not listed)."""
    import queue

    import tritonclient.grpc as grpcclient
    from tritonclient.utils import np_to_triton_dtype

    results: queue.Queue = queue.Queue()
    pending = False
    client = grpcclient.InferenceServerClient(url)
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        infer_inputs = []
        for name, arr in inputs.items():
            ii = grpcclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
            ii.set_data_from_numpy(arr)
            infer_inputs.append(ii)
        client.async_stream_infer(model, infer_inputs, enable_empty_final_response=True)
        out: list[object] = []
        while True:
            try:
                result, error = results.get(timeout=timeout)
            except queue.Empty:
                pending = True  # the server still holds the request: cancel it, or stop_stream waits forever
                return [*out, "TIMEOUT"]
            if error is not None:
                out.append(f"ERR: {error.message()}")
                continue
            resp = result.get_response()
            if resp.outputs:
                out.append({o.name: result.as_numpy(o.name).tolist() for o in resp.outputs})
            if resp.parameters["triton_final_response"].bool_param:
                return out
    finally:
        client.stop_stream(cancel_requests=pending)
        client.close()


@pytest.mark.parametrize("n", [0, 4, 3000])
def test_late_decoupled_responses_identical(fidelity: tuple[TritonServer, Path], loaded: Callable, n: int) -> None:
    srv, _ = fidelity
    real = grpc_stream(srv.grpc_url, "late_repeat", {"N": np.array([n], np.int32)})
    mock = loaded("late_repeat").infer_stream({"N": np.array([n], np.int32)})
    assert real == [{k: v.tolist() for k, v in r.items()} for r in mock]
    assert len(real) == n


def test_decoupled_bls_with_bytes_model_name_identical(triton_runtime: object, tmp_path: Path, loaded: Callable) -> None:
    from triton_helpers import make_repository, start_server

    # Its own server, and up to three fresh ones: tritonserver 2.51 sometimes answers "Stub process
    # 'bls_late_sum_0' is not healthy." (its health check is a 1-second timed lock on a mutex the stub holds)
    # while the stub is busy taking the 500 late BLS responses on this loaded 2-core machine: first seen on the
    # shared fidelity server after the late-response tests, on 2026-12-01 also in isolation (1 run of 3). The
    # server log shows nothing. Only that error is retried; any other error, or the same one three times,
    # fails. 500 responses here; 2000 in the harness test (test_fidelity.py). Under two pytest workers the HTTP
    # client once lost the connection (geventhttpclient's HTTPConnectionClosed) while the server was busy: a
    # transport error is retried the same way, and fails the test with its text on the third attempt.
    inputs = {"N": np.array([500], np.int32)}
    for attempt in range(3):
        repo = make_repository(tmp_path / f"bls_repo{attempt}", TESTING_MODELS / "bls_late_sum",
                               TESTING_MODELS / "late_repeat")
        srv = start_server(triton_runtime, repo, "decoupled BLS models (#19)")  # type: ignore[arg-type]
        try:
            try:
                real, err = server_infer(srv.http_url, "bls_late_sum", inputs)
            except Exception as exc:  # noqa: BLE001 - the HTTP client's own errors (seen: HTTPConnectionClosed)
                real, err = {}, f"transport: {exc!r}"
            log = srv.log[-4000:]
        finally:
            srv.stop()
        if err is None or not ("is not healthy" in err or err.startswith("transport: ")) or attempt == 2:
            break
    assert err is None, f"{err}\n{log}"
    loaded("late_repeat")
    mock, merr = harness_infer(loaded("bls_late_sum"), inputs)
    assert merr is None
    assert {k: v.tolist() for k, v in real.items()} == {k: v.tolist() for k, v in mock.items()}
    assert real["SUM"].tolist() == [124750] and real["COUNT"].tolist() == [501]


def test_dlpack_identity_and_zero_row_inputs_identical(fidelity: tuple[TritonServer, Path], loaded: Callable) -> None:
    srv, _ = fidelity
    model = loaded("dlpack_identity")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    real, err = server_infer(srv.http_url, "dlpack_identity", {"X": x})
    mock, merr = harness_infer(model, {"X": x})
    assert err is None and merr is None
    for name in ("Y", "Z"):
        assert real[name].dtype == mock[name].dtype and real[name].tolist() == mock[name].tolist() == x.tolist()
    for protocol, url in (("http", srv.http_url), ("grpc", srv.grpc_url)):
        for rid in ("z", ""):
            inputs = {"X": np.zeros((0, 3), np.float32)}
            _, err = server_infer(url, "dlpack_identity", inputs, protocol=protocol, request_id=rid)
            _, merr = harness_infer(model, inputs, request_id=rid)
            assert err is not None and err == merr
            assert err.endswith("input byte size mismatch for input 'X' for model 'dlpack_identity'. Expected 12, got 0")


def test_zero_row_bytes_and_batch_mismatch_identical(server: TritonServer, add_sub_harness: object) -> None:
    cases = [
        {"INPUT0": np.zeros((0, 3), np.float32), "INPUT1": np.zeros((0, 3), np.int32), "TEXT": np.zeros((0, 1), object)},
        {"INPUT0": np.zeros((0, 3), np.float32), "INPUT1": np.zeros((2, 3), np.int32),
         "TEXT": np.array([[b"a"], [b"b"]], object)},
        {"INPUT0": np.zeros((2, 3), np.float32), "INPUT1": np.zeros((2, 3), np.int32), "TEXT": np.zeros((0, 1), object)},
    ]
    for inputs in cases:
        _, err = server_infer(server.http_url, "add_sub", inputs, ["OUTPUT0"], request_id="z")
        _, merr = harness_infer(add_sub_harness, inputs, ["OUTPUT0"], request_id="z")
        assert err is not None and err == merr


def test_iterative_rescheduling_identical(fidelity: tuple[TritonServer, Path], loaded: Callable) -> None:
    srv, _ = fidelity
    model = loaded("iterative")
    for n, rid in ((3, "rq"), (1, ""), (2, "")):
        real, err = server_infer(srv.http_url, "iterative", {"N": np.array([n], np.int32)}, request_id=rid)
        mock, merr = harness_infer(model, {"N": np.array([n], np.int32)}, request_id=rid)
        assert err is None and merr is None
        assert json.loads(real["INFO"][0]) == json.loads(mock["INFO"][0])
        assert len(json.loads(real["INFO"][0])["calls"]) == n
    real = grpc_stream(srv.grpc_url, "iterative_decoupled", {"IN": np.array([3], np.int32)})
    mock = loaded("iterative_decoupled").infer_stream({"IN": np.array([3], np.int32)})
    assert real == [{k: v.tolist() for k, v in r.items()} for r in mock]
    assert [r["OUT"] for r in real] == [[2], [1], [0]]  # type: ignore[index]


def test_reschedule_without_iterative_sequence_identical(fidelity: tuple[TritonServer, Path], loaded: Callable) -> None:
    """The server logs the refusal and never answers (the client times out); the harness raises with that line."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    srv, _ = fidelity
    client = grpcclient.InferenceServerClient(srv.grpc_url)
    ii = grpcclient.InferInput("N", [1], "INT32")
    ii.set_data_from_numpy(np.array([2], np.int32))
    with pytest.raises(InferenceServerException, match="Deadline Exceeded"):
        client.infer("reschedule_plain", [ii], client_timeout=3)
    client.close()
    assert RESCHEDULE_REFUSED in srv.log
    model = loaded("reschedule_plain")
    _, merr = harness_infer(model, {"N": np.array([2], np.int32)})
    assert merr is not None and RESCHEDULE_REFUSED in merr and "never answers" in merr
    assert model.log[-1] == RESCHEDULE_REFUSED  # type: ignore[attr-defined]
    # decoupled: the response sent before the refusal reaches the client, then the stream stays open
    real = grpc_stream(srv.grpc_url, "reschedule_plain_decoupled", {"IN": np.array([3], np.int32)}, timeout=3)
    dec = loaded("reschedule_plain_decoupled")
    mock = dec.execute_all([dec.make_request({"IN": np.array([3], np.int32)})])[0]  # type: ignore[attr-defined]
    assert real[-1] == "TIMEOUT" and len(real) == 2 and len(mock) == 2
    assert real[0] == {t.name(): t.as_numpy().tolist() for t in mock[0].output_tensors()}
    assert RESCHEDULE_REFUSED in mock[1].error().message()


def test_send_then_raise_identical(fidelity: tuple[TritonServer, Path], loaded: Callable) -> None:
    """Default mode, a response sent through the sender, then an AttributeError: two responses in both."""
    srv, _ = fidelity
    model = loaded("send_then_raise")
    inputs = {"X": np.array([3], np.int32)}
    _, err = server_infer(srv.grpc_url, "send_then_raise", inputs, protocol="grpc")
    _, merr = harness_infer(model, inputs)
    assert err == merr == "expected a single response, got 2"
    _, http_err = server_infer(srv.http_url, "send_then_raise", inputs)  # HTTP: both bodies, then the same error
    assert http_err is not None and '{"error":"expected a single response, got 2"}' in http_err
    first, second = model.execute_all([model.make_request(inputs)])[0]  # type: ignore[attr-defined]
    assert first.output_tensors()[0].as_numpy().tolist() == [6]
    # the server logs the model's error as a JSON string: the same text, newlines escaped
    logged = second.error().message().replace("\n", "\\n")
    assert logged.startswith("Failed to process the request(s) for model 'send_then_raise_0', message: AttributeError: "
                             "'c_python_backend_utils.InferenceResponseSender' object has no attribute 'close'")
    assert f'"{logged}"' in srv.log


def test_custom_metrics_identical(fidelity: tuple[TritonServer, Path], loaded: Callable) -> None:
    """The model's values and the /metrics text of its families (the server orders a family's metrics by hash)."""
    import urllib.request

    srv, _ = fidelity
    model = loaded("metrics_probe")
    for v in (0.5, 3.0, 1e-7, 12345678.9):
        real, err = server_infer(srv.http_url, "metrics_probe", {"X": np.array([v], np.float64)})
        mock, merr = harness_infer(model, {"X": np.array([v], np.float64)})
        assert err is None and merr is None
        assert json.loads(real["INFO"][0]) == json.loads(mock["INFO"][0])
    scraped = urllib.request.urlopen(srv.metrics_url, timeout=10).read().decode()
    real_lines = [line for line in scraped.splitlines() if "textops_probe" in line]
    mock_lines = model.metrics_text().splitlines()  # type: ignore[attr-defined]
    assert len(mock_lines) == 15 and "textops_probe_value{model=\"metrics_probe\",slot=\"sum\"} 12345682.4000001" in mock_lines

    def blocks(lines: list[str]) -> list[tuple[str, ...]]:
        out, cur = [], []
        for line in lines:
            if line.startswith("# HELP") and cur:
                out.append(tuple(cur[:2]) + tuple(sorted(cur[2:])))
                cur = []
            cur.append(line)
        return [*out, tuple(cur[:2]) + tuple(sorted(cur[2:]))]

    assert blocks(real_lines) == blocks(mock_lines)


def test_server_crashes_where_the_harness_refuses(triton_runtime: object, tmp_path: Path) -> None:
    """A default-mode model that raises after sending its final response through the sender corrupts the heap of
    tritonserver 2.51 (the response factory is deleted twice); the harness refuses it saying so.

    The crash is undefined behaviour, so its form and time vary: alone, the first request kills the server with
    SIGSEGV; on a loaded machine the server has survived up to four such requests and then aborted in malloc
    (``Signal (6)``), after which its exit handler can hang. So the request is repeated (at most 8 times) until the
    server reports a fatal signal. A server that survives all 8 fails this test."""
    from triton_helpers import make_repository, start_server

    repo = make_repository(tmp_path / "repo", TESTING_MODELS / "send_then_raise")
    inputs = {"X": np.array([-1], np.int32)}  # X < 0: sent with the final flag
    srv = start_server(triton_runtime, repo, "crash: send final then raise")  # type: ignore[arg-type]
    fatal = re.compile(r"Signal \((6|11)\) received")
    try:
        for _ in range(8):
            try:
                server_infer(srv.http_url, "send_then_raise", inputs)  # the response may or may not get out first
            except Exception:  # noqa: BLE001, S110 - the connection may die with the server
                pass
            deadline = time.monotonic() + 5
            while srv.running and not fatal.search(srv.log) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not srv.running or fatal.search(srv.log):
                break
        assert fatal.search(srv.log), srv.log[-3000:]
    finally:
        srv.stop()
    model = harness.load_model(repo / "send_then_raise")
    try:
        _, merr = harness_infer(model, inputs)
    finally:
        model.finalize()
    assert merr is not None and "tritonserver 2.51 crashes here" in merr


def test_metric_error_texts_identical_or_server_crash(triton_runtime: object, tmp_path: Path) -> None:
    """Each unsupported metric operation: the server's error text equals the harness's, unless the server crashed
    (2.51 dies at random on these calls: boost::interprocess::lock_exception); then it is restarted."""
    import warnings

    from triton_helpers import make_repository, start_server

    repo = make_repository(tmp_path / "repo", TESTING_MODELS / "metric_errors")
    model = harness.load_model(repo / "metric_errors")
    srv = None
    answered = 0
    try:
        for op in range(10):
            if srv is None or not srv.running:
                if srv is not None:
                    srv.stop()
                srv = start_server(triton_runtime, repo, f"metric errors from op {op}")  # type: ignore[arg-type]
            inputs = {"OP": np.array([op], np.int32)}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                mock, merr = harness_infer(model, inputs)
            try:
                real, err = server_infer(srv.http_url, "metric_errors", inputs)
            except Exception:  # noqa: BLE001 - the connection died with the server
                real, err = {}, "connection lost"
            time.sleep(0.3)
            if not srv.running:
                assert "lock_exception" in srv.log or "Signal (" in srv.log
                continue
            assert err is None and merr is None
            assert real["INFO"][0] == mock["INFO"][0]
            answered += 1
    finally:
        model.finalize()
        if srv is not None:
            srv.stop()
    assert answered >= 3  # the three creation errors never reach the server's metric code
