"""Triton model ``llm_postprocess``: a drop-in for TensorRT-LLM's ``postprocessing`` (same tensors, same strings).

model.py: ``from triton_textops.models.llm_postprocess import TritonPythonModel``. Every sequence of every request of
an ``execute`` is decoded by one launch. Parameters: ``tokenizer_dir`` (as ``llm_preprocess``),
``skip_special_tokens`` (default true, as TensorRT-LLM), ``streaming`` (byte-level BPE, SentencePiece): each output
is valid UTF-8, a piece of its tokens' bytes (no clean-up), a character cut between responses held back and sent
whole with the next piece of a stream with a request id (:class:`~triton_textops.ops.llm.StreamText`: the pieces
concatenate to the bytes of all its tokens; without an id, U+FFFD for the cut bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.ops.llm import check_sequences
from triton_textops.triton import io
from triton_textops.triton.base import TensorSpec
from triton_textops.triton.llm import LLM_PARAMS, SKIP_SPECIAL_TOKENS, LLMModel
from triton_textops.triton.params import Param


class TritonPythonModel(LLMModel):
    PARAMS = [
        *LLM_PARAMS,
        SKIP_SPECIAL_TOKENS,
        Param("streaming", "bool", default=False,
              help="outputs are valid UTF-8 pieces: a stream's (with a request id) concatenate to its full text"),
    ]
    INPUTS = {
        "tokens": TensorSpec("TOKENS_BATCH", "TYPE_INT32", (-1, -1)),
        "sequence_length": TensorSpec("SEQUENCE_LENGTH", "TYPE_INT32", (-1,)),
    }
    OUTPUTS = {"output": TensorSpec("OUTPUT", "TYPE_STRING", (-1,))}

    def read(self, request: Any) -> Any:
        given = io.input_tensors(request)
        tokens, lengths = (io.to_array(io.get_tensor(self.pb, given, self.names[r]), np) for r in self.INPUTS)
        rid, cid = request.request_id(), request.correlation_id()  # (what identifies a stream: ops.llm.StreamText)
        return check_sequences(tokens, lengths, self.tokenizer.n_ids, self.names), (rid, cid) if rid or cid else None

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        p = self.params
        outs = self.tokenizer.postprocess([i[0] for i in items], skip_special_tokens=p["skip_special_tokens"],
                                          streaming=p["streaming"], streams=[i[1] for i in items])
        return [{"output": o} for o in outs]
