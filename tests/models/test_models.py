"""Our Triton models through the in-process harness (CPU placement; GPU/mixed under -m gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from model_dirs import write_model, write_textops_models

from triton_textops import BertTokenizer, ReadabilityFeatures, blend_scores
from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.testing import install_pb_utils, load_model


@pytest.fixture(scope="module")
def repo(tmp_path_factory, features_artifact):
    """The model directories the real-server tests load too (tests/model_dirs.py)."""
    root = tmp_path_factory.mktemp("repo")
    write_textops_models(root, features_artifact)
    return root


def texts(n, start=1):
    return [t.encode() for t in austen()[start : start + n]]


def test_tokenize_matches_ops(repo, vocab):
    tok = BertTokenizer.from_vocab(vocab)
    with load_model(repo / "tokenize") as m:
        batch = texts(5)
        out = m.infer({"TEXT": np.array(batch, dtype=object).reshape(-1, 1)})
        enc = tok.encode_rows(batch, max_length=32)
        np.testing.assert_array_equal(out["INPUT_IDS"], enc.input_ids)
        assert out["ATTENTION_MASK"].dtype == np.int32  # the config's dtype, always
        np.testing.assert_array_equal(out["ATTENTION_MASK"], enc.attention_mask)
        only = m.infer({"TEXT": np.array(batch[:1], dtype=object).reshape(-1, 1)}, requested_outputs=["INPUT_IDS"])
        assert set(only) == {"INPUT_IDS"}


def test_requests_of_one_execute_are_one_batch(repo, vocab):
    tok = BertTokenizer.from_vocab(vocab)
    with load_model(repo / "tokenize") as m:
        groups = [texts(3, 10), texts(1, 20), texts(4, 30)]
        reqs = [m.make_request({"TEXT": np.array(g, dtype=object).reshape(-1, 1)}) for g in groups]
        calls = []
        orig = m.instance.tokenizer.encode_rows
        m.instance.tokenizer.encode_rows = lambda *a, **k: calls.append(1) or orig(*a, **k)
        responses = m.execute(reqs)
        assert len(calls) == 1
        for g, r in zip(groups, responses):
            ids = [t for t in r.output_tensors() if t.name() == "INPUT_IDS"][0].as_numpy()
            np.testing.assert_array_equal(ids, tok.encode_rows(g, max_length=32).input_ids)


def test_preprocess_one_pass_equals_tokenizer_and_features(repo, vocab, features_artifact):
    batch = texts(6, 100)
    with load_model(repo / "preprocess") as m:
        out = m.infer({"INPUT0": np.array(batch, dtype=object).reshape(-1, 1)})
    np.testing.assert_array_equal(out["BERT_IDS"], BertTokenizer.from_vocab(vocab).encode_rows(batch, max_length=64).input_ids)
    feats = ReadabilityFeatures.load(features_artifact).transform(batch)
    assert out["TREE_FEATS"].dtype == np.float32 and out["TREE_FEATS"].shape == (6, 207)
    np.testing.assert_array_equal(out["TREE_FEATS"], feats)


def test_features_auto_complete(repo, features_artifact):
    with load_model(repo / "features") as m:
        names = [t["name"] for t in m.config["input"]], [t["name"] for t in m.config["output"]]
        assert names == (["TEXT"], ["FEATURES"])
        out = m.infer({"TEXT": np.array(texts(2), dtype=object).reshape(-1, 1)})
        np.testing.assert_array_equal(out["FEATURES"], ReadabilityFeatures.load(features_artifact).transform(texts(2)))


def test_overflow_windows_with_renamed_tensors(repo, vocab):
    tok = BertTokenizer.from_vocab(vocab)
    with load_model(repo / "tokenize_windows") as m:
        assert [t["name"] for t in m.config["input"]] == ["excerpt"]
        groups = [texts(2, 5), texts(3, 7)]
        reqs = [m.make_request({"excerpt": np.array(g, dtype=object).reshape(-1, 1)}) for g in groups]
        for g, r in zip(groups, m.execute(reqs)):
            got = {t.name(): t.as_numpy() for t in r.output_tensors()}
            enc = tok.encode_rows(g, max_length=24, stride=4, return_overflowing_tokens=True)
            np.testing.assert_array_equal(got["ids"], enc.input_ids)
            np.testing.assert_array_equal(got["OVERFLOW_TO_SAMPLE_MAPPING"][:, 0], enc.overflow_to_sample_mapping)


def test_postprocess_blend(repo):
    with load_model(repo / "postprocess") as m:
        bert = np.array([[0.5], [1.0], [-2.0]], dtype=np.float32)
        tree = np.array([[1.5], [0.0], [2.0]], dtype=np.float32)
        w = np.full((3, 1), 0.25, dtype=np.float32)
        out = m.infer({"BERT_WEIGHT_INPUT": w, "BERT_LARGE_SCORE": bert, "CUML_SCORE": tree})
        np.testing.assert_array_equal(out["OUTPUT0"], blend_scores(bert, tree, w))


def _error(response):
    return response.error().message() if response.has_error() else None


def test_bad_requests_fail_alone(repo):
    good = {"INPUT0": np.array(texts(2), dtype=object).reshape(-1, 1)}
    bad_inputs = {
        "invalid UTF-8": {"INPUT0": np.array([b"ok", b"bad \xff"], dtype=object).reshape(-1, 1)},
        "max_text_bytes": {"INPUT0": np.array([b"x" * (10 << 20)], dtype=object).reshape(-1, 1)},
    }
    with load_model(repo / "preprocess") as m:
        reqs = [m.make_request(good)] + [m.make_request(v) for v in bad_inputs.values()] + [m.make_request(good)]
        res = m.execute(reqs)
        assert _error(res[0]) is None and _error(res[-1]) is None
        assert "row 1" in _error(res[1]) and "not valid UTF-8" in _error(res[1])
        assert "exceeds max_text_bytes" in _error(res[2])
        assert res[1].error().code() == install_pb_utils().TritonError.INVALID_ARG
    post = {"BERT_LARGE_SCORE": np.ones((2, 1), np.float32), "CUML_SCORE": np.zeros((2, 1), np.float32)}
    cases = [
        ({**post, "BERT_WEIGHT_INPUT": np.full((2, 1), 0.5, np.float32)}, None),
        ({**post, "BERT_WEIGHT_INPUT": np.full((2, 1), 1.5, np.float32)},
         "input 'BERT_WEIGHT_INPUT' must be finite and within [0, 1]"),
        ({**post, "BERT_WEIGHT_INPUT": np.full((2, 1), np.nan, np.float32)}, "finite"),
        ({**post, "BERT_WEIGHT_INPUT": np.full((2, 1), 0.5, np.float32),
          "BERT_LARGE_SCORE": np.array([[1.0], [np.inf]], np.float32)}, "input 'BERT_LARGE_SCORE' must be finite"),
        ({**post, "BERT_WEIGHT_INPUT": np.full((2, 1), 0.5, np.float32),
          "CUML_SCORE": np.array([[np.nan], [0.0]], np.float32)}, "input 'CUML_SCORE' must be finite: row 0"),
    ]
    with load_model(repo / "postprocess") as m:
        res = m.execute([m.make_request(inputs) for inputs, _ in cases])
        for r, (_, expect) in zip(res, cases):
            assert (_error(r) is None) if expect is None else (expect in _error(r))


@pytest.mark.parametrize(("params", "message"), [
    ('parameters: { key: "max_lenght" value: { string_value: "3" } }', "unknown parameter 'max_lenght'"),
    ('parameters: { key: "max_length" value: { string_value: "many" } }', "parameter 'max_length'"),
    ('parameters: { key: "vocab" value: { string_value: "nope.txt" } }', "file not found"),
    ('parameters: { key: "lowercase" value: { string_value: "maybe" } }', "expected true or false"),
])
def test_bad_config_fails_load(tmp_path, vocab, params, message):
    d = write_model(tmp_path, "tok", "tokenize", "max_batch_size: 4\n" + params + "\n", {"vocab.txt": vocab})
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_model(d)


def test_overflow_needs_unbatched_model(tmp_path, vocab):
    d = write_model(tmp_path, "tok", "tokenize", """max_batch_size: 4
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [16] }, { name: "ATTENTION_MASK" data_type: TYPE_INT64 dims: [16] }]
parameters: { key: "return_overflowing_tokens" value: { string_value: "true" } }
""", {"vocab.txt": vocab})
    with pytest.raises(Exception, match="max_batch_size: 0"):
        load_model(d)


@pytest.mark.gpu
@pytest.mark.parametrize("placement", ["gpu", "mixed"])
def test_gpu_instances_equal_cpu(repo, placement):
    import cupy as cp

    batch = np.array(texts(8, 300), dtype=object).reshape(-1, 1)
    with load_model(repo / "preprocess") as cpu:
        ref = cpu.infer({"INPUT0": batch})
    with load_model(repo / "preprocess", placement=placement, instance_kind="GPU") as gpu:
        out = gpu.infer({"INPUT0": batch})
    for k in ref:
        np.testing.assert_array_equal(ref[k], cp.asnumpy(out[k]) if hasattr(out[k], "get") else out[k])
    post_in = {"BERT_WEIGHT_INPUT": np.full((3, 1), 0.3, np.float32),
               "BERT_LARGE_SCORE": np.arange(3, dtype=np.float32).reshape(-1, 1),
               "CUML_SCORE": np.ones((3, 1), np.float32)}
    with load_model(repo / "postprocess", placement=placement, instance_kind="GPU") as gpu:
        out = gpu.infer({k: cp.asarray(v) for k, v in post_in.items()})
    got = out["OUTPUT0"]
    np.testing.assert_array_equal(cp.asnumpy(got) if hasattr(got, "get") else got, blend_scores(*post_in.values()))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2, 8])
def test_gpu_instance_placement_rule(tmp_path, vocab, features_artifact, n):
    """A KIND_GPU preprocess with gpu_min_batch 4: a batch of 2 runs on the CPU kernels (outputs uploaded
    once), one of 8 on the GPU kernels; both give a CPU instance's outputs."""
    from model_dirs import PREPROCESS

    config = PREPROCESS + 'parameters: { key: "gpu_min_batch" value: { string_value: "4" } }\n'
    d = write_model(tmp_path, "preprocess", "preprocess", config, {"vocab.txt": vocab, "features.json": features_artifact})
    batch = np.array(texts(n, 600), dtype=object).reshape(-1, 1)
    with load_model(d) as cpu:
        ref = cpu.infer({"INPUT0": batch})
    with load_model(d, placement="gpu", instance_kind="GPU") as gpu:
        out = gpu.infer({"INPUT0": batch})
    for k in ref:
        np.testing.assert_array_equal(ref[k], out[k].get() if hasattr(out[k], "get") else out[k])


