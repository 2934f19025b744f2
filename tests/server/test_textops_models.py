"""Our models (tokenize, features, preprocess, postprocess) in the REAL server equal the in-process harness.

One server for the module serves every model directory written by ``textops_repo.write_textops_models``
(plus one with a bad config, which must fail alone); the harness loads the very same directories. Checked:
the auto-completed configs, outputs over HTTP and gRPC (exact equality, dtypes = the config's), requests merged
by the dynamic batcher into one execute, bad requests (our INVALID_ARG errors equal the harness's text, the
server's own checks), that the server keeps serving after each, and concurrent load on ``preprocess``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from model_dirs import write_textops_models
from textops_repo import assert_same_outputs, config_dtypes, harness_infer, text_tensor
from triton_helpers import TIMINGS, Runtime, model_stats, server_infer, start_server, stats_once_counted
from tritonclient.utils import np_to_triton_dtype

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

harness = pytest.importorskip("triton_textops.testing.harness")

PROTOCOLS = ("http", "grpc")
EDGE_TEXTS = [
    "",
    "   ",
    "Hello, World!",
    "naïve café — “quoted” déjà vu",
    "日本語のテキストと中文字符",
    "emoji 😀👍🏽 and ZWJ 👩‍👩‍👧",
    "tabs\tand\nnewlines\r\nand a \x00 NUL",
    "ﬁ ligature, Ǆ digraph, ß sharp s, İstanbul",
    "word " * 300,
]


def paragraphs(n: int, start: int) -> list[str]:
    return austen()[start : start + n]


@pytest.fixture(scope="module")
def textops_dirs(tmp_path_factory: pytest.TempPathFactory, textops_features: Path) -> dict[str, Path]:
    return write_textops_models(tmp_path_factory.mktemp("textops_repo"), textops_features)


@pytest.fixture(scope="module")
def textops_server(triton_runtime: Runtime, textops_dirs: dict[str, Path]) -> Iterator[TritonServer]:
    """One server for all our models; a model that fails to load must not stop the others (exit-on-error off)."""
    repo = next(iter(textops_dirs.values())).parent
    srv = start_server(triton_runtime, repo, "textops models",
                       extra_args=["--exit-on-error=false", "--strict-readiness=false"])
    try:
        yield srv
    finally:
        t0 = time.monotonic()
        srv.stop()
        TIMINGS["server stop: textops models"] = time.monotonic() - t0


@pytest.fixture(scope="module")
def harnesses(textops_dirs: dict[str, Path]) -> Iterator[dict[str, Any]]:
    models = {name: harness.load_model(d) for name, d in textops_dirs.items() if name != "bad_config"}
    yield models
    for m in models.values():
        m.finalize()


def url_of(server: TritonServer, protocol: str) -> str:
    return server.http_url if protocol == "http" else server.grpc_url


def client_for(server: TritonServer, protocol: str) -> Any:
    if protocol == "http":
        import tritonclient.http as tc

        return tc, tc.InferenceServerClient(server.http_url, connection_timeout=60.0, network_timeout=60.0)
    import tritonclient.grpc as tc  # type: ignore[no-redef]

    return tc, tc.InferenceServerClient(server.grpc_url)


def stats(server: TritonServer, model: str) -> tuple[int, int]:
    """(inference_count, execution_count) of a model so far."""
    return model_stats(server.http_url, model)


def scores(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "BERT_WEIGHT_INPUT": rng.uniform(0, 1, (n, 1)).astype(np.float32),
        "BERT_LARGE_SCORE": rng.normal(0, 2, (n, 1)).astype(np.float32),
        "CUML_SCORE": rng.normal(0, 2, (n, 1)).astype(np.float32),
    }


# ------------------------------------------------------------------------------------------- configs


def _io(entries: list[dict[str, Any]]) -> list[tuple[str, str, list[int], bool]]:
    return [(e["name"], e["data_type"], [int(d) for d in e["dims"]], bool(e.get("optional", False)))
            for e in entries]


@pytest.mark.parametrize("model", ["tokenize", "tokenize_windows", "features", "preprocess", "postprocess",
                                   "postprocess_windows"])
def test_auto_completed_config_identical(textops_server: TritonServer, harnesses: dict[str, Any],
                                         model: str) -> None:
    import tritonclient.http as http

    c = http.InferenceServerClient(textops_server.http_url)
    try:
        real = c.get_model_config(model)
    finally:
        c.close()
    mock = harnesses[model].config
    assert int(real["max_batch_size"]) == int(mock["max_batch_size"])
    assert _io(real["input"]) == _io(mock["input"])
    assert _io(real["output"]) == _io(mock["output"])
    assert ("dynamic_batching" in real) == ("dynamic_batching" in mock)


# ------------------------------------------------------------------------------------------- outputs

GOOD: dict[str, tuple[str, dict[str, np.ndarray], list[str] | None]] = {
    "tokenize_austen": ("tokenize", {"TEXT": text_tensor(paragraphs(5, 1))}, None),
    "tokenize_edge_texts": ("tokenize", {"TEXT": text_tensor(EDGE_TEXTS)}, None),
    "tokenize_one_output": ("tokenize", {"TEXT": text_tensor(paragraphs(2, 40))}, ["INPUT_IDS"]),
    "tokenize_windows": ("tokenize_windows", {"excerpt": text_tensor(paragraphs(3, 7))}, None),
    "tokenize_windows_edge": ("tokenize_windows", {"excerpt": text_tensor(EDGE_TEXTS)}, None),
    "features_austen": ("features", {"TEXT": text_tensor(paragraphs(4, 60))}, None),
    "features_edge_texts": ("features", {"TEXT": text_tensor(EDGE_TEXTS)}, None),
    "preprocess_austen": ("preprocess", {"INPUT0": text_tensor(paragraphs(8, 100))}, None),
    "preprocess_edge_texts": ("preprocess", {"INPUT0": text_tensor(EDGE_TEXTS)}, None),
    "preprocess_features_only": ("preprocess", {"INPUT0": text_tensor(paragraphs(3, 200))}, ["TREE_FEATS"]),
    "postprocess": ("postprocess", scores(8, 1), None),
    "postprocess_edge_weights": ("postprocess", {
        **scores(4, 2), "BERT_WEIGHT_INPUT": np.array([[0.0], [1.0], [0.5], [1e-8]], np.float32)}, None),
    "postprocess_windows": ("postprocess_windows", {
        **{k: v for k, v in scores(5, 3).items() if k != "BERT_WEIGHT_INPUT"},
        "BERT_WEIGHT_INPUT": np.array([[0.25]], np.float32),
        "CUML_SCORE": np.array([[1.5], [-0.5]], np.float32),
        "OVERFLOW_TO_SAMPLE_MAPPING": np.array([[0], [0], [0], [1], [1]], np.int64)}, None),
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", sorted(GOOD))
def test_outputs_identical(textops_server: TritonServer, harnesses: dict[str, Any], case: str,
                           protocol: str) -> None:
    model, inputs, outputs = GOOD[case]
    real, err = server_infer(url_of(textops_server, protocol), model, inputs, outputs, protocol=protocol)
    assert err is None, err
    mock, merr = harness_infer(harnesses[model], inputs, outputs)
    assert merr is None, merr
    assert_same_outputs(real, mock, config_dtypes(harnesses[model].config))
    if outputs is not None:
        assert set(real) == set(outputs)
    n_texts = next(iter(inputs.values())).shape[0]
    if model in ("tokenize", "preprocess", "features", "postprocess"):
        assert all(a.shape[0] == n_texts for a in real.values())


# ---------------------------------------------------------------------------- dynamic batching


def _send_concurrently(server: TritonServer, model: str, batch: list[dict[str, np.ndarray]],
                       outputs: list[str] | None = None) -> list[tuple[dict[str, np.ndarray], str | None]]:
    """Send every request at once (alternating HTTP/gRPC) and return (outputs, error) per request."""
    barrier = threading.Barrier(len(batch))

    def one(i: int) -> tuple[dict[str, np.ndarray], str | None]:
        protocol = PROTOCOLS[i % 2]
        barrier.wait(timeout=60)
        return server_infer(url_of(server, protocol), model, batch[i], outputs, protocol=protocol)

    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        return list(pool.map(one, range(len(batch))))


MERGE_CASES = {
    # tokenize waits up to 200 ms for more requests; one request is bad and must fail alone
    "tokenize": [{"TEXT": text_tensor(paragraphs(k % 3 + 1, 300 + 10 * k))} for k in range(5)]
    + [{"TEXT": text_tensor([b"fine", b"bad \xc3\x28"])}],
    # postprocess (no queue delay): merged when requests arrive while an execute runs
    "postprocess": [scores(k % 4 + 1, 10 + k) for k in range(7)]
    + [{**scores(2, 99), "BERT_WEIGHT_INPUT": np.array([[0.5], [-0.1]], np.float32)}],
    "preprocess": [{"INPUT0": text_tensor(paragraphs(k % 3 + 1, 400 + 10 * k))} for k in range(7)]
    + [{"INPUT0": text_tensor(["x" * 5, b"\xff"])}],
    "features": [{"TEXT": text_tensor(paragraphs(k % 4 + 1, 500 + 10 * k))} for k in range(8)],
}


@pytest.mark.parametrize("model", sorted(MERGE_CASES))
def test_merged_requests_equal_harness(textops_server: TritonServer, harnesses: dict[str, Any], model: str) -> None:
    batch = MERGE_CASES[model]
    inf0, exe0 = stats(textops_server, model)
    results = _send_concurrently(textops_server, model, batch)
    rows = [next(iter(i.values())).shape[0] for i in batch]
    good_rows = sum(r for r, (_, err) in zip(rows, results) if err is None)
    inf1, exe1 = stats_once_counted(textops_server.http_url, model, (inf0, exe0), good_rows)
    m = harnesses[model]
    merged = m.execute([m.make_request(inputs) for inputs in batch])  # the harness: all in one execute
    dtypes = config_dtypes(m.config)
    for inputs, (real, err), resp in zip(batch, results, merged):
        mock, merr = harness_infer(m, inputs)
        assert err == merr
        assert (resp.error().message() if resp.has_error() else None) == merr
        if err is None:
            assert_same_outputs(real, mock, dtypes)
    assert good_rows <= inf1 - inf0 <= sum(rows)  # every good row was served (failed ones may be counted too)
    executions = exe1 - exe0
    print(f"{model}: {len(batch)} concurrent requests in {executions} executions")
    if model == "tokenize":  # max_queue_delay 200 ms: the burst is merged
        assert executions < len(batch)


# ------------------------------------------------------------------------------------ bad requests

UTF8_BAD = text_tensor([b"fine", b"caf\xe9"])  # latin-1 byte
POST_OK = {"BERT_LARGE_SCORE": np.ones((2, 1), np.float32), "CUML_SCORE": np.zeros((2, 1), np.float32)}

# errors raised by our models: INVALID_ARG text identical in server and harness (no request-id prefix)
MODEL_ERRORS = {
    "invalid_utf8_preprocess": ("preprocess", {"INPUT0": UTF8_BAD}, "input 'INPUT0' row 1: text is not valid UTF-8"),
    "invalid_utf8_tokenize": ("tokenize", {"TEXT": text_tensor([b"\xed\xa0\x80 surrogate"])},
                              "input 'TEXT' row 0: text is not valid UTF-8"),
    "invalid_utf8_features": ("features", {"TEXT": text_tensor(["ok", "ok", b"\xf8\x88\x80\x80\x80"])},
                              "input 'TEXT' row 2: text is not valid UTF-8"),
    "truncated_utf8_windows": ("tokenize_windows", {"excerpt": text_tensor([b"\xe2\x82"])},
                               "input 'excerpt' row 0: text is not valid UTF-8"),
    "empty_batch_unbatched": ("tokenize_windows", {"excerpt": np.zeros((0, 1), np.object_)},
                              "input 'excerpt' is empty: a request needs at least one text"),
    "text_over_max_text_bytes": ("preprocess_limited", {"INPUT0": text_tensor(["short", "é" * 101])},
                                 "input 'INPUT0' row 1: text of 202 bytes exceeds max_text_bytes=200"),
    "weight_above_1": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.array([[0.5], [1.5]], np.float32)},
                       "input 'BERT_WEIGHT_INPUT' must be finite and within [0, 1]: row 1 is 1.5"),
    "weight_below_0": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.array([[-0.25], [0.5]], np.float32)},
                       "input 'BERT_WEIGHT_INPUT' must be finite and within [0, 1]: row 0 is -0.25"),
    "weight_nan": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.full((2, 1), np.nan, np.float32)},
                   "input 'BERT_WEIGHT_INPUT' must be finite and within [0, 1]: row 0 is nan"),
    "nan_bert_score": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.full((2, 1), 0.5, np.float32),
                                       "BERT_LARGE_SCORE": np.array([[1.0], [np.nan]], np.float32)},
                       "input 'BERT_LARGE_SCORE' must be finite: row 1 is nan"),
    "inf_tree_score": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.full((2, 1), 0.5, np.float32),
                                       "CUML_SCORE": np.array([[-np.inf], [0.0]], np.float32)},
                       "input 'CUML_SCORE' must be finite: row 0 is -inf"),
    "batch_mismatch_unbatched": ("postprocess_windows", {
        "BERT_WEIGHT_INPUT": np.array([[0.5]], np.float32), "BERT_LARGE_SCORE": np.ones((3, 1), np.float32),
        "CUML_SCORE": np.ones((2, 1), np.float32)},
        "mismatched batch sizes: 3 rows in input 'BERT_LARGE_SCORE' but 2 in input 'CUML_SCORE' (pass input "
        "'OVERFLOW_TO_SAMPLE_MAPPING' when BERT rows are overflow windows)"),
    "mapping_out_of_range": ("postprocess_windows", {
        "BERT_WEIGHT_INPUT": np.array([[0.5]], np.float32), "BERT_LARGE_SCORE": np.ones((2, 1), np.float32),
        "CUML_SCORE": np.ones((2, 1), np.float32), "OVERFLOW_TO_SAMPLE_MAPPING": np.array([[0], [2]], np.int64)},
        "input 'OVERFLOW_TO_SAMPLE_MAPPING' values must be text indices in [0, 2): got 0..2"),
}

GOOD_NEXT = {
    "preprocess": "preprocess_austen", "tokenize": "tokenize_austen", "features": "features_austen",
    "tokenize_windows": "tokenize_windows", "postprocess": "postprocess", "postprocess_windows": "postprocess_windows",
}


def _serves_next_good_request(server: TritonServer, harnesses: dict[str, Any], model: str) -> None:
    if model == "preprocess_limited":
        inputs, outputs = {"INPUT0": text_tensor(["short", "é" * 100])}, None
    else:
        _, inputs, outputs = GOOD[GOOD_NEXT[model]]
    real, err = server_infer(server.grpc_url, model, inputs, outputs, protocol="grpc")
    assert err is None, err
    mock, _ = harness_infer(harnesses[model], inputs, outputs)
    assert_same_outputs(real, mock, config_dtypes(harnesses[model].config))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", sorted(MODEL_ERRORS))
def test_model_errors_identical(textops_server: TritonServer, harnesses: dict[str, Any], case: str,
                                protocol: str) -> None:
    model, inputs, message = MODEL_ERRORS[case]
    for rid in ("", "bad-1"):  # our errors carry no request-id prefix, in both
        real, err = server_infer(url_of(textops_server, protocol), model, inputs, protocol=protocol, request_id=rid)
        mock, merr = harness_infer(harnesses[model], inputs, request_id=rid)
        assert real == {} and mock == {}
        assert err == merr == message
    _serves_next_good_request(textops_server, harnesses, model)


def test_model_error_code_is_invalid_arg(textops_server: TritonServer, harnesses: dict[str, Any]) -> None:
    import tritonclient.grpc as grpc
    from tritonclient.utils import InferenceServerException

    c = grpc.InferenceServerClient(textops_server.grpc_url)
    try:
        ii = grpc.InferInput("INPUT0", [2, 1], "BYTES")
        ii.set_data_from_numpy(UTF8_BAD)
        with pytest.raises(InferenceServerException) as exc:
            c.infer("preprocess", [ii])
    finally:
        c.close()
    assert exc.value.status() == "StatusCode.INVALID_ARGUMENT"
    with pytest.raises(harness.InferError) as mexc:
        harnesses["preprocess"].infer({"INPUT0": UTF8_BAD})
    assert mexc.value.code == harness.pb.TritonError.INVALID_ARG


# the server's own checks (before our model runs): (model, inputs, message, prefixed by "[request id: ...] ")
SERVER_ERRORS = {
    "wrong_dtype": ("preprocess", {"INPUT0": np.zeros((2, 1), np.float32)},
                    "inference input 'INPUT0' data-type is 'FP32', but model 'preprocess' expects 'BYTES'", True),
    "int_weight": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.ones((2, 1), np.int32)},
                   "inference input 'BERT_WEIGHT_INPUT' data-type is 'INT32', but model 'postprocess' expects 'FP32'",
                   True),
    # the batched seed postprocess has exactly its 3 inputs (no optional window mapping added)
    "missing_input": ("postprocess", dict(POST_OK),
                      "expected 3 inputs but got 2 inputs for model 'postprocess'", True),
    "extra_input": ("preprocess", {"INPUT0": text_tensor(["a"]), "FOO": text_tensor(["a"])},
                    "expected 1 inputs but got 2 inputs for model 'preprocess'. Got input(s) [", True),
    "unknown_input": ("preprocess", {"FOO": text_tensor(["a"])},
                      "unexpected inference input 'FOO' for model 'preprocess'", False),
    "unknown_output": ("preprocess", {"INPUT0": text_tensor(["a"]), "outputs": ["NOPE"]},
                       "unexpected inference output 'NOPE' for model 'preprocess'", False),
    "no_batch_dim": ("preprocess", {"INPUT0": np.array([b"a", b"b"], np.object_)},
                     "unexpected shape for input 'INPUT0' for model 'preprocess'. Expected [-1,1], got [2].", True),
    "batch_too_big": ("postprocess", scores(9, 5), "inference request batch-size must be <= 8 for 'postprocess'", True),
    "batch_size_mismatch": ("postprocess", {**POST_OK, "BERT_WEIGHT_INPUT": np.full((3, 1), 0.5, np.float32)},
                            "batch size does not match other inputs for 'postprocess'", True),
    "empty_batch": ("preprocess", {"INPUT0": np.zeros((0, 1), np.object_)},
                    "expected 1 string elements for inference input 'INPUT0' for model 'preprocess', got 0", True),
}
# where the harness differs from Triton 2.51 (see test_known_harness_differences)
SERVER_ERRORS_HARNESS_DIFFERS = {"empty_batch"}


@pytest.mark.parametrize("case", sorted(SERVER_ERRORS))
def test_server_checks(textops_server: TritonServer, harnesses: dict[str, Any], case: str) -> None:
    model, inputs, message, prefixed = SERVER_ERRORS[case]
    inputs = dict(inputs)
    outputs = inputs.pop("outputs", None)
    for protocol in PROTOCOLS:
        for rid in ("r-9", ""):
            real, err = server_infer(url_of(textops_server, protocol), model, inputs, outputs, protocol=protocol,
                                     request_id=rid)
            assert real == {} and err is not None
            prefix = f"[request id: {rid or '<id_unknown>'}] " if prefixed else ""
            assert err.startswith(prefix) and message in err, err
            assert prefixed or not err.startswith("[request id")
            if case not in SERVER_ERRORS_HARNESS_DIFFERS:
                _, merr = harness_infer(harnesses[model], inputs, outputs, request_id=rid)
                assert err == merr
    _serves_next_good_request(textops_server, harnesses, model)


KNOWN_HARNESS_DIFFERENCES = {
    # Triton rejects a zero-row batch of a batched BYTES input itself (fixed in the harness; kept as a check)
    "empty_batch_batched_model": ("preprocess", {"INPUT0": np.zeros((0, 1), np.object_)}, "r-9"),
}


@pytest.mark.parametrize("case", sorted(KNOWN_HARNESS_DIFFERENCES))
def test_harness_agrees_on_server_side_rejections(textops_server: TritonServer, harnesses: dict[str, Any], case: str) -> None:
    model, inputs, rid = KNOWN_HARNESS_DIFFERENCES[case]
    _, err = server_infer(textops_server.http_url, model, inputs, request_id=rid)
    _, merr = harness_infer(harnesses[model], inputs, request_id=rid)
    assert err is not None
    assert err == merr


def test_bad_config_fails_only_that_model(textops_server: TritonServer, textops_dirs: dict[str, Path]) -> None:
    import tritonclient.http as http

    c = http.InferenceServerClient(textops_server.http_url)
    try:
        index = {m["name"]: m for m in c.get_model_repository_index()}
    finally:
        c.close()
    message = "model 'bad_config': unknown parameter 'max_lenght' (known: "
    assert index["bad_config"]["state"] == "UNAVAILABLE"
    assert f"ConfigError: {message}" in index["bad_config"]["reason"]
    assert {n: m["state"] for n, m in index.items() if n != "bad_config"} == {
        n: "READY" for n in textops_dirs if n != "bad_config"}
    assert message in textops_server.log
    with pytest.raises(Exception) as exc:  # the harness refuses it with the same message
        harness.load_model(textops_dirs["bad_config"])
    assert message in str(exc.value)


# ------------------------------------------------------------------------------------- concurrency

CLIENTS = 8
REQUESTS = 200
POOL = 240  # distinct texts; request (client, k) sends 1-3 of them


def _pool() -> list[str]:
    return paragraphs(POOL - len(EDGE_TEXTS), 1000) + EDGE_TEXTS


def _request_texts(client: int, k: int) -> list[int]:
    n = 1 + (client + k) % 3
    first = (client * 37 + k * 11) % POOL
    return [(first + 7 * j) % POOL for j in range(n)]


@pytest.fixture(scope="module")
def expected_rows(harnesses: dict[str, Any]) -> dict[str, np.ndarray]:
    """Harness outputs of every pool text, computed in chunks (rows must not depend on their batch)."""
    texts = _pool()
    m = harnesses["preprocess"]
    parts = [m.infer({"INPUT0": text_tensor(texts[i : i + 64])}) for i in range(0, POOL, 64)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _load_client(server: TritonServer, protocol: str, client_idx: int, expected: dict[str, np.ndarray],
                 start: threading.Barrier) -> list[str]:
    tc, client = client_for(server, protocol)
    texts = _pool()
    names = ("BERT_IDS", "BERT_AM", "TREE_FEATS")
    problems: list[str] = []
    try:
        start.wait(timeout=60)
        for k in range(REQUESTS):
            idx = _request_texts(client_idx, k)
            arr = text_tensor([texts[i] for i in idx])
            ii = tc.InferInput("INPUT0", list(arr.shape), np_to_triton_dtype(arr.dtype))
            ii.set_data_from_numpy(arr)
            rid = f"{protocol}-{client_idx}-{k}"
            kw = {"client_timeout": 60.0} if protocol == "grpc" else {}
            try:
                res = client.infer("preprocess", [ii], outputs=[tc.InferRequestedOutput(n) for n in names],
                                   request_id=rid, **kw)
            except Exception as err:  # noqa: BLE001 - every failure is a finding
                problems.append(f"{rid}: {err}")
                continue
            resp_id = res.get_response()["id"] if protocol == "http" else res.get_response().id
            if resp_id != rid:
                problems.append(f"{rid}: response id {resp_id}")
            for n in names:
                got = res.as_numpy(n)
                if got is None or got.dtype != expected[n].dtype or not np.array_equal(got, expected[n][idx]):
                    problems.append(f"{rid}: {n} differs from the expected rows {idx}")
    finally:
        client.close()
    return problems


def test_concurrent_preprocess_http_and_grpc(textops_server: TritonServer, expected_rows: dict[str, np.ndarray]
                                            ) -> None:
    inf0, exe0 = stats(textops_server, "preprocess")
    barrier = threading.Barrier(2 * CLIENTS)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=2 * CLIENTS) as pool:
        futures = [pool.submit(_load_client, textops_server, protocol, i, expected_rows, barrier)
                   for protocol in PROTOCOLS for i in range(CLIENTS)]
        problems = [p for f in futures for p in f.result(timeout=600)]
    elapsed = time.monotonic() - t0
    rows = sum(len(_request_texts(c, k)) for c in range(CLIENTS) for k in range(REQUESTS)) * 2
    inf1, exe1 = stats_once_counted(textops_server.http_url, "preprocess", (inf0, exe0), rows)
    assert problems[:20] == [] and len(problems) == 0
    assert inf1 - inf0 == rows
    executions = exe1 - exe0
    requests = 2 * CLIENTS * REQUESTS
    TIMINGS[f"load: preprocess {requests} requests"] = elapsed
    print(f"preprocess: {requests} requests ({rows} texts) in {executions} executions, {elapsed:.1f}s")
    assert 0 < executions < requests  # the dynamic batcher merged concurrent requests
