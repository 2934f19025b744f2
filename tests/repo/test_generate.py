"""The ``ensemble_all`` repository generator: configs, files, CPU/GPU switch, errors, and that it runs."""

from __future__ import annotations

import difflib
import os
import stat
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

from triton_textops import BertTokenizer, ReadabilityFeatures, blend_scores
from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path
from triton_textops.cli import main
from triton_textops.testing import load_model, run_ensemble
from triton_textops.testing import pb_utils as pb
from triton_textops.testing.ensemble import EnsembleError
from triton_textops.tools.repo.generate import (
    ENSEMBLE,
    MODELS,
    REQUIREMENTS_FILE,
    SAMPLE_EXCERPT,
    SHARED_ENV,
    RepositoryError,
    create_repository,
    plan_repository,
    read_requirements,
)
from triton_textops.triton.config import (
    config_to_text,
    ensemble_client_names,
    load_config,
    model_config_pb2,
    parse_config_text,
)
from triton_textops.triton.params import resolve_path

MEMBERS = [m for m in MODELS if m != ENSEMBLE]
KIND_GPU, KIND_CPU = 1, 2  # ModelInstanceGroup.Kind


def files_of(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}


def param(cfg, key: str) -> str:
    return cfg.parameters[key].string_value


@pytest.fixture
def kw(vocab, features_artifact):
    return {"vocab": vocab, "features": features_artifact}


@pytest.fixture
def fake_files(tmp_path):
    onnx = tmp_path / "bert.onnx"
    onnx.write_bytes(b"onnx-bytes")
    pt = tmp_path / "bert.pt"
    pt.write_bytes(b"torchscript-bytes")
    tl = tmp_path / "forest.tl"
    tl.write_bytes(b"treelite-bytes")
    return {"onnx": onnx, "pt": pt, "tl": tl}


@pytest.mark.parametrize("backends", ["native", "python"])
def test_configs_round_trip_and_match_the_plan(tmp_path, kw, fake_files, backends):
    model = fake_files["onnx"]
    plan = plan_repository(**kw, backends=backends, bert_model=model, forest=fake_files["tl"], warmup=True)
    root = create_repository(tmp_path / "repo", **kw, backends=backends, bert_model=model,
                             forest=fake_files["tl"], warmup=True)
    assert sorted(p.name for p in root.iterdir()) == sorted([*MODELS, REQUIREMENTS_FILE])
    # the record of what the python models need: serve / TritonServer build the model env from it
    want = ["onnxruntime>=1.18", "treelite>=4.1,<5"] if backends == "python" else []
    assert read_requirements(root) == plan.requirements == want
    assert plan.python_models == (["preprocess", "bert-large", "cuml", "postprocess"] if backends == "python"
                                  else ["preprocess", "postprocess"])
    for name, msg in plan.configs.items():
        assert isinstance(msg, model_config_pb2().ModelConfig)
        text = (root / name / "config.pbtxt").read_text()
        assert load_config(root / name) == msg, name
        assert config_to_text(parse_config_text(text)) == text  # stable rendering
        assert text.startswith(f'name: "{name}"\n')
        assert (root / name / "1").is_dir()  # every model (the ensemble too) has a version directory


