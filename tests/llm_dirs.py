"""Tokenizer directories and model directories for the LLM models' tests, laid out as HF ships them (tokenizer.json
or GPT-2's vocab.json + merges.txt, with tokenizer_config.json), built from the vocabularies under tests/data/bpe.

Shared by tests/models (in-process, against TensorRT-LLM's own model.py) and the real-server tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import bpe_oracles as O
from model_dirs import write_model

from triton_textops.ops.bpe import formats as F

QWEN2_ADDED = [{"id": 151643 + i, "content": c} for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
# tokenizer_config.json of each style: the fields AutoTokenizer and TensorRT-LLM's model.py read
CONFIGS = {
    "gpt2": {"tokenizer_class": "GPT2Tokenizer", "model_max_length": 1024, "clean_up_tokenization_spaces": True},
    "llama3": {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
               "eos_token": "<|end_of_text|>", "clean_up_tokenization_spaces": True},
    "qwen2": {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "clean_up_tokenization_spaces": False},
}
STYLES = tuple(CONFIGS)


def write_tokenizer_dir(root: Path, style: str) -> Path:
    """``root/style``: GPT-2's vocab.json + merges.txt, or a Llama-3- / Qwen2-style tokenizer.json, with a
    tokenizer_config.json."""
    d = root / style
    d.mkdir(parents=True, exist_ok=True)
    if style == "gpt2":
        shutil.copy(O.DATA / "encoder.json", d / "vocab.json")
        shutil.copy(O.DATA / "vocab.bpe", d / "merges.txt")
    elif style == "llama3":
        O.write_tokenizer_json(d, "cl100k_base", family_pattern=O.LLAMA3_PATTERN, bos="<|begin_of_text|>",
                               added=O.LLAMA3_ADDED)
    else:
        pat = next(p for p, f in F.PATTERNS.items() if f == F.QWEN2)
        O.write_tokenizer_json(d, "qwen2", family_pattern=pat, nfc=True, added=QWEN2_ADDED)
    (d / "tokenizer_config.json").write_text(json.dumps(CONFIGS[style]))
    return d


# our models' configs: TensorRT-LLM's preprocessing / postprocessing config.pbtxt (text tensors), filled in
PRE_CONFIG = """
max_batch_size: 16
dynamic_batching { }
input [
  { name: "QUERY" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "DECODER_QUERY" data_type: TYPE_STRING dims: [ 1 ] optional: true },
  { name: "REQUEST_OUTPUT_LEN" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "BAD_WORDS_DICT" data_type: TYPE_STRING dims: [ -1 ] optional: true },
  { name: "STOP_WORDS_DICT" data_type: TYPE_STRING dims: [ -1 ] optional: true },
  { name: "EMBEDDING_BIAS_WORDS" data_type: TYPE_STRING dims: [ -1 ] optional: true },
  { name: "EMBEDDING_BIAS_WEIGHTS" data_type: TYPE_FP32 dims: [ -1 ] optional: true },
  { name: "END_ID" data_type: TYPE_INT32 dims: [ 1 ] optional: true },
  { name: "PAD_ID" data_type: TYPE_INT32 dims: [ 1 ] optional: true }
]
output [
  { name: "INPUT_ID" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "REQUEST_INPUT_LEN" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "DECODER_INPUT_ID" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "REQUEST_DECODER_INPUT_LEN" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "BAD_WORDS_IDS" data_type: TYPE_INT32 dims: [ 2, -1 ] },
  { name: "STOP_WORDS_IDS" data_type: TYPE_INT32 dims: [ 2, -1 ] },
  { name: "EMBEDDING_BIAS" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "REQUEST_OUTPUT_LEN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "OUT_END_ID" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "OUT_PAD_ID" data_type: TYPE_INT32 dims: [ 1 ] }
]
parameters { key: "tokenizer_dir" value: { string_value: "TOKENIZER_DIR" } }
parameters { key: "add_special_tokens" value: { string_value: "ADD_SPECIAL_TOKENS" } }
parameters { key: "multimodal_model_path" value: { string_value: "" } }
parameters { key: "gpt_model_path" value: { string_value: "" } }
instance_group [ { count: 1 kind: KIND_CPU } ]
"""
POST_CONFIG = """
max_batch_size: 16
dynamic_batching { }
input [
  { name: "TOKENS_BATCH" data_type: TYPE_INT32 dims: [ -1, -1 ] },
  { name: "SEQUENCE_LENGTH" data_type: TYPE_INT32 dims: [ -1 ] }
]
output [ { name: "OUTPUT" data_type: TYPE_STRING dims: [ -1 ] } ]
parameters { key: "tokenizer_dir" value: { string_value: "TOKENIZER_DIR" } }
parameters { key: "skip_special_tokens" value: { string_value: "SKIP_SPECIAL_TOKENS" } }
instance_group [ { count: 1 kind: KIND_CPU } ]
"""
# TensorRT-LLM's preprocessing model.py looks these outputs' data types up in initialize (multimodal ones: ours
# refuses them); its config declares them, so the reference's config keeps them
REF_PRE_EXTRA_OUTPUTS = """
output [
  { name: "OUT_PROMPT_TABLE_EXTRA_IDS" data_type: TYPE_UINT64 dims: [ -1 ] },
  { name: "PIXEL_VALUES" data_type: TYPE_FP16 dims: [ -1, -1, -1, -1 ] },
  { name: "IMAGE_SIZES" data_type: TYPE_INT64 dims: [ 2 ] }
]
"""


def pre_config(tokenizer_dir: Path, add_special_tokens: bool = True) -> str:
    return PRE_CONFIG.replace("TOKENIZER_DIR", str(tokenizer_dir)).replace(
        "ADD_SPECIAL_TOKENS", str(add_special_tokens).lower())


def post_config(tokenizer_dir: Path, skip_special_tokens: bool = True, streaming: bool = False) -> str:
    text = POST_CONFIG.replace("TOKENIZER_DIR", str(tokenizer_dir)).replace(
        "SKIP_SPECIAL_TOKENS", str(skip_special_tokens).lower())
    return text + ('parameters { key: "streaming" value: { string_value: "true" } }\n' if streaming else "")


def write_llm_models(root: Path, tokenizer_dir: Path, *, name: str = "", add_special_tokens: bool = True,
                     skip_special_tokens: bool = True, streaming: bool = False) -> tuple[Path, Path]:
    """``llm_preprocess`` and ``llm_postprocess`` model directories (one-line model.py) on ``tokenizer_dir``."""
    pre = write_model(root, f"preprocessing{name}", "llm_preprocess", pre_config(tokenizer_dir, add_special_tokens))
    post = write_model(root, f"postprocessing{name}", "llm_postprocess",
                       post_config(tokenizer_dir, skip_special_tokens, streaming))
    return pre, post
