"""Triton model ``tokenize``: text → ``input_ids``, ``attention_mask`` (+ token types, row mapping), any family.

model.py: ``from triton_textops.models.tokenize import TritonPythonModel``. The tokenizer: ``vocab`` (a WordPiece
vocab.txt, default the model directory's, with ``lowercase``) or ``tokenizer`` (a tokenizer.json directory or file,
WordPiece or byte-level BPE, its casing as the file says; a BPE pads with its pad token, else 0). See docs/models.md.
"""

from __future__ import annotations

from typing import Any

from triton_textops.triton.base import TensorSpec, TextOpsModel
from triton_textops.triton.params import Param
from triton_textops.triton.tokenizer import TOKENIZER_PARAMS, encode_rows, load_tokenizer, tokenizer_params


class TritonPythonModel(TextOpsModel):
    PARAMS = [*TOKENIZER_PARAMS, Param("add_special_tokens", "bool", default=True,
                                         help="the template per row ([CLS] ... [SEP]; a BPE's, e.g. a BOS)")]
    INPUTS = {"text": TensorSpec("TEXT", "TYPE_STRING")}
    OUTPUTS = {
        "input_ids": TensorSpec("INPUT_IDS", "TYPE_INT64", ("L",), ids=True),
        "attention_mask": TensorSpec("ATTENTION_MASK", "TYPE_INT64", ("L",), ids=True),
        "token_type_ids": TensorSpec("TOKEN_TYPE_IDS", "TYPE_INT64", ("L",), optional=True, ids=True),
        "overflow_to_sample_mapping": TensorSpec("OVERFLOW_TO_SAMPLE_MAPPING", "TYPE_INT64", (1,), optional=True),
    }
    _params = classmethod(tokenizer_params)

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
        enc = encode_rows(self, batch, self.params["add_special_tokens"])
        arrays = {role: enc[role] for role in self.outputs}
        mapping = enc.overflow_to_sample_mapping
        arrays["overflow_to_sample_mapping"] = mapping.reshape(-1, 1)
        return self.split_rows(arrays, counts, mapping if self.params["return_overflowing_tokens"] else None)