def test_seed_layout_native(tmp_path, kw, fake_files):
    root = create_repository(tmp_path / "r", **kw, bert_model=fake_files["pt"], forest=fake_files["tl"],
                             max_batch_size=16, max_length=64, instances=2, max_queue_delay_us=250)
    width = ReadabilityFeatures.load(kw["features"]).n_features
    pre = load_config(root / "preprocess")
    assert pre.backend == "python" and pre.max_batch_size == 16
    assert [(i.name, list(i.dims)) for i in pre.input] == [("INPUT0", [1])]
    assert [(o.name, list(o.dims)) for o in pre.output] == [("BERT_IDS", [64]), ("BERT_AM", [64]),
                                                            ("TREE_FEATS", [width])]
    assert param(pre, "vocab") == "$$TRITON_MODEL_DIRECTORY/vocab.txt"
    assert param(pre, "features") == "$$TRITON_MODEL_DIRECTORY/features.json"
    assert param(pre, "max_length") == "64"
    assert (root / "preprocess" / "vocab.txt").read_bytes() == Path(kw["vocab"]).read_bytes()
    assert (root / "preprocess" / "features.json").read_bytes() == Path(kw["features"]).read_bytes()
    assert (root / "preprocess" / "1" / "model.py").read_text().startswith(
        "from triton_textops.models.preprocess import TritonPythonModel")

    bert = load_config(root / "bert-large")
    assert bert.backend == "pytorch" and not bert.parameters
    assert [(i.name, i.data_type, list(i.dims)) for i in bert.input] == [
        ("INPUT__0", 9, [64]), ("INPUT__1", 9, [64])]  # TYPE_INT64
    assert [(o.name, o.data_type, list(o.dims)) for o in bert.output] == [("OUTPUT__0", 11, [1])]  # TYPE_FP32
    assert (root / "bert-large" / "1" / "model.pt").read_bytes() == b"torchscript-bytes"

    cuml = load_config(root / "cuml")
    assert cuml.backend == "fil"
    assert {k: v.string_value for k, v in cuml.parameters.items()} == {
        "model_type": "treelite_checkpoint", "is_classifier": "false", "output_class": "false"}
    assert [(i.name, list(i.dims)) for i in cuml.input] == [("input__0", [width])]
    assert [(o.name, list(o.dims)) for o in cuml.output] == [("output__0", [1])]
    assert (root / "cuml" / "1" / "checkpoint.tl").read_bytes() == b"treelite-bytes"

    post = load_config(root / "postprocess")
    assert [i.name for i in post.input] == ["BERT_WEIGHT_INPUT", "BERT_LARGE_SCORE", "CUML_SCORE"]
    assert [o.name for o in post.output] == ["OUTPUT0"]

    for name in MEMBERS:
        cfg = load_config(root / name)
        assert [(g.count, g.kind) for g in cfg.instance_group] == [(2, KIND_CPU)]
        assert cfg.dynamic_batching.max_queue_delay_microseconds == 250
        assert (param(cfg, "FORCE_CPU_ONLY_INPUT_TENSORS") == "no") == (cfg.backend == "python")
        assert "EXECUTION_ENV_PATH" not in cfg.parameters and not cfg.model_warmup

    ens = load_config(root / ENSEMBLE)
    assert ens.platform == "ensemble" and not ens.backend and not ens.instance_group
    assert ens.max_batch_size == 16
    assert [(i.name, i.data_type, list(i.dims)) for i in ens.input] == [("excerpt", 13, [1]), ("BERT_WEIGHT", 11, [1])]
    assert [(o.name, o.data_type) for o in ens.output] == [("SCORE", 11)]
    assert [s.model_name for s in ens.ensemble_scheduling.step] == ["preprocess", "bert-large", "cuml", "postprocess"]


def test_onnx_model_selects_onnxruntime(tmp_path, kw, fake_files):
    root = create_repository(tmp_path / "r", **kw, bert_model=fake_files["onnx"])
    assert load_config(root / "bert-large").backend == "onnxruntime"
    assert (root / "bert-large" / "1" / "model.onnx").read_bytes() == b"onnx-bytes"
    assert not (root / "cuml" / "1" / "checkpoint.tl").exists()  # no forest given: config only


def test_default_queue_delay_is_zero_with_dynamic_batching_on(tmp_path, kw, fake_files):
    """0 us (benchmarks/perf.py tune) is protobuf's default value: the written configs must still hold a
    ``dynamic_batching { }`` block, or Triton would not batch at all."""
    root = create_repository(tmp_path / "repo", **kw, bert_model=fake_files["onnx"], forest=fake_files["tl"])
    for m in MEMBERS:
        cfg = load_config(root / m)
        assert cfg.HasField("dynamic_batching"), m
        assert cfg.dynamic_batching.max_queue_delay_microseconds == 0, m
        assert "dynamic_batching {" in (root / m / "config.pbtxt").read_text(), m


