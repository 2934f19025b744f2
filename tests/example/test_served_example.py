"""The trained example in a real tritonserver equals the in-process harness on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from triton_textops.testing import load_model, run_ensemble

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def served(example):
    from triton_textops.examples.readability import RUNTIME_PACKAGES
    from triton_textops.server import TritonServer, model_runtime_env

    env = model_runtime_env(packages=list(RUNTIME_PACKAGES))
    with TritonServer(example.repo, python_env=env, startup_timeout=300) as server:
        yield server


def test_ensemble_in_server_equals_in_process(example, excerpts, served) -> None:
    import tritonclient.grpc as grpcclient

    from triton_textops.demo import ensemble_inputs, infer, walk_ensemble

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
