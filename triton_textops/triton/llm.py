"""Shared glue of the LLM models (``llm_preprocess``, ``llm_postprocess``): their parameters, the tokenizer they
load (any family: :class:`~triton_textops.ops.llm.LLMTokenizer`), and TensorRT-LLM's multimodal tensors refused at
load (multimodal preprocessing is out of scope)."""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe.formats import ENCODINGS
from triton_textops.ops.llm import LLMTokenizer
from triton_textops.triton.base import TextOpsModel
from triton_textops.triton.params import Param

LLM_PARAMS = [
    Param("tokenizer_dir", "path", help="tokenizer.json [+ tokenizer_config.json], GPT-2's vocab.json + merges.txt "
          "or encoder.json + vocab.bpe, a .tiktoken file (with encoding), or another family the loader reads (a "
          "WordPiece tokenizer.json or vocab.txt, with tokenizer_config.json naming its eos_token)"),
    Param("encoding", "choice", default=None, choices=tuple(ENCODINGS),
          help="the encoding of a .tiktoken tokenizer_dir (its pattern and special tokens)"),
]
# TensorRT-LLM's model.py warns when these keys are absent (or not set) and uses true
ADD_SPECIAL_TOKENS = Param("add_special_tokens", "bool", default=True, warn_absent=True,
                           help="the tokenizer's template tokens (e.g. Llama-3's BOS) around each query")
SKIP_SPECIAL_TOKENS = Param("skip_special_tokens", "bool", default=True, warn_absent=True,
                            help="drop special tokens from the text")
_UNSET = ("", "${multimodal_model_path}")  # TensorRT-LLM's model.py reads both as "no multimodal model"
TRTLLM_MULTIMODAL_PARAMS = [
    Param("multimodal_model_path", "str", default="", quiet=True,
          help="TensorRT-LLM's; must be empty (multimodal is out of scope)",
          check=lambda v: None if v.strip() in _UNSET else "multimodal preprocessing is out of scope of this model: "
          "use TensorRT-LLM's preprocessing model.py for multimodal models"),
    Param("gpt_model_path", "str", default="", quiet=True,
          help="TensorRT-LLM's (read for multimodal models only): unused"),
    # TensorRT-LLM warns when it is absent, empty or a placeholder, and uses None
    Param("max_num_images", "int", default=None, minimum=0, warn_absent=True,
          help="TensorRT-LLM's (multimodal models only): unused"),
]
MULTIMODAL_TENSORS = frozenset({
    "IMAGE_BYTES", "IMAGE_URL", "VIDEO_BYTES", "PROMPT_TABLE_EXTRA_ID", "OUT_PROMPT_TABLE_EXTRA_IDS", "PIXEL_VALUES",
    "ASPECT_RATIO_IDS", "ASPECT_RATIO_MASK", "CROSS_ATTENTION_MASK", "IMAGE_SIZES", "IS_VIDEO_INPUT",
    "ATTENTION_MASK", "IMAGE_GRID_THW", "VISION_INPUT_ID",
})


def instance_count(cfg: dict) -> int:
    """The model's instances: each group's count, times its GPUs for KIND_GPU (Triton's config JSON)."""
    total = 0
    for g in cfg.get("instance_group") or [{}]:
        count = int(g.get("count", 1))
        gpus = g.get("gpus") or []
        total += count * max(1, len(gpus)) if g.get("kind") == "KIND_GPU" else count
    return total


class LLMModel(TextOpsModel):
    """TextOpsModel with an :class:`LLMTokenizer`; auto-complete writes every tensor of TensorRT-LLM's config."""

    @classmethod
    def wants_input(cls, role: str, params: dict[str, Any], batched: bool) -> bool:
        return True

    @classmethod
    def wants_output(cls, role: str, params: dict[str, Any]) -> bool:
        return True

    @classmethod
    def bind_config(cls, cfg: dict, params: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
        ours = set(names.values())
        found = [t["name"] for kind in ("input", "output") for t in cfg.get(kind) or []
                 if t["name"] in MULTIMODAL_TENSORS and t["name"] not in ours]
        if found:
            raise ConfigError(
                f"model '{cfg.get('name', '?')}': {', '.join(repr(n) for n in found)}: TensorRT-LLM's multimodal "
                "tensors are out of scope of this model (text only): remove them from the config, or use TensorRT-LLM's "
                "own model.py for multimodal models")
        return super().bind_config(cfg, params, names)

    def setup(self) -> None:
        p, model = self.params, self.model_config.get("name", "?")
        try:
            self.tokenizer = tok = LLMTokenizer(p["tokenizer_dir"], encoding=p["encoding"], device=self.device,
                                                gpu_min_batch=p["gpu_min_batch"])
        except (ValueError, FileNotFoundError) as e:  # (ConfigError is a ValueError)
            raise ConfigError(f"model '{model}': parameter 'tokenizer_dir': {e}") from None
        if p.get("streaming") and not tok.exact_stream:
            raise ConfigError(f"model '{model}': streaming: tokenizer_dir is a {tok.family} tokenizer, whose deltas "
                              "do not decode to pieces of the text (spaces go between its tokens): streaming needs "
                              "a byte-level BPE or SentencePiece tokenizer")
        if p.get("streaming") and (n := instance_count(self.model_config)) > 1:
            raise ConfigError(f"model '{model}': streaming: {n} instances: a stream's held-back bytes live in the "
                              "instance that got its previous piece, and Triton sends its next piece to any: set "
                              "instance_group to one instance (count: 1, one GPU)")

    def model_config_dtype(self, role: str) -> Any:
        """NumPy dtype of the config tensor playing ``role`` (the spec's type when the config leaves it out), looked up
        once (a model asks on every execute)."""
        known = self.__dict__.setdefault("_config_dtypes", {})
        if role not in known:
            name = self.names[role]
            found = [t for t in self.model_config.get("input", []) + self.model_config.get("output", [])
                     if t["name"] == name]
            spec = {**self.INPUTS, **self.OUTPUTS}[role]
            dtype = found[0]["data_type"] if found else spec.data_type
            known[role] = self.pb.triton_string_to_numpy(dtype) if dtype != "TYPE_STRING" else np.object_
        return known[role]