def test_cpu_and_gpu_repositories_differ_only_in_instance_group_kind(tmp_path, kw, fake_files):
    opts = dict(kw, bert_model=fake_files["pt"], forest=fake_files["tl"], warmup=True, instances=3)
    cpu = files_of(create_repository(tmp_path / "cpu", device="cpu", **opts))
    gpu = files_of(create_repository(tmp_path / "gpu", device="gpu", **opts))
    assert set(cpu) == set(gpu)
    changed = {}
    for rel in cpu:
        a, b = cpu[rel].read_bytes(), gpu[rel].read_bytes()
        if a != b:
            diff = [d for d in difflib.ndiff(a.decode().splitlines(), b.decode().splitlines()) if d[:2] in ("- ", "+ ")]
            changed[rel] = diff
    assert sorted(changed) == sorted(f"{m}/config.pbtxt" for m in MEMBERS)
    for rel, diff in changed.items():
        assert diff == ["-   kind: KIND_CPU", "+   kind: KIND_GPU"], rel
        group = load_config(gpu[rel]).instance_group
        assert [(g.count, g.kind) for g in group] == [(3, KIND_GPU)]


@pytest.mark.parametrize("env_kind", ["tarball", "directory"])
def test_python_backends_env_and_stub_wiring(tmp_path, kw, fake_files, env_kind):
    if env_kind == "tarball":
        (tmp_path / "envsrc").mkdir()
        (tmp_path / "envsrc" / "marker").write_text("x")
        env = tmp_path / "custom_env.tar.gz"
        with tarfile.open(env, "w:gz") as tar:
            tar.add(tmp_path / "envsrc", arcname=".")
    else:
        env = tmp_path / "custom_env"
        (env / "bin").mkdir(parents=True)
        (env / "bin" / "python3").write_text("#!/bin/sh\n")
    stub = tmp_path / "my_stub"
    stub.write_bytes(b"\x7fELF-stub")
    stub.chmod(0o600)
    root = create_repository(tmp_path / "r", **kw, backends="python", bert_model=fake_files["onnx"],
                             forest=fake_files["tl"], env=env, stub=stub)
    bert, cuml = load_config(root / "bert-large"), load_config(root / "cuml")
    assert bert.backend == cuml.backend == "python"
    assert param(bert, "model") == "$$TRITON_MODEL_DIRECTORY/model.onnx"
    assert (root / "bert-large" / "model.onnx").read_bytes() == b"onnx-bytes"
    assert param(cuml, "checkpoint") == "$$TRITON_MODEL_DIRECTORY/checkpoint.tl"
    assert (root / "cuml" / "checkpoint.tl").read_bytes() == b"treelite-bytes"
    modules = {"preprocess": "preprocess", "postprocess": "postprocess", "bert-large": "onnx_regressor",
               "cuml": "forest"}
    for name, module in modules.items():
        d = root / name
        assert (d / "1" / "model.py").read_text() == (
            f"from triton_textops.models.{module} import TritonPythonModel  # noqa: F401\n")
        cfg = load_config(d)
        assert param(cfg, "FORCE_CPU_ONLY_INPUT_TENSORS") == "no"
        assert param(cfg, "EXECUTION_ENV_PATH") == f"$$TRITON_MODEL_DIRECTORY/{env.name}"
        copied = Path(resolve_path(param(cfg, "EXECUTION_ENV_PATH"), str(d)))
        assert copied == d / env.name
        if env_kind == "tarball":
            assert copied.read_bytes() == env.read_bytes()
        else:
            assert (copied / "bin" / "python3").read_text() == "#!/bin/sh\n"
        s = d / "triton_python_backend_stub"
        assert s.read_bytes() == b"\x7fELF-stub"
        assert stat.S_IMODE(s.stat().st_mode) == 0o755
    assert not (root / ENSEMBLE / "triton_python_backend_stub").exists()


