"""Triton model ``tokenize``: text → BERT ``input_ids``, ``attention_mask`` (+ token types, row mapping).

model.py: ``from triton_textops.models.tokenize import TritonPythonModel``. Parameters: ``vocab``
(path, default ``vocab.txt`` in the model directory), ``lowercase``, ``max_length`` (default: the token dim
of the config's id/mask outputs, else 128), ``stride``, ``return_overflowing_tokens`` (needs
``max_batch_size: 0``: rows no longer match texts), ``ids_dtype`` (int64/int32: the type auto-complete gives the
id/mask outputs of a config without tensors), ``tensor_names``, ``max_text_bytes``, ``gpu_min_batch``.
"""

from __future__ import annotations

from typing import Any

from triton_textops.errors import ConfigError
from triton_textops.ops.tokenizer import BertTokenizer
from triton_textops.triton.base import IDS_DTYPE_PARAM, TensorSpec, TextOpsModel
from triton_textops.triton.params import Param

TOKENIZER_PARAMS = [
    Param("vocab", "path", default="vocab.txt", help="WordPiece vocab.txt"),
    Param("lowercase", "bool", default=True, help="uncased normalization (lowercase, strip accents) as HF's"),
    Param("max_length", "int", default=None, minimum=3,
          help="tokens per row (default: the config's output dims, else 128)"),
    Param("stride", "int", default=0, minimum=0, help="tokens shared by consecutive overflow windows (HF's stride)"),
    Param("return_overflowing_tokens", "bool", default=False,
          help="long texts give several rows (windows); needs max_batch_size: 0"),
    IDS_DTYPE_PARAM,
]
INT_DTYPES = ("TYPE_INT64", "TYPE_INT32")


def load_tokenizer(model: TextOpsModel) -> BertTokenizer:
    """The tokenizer a model's parameters describe, on the model instance's device."""
    p = model.params
    if p["return_overflowing_tokens"] and model.batched:
        raise ConfigError("return_overflowing_tokens needs max_batch_size: 0 (a text may give several rows)")
    return BertTokenizer.from_vocab(p["vocab"], lowercase=p["lowercase"], device=model.device)


class TritonPythonModel(TextOpsModel):
    PARAMS = [*TOKENIZER_PARAMS, Param("add_special_tokens", "bool", default=True, help="[CLS] ... [SEP] per row")]
    INPUTS = {"text": TensorSpec("TEXT", "TYPE_STRING")}
    OUTPUTS = {
        "input_ids": TensorSpec("INPUT_IDS", "TYPE_INT64", ("L",), ids=True),
        "attention_mask": TensorSpec("ATTENTION_MASK", "TYPE_INT64", ("L",), ids=True),
        "token_type_ids": TensorSpec("TOKEN_TYPE_IDS", "TYPE_INT64", ("L",), optional=True, ids=True),
        "overflow_to_sample_mapping": TensorSpec("OVERFLOW_TO_SAMPLE_MAPPING", "TYPE_INT64", (1,), optional=True),
    }

    @classmethod
    def batchable(cls, params: dict[str, Any]) -> bool:
        return not params["return_overflowing_tokens"]

    @classmethod
    def wants_output(cls, role: str, params: dict[str, Any]) -> bool:
        return role == "overflow_to_sample_mapping" and not cls.batchable(params)

    def setup(self) -> None:
        self.tokenizer = load_tokenizer(self)

    def read(self, request: Any) -> Any:
        return self.read_text(request)

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        batch, counts = self.text_batch(items)
        p = self.params
        overflow = p["return_overflowing_tokens"]
        enc = self.tokenizer.encode(
            batch, max_length=p["max_length"], stride=p["stride"], return_overflowing_tokens=overflow,
            add_special_tokens=p["add_special_tokens"], dtype=self.ids_dtype(), gpu_min_batch=p["gpu_min_batch"],
        )
        arrays = {role: enc[role] for role in self.outputs}
        arrays["overflow_to_sample_mapping"] = enc.overflow_to_sample_mapping.reshape(-1, 1)
        return self.split_rows(arrays, counts, enc.overflow_to_sample_mapping if overflow else None)
