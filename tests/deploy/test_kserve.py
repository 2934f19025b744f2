"""deploy kserve: the InferenceService round-trips through the KServe SDK classes and matches the repository."""

from __future__ import annotations

import pytest

from triton_textops.cli import main
from triton_textops.tools.deploy import DeployError, inspect_repository

# The KServe SDK registers protobuf symbols (package `inference`) that clash with tritonclient.grpc's in one
# process, so `make test` runs this module in its own pytest process (see the Makefile).
kserve = pytest.importorskip("kserve", reason="the KServe SDK is the 'deploy' extra")
yaml = pytest.importorskip("yaml")

from triton_textops.tools.deploy.kserve import (  # noqa: E402
    ANNOTATION_DEFAULT_MODEL,
    ANNOTATION_MODELS,
    build_inference_service,
    inference_service_from_dict,
    inference_service_to_dict,
    runtime_image_tag,
)

MODELS = ["bert-large", "cuml", "ensemble_all", "postprocess", "preprocess"]
URI = "s3://bucket/textops/ensemble_all"


def _round_trip(path):
    data = yaml.safe_load(path.read_text())
    isvc = inference_service_from_dict(data)
    assert isinstance(isvc, kserve.V1beta1InferenceService)
    assert isinstance(isvc.spec.predictor.model, kserve.V1beta1ModelSpec)
    assert inference_service_to_dict(isvc) == data  # SDK object -> dict -> YAML -> SDK object, losslessly
    return data, isvc


@pytest.mark.parametrize(("device", "gpus"), [("gpu", "1"), ("cpu", None)])
def test_cli_manifest_round_trips_and_matches_repository(make_repo, tmp_path, capsys, device, gpus):
    repo = make_repo(device)
    out = tmp_path / "isvc.yaml"
    rc = main(["deploy", "kserve", str(repo), "--storage-uri", URI, "-o", str(out),
               "--min-replicas", "2", "--max-replicas", "6", "--scale-metric", "concurrency",
               "--scale-target", "8", "--cpu", "4", "--memory", "8Gi", "--namespace", "serving"])
    assert rc == 0, capsys.readouterr().err
    data, isvc = _round_trip(out)
    assert data["apiVersion"] == "serving.kserve.io/v1beta1" and data["kind"] == "InferenceService"
    assert isvc.metadata.name == "ensemble-all" and isvc.metadata.namespace == "serving"
    ann = isvc.metadata.annotations
    assert ann[ANNOTATION_MODELS].split(",") == MODELS == inspect_repository(repo).models
    assert ann[ANNOTATION_DEFAULT_MODEL] == "ensemble_all"
    pred = isvc.spec.predictor
    assert (pred.min_replicas, pred.max_replicas, pred.scale_metric, pred.scale_target) == (2, 6, "concurrency", 8)
    model = pred.model
    assert model.model_format.name == "triton" and model.protocol_version == "v2"
    assert model.runtime == "kserve-tritonserver" and model.runtime_version == "24.10-py3"
    assert model.storage_uri == URI
    assert model.readiness_probe.http_get.path == "/v2/models/ensemble_all/ready"
    assert model.readiness_probe.http_get.port == 8080
    assert model.startup_probe.http_get.path == "/v2/models/ensemble_all/ready"
    # liveness: a real inference (python3 in the Triton image), not /ready, which stays 200 with a dead stub
    command = model.liveness_probe._exec.command
    assert command[:2] == ["python3", "-c"] and "/v2/models/" in command[2] and "127.0.0.1:8080" in command[2]
    assert model.liveness_probe.failure_threshold == 3 and model.liveness_probe.http_get is None
    limits, requests = model.resources.limits, model.resources.requests
    assert limits == requests
    assert limits.get("nvidia.com/gpu") == gpus  # the repository's KIND_GPU sets the GPU count
    assert (limits["cpu"], limits["memory"]) == ("4", "8Gi")


def test_stdout_and_fixed_replicas(make_repo, capsys):
    repo = make_repo("gpu", backends="native", env=False, stub=False)
    assert main(["deploy", "kserve", str(repo), "--storage-uri", "gs://b/r", "--replicas", "3",
                 "--gpus", "2", "--runtime-version", "24.10-py3-igpu", "--deployment-mode", "RawDeployment",
                 "--image-has-textops"]) == 0
    captured = capsys.readouterr()
    assert "warning: python model(s) postprocess, preprocess import triton_textops" in captured.err
    data = yaml.safe_load(captured.out)
    isvc = inference_service_from_dict(data)
    pred = isvc.spec.predictor
    assert (pred.min_replicas, pred.max_replicas) == (3, 3)
    assert pred.model.resources.limits["nvidia.com/gpu"] == "2"
    assert pred.model.runtime_version == "24.10-py3-igpu"
    assert isvc.metadata.annotations["serving.kserve.io/deploymentMode"] == "RawDeployment"