def test_shared_env_is_one_tarball_at_the_top_named_by_every_python_model(tmp_path, kw, fake_files):
    (tmp_path / "envsrc").mkdir()
    (tmp_path / "envsrc" / "marker").write_text("x")
    env = tmp_path / "packed.tar.gz"
    with tarfile.open(env, "w:gz") as tar:
        tar.add(tmp_path / "envsrc", arcname=".")
    root = create_repository(tmp_path / "r", **kw, backends="python", bert_model=fake_files["onnx"],
                             forest=fake_files["tl"], shared_env=env)
    assert (root / SHARED_ENV).read_bytes() == env.read_bytes()
    for name in ("preprocess", "bert-large", "cuml", "postprocess"):
        cfg = load_config(root / name)
        assert param(cfg, "EXECUTION_ENV_PATH") == f"$$TRITON_MODEL_DIRECTORY/../{SHARED_ENV}"
        # what python_backend does with it: the model directory in place of the variable, then realpath
        assert Path(os.path.realpath(param(cfg, "EXECUTION_ENV_PATH").replace(
            "$$TRITON_MODEL_DIRECTORY", str(root / name)))) == (root / SHARED_ENV).resolve()
        assert not list((root / name).glob("*.tar.gz"))
    assert "EXECUTION_ENV_PATH" not in load_config(root / ENSEMBLE).parameters
    assert (root / REQUIREMENTS_FILE).read_text().count("# python models: preprocess, bert-large, cuml, postprocess")
    with pytest.raises(RepositoryError, match="give one execution environment"):
        plan_repository(**kw, env=env, shared_env=env)
    with pytest.raises(RepositoryError, match="shared_env: expected a .tar.gz"):
        plan_repository(**kw, shared_env=fake_files["tl"])


def test_errors_name_the_option(tmp_path, kw, fake_files):
    missing = tmp_path / "nope.txt"
    cases = [
        (dict(kw, vocab=missing), "vocab: file not found"),
        (dict(kw, features=missing), "features: file not found"),
        (dict(kw, features=kw["vocab"]), "features: .* is not a features artifact"),
        (dict(kw, bert_model=missing), "bert_model: file not found"),
        (dict(kw, forest=missing), "forest: file not found"),
        (dict(kw, stub=missing), "stub: file not found"),
        (dict(kw, env=missing), "env: not found"),
        (dict(kw, bert_model=fake_files["tl"]), "bert_model: expected a .onnx or .pt file"),
        (dict(kw, bert_model=fake_files["pt"], backends="python"), "backends='python' runs an ONNX model"),
        (dict(kw, device="tpu"), "device: expected 'cpu' or 'gpu'"),
        (dict(kw, backends="triton"), "backends: expected"),
        (dict(kw, max_batch_size=0), "max_batch_size: expected an integer >= 1"),
        (dict(kw, instances=0), "instances: expected an integer >= 1"),
        (dict(kw, max_length=2), "max_length: expected an integer >= 3"),
        (dict(kw, ensemble_max_batch_size=64), r"64 exceeds the max_batch_size of 'preprocess' \(32\)"),
        (dict(kw, member_max_batch_size={"cuml": 8}, ensemble_max_batch_size=16),
         r"16 exceeds the max_batch_size of 'cuml' \(8\); the ensemble's max_batch_size must be <= every"),
        (dict(kw, member_max_batch_size={"bert": 8}), "member_max_batch_size: unknown model 'bert'"),
        (dict(kw, preprocess_params={"max_length": 64}), "'max_length' is set by create_repository"),
        (dict(kw, preprocess_params={"lowercas": "true"}), "unknown parameter 'lowercas'"),
        (dict(kw, preprocess_params={"lowercase": False}), "the artifact is uncased but preprocess lowercase=false"),
        (dict(kw, preprocess_params={"lowercase": "on"}), "invalid value for parameter 'lowercase'"),  # load would fail
        (dict(kw, preprocess_params={"lowercase": "N"}), "the artifact is uncased but preprocess lowercase=false"),
    ]
    for opts, message in cases:
        with pytest.raises(RepositoryError, match=message):
            create_repository(tmp_path / "never", **opts)
        assert not (tmp_path / "never").exists()  # validated before anything is written


