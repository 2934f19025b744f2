"""Triton model ``preprocess`` (the seed's): excerpts → BERT inputs and tree features, one text pass.

model.py: ``from triton_textops.models.preprocess import TritonPythonModel``. Seed tensor names:
``INPUT0`` → ``BERT_IDS``, ``BERT_AM``, ``TREE_FEATS``. Parameters: those of ``tokenize`` and
``features`` (``vocab`` or ``tokenizer``, ``features``, ``lowercase``, ``max_length``, ``stride``,
``return_overflowing_tokens``, ``normalize``) plus ``tensor_names`` and ``max_text_bytes``. A WordPiece tokenizer
normalizing as the features do shares one text pass with them; another (``tokenizer``: a BPE, ...) takes two.
"""

from __future__ import annotations

from typing import Any

from triton_textops.errors import ConfigError
from triton_textops.models.features import FEATURE_PARAMS, load_features
from triton_textops.models.tokenize import TritonPythonModel as Tokenize
from triton_textops.ops.preprocess import preprocess
from triton_textops.ops.wordpiece.normalize import NormOptions
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer
from triton_textops.triton.base import TensorSpec, TextOpsModel
from triton_textops.triton.tokenizer import TOKENIZER_PARAMS, encode_rows, load_tokenizer, tokenizer_params


class TritonPythonModel(TextOpsModel):
    PARAMS = [*TOKENIZER_PARAMS, *FEATURE_PARAMS]
    INPUTS = {"text": TensorSpec("INPUT0", "TYPE_STRING")}
    OUTPUTS = {
        "input_ids": TensorSpec("BERT_IDS", "TYPE_INT64", ("L",), ids=True),
        "attention_mask": TensorSpec("BERT_AM", "TYPE_INT64", ("L",), ids=True),
        "features": TensorSpec("TREE_FEATS", "TYPE_FP32", (-1,)),
        "overflow_to_sample_mapping": TensorSpec("OVERFLOW_TO_SAMPLE_MAPPING", "TYPE_INT64", (1,), optional=True),
    }
    batchable = Tokenize.batchable
    wants_output = Tokenize.wants_output
    _params = classmethod(tokenizer_params)

    def setup(self) -> None:
        self.tokenizer = load_tokenizer(self)
        self.features = load_features(self, "features")
        wordpiece = isinstance(self.tokenizer, BertTokenizer)  # (one pass: the pre-tokens shared by rows and features)
        self.one_pass = wordpiece and self.tokenizer.options == NormOptions.of(self.features.lowercase)
        if wordpiece and self.features.lowercase != self.tokenizer.lowercase:
            raise ConfigError("the features artifact and the tokenizer use different casing (lowercase)")

    def read(self, request: Any) -> Any:
        return self.read_text(request)

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        batch, counts = self.text_batch(items)
        p, tok = self.params, self.tokenizer
        overflow = p["return_overflowing_tokens"]  # (windows: staged, else one kernel; each text read once)
        if self.one_pass:
            enc, feats = preprocess(tok, self.features, batch, max_length=p["max_length"], normalize=p["normalize"],
                                    dtype=self.ids_dtype(), stride=p["stride"], return_overflowing_tokens=overflow,
                                    gpu_min_batch=p["gpu_min_batch"])
        else:  # another family: its rows, then the features
            enc = encode_rows(self, batch)
            feats = self.features.transform(batch, normalize=p["normalize"], device=self.device,
                                            gpu_min_batch=p["gpu_min_batch"])
        mapping = enc.overflow_to_sample_mapping
        rows = self.split_rows({"input_ids": enc.input_ids, "attention_mask": enc.attention_mask,
                                "overflow_to_sample_mapping": mapping.reshape(-1, 1)}, counts,
                               mapping if overflow else None)
        for part, f in zip(rows, self.split_rows({"features": feats}, counts)):
            part.update(f)
        return rows
