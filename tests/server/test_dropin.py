"""Our tokenize model dropped into third-party configs (tests/dropin_dirs.py), in the REAL server and the harness.

One server for the module serves every drop-in directory; the ones whose config does not fit the model must fail
alone, with the harness's message. Checked: a config that declares its tensors keeps its batching (a 1-D request
``[4]`` works), the ensemble with ``max_batch_size: 128`` over a non-batching member loads and serves, a config
without tensors is batched and the auto-complete log line reaches the server log, INT32 outputs, and KIND_GPU on a
machine without GPUs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dropin_dirs import write_dropin_models
from textops_repo import assert_same_outputs, config_dtypes, harness_infer
from triton_helpers import TIMINGS, Runtime, server_infer, start_server

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.testing import run_ensemble
from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

harness = pytest.importorskip("triton_textops.testing.harness")

LOADS = ("reviews", "reviews_member", "reviews_ensemble", "bare", "bare_int32")
FAILS = ("reviews_metadata", "reviews_no_names", "reviews_length_conflict")
TEXTS = [t.encode() for t in austen()[20:24]] + [b"", "naïve café".encode()]
GPUS_PRESENT = any(Path("/dev").glob("nvidia[0-9]*"))


@pytest.fixture(scope="module")
def dropin_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_dropin_models(tmp_path_factory.mktemp("dropin_repo"))


@pytest.fixture(scope="module")
def dropin_server(triton_runtime: Runtime, dropin_dirs: dict[str, Path]) -> Iterator[TritonServer]:
    repo = next(iter(dropin_dirs.values())).parent
    srv = start_server(triton_runtime, repo, "drop-in configs",
                       extra_args=["--exit-on-error=false", "--strict-readiness=false"])
    try:
        yield srv
    finally:
        t0 = time.monotonic()
        srv.stop()
        TIMINGS["server stop: drop-in configs"] = time.monotonic() - t0


@pytest.fixture(scope="module")
def harnesses(dropin_dirs: dict[str, Path]) -> Iterator[dict[str, Any]]:
    models = {name: harness.load_model(dropin_dirs[name]) for name in LOADS if name != "reviews_ensemble"}
    yield models
    for m in models.values():
        m.finalize()


def index(server: TritonServer) -> dict[str, dict[str, Any]]:
    import tritonclient.http as http

    c = http.InferenceServerClient(server.http_url)
    try:
        return {m["name"]: m for m in c.get_model_repository_index()}
    finally:
        c.close()


def server_config(server: TritonServer, model: str) -> dict[str, Any]:
    import tritonclient.http as http

    c = http.InferenceServerClient(server.http_url)
    try:
        return c.get_model_config(model)
    finally:
        c.close()


def _io(entries: list[dict[str, Any]]) -> list[tuple[str, str, list[int]]]:
    return [(e["name"], e["data_type"], [int(d) for d in e["dims"]]) for e in entries]


def test_fitting_configs_load_and_the_others_fail_with_the_harness_message(
        dropin_server: TritonServer, dropin_dirs: dict[str, Path]) -> None:
    models = index(dropin_server)
    assert {n: models[n]["state"] for n in LOADS} == {n: "READY" for n in LOADS}
    for name in FAILS:
        assert models[name]["state"] == "UNAVAILABLE"
        with pytest.raises(harness.ModelLoadError) as exc:
            harness.load_model(dropin_dirs[name])
        ours = str(exc.value).split("ConfigError: ", 1)[1].split("\n", 1)[0]
        assert f"ConfigError: {ours}" in models[name]["reason"], (models[name]["reason"], ours)
    assert "match no role" in models["reviews_metadata"]["reason"]
    assert 'string_value: "text=product_reviews,input_ids=input_ids,attention_mask=attention_mask"' in models[
        "reviews_no_names"]["reason"]


def test_kind_gpu_without_gpus(dropin_server: TritonServer, dropin_dirs: dict[str, Path]) -> None:
    if GPUS_PRESENT:
        pytest.skip("this host has GPUs: KIND_GPU is a valid instance group here")
    gpu = index(dropin_server)["reviews_gpu"]
    message = "instance group reviews_gpu_0 of model reviews_gpu has kind KIND_GPU but no GPUs are available"
    assert gpu["state"] == "UNAVAILABLE" and message in gpu["reason"], gpu
    with pytest.raises(harness.ModelLoadError) as exc:
        harness.load_model(dropin_dirs["reviews_gpu"])
    assert str(exc.value) == message


@pytest.mark.parametrize("model", ["reviews", "reviews_member", "bare", "bare_int32"])
def test_completed_configs_identical(dropin_server: TritonServer, harnesses: dict[str, Any], model: str) -> None:
    real, mock = server_config(dropin_server, model), harnesses[model].config
    assert int(real.get("max_batch_size", 0)) == int(mock["max_batch_size"])
    assert ("dynamic_batching" in real) == ("dynamic_batching" in mock)
    assert _io(real["input"]) == _io(mock["input"]) and _io(real["output"]) == _io(mock["output"])
    if model.startswith("reviews"):  # declared tensors: batching untouched, dtypes and dims as written
        assert int(real.get("max_batch_size", 0)) == 0 and "dynamic_batching" not in real
        assert {e["data_type"] for e in real["output"]} == {"TYPE_INT32"}
    else:  # no tensors: batched by auto-complete
        assert int(real["max_batch_size"]) == 64 and "dynamic_batching" in real


def test_auto_complete_logs_what_it_filled_in(dropin_server: TritonServer) -> None:
    log = dropin_server.log
    line = next((ln for ln in log.splitlines() if "model 'bare': auto-complete filled in" in ln), None)
    assert line is not None, log[-3000:]
    assert "max_batch_size: 64" in line and "output INPUT_IDS TYPE_INT64 [128]" in line
    assert "model 'reviews': auto-complete" not in log  # a declared config: nothing filled in


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(("model", "inputs"), [
    ("reviews", {"product_reviews": np.array(TEXTS, dtype=object)}),  # 1-D [6], no batching
    ("reviews_member", {"product_reviews": np.array(TEXTS, dtype=object).reshape(-1, 1)}),
    ("bare_int32", {"TEXT": np.array(TEXTS, dtype=object).reshape(-1, 1)}),
])
def test_outputs_identical(dropin_server: TritonServer, harnesses: dict[str, Any], model: str,
                           inputs: dict[str, np.ndarray], protocol: str) -> None:
    url = dropin_server.http_url if protocol == "http" else dropin_server.grpc_url
    real, err = server_infer(url, model, inputs, protocol=protocol)
    assert err is None, err
    mock, merr = harness_infer(harnesses[model], inputs)
    assert merr is None, merr
    assert_same_outputs(real, mock, config_dtypes(harnesses[model].config))
    assert {a.dtype for a in real.values()} == {np.dtype(np.int32)}
    assert {a.shape for a in real.values()} == {(len(TEXTS), 256 if model.startswith("reviews") else 128)}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_ensemble_with_larger_max_batch_size(dropin_server: TritonServer, dropin_dirs: dict[str, Path],
                                             protocol: str) -> None:
    url = dropin_server.http_url if protocol == "http" else dropin_server.grpc_url
    inputs = {"product_reviews": np.array(TEXTS, dtype=object).reshape(-1, 1)}
    real, err = server_infer(url, "reviews_ensemble", inputs, protocol=protocol)
    assert err is None, err
    mock = run_ensemble(dropin_dirs["reviews_ensemble"].parent, "reviews_ensemble", inputs)
    assert_same_outputs(real, mock, {"input_ids": np.dtype(np.int32), "attention_mask": np.dtype(np.int32)})
    assert real["input_ids"].shape == (len(TEXTS), 256)