def test_ensemble_batch_size_is_the_smallest_members(tmp_path, kw):
    root = create_repository(tmp_path / "r", **kw, member_max_batch_size={"cuml": 8, "preprocess": 64})
    assert load_config(root / "cuml").max_batch_size == 8
    assert load_config(root / "preprocess").max_batch_size == 64
    assert load_config(root / ENSEMBLE).max_batch_size == 8


def test_existing_repository_needs_overwrite(tmp_path, kw, fake_files):
    root = create_repository(tmp_path / "r", **kw, bert_model=fake_files["pt"])
    (root / "other_model").mkdir()
    with pytest.raises(RepositoryError, match="already has model"):
        create_repository(root, **kw)
    create_repository(root, **kw, bert_model=fake_files["onnx"], overwrite=True)
    assert not (root / "bert-large" / "1" / "model.pt").exists()  # the old directory was replaced
    assert (root / "bert-large" / "1" / "model.onnx").exists()
    assert (root / "other_model").is_dir()  # other content is left alone


def test_preprocess_params_are_passed_through(tmp_path, kw):
    root = create_repository(tmp_path / "r", **kw, preprocess_params={"max_text_bytes": 4096, "lowercase": True})
    cfg = load_config(root / "preprocess")
    assert param(cfg, "max_text_bytes") == "4096" and param(cfg, "lowercase") == "true"


def texts(n: int, start: int = 1) -> list[bytes]:
    return [t.encode() for t in austen()[start : start + n]]


def test_generated_python_models_load_and_run(tmp_path, kw):
    root = create_repository(tmp_path / "r", **kw, max_length=48, warmup=True, instances=2, max_batch_size=8)
    batch = texts(5)
    tok = BertTokenizer.from_vocab(kw["vocab"])
    feats = ReadabilityFeatures.load(kw["features"])
    with load_model(root / "preprocess") as pre:
        assert pre.args["model_instance_name"] == "preprocess_0_0"
        out = pre.infer({"INPUT0": np.array(batch, dtype=object).reshape(-1, 1)})
        enc = tok.encode_rows(batch, max_length=48)
        np.testing.assert_array_equal(out["BERT_IDS"], enc.input_ids)
        np.testing.assert_array_equal(out["BERT_AM"], enc.attention_mask)
        np.testing.assert_allclose(out["TREE_FEATS"], feats.transform(batch), rtol=1e-6)
        assert out["BERT_IDS"].dtype == np.int64 and out["TREE_FEATS"].dtype == np.float32
        # the warmup sample is the serialized BYTES tensor Triton reads from <model>/warmup/
        raw = (root / "preprocess" / "warmup" / "sample_excerpt").read_bytes()
        sample = pb.deserialize_bytes_tensor(raw)
        assert sample.tolist() == [SAMPLE_EXCERPT.encode()] and struct.unpack("<I", raw[:4])[0] == len(raw) - 4
        warm = pre.infer({"INPUT0": sample.reshape(1, 1)})
        assert warm["BERT_IDS"].shape == (1, 48)
    with load_model(root / "postprocess") as post:
        w = np.array([[0.25], [1.0]], np.float32)
        b = np.array([[2.0], [3.0]], np.float32)
        c = np.array([[4.0], [5.0]], np.float32)
        got = post.infer({"BERT_WEIGHT_INPUT": w, "BERT_LARGE_SCORE": b, "CUML_SCORE": c})["OUTPUT0"]
        np.testing.assert_allclose(got, [[3.5], [3.0]])


