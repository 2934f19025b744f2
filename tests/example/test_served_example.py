"""The trained example served exactly as a user types it, in a real tritonserver, equals the in-process harness.

``example readability DIR`` (the session fixture, through the real CLI) writes the repository with its
``requirements.txt``; here it is served with nothing else: ``TritonServer(DIR)`` and ``triton-textops serve DIR``.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from triton_textops.testing import load_model, run_ensemble

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def served(example):
    from triton_textops.tools.server import TritonServer

    with TritonServer(example.repo, startup_timeout=300) as server:
        yield server


def test_repository_records_what_its_python_models_need(example) -> None:
    from triton_textops.tools.repo.generate import read_requirements
    from triton_textops.triton.config import load_config

    assert read_requirements(example.repo) == ["onnxruntime>=1.18", "treelite>=4.1,<5"]
    for model in ("preprocess", "bert-large", "cuml", "postprocess"):
        cfg = load_config(example.repo / model)
        assert cfg.backend == "python" and "EXECUTION_ENV_PATH" not in cfg.parameters


def test_served_as_written_runs_the_models_in_the_env_of_the_record(example, served) -> None:
    from triton_textops.tools.server import repository_runtime_env

    env = repository_runtime_env(example.repo)  # the cached env TritonServer(repo) chose by itself
    assert "onnxruntime" in (env / ".complete").read_text() and "treelite" in (env / ".complete").read_text()
    results = served.probe()  # every python model answers a real request
    assert sorted(r.model for r in results) == ["bert-large", "cuml", "postprocess", "preprocess"]
    assert [r.model for r in served.probe(["ensemble_all"])] == ["ensemble_all"]


def test_ensemble_in_server_equals_in_process(example, excerpts, served) -> None:
    import tritonclient.grpc as grpcclient

    from triton_textops.tools.example.demo import ensemble_inputs, infer, walk_ensemble

    inputs = ensemble_inputs(excerpts, 0.4)
    client = grpcclient.InferenceServerClient(served.grpc_url)
    try:
        score = infer(grpcclient, client, "ensemble_all", inputs, ["SCORE"])["SCORE"]
        steps = [{"model_name": "preprocess", "input_map": {"INPUT0": "excerpt"},
                  "output_map": {"BERT_IDS": "ids", "BERT_AM": "am", "TREE_FEATS": "feats"}}]
        pre_server = walk_ensemble(grpcclient, client, steps, inputs)
        one = infer(grpcclient, client, "ensemble_all", ensemble_inputs(excerpts[:1], 0.4), ["SCORE"])["SCORE"]
    finally:
        client.close()
    with load_model(example.repo / "preprocess") as pre:
        pre_local = pre.infer({"INPUT0": inputs["excerpt"]})
    # identical preprocess tensors
    np.testing.assert_array_equal(pre_server["ids"], pre_local["BERT_IDS"])
    np.testing.assert_array_equal(pre_server["am"], pre_local["BERT_AM"])
    np.testing.assert_array_equal(pre_server["feats"], pre_local["TREE_FEATS"])
    # equal scores within float32 tolerance (the server's stub runs numpy<2, another onnxruntime build maybe)
    local = run_ensemble(example.repo, "ensemble_all", inputs)["SCORE"]
    assert score.dtype == np.float32 and score.shape == (len(excerpts), 1)
    np.testing.assert_allclose(score, local, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(one, local[:1], rtol=1e-5, atol=1e-4)


def _read_until(proc: subprocess.Popen, marker: str, timeout: float) -> list[str]:
    """Lines of ``proc``'s output up to the first one containing ``marker`` (a thread reads: no buffering games)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            continue
        if line is None:
            raise AssertionError(f"serve exited with {proc.wait()}:\n" + "\n".join(seen[-40:]))
        seen.append(line)
        if marker in line:
            return seen
    raise AssertionError(f"no {marker!r} from serve within {timeout:.0f}s:\n" + "\n".join(seen[-40:]))


def test_cli_serve_then_probe_as_a_user_types_it(example, excerpts) -> None:
    """`triton-textops serve DIR` serves the example; `triton-textops probe URL` passes; Ctrl-C stops it."""
    from triton_textops.cli import main
    from triton_textops.tools.example.demo import ensemble_inputs, infer

    proc = subprocess.Popen([sys.executable, "-m", "triton_textops.cli", "serve", str(example.repo)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        lines = _read_until(proc, "HTTP ", 300)
        http = lines[-1].split()[-1].removeprefix("http://")  # serve prints the URL; tritonclient takes host:port
        assert main(["probe", http]) == 0
        assert main(["probe", http, "--model", "ensemble_all"]) == 0
        import tritonclient.http as httpclient

        client = httpclient.InferenceServerClient(http)
        try:
            score = infer(httpclient, client, "ensemble_all", ensemble_inputs(excerpts[:2], 0.5), ["SCORE"])["SCORE"]
        finally:
            client.close()
        assert score.shape == (2, 1) and np.isfinite(score).all()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == 0


def test_pack_env_repository_serves_from_the_shared_packed_env(example, excerpts, tmp_path) -> None:
    """`example readability DIR --pack-env`: one python_env.tar.gz at the top, named by every python model through
    $$TRITON_MODEL_DIRECTORY/..; TritonServer(DIR) then leaves the record out of its own model env (no onnxruntime or
    treelite there), so bert-large/cuml can only load from the packed env."""
    pytest.importorskip("venv_pack")
    from triton_textops.cli import main
    from triton_textops.tools.repo.generate import REQUIREMENTS_FILE, SHARED_ENV
    from triton_textops.tools.server import TritonServer, model_runtime_env, repository_runtime_env
    from triton_textops.triton.config import load_config

    repo = tmp_path / "repo"
    rc = main(["example", "readability", str(repo), "--limit", "160", "--artifacts", str(example.artifacts.parent),
               "--pack-env", "--env-tool", "venv"])
    assert rc == 0
    assert (repo / SHARED_ENV).is_file()
    for model in ("preprocess", "bert-large", "cuml", "postprocess"):
        param = load_config(repo / model).parameters["EXECUTION_ENV_PATH"].string_value
        assert param == f"$$TRITON_MODEL_DIRECTORY/../{SHARED_ENV}"
    assert (repo / REQUIREMENTS_FILE).is_file()
    assert repository_runtime_env(repo) == model_runtime_env()  # numpy<2 + triton_textops only
    assert "onnxruntime" not in (model_runtime_env() / ".complete").read_text()
    with TritonServer(repo, startup_timeout=300) as server:
        assert sorted(r.model for r in server.probe()) == ["bert-large", "cuml", "postprocess", "preprocess"]
        import tritonclient.http as httpclient

        from triton_textops.tools.example.demo import ensemble_inputs, infer

        client = httpclient.InferenceServerClient(server.http_url)
        try:
            score = infer(httpclient, client, "ensemble_all", ensemble_inputs(excerpts, 0.4), ["SCORE"])["SCORE"]
        finally:
            client.close()
        log = server.log
    local = run_ensemble(example.repo, "ensemble_all", ensemble_inputs(excerpts, 0.4))["SCORE"]
    np.testing.assert_allclose(score, local, rtol=1e-5, atol=1e-4)
    # the server logs the path with the model directory in place and '..' resolved: one env for the four models
    assert log.count(f'Using Python execution env {repo / SHARED_ENV}"') == 4
