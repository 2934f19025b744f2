"""Triton model ``postprocess`` (the seed's): ``w * bert + (1 - w) * tree`` with a per-request weight.

model.py: ``from triton_textops.models.postprocess import TritonPythonModel``. Seed tensor names:
``BERT_WEIGHT_INPUT``, ``BERT_LARGE_SCORE``, ``CUML_SCORE`` → ``OUTPUT0``; the optional input
``OVERFLOW_TO_SAMPLE_MAPPING`` averages BERT window scores per text (use ``max_batch_size: 0`` then).
"""

from __future__ import annotations

from typing import Any

from triton_textops.ops.blend import blend_requests, validate_blend_request
from triton_textops.triton import io
from triton_textops.triton.base import TensorSpec, TextOpsModel


class TritonPythonModel(TextOpsModel):
    INPUTS = {
        "weight": TensorSpec("BERT_WEIGHT_INPUT", "TYPE_FP32"),
        "bert_scores": TensorSpec("BERT_LARGE_SCORE", "TYPE_FP32"),
        "tree_scores": TensorSpec("CUML_SCORE", "TYPE_FP32"),
        "overflow_to_sample_mapping": TensorSpec("OVERFLOW_TO_SAMPLE_MAPPING", "TYPE_INT64", optional=True),
    }
    OUTPUTS = {"score": TensorSpec("OUTPUT0", "TYPE_FP32")}

    def read(self, request: Any) -> Any:
        kw = {}
        for role, spec in self.INPUTS.items():
            t = io.get_tensor(self.pb, request, self.names[role], optional=spec.optional)
            if t is not None:
                kw[role] = io.numeric(io.to_array(t, self.xp), self.names[role], "iu" if spec.optional else "f")
        kw.setdefault("overflow_to_sample_mapping", None)
        names = {role: f"input '{self.names[role]}'" for role in self.INPUTS}  # the config's tensors
        return validate_blend_request(**kw, names=names)  # a bad request is rejected here, alone; checked once

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        out = []
        for res in blend_requests(items):
            if isinstance(res, Exception):
                raise res
            out.append({"score": res})
        return out