def test_whole_ensemble_runs_with_callables_for_the_native_models(tmp_path, kw):
    max_length = 40
    root = create_repository(tmp_path / "r", **kw, max_length=max_length, device="cpu")

    def bert_large(inputs):
        ids, mask = inputs["INPUT__0"], inputs["INPUT__1"]
        assert ids.dtype == mask.dtype == np.int64 and ids.shape[1:] == (max_length,)
        return {"OUTPUT__0": (mask.sum(axis=1, keepdims=True) / max_length).astype(np.float32)}

    def cuml(inputs):
        x = inputs["input__0"]
        assert x.dtype == np.float32
        return {"output__0": x[:, :1].astype(np.float32)}  # n_words (normalized)

    batch = texts(4, start=3)
    weights = np.array([[0.0], [0.3], [0.7], [1.0]], np.float32)
    out = run_ensemble(root, ENSEMBLE, {"excerpt": np.array(batch, dtype=object).reshape(-1, 1),
                                        "BERT_WEIGHT": weights},
                       models={"bert-large": bert_large, "cuml": cuml})
    enc = BertTokenizer.from_vocab(kw["vocab"]).encode_rows(batch, max_length=max_length)
    bert = (enc.attention_mask.sum(axis=1, keepdims=True) / max_length).astype(np.float32)
    tree = ReadabilityFeatures.load(kw["features"]).transform(batch)[:, :1].astype(np.float32)
    assert out["SCORE"].shape == (4, 1) and out["SCORE"].dtype == np.float32
    np.testing.assert_allclose(out["SCORE"], blend_scores(bert, tree, weights), rtol=1e-6)
    np.testing.assert_allclose(out["SCORE"], weights * bert + (1 - weights) * tree, rtol=1e-5)


