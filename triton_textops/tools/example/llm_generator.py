"""A stand-in for TensorRT-LLM's ``tensorrt_llm`` model: a decoupled Python model that streams token ids.

``triton-textops example llm`` copies this file as ``generator/1/model.py`` (it imports nothing of
triton_textops, so the served model needs only numpy). It takes the tensors ``tensorrt_llm`` takes from the
``preprocessing`` step (``input_ids``, ``input_lengths``, ``request_output_len``, optional ``streaming``; the
other inputs of the ensemble, ``decoder_input_ids``, ``decoder_input_lengths``, ``end_id``, ``pad_id``,
``bad_words_list``, ``stop_words_list``, ``embedding_bias``, are accepted and ignored) and answers as
``tensorrt_llm`` does: ``output_ids`` INT32 ``[batch, beam, tokens]`` and ``sequence_length`` INT32
``[batch, beam]``, one response per chunk of new tokens when ``streaming`` is true, one response with all of them
otherwise (also when it is not sent, as there).

The "generation" is an echo: the first ``request_output_len`` tokens of the prompt, so a client knows the text it
must get back. Chunks have random sizes of 1 to ``max_chunk_tokens`` tokens (config parameter, default 4),
drawn from a generator seeded by the ``seed`` parameter and the prompt's ids, so the same prompt is always cut
at the same places, whatever it is batched with. Like TensorRT-LLM's in-flight batching, one worker thread
serves every active request in turn, one chunk each per step (``step_delay_ms`` between steps, default 0): a
request arriving while others stream joins them. A bad request (negative ``request_output_len``, missing or
wrongly shaped ids) gets an error response of its own; the others go on.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import zlib
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils


class _Stream:
    """One request being answered: its sender and the chunks still to send."""

    def __init__(self, sender: Any, chunks: list[np.ndarray]) -> None:
        self.sender, self.chunks = sender, chunks


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        cfg = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(cfg):
            raise pb_utils.TritonModelException(
                f"model '{args['model_name']}' streams its answers: set model_transaction_policy {{ decoupled: true }}")
        params = {k: v.get("string_value", "") for k, v in cfg.get("parameters", {}).items()}
        try:
            self.seed = int(params.get("seed", "0"))
            self.max_chunk = int(params.get("max_chunk_tokens", "4"))
            self.delay = float(params.get("step_delay_ms", "0")) / 1e3
        except ValueError as exc:
            raise pb_utils.TritonModelException(f"model '{args['model_name']}': bad parameter: {exc}") from None
        if self.max_chunk < 1 or self.delay < 0:
            raise pb_utils.TritonModelException(
                f"model '{args['model_name']}': max_chunk_tokens must be >= 1 and step_delay_ms >= 0")
        self.pending: queue.Queue[_Stream | None] = queue.Queue()
        self.worker = threading.Thread(target=self._serve, name="generator", daemon=True)
        self.worker.start()

    def _chunks(self, request: Any) -> list[np.ndarray]:
        """The token chunks to stream for ``request``; ValueError names the tensor that is wrong."""

        def read(name: str, required: bool = True) -> np.ndarray | None:
            t = pb_utils.get_input_tensor_by_name(request, name)
            if t is None:
                if required:
                    raise ValueError(f"input '{name}' is missing")
                return None
            return t.as_numpy()

        ids = read("input_ids")
        if ids.ndim != 2 or ids.shape[0] != 1 or ids.dtype != np.int32:
            raise ValueError(f"input 'input_ids': expected INT32 [1, tokens], got {ids.dtype} {list(ids.shape)}")
        lengths, out_len = read("input_lengths").reshape(-1), read("request_output_len").reshape(-1)
        if lengths.size != 1 or out_len.size != 1:
            raise ValueError("inputs 'input_lengths' and 'request_output_len': one value per request")
        if out_len[0] < 0:
            raise ValueError(f"input 'request_output_len': must be >= 0, got {int(out_len[0])}")
        if not 0 <= lengths[0] <= ids.shape[1]:
            raise ValueError(f"input 'input_lengths': {int(lengths[0])} is not in [0, {ids.shape[1]}]")
        tokens = ids[0, : min(int(lengths[0]), int(out_len[0]))]
        streaming = read("streaming", required=False)
        if streaming is None or not bool(np.asarray(streaming).reshape(-1)[0]):  # TensorRT-LLM's default: off
            return [tokens]
        rng = np.random.default_rng([self.seed, zlib.crc32(tokens.tobytes())])
        cuts, at = [], 0
        while at < tokens.size:
            at += int(rng.integers(1, self.max_chunk + 1))
            cuts.append(min(at, tokens.size))
        return np.split(tokens, cuts[:-1]) if cuts else [tokens]

    def execute(self, requests: list[Any]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            try:
                self.pending.put(_Stream(sender, self._chunks(request)))
            except ValueError as exc:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None

    def _serve(self) -> None:
        active: list[_Stream] = []
        while True:
            items = [] if active else [self.pending.get()]  # wait when idle; take every newcomer when busy
            while True:
                try:
                    items.append(self.pending.get_nowait())
                except queue.Empty:
                    break
            if any(item is None for item in items):
                return
            active += items
            for stream in active:
                chunk = stream.chunks.pop(0)
                out = [pb_utils.Tensor("output_ids", chunk.astype(np.int32).reshape(1, 1, -1)),
                       pb_utils.Tensor("sequence_length", np.array([[chunk.size]], np.int32))]
                flags = 0 if stream.chunks else pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                try:
                    stream.sender.send(pb_utils.InferenceResponse(output_tensors=out), flags=flags)
                except Exception:  # noqa: BLE001 - e.g. the request was cancelled: drop it, serve the others
                    stream.chunks.clear()
            active = [s for s in active if s.chunks]
            if active and self.delay:
                time.sleep(self.delay)

    def finalize(self) -> None:
        self.pending.put(None)
        self.worker.join(timeout=10)
