"""Configs written the way third-party repositories write them, with our one-line model.py dropped in.

The shape follows a public GPU-tokenization example: a python model whose input ``product_reviews`` is a 1-D
TYPE_STRING tensor (``dims: [ -1 ]``, no ``max_batch_size``), whose outputs ``input_ids``/``attention_mask`` are
TYPE_INT32 ``[ -1, 256 ]`` plus an extra ``metadata`` output, and an ensemble with ``max_batch_size: 128`` over a
tokenizer. Shared by the in-process tests (tests/models/test_dropin.py) and the real-server ones
(tests/server/test_dropin.py).
"""

from __future__ import annotations

from pathlib import Path

from model_dirs import write_model

from triton_textops.bundled import vocab_path

NAMES = "text=product_reviews,input_ids=input_ids,attention_mask=attention_mask"
TENSOR_NAMES = f'parameters: {{ key: "tensor_names" value: {{ string_value: "{NAMES}" }} }}\n'

REVIEWS_INPUT = """
input [
  {
    name: "product_reviews"
    data_type: TYPE_STRING
    dims: [ -1 ]
  }
]
"""
IDS_OUTPUTS = """
output [
  {
    name: "input_ids"
    data_type: TYPE_INT32
    dims: [ -1, 256 ]
  },
  {
    name: "attention_mask"
    data_type: TYPE_INT32
    dims: [ -1, 256 ]
  }
]
"""
METADATA_OUTPUT = """
output [
  {
    name: "metadata"
    data_type: TYPE_INT32
    dims: [ -1, 3 ]
  }
]
"""
CPU_GROUP = "instance_group [ { count: 1 kind: KIND_CPU } ]\n"

# no max_batch_size, every tensor declared, tensor_names mapping them: loads unbatched, max_length 256 from the dims
REVIEWS = REVIEWS_INPUT + IDS_OUTPUTS + CPU_GROUP + TENSOR_NAMES
# the repository's config as it is: an extra output no role produces
WITH_METADATA = REVIEWS_INPUT + IDS_OUTPUTS + METADATA_OUTPUT + CPU_GROUP + TENSOR_NAMES
# dropped in without tensor_names
NO_NAMES = REVIEWS_INPUT + IDS_OUTPUTS + CPU_GROUP
# max_length given and different from the dims
LENGTH_CONFLICT = REVIEWS + 'parameters: { key: "max_length" value: { string_value: "128" } }\n'
# the same repository run on a GPU host: KIND_GPU
GPU_GROUP = REVIEWS_INPUT + IDS_OUTPUTS + "instance_group [ { count: 1 kind: KIND_GPU } ]\n" + TENSOR_NAMES

# the ensemble's tokenizer step: non-batching, [-1, 1] texts (the ensemble's [1] plus its batch dimension)
MEMBER = """
input [
  {
    name: "product_reviews"
    data_type: TYPE_STRING
    dims: [ -1, 1 ]
  }
]
""" + IDS_OUTPUTS + CPU_GROUP + TENSOR_NAMES

ENSEMBLE = """
name: "reviews_ensemble"
platform: "ensemble"
max_batch_size: 128
input [
  {
    name: "product_reviews"
    data_type: TYPE_STRING
    dims: [ 1 ]
  }
]
output [
  {
    name: "input_ids"
    data_type: TYPE_INT32
    dims: [ 256 ]
  },
  {
    name: "attention_mask"
    data_type: TYPE_INT32
    dims: [ 256 ]
  }
]
ensemble_scheduling {
  step [
    {
      model_name: "reviews_member"
      model_version: -1
      input_map { key: "product_reviews" value: "product_reviews" }
      output_map { key: "input_ids" value: "input_ids" }
      output_map { key: "attention_mask" value: "attention_mask" }
    }
  ]
}
"""

# no tensors at all: auto-complete may choose batching and fills every tensor
BARE = ""
BARE_INT32 = 'parameters: { key: "ids_dtype" value: { string_value: "int32" } }\n'


def write_ensemble(root: Path) -> Path:
    """``root/reviews_ensemble`` (config only; the ensemble has no model files) and its member."""
    write_model(root, "reviews_member", "tokenize", MEMBER, {"vocab.txt": vocab_path()})
    d = root / "reviews_ensemble"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(ENSEMBLE)
    return d


def write_dropin_models(root: Path) -> dict[str, Path]:
    """Every drop-in model directory (tokenize with third-party configs) in one repository ``root``."""
    files = {"vocab.txt": vocab_path()}
    dirs = {
        name: write_model(root, name, "tokenize", config, files)
        for name, config in {
            "reviews": REVIEWS,
            "reviews_metadata": WITH_METADATA,
            "reviews_no_names": NO_NAMES,
            "reviews_length_conflict": LENGTH_CONFLICT,
            "reviews_gpu": GPU_GROUP,
            "bare": BARE,
            "bare_int32": BARE_INT32,
        }.items()
    }
    dirs["reviews_ensemble"] = write_ensemble(root)
    dirs["reviews_member"] = root / "reviews_member"
    return dirs
