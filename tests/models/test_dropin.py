"""Our models dropped into repositories we did not write (tests/dropin_dirs.py), in the in-process harness.

Auto-complete never changes the batching of a config that declares tensors and logs what it fills in; a config
whose tensors do not fit the model's roles fails the load with a message naming both; max_length comes from the
output dims; output dtypes follow the config; KIND_GPU without a GPU fails like the server.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from dropin_dirs import (
    BARE_INT32,
    CPU_GROUP,
    IDS_OUTPUTS,
    NAMES,
    REVIEWS,
    REVIEWS_INPUT,
    TENSOR_NAMES,
    write_dropin_models,
)
from model_dirs import write_model

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.testing import load_model, run_ensemble
from triton_textops.testing.harness import ModelLoadError


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    return write_dropin_models(tmp_path_factory.mktemp("dropin"))


REVIEWS_TEXTS = [t.encode() for t in austen()[5:9]]


def reviews_1d():
    return np.array(REVIEWS_TEXTS, dtype=object)  # shape [4]: what the repository's client sends


def tokenize_dir(tmp_path, vocab, config, name="tok"):
    return write_model(tmp_path, name, "tokenize", config, {"vocab.txt": vocab})


# ------------------------------------------------------------------------------------- batching


@pytest.mark.parametrize("prefix", ["", "max_batch_size: 0\n"])
def test_declared_unbatched_config_keeps_its_batching(tmp_path, vocab, tok, prefix):
    d = tokenize_dir(tmp_path, vocab, prefix + REVIEWS)
    with load_model(d) as m:
        assert m.config["max_batch_size"] == 0 and "dynamic_batching" not in m.config
        assert [(t["name"], t["data_type"], t["dims"]) for t in m.config["output"]] == [
            ("input_ids", "TYPE_INT32", [-1, 256]), ("attention_mask", "TYPE_INT32", [-1, 256])]
        assert m.instance.params["max_length"] == 256  # from the dims
        out = m.infer({"product_reviews": reviews_1d()})
    enc = tok.encode_rows(REVIEWS_TEXTS, max_length=256)
    assert out["input_ids"].dtype == out["attention_mask"].dtype == np.int32  # the config's dtype
    assert out["input_ids"].shape == (4, 256)
    np.testing.assert_array_equal(out["input_ids"], enc.input_ids)
    np.testing.assert_array_equal(out["attention_mask"], enc.attention_mask)


def test_declared_batched_config_gets_no_dynamic_batching(tmp_path, vocab):
    d = tokenize_dir(tmp_path, vocab, """max_batch_size: 8
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [16] },
        { name: "ATTENTION_MASK" data_type: TYPE_INT64 dims: [16] }]
