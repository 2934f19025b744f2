"""The same model directories in the real server and in the in-process harness give the same results.

``server_infer`` and ``load_model(dir).infer`` take the same ``{name: ndarray}`` inputs, so each case runs in
both and the outputs / error messages are compared exactly. Known differences between the mock and Triton 2.51
were turned into rules of the harness (request-id prefix, input visit order, model_config key order, ...) and are
checked here against the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from triton_helpers import server_infer

from triton_textops.server import TritonServer

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
