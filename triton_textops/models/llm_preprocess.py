"""Triton model ``llm_preprocess``: a drop-in for TensorRT-LLM's ``preprocessing`` (same tensors, same values).

model.py: ``from triton_textops.models.llm_preprocess import TritonPythonModel``. Every query, decoder query and word
of every request of an ``execute`` is tokenized by one launch (two with bias words and a template). Parameters:
``tokenizer_dir`` (tokenizer.json [+ tokenizer_config.json], GPT-2 files, a .tiktoken file with ``encoding``, or a
WordPiece tokenizer.json / vocab.txt), ``add_special_tokens``; TensorRT-LLM's ``multimodal_model_path`` (empty:
multimodal input is out of scope), ``gpt_model_path`` and ``max_num_images`` are accepted and unused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.ops.llm import PreRequest, Words, check_pre_request
from triton_textops.triton import io
from triton_textops.triton.base import TensorSpec
from triton_textops.triton.llm import ADD_SPECIAL_TOKENS, LLM_PARAMS, TRTLLM_MULTIMODAL_PARAMS, LLMModel

S, I32, F32 = "TYPE_STRING", "TYPE_INT32", "TYPE_FP32"


class TritonPythonModel(LLMModel):
    PARAMS = [*LLM_PARAMS, ADD_SPECIAL_TOKENS, *TRTLLM_MULTIMODAL_PARAMS]
    INPUTS = {
        "query": TensorSpec("QUERY", S), "decoder": TensorSpec("DECODER_QUERY", S, optional=True),
        "output_len": TensorSpec("REQUEST_OUTPUT_LEN", I32),
        "bad": TensorSpec("BAD_WORDS_DICT", S, (-1,), optional=True),
        "stop": TensorSpec("STOP_WORDS_DICT", S, (-1,), optional=True),
        "bias_words": TensorSpec("EMBEDDING_BIAS_WORDS", S, (-1,), optional=True),
        "bias_weights": TensorSpec("EMBEDDING_BIAS_WEIGHTS", F32, (-1,), optional=True),
        "end_id": TensorSpec("END_ID", I32, optional=True), "pad_id": TensorSpec("PAD_ID", I32, optional=True),
    }
    OUTPUTS = {
        "input_id": TensorSpec("INPUT_ID", I32, (-1,)), "request_input_len": TensorSpec("REQUEST_INPUT_LEN", I32),
        "decoder_input_id": TensorSpec("DECODER_INPUT_ID", I32, (-1,), optional=True),
        "request_decoder_input_len": TensorSpec("REQUEST_DECODER_INPUT_LEN", I32, optional=True),
        "bad_words_ids": TensorSpec("BAD_WORDS_IDS", I32, (2, -1), optional=True),
        "stop_words_ids": TensorSpec("STOP_WORDS_IDS", I32, (2, -1), optional=True),
        "embedding_bias": TensorSpec("EMBEDDING_BIAS", F32, (-1,), optional=True),
        "request_output_len": TensorSpec("REQUEST_OUTPUT_LEN", I32, (-1,), optional=True),
        "out_end_id": TensorSpec("OUT_END_ID", I32, optional=True),
        "out_pad_id": TensorSpec("OUT_PAD_ID", I32, optional=True),
    }

    def read(self, request: Any) -> PreRequest:
        given = io.input_tensors(request)  # (one pass over the request's inputs for all nine)

        def array(role: str) -> Any:
            t = io.get_tensor(self.pb, given, self.names[role], optional=self.INPUTS[role].optional)
            return None if t is None else io.to_array(t, np)  # (a GPU tensor too: FORCE_CPU_ONLY_INPUT_TENSORS no)

        words = {r: self.read_text_table(given, r) for r in ("bad", "stop", "bias_words")}
        return check_pre_request(PreRequest(
            self.read_text(given, "query"), array("output_len"),
            self.read_text(given, "decoder") if self.names["decoder"] in given else None,
            *(Words(w[:2], w[2], w[3]) if w else None for w in words.values()),
            array("bias_weights"), array("end_id"), array("pad_id")), self.names)

    def compute(self, items: list[PreRequest]) -> list[Any]:
        weights = self.model_config_dtype("bias_weights")
        return self.tokenizer.preprocess(items, self.params["add_special_tokens"], weights)
