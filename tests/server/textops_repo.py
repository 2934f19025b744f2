"""Model directories of OUR models (tokenize / features / preprocess / postprocess) for the real-server tests.

Written the way a user writes them (config.pbtxt + a one-line model.py), so the very same directory is loaded by
the real server and by the in-process harness ``triton_textops.testing.load_model``. Also: the bundled Austen
paragraphs, request helpers and a comparison of outputs that demands exact equality and equal dtypes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from model_dirs import write_model  # noqa: F401  (re-exported)

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path  # noqa: F401  (re-exported)

FORCE_NO = 'parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: { string_value: "no" } }\n'


def fit_features(dst: Path) -> Path:
    """The features artifact fitted on every other Austen paragraph, saved at ``dst``."""
    from triton_textops import ReadabilityFeatures

    ReadabilityFeatures.fit(austen()[::2]).save(dst)
    return dst


# ---------------------------------------------------------------------------------------------- configs

TOKENIZE = FORCE_NO + """
max_batch_size: 16
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [32] },
        { name: "ATTENTION_MASK" data_type: TYPE_INT32 dims: [32] },
        { name: "TOKEN_TYPE_IDS" data_type: TYPE_INT64 dims: [32] }]
parameters: { key: "max_length" value: { string_value: "32" } }
dynamic_batching { max_queue_delay_microseconds: 200000 }
"""

# unbatched, overflow windows, renamed tensors; inputs/outputs auto-completed by the model
TOKENIZE_WINDOWS = """
max_batch_size: 0
parameters: { key: "max_length" value: { string_value: "24" } }
parameters: { key: "stride" value: { string_value: "4" } }
parameters: { key: "return_overflowing_tokens" value: { string_value: "true" } }
parameters: { key: "tensor_names" value: { string_value: "text=excerpt,input_ids=ids" } }
"""

FEATURES = ""  # max_batch_size (default_max_batch_size=64), dynamic batching, inputs, outputs: auto-completed

# the seed's preprocess: INPUT0 -> BERT_IDS, BERT_AM, TREE_FEATS
PREPROCESS = FORCE_NO + """
max_batch_size: 64
input [{ name: "INPUT0" data_type: TYPE_STRING dims: [1] }]
output [{ name: "BERT_IDS" data_type: TYPE_INT64 dims: [64] },
        { name: "BERT_AM" data_type: TYPE_INT64 dims: [64] },
        { name: "TREE_FEATS" data_type: TYPE_FP32 dims: [207] }]
parameters: { key: "max_length" value: { string_value: "64" } }
parameters: { key: "features" value: { string_value: "$$TRITON_MODEL_DIRECTORY/features.json" } }
instance_group [{ kind: KIND_CPU count: 1 }]
dynamic_batching { }
"""

PREPROCESS_LIMITED = """
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_STRING dims: [1] }]
output [{ name: "BERT_IDS" data_type: TYPE_INT64 dims: [16] },
        { name: "BERT_AM" data_type: TYPE_INT64 dims: [16] },
        { name: "TREE_FEATS" data_type: TYPE_FP32 dims: [207] }]
parameters: { key: "max_length" value: { string_value: "16" } }
parameters: { key: "max_text_bytes" value: { string_value: "200" } }
"""

POSTPROCESS = FORCE_NO + """
max_batch_size: 8
input [{ name: "BERT_WEIGHT_INPUT" data_type: TYPE_FP32 dims: [1] },
       { name: "BERT_LARGE_SCORE" data_type: TYPE_FP32 dims: [1] },
       { name: "CUML_SCORE" data_type: TYPE_FP32 dims: [1] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [1] }]
dynamic_batching { }
"""

# unbatched blend of overflow windows (inputs/outputs auto-completed, OVERFLOW_TO_SAMPLE_MAPPING optional)
POSTPROCESS_WINDOWS = """
max_batch_size: 0
parameters: { key: "default_max_batch_size" value: { string_value: "0" } }
"""

# a typo in a parameter name: the model must refuse to load, naming it
BAD_CONFIG = """
max_batch_size: 4
parameters: { key: "max_lenght" value: { string_value: "32" } }
"""


def write_textops_models(root: Path, features: Path) -> dict[str, Path]:
    """Every model directory used by test_textops_models.py, in one repository ``root``."""
    files = {"vocab.txt": vocab_path(), "features.json": features}
    return {
        "tokenize": write_model(root, "tokenize", "tokenize", TOKENIZE, files),
        "tokenize_windows": write_model(root, "tokenize_windows", "tokenize", TOKENIZE_WINDOWS, files),
        "features": write_model(root, "features", "features", FEATURES, files),
        "preprocess": write_model(root, "preprocess", "preprocess", PREPROCESS, files),
        "preprocess_limited": write_model(root, "preprocess_limited", "preprocess", PREPROCESS_LIMITED, files),
        "postprocess": write_model(root, "postprocess", "postprocess", POSTPROCESS),
        "postprocess_windows": write_model(root, "postprocess_windows", "postprocess", POSTPROCESS_WINDOWS),
        "bad_config": write_model(root, "bad_config", "tokenize", BAD_CONFIG, files),
    }


# ---------------------------------------------------------------------------------------------- requests


def text_tensor(texts: Sequence[str | bytes]) -> np.ndarray:
    """``[n, 1]`` BYTES tensor as a client sends it."""
    rows = [t.encode() if isinstance(t, str) else t for t in texts]
    return np.array(rows, dtype=np.object_).reshape(-1, 1)


def harness_infer(model: Any, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
                  request_id: str = "") -> tuple[dict[str, np.ndarray], str | None]:
    """Same contract as ``triton_helpers.server_infer``, in-process: ``(outputs, None)`` or ``({}, message)``."""
    from triton_textops.testing.harness import InferError

    kw = {"request_id": request_id} if request_id else {}
    try:
        return model.infer(dict(inputs), list(outputs) if outputs is not None else None, **kw), None
    except InferError as err:
        return {}, str(err)


def assert_same_outputs(real: Mapping[str, np.ndarray], mock: Mapping[str, np.ndarray],
                        config_dtypes: Mapping[str, np.dtype]) -> None:
    """Same output names, shapes, dtypes (= the config's) and values, exactly (bytes compared as bytes)."""
    assert set(real) == set(mock), (sorted(real), sorted(mock))
    for name in real:
        r, m = real[name], mock[name]
        assert r.dtype == m.dtype == config_dtypes[name], (name, r.dtype, m.dtype, config_dtypes[name])
        assert r.shape == m.shape, (name, r.shape, m.shape)
        np.testing.assert_array_equal(r, m, err_msg=name)


def config_dtypes(config: Mapping[str, Any]) -> dict[str, np.dtype]:
    """Output name -> NumPy dtype from a model config dict (harness ``model.config``)."""
    from tritonclient.utils import triton_to_np_dtype

    return {o["name"]: np.dtype(triton_to_np_dtype(o["data_type"].replace("TYPE_", "").replace("STRING", "BYTES")))
            for o in config["output"]}
