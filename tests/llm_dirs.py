"""Tokenizer directories and model directories for the LLM models' tests, laid out as HF ships them (tokenizer.json
or GPT-2's vocab.json + merges.txt, with tokenizer_config.json), built from the vocabularies under tests/data/bpe.

Shared by tests/models (in-process, against TensorRT-LLM's own model.py) and the real-server tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from string import Template
from typing import Any

import bpe_oracles as O

from triton_textops.ops.bpe import formats as F
from triton_textops.triton import config as C
from triton_textops.triton.llm import MULTIMODAL_TENSORS

QWEN2_ADDED = [{"id": 151643 + i, "content": c} for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
# tokenizer_config.json of each style: the fields AutoTokenizer and TensorRT-LLM's model.py read
CONFIGS = {
    "gpt2": {"tokenizer_class": "GPT2Tokenizer", "model_max_length": 1024},  # clean-up: transformers' default
    # + special tokens the tokenizer.json does not list (transformers adds them): one new ("<|pad|>"), one a word of
    # the vocabulary ("Hello": now matched whole and skipped by skip_special_tokens)
    "llama3": {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
               "eos_token": "<|end_of_text|>", "pad_token": "<|pad|>", "clean_up_tokenization_spaces": True,
               "additional_special_tokens": ["<|eot_id|>", "Hello"]},
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


REF = Path(__file__).parent / "models" / "trtllm_ref"  # TensorRT-LLM's model.py and config.pbtxt (PROVENANCE.md)
# values for the ${...} of TensorRT-LLM's config templates (their tools/fill_template.py fills them the same way)
FILL = {"triton_max_batch_size": "16", "max_queue_delay_microseconds": "0", "max_queue_size": "0",
        "preprocessing_instance_count": "1", "postprocessing_instance_count": "1", "multimodal_model_path": "",
        "engine_dir": "", "max_num_images": ""}
MULTIMODAL_INPUTS = ("IMAGE_BYTES", "IMAGE_URL", "VIDEO_BYTES", "PROMPT_TABLE_EXTRA_ID")


def trtllm_config(kind: str, name: str, *, drop_inputs: bool = True, drop_outputs: bool = True,
                  fill: dict[str, str] = FILL, **values: str) -> Any:
    """TensorRT-LLM's ``preprocessing`` / ``postprocessing`` config.pbtxt filled in (``values`` over ``fill``) as its
    tools/fill_template.py fills it (``string.Template.safe_substitute``: a key not given stays ``${key}``), as a
    ModelConfig named ``name``, its multimodal inputs (``drop_inputs``) and outputs (``drop_outputs``) removed."""
    text = Template((REF / kind / "config.pbtxt").read_text()).safe_substitute({**fill, **values})
    cfg = C.parse_config_text(text, f"{kind}/config.pbtxt")
    cfg.name = name
    keep_in = [t for t in cfg.input if not (drop_inputs and t.name in MULTIMODAL_INPUTS)]
    keep_out = [t for t in cfg.output if not (drop_outputs and t.name in MULTIMODAL_TENSORS)]
    del cfg.input[:], cfg.output[:]
    cfg.input.extend(keep_in)
    cfg.output.extend(keep_out)
    return cfg


def write_config_dir(root: Path, name: str, cfg: Any, model_py: str) -> Path:
    """``root/name`` with ``cfg`` as config.pbtxt and ``model_py`` as 1/model.py."""
    d = root / name
    (d / "1").mkdir(parents=True, exist_ok=True)
    (d / "1" / "model.py").write_text(model_py)
    C.write_config(cfg, d / "config.pbtxt")
    return d


def one_line(module: str) -> str:
    return f"from triton_textops.models.{module} import TritonPythonModel  # noqa: F401\n"


def write_llm_models(root: Path, tokenizer_dir: Path, *, name: str = "", add_special_tokens: bool = True,
                     skip_special_tokens: bool = True, streaming: bool = False,
                     encoding: str | None = None) -> tuple[Path, Path]:
    """``llm_preprocess`` and ``llm_postprocess`` model directories (one-line model.py) on ``tokenizer_dir``:
    TensorRT-LLM's configs (text tensors) filled in, plus ``streaming`` and ``encoding`` (of a .tiktoken file)."""
    values = {"tokenizer_dir": str(tokenizer_dir), "add_special_tokens": str(add_special_tokens).lower(),
              "skip_special_tokens": str(skip_special_tokens).lower()}
    pre_cfg = trtllm_config("preprocessing", f"preprocessing{name}", **values)
    cfg = trtllm_config("postprocessing", f"postprocessing{name}", **values)
    if encoding:
        for c in (pre_cfg, cfg):
            c.parameters["encoding"].string_value = encoding
    pre = write_config_dir(root, f"preprocessing{name}", pre_cfg, one_line("llm_preprocess"))
    if streaming:
        cfg.parameters["streaming"].string_value = "true"
    post = write_config_dir(root, f"postprocessing{name}", cfg, one_line("llm_postprocess"))
    return pre, post


def write_reference_models(root: Path, tokenizer_dir: Path, *, name: str = "", add_special_tokens: bool = True,
                           skip_special_tokens: bool = True) -> tuple[Path, Path]:
    """TensorRT-LLM's own model.py on the same configs (their preprocessing initialize looks up the data types of
    multimodal outputs, so its config keeps those; no request here asks for them)."""
    values = {"tokenizer_dir": str(tokenizer_dir), "add_special_tokens": str(add_special_tokens).lower(),
              "skip_special_tokens": str(skip_special_tokens).lower()}
    out = []
    for kind in ("preprocessing", "postprocessing"):
        cfg = trtllm_config(kind, f"{kind}{name}", drop_outputs=False, **values)
        out.append(write_config_dir(root, f"{kind}{name}", cfg, (REF / kind / "1" / "model.py").read_text()))
    return out[0], out[1]