""")
    with load_model(d) as m:
        assert m.config["max_batch_size"] == 8 and "dynamic_batching" not in m.config
        assert m.instance.params["max_length"] == 16


def test_bare_config_is_completed_batched_and_logged(dirs, caplog):
    with caplog.at_level(logging.INFO, logger="triton_python_backend_utils"):
        with load_model(dirs["bare"]) as m:
            assert m.config["max_batch_size"] == 64 and "dynamic_batching" in m.config
            assert [(t["name"], t["dims"]) for t in m.config["input"]] == [("TEXT", [1])]
            assert [(t["name"], t["data_type"], t["dims"]) for t in m.config["output"]] == [
                ("INPUT_IDS", "TYPE_INT64", [128]), ("ATTENTION_MASK", "TYPE_INT64", [128])]
    logged = [r.getMessage() for r in caplog.records if "auto-complete filled in" in r.getMessage()]
    assert len(logged) == 1
    for part in ("model 'bare'", "max_batch_size: 64 (default_max_batch_size", "dynamic_batching",
                 "input TEXT TYPE_STRING [1]", "output INPUT_IDS TYPE_INT64 [128]"):
        assert part in logged[0], logged[0]


def test_declared_config_logs_nothing(tmp_path, vocab, caplog):
    with caplog.at_level(logging.INFO, logger="triton_python_backend_utils"):
        with load_model(tokenize_dir(tmp_path, vocab, REVIEWS)):
            pass
    assert not [r for r in caplog.records if "auto-complete" in r.getMessage()]


def test_bare_config_with_default_max_batch_size_0_stays_unbatched(tmp_path, vocab):
    d = tokenize_dir(tmp_path, vocab, 'parameters: { key: "default_max_batch_size" value: { string_value: "0" } }\n')
    with load_model(d) as m:
        assert m.config["max_batch_size"] == 0 and "dynamic_batching" not in m.config
        assert [t["dims"] for t in m.config["input"]] == [[-1, 1]]


def test_declared_inputs_get_outputs_but_keep_batching(tmp_path, vocab, tok, caplog):
    d = tokenize_dir(tmp_path, vocab, REVIEWS_INPUT + CPU_GROUP
                     + 'parameters: { key: "tensor_names" value: { string_value: "text=product_reviews" } }\n'
                     + 'parameters: { key: "max_length" value: { string_value: "40" } }\n')
    with caplog.at_level(logging.INFO, logger="triton_python_backend_utils"):
        with load_model(d) as m:
            assert m.config["max_batch_size"] == 0 and "dynamic_batching" not in m.config
            assert [(t["name"], t["dims"]) for t in m.config["output"]] == [
                ("INPUT_IDS", [-1, 40]), ("ATTENTION_MASK", [-1, 40])]
            out = m.infer({"product_reviews": reviews_1d()})
    np.testing.assert_array_equal(out["INPUT_IDS"], tok.encode_rows(REVIEWS_TEXTS, max_length=40).input_ids)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "output INPUT_IDS TYPE_INT64 [-1, 40]" in logged and "max_batch_size" not in logged


# ------------------------------------------------------------------------------------- dtypes


def test_ids_dtype_for_a_config_without_tensors(dirs, tok):
    texts = np.array(REVIEWS_TEXTS, dtype=object).reshape(-1, 1)
    with load_model(dirs["bare_int32"]) as m:
        assert [t["data_type"] for t in m.config["output"]] == ["TYPE_INT32", "TYPE_INT32"]
        out = m.infer({"TEXT": texts})
    assert out["INPUT_IDS"].dtype == np.int32
    np.testing.assert_array_equal(out["INPUT_IDS"], tok.encode_rows(REVIEWS_TEXTS, max_length=128).input_ids)


# ------------------------------------------------------------------------------------- load errors

LOAD_ERRORS = {
    "extra_output": ("reviews_metadata", [
        "model 'reviews_metadata': config output(s) 'metadata' match no role",
        "outputs: input_ids TYPE_INT32 [-1, 256], attention_mask TYPE_INT32 [-1, 256], metadata TYPE_INT32 [-1, 3]",
        "Model roles (role=tensor name): inputs text=product_reviews; outputs input_ids=input_ids, "
        "attention_mask=attention_mask, token_type_ids=TOKEN_TYPE_IDS (optional)",
        "Remove 'metadata' from the config"]),
    "no_tensor_names": ("reviews_no_names", [
        "config input(s) 'product_reviews' match no role",
        "role 'text' has no config input (it looks for 'TEXT')",
        "role 'input_ids' has no config output (it looks for 'INPUT_IDS')",
        "Config inputs: product_reviews TYPE_STRING [-1]",
        f'Map them with: parameters {{ key: "tensor_names" value: {{ string_value: "{NAMES}" }} }}']),
    "max_length_vs_dims": ("reviews_length_conflict", [
        "parameter max_length=128 but the config's output dims give 256 tokens ('input_ids' 256, "
        "'attention_mask' 256)"]),
}


@pytest.mark.parametrize("case", sorted(LOAD_ERRORS))
def test_third_party_config_fails_load_naming_tensors_and_roles(dirs, case):
    model, parts = LOAD_ERRORS[case]
    with pytest.raises(ModelLoadError) as exc:
        load_model(dirs[model])
    for part in parts:
        assert part in str(exc.value), str(exc.value)
    assert "ConfigError" in str(exc.value)


BAD_CONFIGS = {
    "extra_input": (REVIEWS_INPUT.replace("  }\n]", '  },\n  { name: "review_ids" data_type: TYPE_INT64 dims: [ -1 ] }\n]')
                    + IDS_OUTPUTS + TENSOR_NAMES, "config input(s) 'review_ids' match no role"),
    "disagreeing_dims": (REVIEWS_INPUT + IDS_OUTPUTS.replace("[ -1, 256 ]\n  }\n]", "[ -1, 128 ]\n  }\n]")
                         + TENSOR_NAMES,
                         "the outputs' token dims disagree ('input_ids' 256, 'attention_mask' 128)"),
    "batch_dim_written_twice": ("max_batch_size: 8\n" + REVIEWS_INPUT.replace("[ -1 ]", "[ 1 ]") + IDS_OUTPUTS
                                + TENSOR_NAMES,
                                "output 'input_ids' (role 'input_ids') has dims [-1, 256] with max_batch_size 8, "
                                "i.e. 3-D tensors [-1, -1, 256]; the model makes 2-D tensors [rows, L]: write dims [L]"),
    "unbatched_1d_output": (REVIEWS_INPUT + IDS_OUTPUTS.replace("[ -1, 256 ]", "[ -1 ]") + TENSOR_NAMES,
                            "has dims [-1] with max_batch_size 0, i.e. 1-D tensors [-1]; the model makes 2-D "
                            "tensors [rows, L]: write dims [-1, L]"),
    "float_ids": (REVIEWS_INPUT + IDS_OUTPUTS.replace("TYPE_INT32", "TYPE_FP32", 1) + TENSOR_NAMES,
                  "output 'input_ids' (role 'input_ids') is TYPE_FP32, but the role needs an integer type"),
    # issue 47: without tensor_names the type is still the cause named first, then the mapping to write
    "float_ids_unmapped": (REVIEWS_INPUT + IDS_OUTPUTS.replace("TYPE_INT32", "TYPE_FP32", 1),
                           "model 'tok': output 'input_ids' (role 'input_ids') is TYPE_FP32, but the role needs an "
                           "integer type (TYPE_INT64, TYPE_INT32, ...). Config inputs: "),
    "numeric_text": (REVIEWS_INPUT.replace("TYPE_STRING", "TYPE_UINT8") + IDS_OUTPUTS + TENSOR_NAMES,
                     "input 'product_reviews' (role 'text') is TYPE_UINT8, but the role needs TYPE_STRING"),
    "text_dims": ("max_batch_size: 4\n" + REVIEWS_INPUT.replace("[ -1 ]", "[ -1, 1 ]")
                  + IDS_OUTPUTS.replace("[ -1, 256 ]", "[ 256 ]") + TENSOR_NAMES,
                  "texts come as [n] or [n, 1]: write dims [1]"),
    "ids_dtype_vs_config": (REVIEWS + BARE_INT32.replace("int32", "int64"),
                            "parameter ids_dtype=int64 but output 'input_ids' is TYPE_INT32"),
    "ids_dtype_value": (BARE_INT32.replace("int32", "int16"),
                        "invalid value 'int16' for parameter 'ids_dtype': expected one of int64, int32"),
    "max_length_below_3": (REVIEWS_INPUT + IDS_OUTPUTS.replace("256", "2") + TENSOR_NAMES,
                           "token dims of 2 ('input_ids' 2, 'attention_mask' 2): max_length must be >= 3"),
    "unknown_role": (REVIEWS.replace("text=product_reviews", "texts=product_reviews"),
                     "tensor_names: unknown role(s) texts (roles: text, input_ids, attention_mask, token_type_ids"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_config_mismatch_fails_load(tmp_path, vocab, case):
    config, message = BAD_CONFIGS[case]
    with pytest.raises(ModelLoadError, match=re.escape(message)):
        load_model(tokenize_dir(tmp_path, vocab, config))


def test_kind_gpu_without_gpu_fails_like_the_server(dirs):
    with pytest.raises(ModelLoadError) as exc:
        load_model(dirs["reviews_gpu"], supported_gpus=[])
    assert str(exc.value) == ("instance group reviews_gpu_0 of model reviews_gpu has kind KIND_GPU but no GPUs "
                              "are available")
    assert exc.value.error.code() == exc.value.error.INVALID_ARG


# ------------------------------------------------------------------------------------- ensemble


def test_ensemble_with_larger_max_batch_size(dirs, tok):
    with load_model(dirs["reviews_member"]) as m:
        # CORE accepts a member with max_batch_size 0 or >= the ensemble's 128 (the old auto-complete set 64)
        assert m.config["max_batch_size"] == 0
    texts = np.array(REVIEWS_TEXTS, dtype=object).reshape(-1, 1)
    out = run_ensemble(dirs["reviews_ensemble"].parent, "reviews_ensemble", {"product_reviews": texts})
    enc = tok.encode_rows(REVIEWS_TEXTS, max_length=256)
    assert out["input_ids"].dtype == np.int32 and out["input_ids"].shape == (4, 256)
    np.testing.assert_array_equal(out["input_ids"], enc.input_ids)
    np.testing.assert_array_equal(out["attention_mask"], enc.attention_mask)


@pytest.mark.gpu
def test_kind_gpu_with_a_gpu_serves_on_the_gpu(dirs, tok):
    with load_model(dirs["reviews_gpu"]) as m:
        assert m.instance_kind == "GPU" and m.instance.device == "cuda:0"
        out = m.infer({"product_reviews": reviews_1d()})
    ids = out["input_ids"]
    ids = ids.get() if hasattr(ids, "get") else ids
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, tok.encode_rows(REVIEWS_TEXTS, max_length=256).input_ids)
