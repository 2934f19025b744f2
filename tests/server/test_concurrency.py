"""Concurrent load on the real server: 8 HTTP + 8 gRPC clients x 200 requests, no error, no mixed-up response."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from triton_helpers import model_stats, stats_once_counted
from tritonclient.utils import np_to_triton_dtype

from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

CLIENTS = 8
REQUESTS = 200
WIDTH = 3


def request_inputs(client: int, k: int) -> dict[str, np.ndarray]:
    """Inputs unique to (client, k), so any cross-request mix-up shows in the outputs."""
    base = client * 10_000 + k
    in0 = (base + np.arange(WIDTH, dtype=np.float32) / 8).reshape(1, WIDTH).astype(np.float32)
    in1 = np.full((1, WIDTH), k - client, dtype=np.int32)
    text = np.array([[f"c{client}-r{k}-é".encode()]], dtype=np.object_)
    return {"INPUT0": in0, "INPUT1": in1, "TEXT": text}


def run_client(protocol: str, url: str, client_idx: int, start: threading.Barrier) -> list[str]:
    """Send REQUESTS sequential requests with one client; return a list of problems (empty if all fine)."""
    if protocol == "http":
        import tritonclient.http as tc

        client = tc.InferenceServerClient(url, network_timeout=30.0, connection_timeout=30.0)
    else:
        import tritonclient.grpc as tc  # type: ignore[no-redef]

        client = tc.InferenceServerClient(url)
    problems: list[str] = []
    try:
        start.wait(timeout=60)
        for k in range(REQUESTS):
            inputs = request_inputs(client_idx, k)
            ins = []
            for name, arr in inputs.items():
                ii = tc.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
                ii.set_data_from_numpy(arr)
                ins.append(ii)
            outs = [tc.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1", "TEXT_OUT")]
            rid = f"{protocol}-{client_idx}-{k}"
            kwargs = {"client_timeout": 30.0} if protocol == "grpc" else {}
            try:
                res = client.infer("add_sub", ins, outputs=outs, request_id=rid, **kwargs)
            except Exception as err:  # noqa: BLE001 - every failure is a finding
                problems.append(f"{rid}: {err}")
                continue
            resp_id = res.get_response()["id"] if protocol == "http" else res.get_response().id
            text = inputs["TEXT"][0, 0].decode()
            if (
                resp_id != rid
                or not np.array_equal(res.as_numpy("OUTPUT0"), inputs["INPUT0"] + inputs["INPUT1"])
                or not np.array_equal(res.as_numpy("OUTPUT1"), inputs["INPUT0"] - inputs["INPUT1"])
                or res.as_numpy("TEXT_OUT").tolist() != [[f"{text.upper()}|{len(text)}".encode()]]
            ):
                problems.append(f"{rid}: mixed-up response id={resp_id} {res.as_numpy('TEXT_OUT')}")
    finally:
        client.close()
    return problems


def test_concurrent_http_and_grpc_clients(server: TritonServer) -> None:
    before = model_stats(server.http_url, "add_sub")
    barrier = threading.Barrier(2 * CLIENTS)
    with ThreadPoolExecutor(max_workers=2 * CLIENTS) as pool:
        futures = [
            pool.submit(run_client, protocol, url, i, barrier)
            for protocol, url in (("http", server.http_url), ("grpc", server.grpc_url))
            for i in range(CLIENTS)
        ]
        problems = [p for f in futures for p in f.result(timeout=300)]
    after = stats_once_counted(server.http_url, "add_sub", before, 2 * CLIENTS * REQUESTS)
    assert problems == []
    served = after[0] - before[0]
    executions = after[1] - before[1]
    assert served == 2 * CLIENTS * REQUESTS
    # with dynamic batching, concurrent requests share model executions; the check above proves none got mixed up
    print(f"{served} requests in {executions} model executions")
    assert 0 < executions <= served