def test_gpu_min_batch_is_a_model_parameter(tmp_path, vocab, features_artifact):
    """gpu_min_batch parses as a non-negative int on every text model (it only acts on KIND_GPU instances)."""
    from model_dirs import PREPROCESS

    bad = PREPROCESS + 'parameters: { key: "gpu_min_batch" value: { string_value: "-1" } }\n'
    d = write_model(tmp_path, "pre_bad", "preprocess", bad, {"vocab.txt": vocab, "features.json": features_artifact})
    with pytest.raises(Exception, match="gpu_min_batch"):
        load_model(d)
    good = PREPROCESS + 'parameters: { key: "gpu_min_batch" value: { string_value: "0" } }\n'
    d = write_model(tmp_path, "pre_ok", "preprocess", good, {"vocab.txt": vocab, "features.json": features_artifact})
    with load_model(d) as m:
        assert m.instance.params["gpu_min_batch"] == 0


def test_postprocess_errors_name_the_configs_tensors(tmp_path):
    """Issue 26: a renamed config's tensors, not the blend's argument names, are in the messages."""
    config = """
max_batch_size: 8
parameters: { key: "tensor_names" value: { string_value: "weight=w,bert_scores=bert,tree_scores=forest,score=out" } }
input [{ name: "w" data_type: TYPE_FP32 dims: [1] }, { name: "bert" data_type: TYPE_FP32 dims: [1] },
       { name: "forest" data_type: TYPE_FP32 dims: [1] }]
output [{ name: "out" data_type: TYPE_FP32 dims: [1] }]
"""
    d = write_model(tmp_path, "post", "postprocess", config)
    ones = np.ones((2, 1), np.float32)
    cases = [({"w": ones * 2, "bert": ones, "forest": ones}, "input 'w' must be finite and within [0, 1]"),
             ({"w": ones / 2, "bert": ones * np.nan, "forest": ones}, "input 'bert' must be finite: row 0 is nan"),
             ({"w": ones / 2, "bert": ones, "forest": ones * np.inf}, "input 'forest' must be finite: row 0 is inf")]
    with load_model(d) as m:
        res = m.execute([m.make_request(inputs) for inputs, _ in cases])
    for r, (_, expect) in zip(res, cases):
        assert _error(r) is not None and expect in _error(r), _error(r)
        assert "bert_scores" not in _error(r) and "tree_scores" not in _error(r) and "BERT_WEIGHT" not in _error(r)
