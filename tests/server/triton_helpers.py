"""Helpers for the real-server tests (imported by conftest and tests; the parity helpers are reusable).

:func:`make_repository` builds a repository from model directories; :func:`server_infer` sends the same
``{name: ndarray}`` inputs that ``triton_textops.testing.load_model(dir).infer(...)`` takes and returns
``(outputs, error_message)``, so a test can compare the real server with the in-process harness.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from triton_textops.tools.server import ServerInstall, TritonServer

MODELS = Path(__file__).parent / "models"
TIMINGS: dict[str, float] = {}


@dataclass(frozen=True)
class Runtime:
    install: ServerInstall
    python_env: Path


def make_repository(dst: Path, *models: str | Path) -> Path:
    """Copy model directories (names under ``tests/server/models`` or paths) into a fresh repository ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    for m in models:
        src = Path(m) if Path(m).is_absolute() else MODELS / m
        shutil.copytree(src, dst / src.name)
    return dst


def start_server(runtime: Runtime, repo: Path, label: str, **kw: object) -> TritonServer:
    """Start a server on ``repo`` with the session runtime and record how long the start took."""
    t0 = time.monotonic()
    server = TritonServer(repo, install=runtime.install, python_env=runtime.python_env, **kw)  # type: ignore[arg-type]
    try:
        server.start()
    finally:
        TIMINGS[f"server start: {label}"] = time.monotonic() - t0
    return server


def server_infer(
    url: str,
    model: str,
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[str] | None = None,
    *,
    protocol: str = "http",
    request_id: str = "",
) -> tuple[dict[str, np.ndarray], str | None]:
    """One request to a real server: ``({output: array}, None)`` or ``({}, error message)``."""
    from tritonclient.utils import InferenceServerException, np_to_triton_dtype

    if protocol == "http":
        import tritonclient.http as tc
    else:
        import tritonclient.grpc as tc  # type: ignore[no-redef]
    client = tc.InferenceServerClient(url)
    try:
        infer_inputs = []
        for name, arr in inputs.items():
            arr = np.asarray(arr)
            ii = tc.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
            ii.set_data_from_numpy(arr)
            infer_inputs.append(ii)
        requested = [tc.InferRequestedOutput(n) for n in outputs] if outputs is not None else None
        try:
            result = client.infer(model, infer_inputs, outputs=requested, request_id=request_id)
        except InferenceServerException as err:
            return {}, err.message()
        names = outputs
        if names is None:
            resp = result.get_response()
            names = [o["name"] for o in resp["outputs"]] if protocol == "http" else [o.name for o in resp.outputs]
        return {n: result.as_numpy(n) for n in names}, None
    finally:
        client.close()


def model_stats(http_url: str, model: str) -> tuple[int, int]:
    """(inference_count, execution_count) of a model so far, from the server's statistics endpoint."""
    import tritonclient.http as http

    c = http.InferenceServerClient(http_url)
    try:
        s = c.get_inference_statistics(model)["model_stats"][0]
    finally:
        c.close()
    return int(s["inference_count"]), int(s["execution_count"])


def stats_once_counted(http_url: str, model: str, before: tuple[int, int], rows: int,
                       timeout: float = 30.0) -> tuple[int, int]:
    """The model's statistics once ``rows`` more inferences than ``before`` are counted (or at ``timeout``).

    Triton counts a request in its statistics after it has sent the response, so statistics read right after
    the last response can lag it: wait for the count the test expects, with a bound, instead of racing it.
    """
    deadline = time.monotonic() + timeout
    while True:
        now = model_stats(http_url, model)
        if now[0] - before[0] >= rows or time.monotonic() >= deadline:
            return now
        time.sleep(0.05)