def test_cli_creates_repository_with_bundled_vocab(tmp_path, features_artifact, capsys):
    target = tmp_path / "cli_repo"
    assert main(["repo", "create", str(target), "--device", "gpu", "--features", str(features_artifact),
                 "--max-batch-size", "4", "--instances", "2", "--warmup"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {target}" in out and "note: bert-large" in out and "note: cuml" in out
    assert (target / "preprocess" / "vocab.txt").read_bytes() == vocab_path().read_bytes()
    pre = load_config(target / "preprocess")
    assert [(g.count, g.kind) for g in pre.instance_group] == [(2, KIND_GPU)] and pre.max_batch_size == 4
    assert pre.model_warmup[0].name == "sample_excerpt"
    # again without --overwrite: a clear error and exit status 2
    assert main(["repo", "create", str(target), "--device", "cpu", "--features", str(features_artifact)]) == 2
    assert "already has model(s)" in capsys.readouterr().err
    assert main(["repo", "create", str(target), "--device", "cpu", "--features", str(features_artifact),
                 "--overwrite"]) == 0
    assert load_config(target / "cuml").instance_group[0].kind == KIND_CPU


def test_cli_requires_device_and_features(tmp_path, features_artifact):
    with pytest.raises(SystemExit):
        main(["repo", "create", str(tmp_path / "x"), "--features", str(features_artifact)])
    with pytest.raises(SystemExit):
        main(["repo", "create", str(tmp_path / "x"), "--device", "cpu"])
    assert not (tmp_path / "x").exists()
    assert os.path.isfile(vocab_path())


def test_cli_cpu_and_gpu_repositories_differ_only_in_instance_group(tmp_path, features_artifact, capsys):
    """Issue 47: the seed's promise, all-CPU to all-GPU is a one-line change in each config, by default."""
    out = {}
    for device in ("cpu", "gpu"):
        assert main(["repo", "create", str(tmp_path / device), "--device", device, "--features",
                     str(features_artifact)]) == 0
        out[device] = files_of(tmp_path / device)
    assert load_config(tmp_path / "cpu" / "cuml").backend == "fil"
    assert load_config(tmp_path / "cpu" / "cuml").parameters["model_type"].string_value == "treelite_checkpoint"
    assert set(out["cpu"]) == set(out["gpu"])
    for rel in out["cpu"]:
        a, b = out["cpu"][rel].read_bytes(), out["gpu"][rel].read_bytes()
        diff = [d for d in difflib.ndiff(a.decode().splitlines(), b.decode().splitlines()) if d[:2] in ("- ", "+ ")]
        assert all("kind: KIND_" in d for d in diff), (rel, diff)


def test_cli_standins_need_only_the_python_backend(tmp_path, features_artifact, capsys):
    """Issue 26: `repo create --device cpu --backends python` loads in a server without the onnxruntime/fil
    backends (the wheel's), as `example readability --device cpu` does; by default Triton's native backends."""
    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    assert main(["repo", "create", str(cpu), "--device", "cpu", "--backends", "python", "--features",
                 str(features_artifact)]) == 0
    assert "python backends for bert-large and cuml" in capsys.readouterr().out
    used = {m: (load_config(cpu / m).backend or load_config(cpu / m).platform) for m in MODELS}
    assert used == {m: "ensemble" if m == "ensemble_all" else "python" for m in MODELS}
    assert (cpu / "requirements.txt").read_text().splitlines()[-2:] == ["onnxruntime>=1.18", "treelite>=4.1,<5"]
    try:  # the server `triton-textops serve` runs here, when it is already installed: it has each backend used
        from triton_textops.tools.server import TritonServerError, find_server

        install = find_server(install=False)
    except (ImportError, TritonServerError):
        install = None
    if install is not None:
        assert all((install.backends / b).is_dir() for b in set(used.values()) - {"ensemble"})
    assert main(["repo", "create", str(gpu), "--device", "gpu", "--features", str(features_artifact)]) == 0
    assert load_config(gpu / "cuml").backend == "fil" and load_config(gpu / "bert-large").backend != "python"
    assert main(["repo", "create", str(tmp_path / "explicit"), "--device", "cpu", "--backends", "native",
                 "--features", str(features_artifact)]) == 0
    assert load_config(tmp_path / "explicit" / "cuml").backend == "fil"


def test_errors_in_an_ensemble_name_the_input_the_client_sent(tmp_path, kw):
    """Issue 47: postprocess reads the client's BERT_WEIGHT as BERT_WEIGHT_INPUT; repo create writes that as its
    client_names parameter, so a bad weight names BERT_WEIGHT and the row (run by the ensemble runner)."""
    root = create_repository(tmp_path / "r", **kw, device="cpu")
    assert param(load_config(root / "postprocess"), "client_names") == "BERT_WEIGHT_INPUT=BERT_WEIGHT"
    assert param(load_config(root / "preprocess"), "client_names") == "INPUT0=excerpt"

    def score(inputs):
        return {"OUTPUT__0": np.zeros((len(next(iter(inputs.values()))), 1), np.float32)}

    models = {"bert-large": score, "cuml": lambda x: {"output__0": score(x)["OUTPUT__0"]}}
    excerpts = np.array(texts(2, start=3), dtype=object).reshape(-1, 1)
    with pytest.raises(EnsembleError) as exc:
        run_ensemble(root, ENSEMBLE, {"excerpt": excerpts, "BERT_WEIGHT": np.array([[0.5], [1.5]], np.float32)},
                     models=models)
    assert ("input 'BERT_WEIGHT' (BERT_WEIGHT_INPUT in model 'postprocess') must be finite and within [0, 1]: "
            "row 1 is 1.5") in str(exc.value)


def test_client_names_from_ensembles_leave_out_ambiguous_inputs():
    pb2 = model_config_pb2()
    configs = {}
    for name, source in (("e1", "weight"), ("e2", "w")):
        ens = pb2.ModelConfig(name=name, platform="ensemble")
        for t in (source, "text"):
            ens.input.add(name=t)
        step = ens.ensemble_scheduling.step.add(model_name="post", model_version=-1)
        step.input_map.update({"W": source, "TEXT": "text", "X": "made_by_a_step"})
        configs[name] = ens
    # W is fed 'weight' by e1 and 'w' by e2: no single name; TEXT is 'text' in both; X is no ensemble input
    assert ensemble_client_names(configs) == {"post": {"TEXT": "text"}}


def test_client_names_must_name_config_inputs(tmp_path, kw):
    root = create_repository(tmp_path / "r", **kw, device="cpu")
    cfg = load_config(root / "postprocess")
    cfg.parameters["client_names"].string_value = "WEIGHT=BERT_WEIGHT"
    (root / "postprocess" / "config.pbtxt").write_text(config_to_text(cfg))
    with pytest.raises(Exception, match="client_names: 'WEIGHT' is not a config input"):
        load_model(root / "postprocess")
