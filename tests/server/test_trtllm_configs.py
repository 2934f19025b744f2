"""In a real tritonserver: TensorRT-LLM's preprocessing / postprocessing configs filled as its docs fill them
(fill_template.py given only tokenizer_dir, batch size, instance count: ``${add_special_tokens}``,
``${skip_special_tokens}``, ``${max_num_images}``... stay) load, warn once per unset parameter and answer as in the
harness; and the liveness probe checks the LLM example's decoupled generator over gRPC streaming, and fails naming
it once its stub is killed (Triton still says ready).

One server: the LLM example (``triton-textops example llm``) plus the two placeholder-filled models.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_lifecycle import _cmdlines, _status, _stub_of
from triton_helpers import Runtime, server_infer, start_server

from triton_textops.tools.server import TritonServer, TritonServerError

pytestmark = pytest.mark.server

# what TensorRT-LLM's docs give fill_template.py (and its config's queue numbers): no add/skip_special_tokens
DOCS_FILL = {"triton_max_batch_size": "8", "preprocessing_instance_count": "1", "postprocessing_instance_count": "1",
             "max_queue_delay_microseconds": "0", "max_queue_size": "0"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import llm_dirs as L

    from triton_textops.cli import main

    root = tmp_path_factory.mktemp("trtllm_configs")
    tok = L.write_tokenizer_dir(root, "llama3")
    repo = root / "repo"
    assert main(["example", "llm", str(repo), "--tokenizer", str(tok), "--max-batch-size", "8"]) == 0
    for kind, module in (("preprocessing", "llm_preprocess"), ("postprocessing", "llm_postprocess")):
        cfg = L.trtllm_config(kind, f"docs_{kind}", fill=DOCS_FILL, tokenizer_dir=str(tok))
        L.write_config_dir(repo, f"docs_{kind}", cfg, L.one_line(module))
    return repo


@pytest.fixture(scope="module")
def server(triton_runtime: Runtime, repo: Path) -> Iterator[TritonServer]:
    srv = start_server(triton_runtime, repo, "TensorRT-LLM configs + llm example", startup_timeout=300)
    try:
        yield srv
    finally:
        srv.stop()


def _requests() -> dict[str, dict[str, np.ndarray]]:
    text = "Hello world, naïve 中文 😀 <|eot_id|>"
    return {
        "docs_preprocessing": {"QUERY": np.array([[text.encode()]], dtype=object),
                               "REQUEST_OUTPUT_LEN": np.array([[4]], np.int32)},
        "docs_postprocessing": {"TOKENS_BATCH": np.array([[[100256, 9906, 1917, 100260, 220]]], np.int32),
                                "SEQUENCE_LENGTH": np.array([[5]], np.int32)},
    }


def test_docs_filled_configs_load_warn_and_answer_as_in_the_harness(server: TritonServer, repo: Path) -> None:
    from triton_textops.testing import load_model

    log = server.log_path.read_text(errors="replace")
    for model, params in (("docs_preprocessing", ("add_special_tokens", "max_num_images")),
                          ("docs_postprocessing", ("skip_special_tokens",))):
        assert _status(f"http://{server.http_url}/v2/models/{model}/ready") == 200
        for p in params:  # one warning line per unset parameter (the instance's initialize)
            lines = [ln for ln in log.splitlines() if f"model '{model}': parameter '{p}' is not set" in ln]
            assert len(lines) == 1, (model, p, lines)
        inputs = _requests()[model]
        got, error = server_infer(server.http_url, model, inputs)
        assert error is None, error
        with load_model(repo / model) as m:
            want = m.infer(inputs)
        assert set(got) == set(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{model} {name}")
    # the defaults TensorRT-LLM takes: Llama-3's BOS added, special tokens skipped
    got, _ = server_infer(server.http_url, "docs_preprocessing", _requests()["docs_preprocessing"])
    assert got["INPUT_ID"].reshape(-1)[0] == 100256
    got, _ = server_infer(server.http_url, "docs_postprocessing", _requests()["docs_postprocessing"])
    assert got["OUTPUT"].reshape(-1)[0] == b" world "  # ("Hello" is one of this tokenizer's special tokens)


def test_probe_streams_to_the_decoupled_generator_and_catches_its_dead_stub(server: TritonServer) -> None:
    from triton_textops.cli import main
    from triton_textops.tools.probe import _get_json, base_url, exec_probe_command, probe_request

    config = _get_json(f"{base_url(server.http_url)}/v2/models/generator/config", 10)
    target = probe_request("generator", config)
    assert target.decoupled  # read from the server's config: Triton's HTTP infer refuses this model
    script = exec_probe_command([target], port=server.http_port, grpc_port=server.grpc_port, timeout=5)
    script[0] = sys.executable
    models = ["generator", "postprocessing", "preprocessing"]
    assert [r.ok for r in server.probe(models)] == [True] * 3
    assert main(["probe", server.http_url, "--grpc", server.grpc_url, "--model", "generator"]) == 0
    assert subprocess.run(script, capture_output=True, timeout=60).returncode == 0

    stub = _stub_of(server, "generator")
    os.kill(stub, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while stub in _cmdlines() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stub not in _cmdlines()
    assert _status(f"http://{server.http_url}/v2/models/generator/ready") == 200  # what readiness sees
    with pytest.raises(TritonServerError, match="generator") as failed:
        server.probe(models)
    assert "postprocessing" not in str(failed.value)  # the live models still answer
    assert main(["probe", server.http_url, "--grpc", server.grpc_url, "--model", "generator"]) == 1
    res = subprocess.run(script, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "generator" in res.stderr, res.stderr
    print(f"the probe on the dead decoupled stub: {res.stderr.strip()}")