def test_pinned_gpu_ids_raise_the_default(make_repo):
    repo = make_repo("gpu", env=False, stub=False)
    cfg = repo / "cuml" / "config.pbtxt"
    text = cfg.read_text()
    assert "kind: KIND_GPU" in text
    cfg.write_text(text.replace("kind: KIND_GPU", "kind: KIND_GPU\n  gpus: 0\n  gpus: 2", 1))
    info = inspect_repository(repo)
    assert info.gpus == 3
    isvc = build_inference_service(info, storage_uri=URI)
    assert isvc.spec.predictor.model.resources.limits["nvidia.com/gpu"] == "3"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gpus": 0}, "needs 1"),
        ({"storage_uri": "/local/path"}, "storage URI"),
        ({"storage_uri": "ftp://x/y"}, "storage URI"),
        ({"replicas": 2, "min_replicas": 1}, "not both"),
        ({"min_replicas": 4, "max_replicas": 2}, "max_replicas"),
        ({"name": "Ensemble_All"}, "DNS-1035"),
        ({"cpu": "two"}, "quantity"),
        ({"runtime_version": "latest"}, "runtime version"),
        ({"scale_metric": "gpu"}, "scale metric"),
        ({"default_model": "nope"}, "not in"),
    ],
)
def test_bad_options(make_repo, kwargs, match):
    info = inspect_repository(make_repo("gpu", env=False, stub=False))
    kwargs = {"storage_uri": URI, **kwargs}
    with pytest.raises(DeployError, match=match):
        build_inference_service(info, **kwargs)


def test_from_dict_refuses_unknown_fields_and_other_kinds():
    with pytest.raises(DeployError, match="not an InferenceService"):
        inference_service_from_dict({"kind": "Deployment"})
    with pytest.raises(DeployError, match="unknown field"):
        inference_service_from_dict({"kind": "InferenceService", "spec": {"predictor": {"tritonn": {}}}})
    assert runtime_image_tag("24.10") == "24.10-py3" and runtime_image_tag("25.01-py3") == "25.01-py3"


def test_cli_error_exit(make_repo, capsys):
    repo = make_repo("gpu", env=False, stub=False)
    assert main(["deploy", "kserve", str(repo), "--storage-uri", URI, "--gpus", "0"]) == 2
    assert "needs 1" in capsys.readouterr().err


def test_liveness_script_sends_a_real_inference_and_fails_on_a_wrong_answer(make_repo, tmp_path):
    """The manifest's exec-probe script, run here against a fake Triton: it POSTs a batch-1 request to the
    ensemble and exits 0 on a right answer, non-zero (with the reason) on an error answer or a NaN."""
    import http.server
    import json
    import subprocess
    import sys
    import threading

    from triton_textops.tools.deploy.kserve import liveness_targets
    from triton_textops.tools.probe import exec_probe_command

    info = inspect_repository(make_repo("cpu", env=False, stub=False))
    targets = liveness_targets(info, "ensemble_all")
    assert [t.model for t in targets] == ["ensemble_all"]  # the ensemble runs every python model
    (body,) = [t.body for t in targets]
    assert {i["name"]: (i["datatype"], i["shape"]) for i in body["inputs"]} == {
        "excerpt": ("BYTES", [1, 1]), "BERT_WEIGHT": ("FP32", [1, 1])}
    seen, answer = [], {}

    class Fake(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            seen.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            status, payload = answer["status"], json.dumps(answer["body"]).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        cmd = exec_probe_command(targets, port=srv.server_port, timeout=5)
        cmd[0] = sys.executable
        good = {"outputs": [{"name": "SCORE", "datatype": "FP32", "shape": [1, 1], "data": [7.5]}]}
        cases = [(200, good, 0, ""),
                 (400, {"error": "Stub process 'preprocess_0' is not healthy."}, 1, "not healthy"),
                 (200, {"outputs": [{"name": "SCORE", "datatype": "FP32", "shape": [1, 1], "data": ["NaN"]}]}, 1,
                  "not finite"),
                 (200, {"outputs": []}, 1, "SCORE missing")]
        for status, payload, rc, why in cases:
            answer.update(status=status, body=payload)
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            assert res.returncode == rc, (payload, res.stderr)
            assert why in res.stderr
    finally:
        srv.shutdown()
    assert seen[0] == ("/v2/models/ensemble_all/infer", body)


def test_python_models_the_stock_image_cannot_load_are_refused(make_repo, tmp_path, capsys):
    """Issue 26: our python models need triton_textops, which the stock Triton image lacks."""
    repo = make_repo("cpu", env=False, stub=False)
    out = tmp_path / "isvc.yaml"
    assert main(["deploy", "kserve", str(repo), "--storage-uri", URI, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert ("error: python model(s) bert-large, cuml, postprocess, preprocess import triton_textops but name no "
            "EXECUTION_ENV_PATH") in err and "--pack-env" in err and not out.exists()
    # an env in the repository without triton_textops in it is refused too
    repo = make_repo("cpu", name="env-without")
    for env in repo.glob("*/textops-env"):
        (env / "lib" / "python3.10" / "site-packages" / "triton_textops" / "__init__.py").unlink()
    assert main(["deploy", "kserve", str(repo), "--storage-uri", URI, "-o", str(out)]) == 2
    assert "the EXECUTION_ENV_PATH env of bert-large (bert-large/textops-env)" in capsys.readouterr().err


def test_output_into_a_directory_or_new_parents(make_repo, tmp_path, capsys):
    repo = make_repo("cpu")
    outdir = tmp_path / "kserve-out"
    outdir.mkdir()
    assert main(["deploy", "kserve", str(repo), "--storage-uri", URI, "-o", str(outdir)]) == 0
    assert f"wrote {outdir / 'ensemble-all.yaml'}" in capsys.readouterr().err
    _round_trip(outdir / "ensemble-all.yaml")
    nested = tmp_path / "missing" / "deeper" / "isvc.yaml"
    assert main(["deploy", "kserve", str(repo), "--storage-uri", URI, "-o", str(nested)]) == 0
    assert _round_trip(nested)[1].metadata.name == "ensemble-all"
