"""Model directories of our models written the way a user writes them: ``config.pbtxt`` + a one-line
``1/model.py``, with the configurations the tests use.

Shared by the in-process model tests (tests/models) and the real-server tests (tests/server), so both load the
very same directories. (``tests/`` is on ``sys.path``: it holds the root conftest.)
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path


def write_model(root: Path, name: str, module: str, config: str, files: Mapping[str, Path] | None = None) -> Path:
    """``root/name`` with config.pbtxt, ``1/model.py`` importing ``triton_textops.models.<module>``, and files."""
    d = root / name
    (d / "1").mkdir(parents=True)
    (d / "1" / "model.py").write_text(f"from triton_textops.models.{module} import TritonPythonModel  # noqa: F401\n")
    (d / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n' + textwrap.dedent(config))
    for target, src in (files or {}).items():
        shutil.copy(src, d / target)
    return d


def fit_features(dst: Path) -> Path:
    """The features artifact fitted on every other Austen paragraph, saved at ``dst``."""
    from triton_textops import ReadabilityFeatures

    ReadabilityFeatures.fit(austen()[::2]).save(dst)
    return dst


FORCE_NO = 'parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: { string_value: "no" } }\n'


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
    """Every model directory below (our four models in several configurations), in one repository ``root``."""
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
