"""The LLM example in a real tritonserver, streamed over gRPC: UTF-8 pieces, exact text, bad requests fail alone.

``triton-textops example llm`` writes TensorRT-LLM's ensemble with our ``llm_preprocess`` / ``llm_postprocess``
(``streaming: true``) around the stand-in generator, which streams the prompt's own tokens back in chunks of 1-3
tokens (seeded) with 20 ms between its steps. The tokenizer is a Llama-3-style tokenizer.json (cl100k ranks, BOS
template): preprocessing adds ``<|begin_of_text|>``, the generator echoes it, postprocessing drops it
(``skip_special_tokens``). So each stream's outputs must concatenate to the prompt's bytes exactly, although the
multilingual and emoji characters are cut between chunks (checked: some chunks' bytes are not UTF-8 on their own),
and each output must decode strictly on its own, as TensorRT-LLM's clients and Triton's OpenAI frontend decode them:
the postprocessing step holds a cut character's bytes back, keyed by the request id the ensemble passes it.
Each request has its own gRPC stream, so an error belongs to the request that got it; every wait is bounded.
"""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from triton_helpers import Runtime, start_server

from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

TEXTS = [
    "Grüße aus Zürich! 東京で寿司を食べました 🍣🍣 — naïve café, Привет, мир! مرحبا بالعالم. नमस्ते दुनिया 👩‍👩‍👧‍👦 "
    "🇯🇵🇫🇷 Ελληνικά, 한국어 텍스트, ไทย, עברית; emoji at the end 🎉",
    "It is a truth universally acknowledged 🙂 that a single man — «en possession d'une bonne fortune» — "
    "必须 want a wife. Ça va? Да! 🚀🚀🚀 ½ ≠ ∞, tab\tand\nnewline, the end ✅",
    "日本語の文章と English words mixed together, with 😀😃😄😁 and Ω≈ç√∫, then ĀĒĪŌŪ and ẞ, "
    "finally 🧑🏽‍💻 writes code: print('héllo') ✨",
]
WAIT_S = 60.0  # bound on any one stream, far above the ~1-3 s a stream takes


@pytest.fixture(scope="module")
def llm_server(triton_runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    from llm_dirs import write_tokenizer_dir

    from triton_textops.cli import main

    root = tmp_path_factory.mktemp("llm")
    tok = write_tokenizer_dir(root, "llama3")
    repo = root / "repo"
    assert main(["example", "llm", str(repo), "--tokenizer", str(tok), "--max-chunk-tokens", "3",
                 "--step-delay-ms", "20", "--max-batch-size", "8"]) == 0
    server = start_server(triton_runtime, repo, "llm example", startup_timeout=300)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Stream:
    """One request on its own gRPC stream: the outputs of its responses, its error, when it ended."""

    client: object
    events: queue.Queue = field(default_factory=queue.Queue)
    outputs: list[bytes] = field(default_factory=list)
    error: str | None = None
    ended: float = 0.0  # time.monotonic() of the final response or the error

    def wait(self) -> Stream:
        deadline = time.monotonic() + WAIT_S
        while not self.ended:
            left = deadline - time.monotonic()
            assert left > 0, f"no final response within {WAIT_S:g} s; got {self.outputs}"
            try:
                result, error, at = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if error is not None:
                self.error, self.ended = str(error), at
                continue
            out = result.as_numpy("text_output")
            if out is not None:
                self.outputs += [bytes(b) for b in out.reshape(-1)]
            if result.get_response().parameters["triton_final_response"].bool_param:
                self.ended = at
        self.client.stop_stream()
        self.client.close()
        return self


_IDS = itertools.count()


def send(url: str, text: bytes, max_tokens: np.ndarray, stream: bool = True, request_id: str | None = None) -> Stream:
    """``text`` streamed back (each stream its own request id unless ``request_id`` says, "" for none)."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import np_to_triton_dtype

    client = grpcclient.InferenceServerClient(url)
    s = Stream(client)
    client.start_stream(callback=lambda result, error: s.events.put((result, error, time.monotonic())))
    inputs = []
    for name, arr in (("text_input", np.array([[text]], dtype=np.object_)), ("max_tokens", max_tokens),
                      ("stream", np.array([[stream]]))):
        i = grpcclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
        i.set_data_from_numpy(arr)
        inputs.append(i)
    rid = f"stream-{next(_IDS)}" if request_id is None else request_id
    client.async_stream_infer("ensemble", inputs, request_id=rid, enable_empty_final_response=True)
    return s


def _valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_stream_concatenates_to_the_exact_text(llm_server: TritonServer) -> None:
    text = TEXTS[0].encode()
    s = send(llm_server.grpc_url, text, np.array([[1000]], np.int32)).wait()
    assert s.error is None
    assert b"".join(s.outputs) == text
    assert len(s.outputs) > 20
    for o in s.outputs:
        o.decode("utf-8")  # strict: each piece on its own
    # without a request id a stream cannot be told from another's: each piece still valid UTF-8 (cut bytes U+FFFD)
    anon = send(llm_server.grpc_url, text, np.array([[1000]], np.int32), request_id="").wait()
    assert anon.error is None and all(_valid_utf8(o) for o in anon.outputs)
    assert b"".join(anon.outputs) != text  # characters were cut between chunks: those a held-back piece made whole
    whole = send(llm_server.grpc_url, text, np.array([[1000]], np.int32), stream=False).wait()
    assert whole.error is None and whole.outputs == [text]
    nothing = send(llm_server.grpc_url, text, np.array([[0]], np.int32)).wait()  # one empty delta, then the end
    assert nothing.error is None and nothing.outputs == [b""]


def test_bad_requests_fail_alone_while_the_others_stream(llm_server: TritonServer) -> None:
    url = llm_server.grpc_url
    good = [send(url, t.encode(), np.array([[1000]], np.int32)) for t in TEXTS]
    bad = {"utf8": send(url, b"caf\xc3 \xff\xfe", np.array([[50]], np.int32)),
           "negative": send(url, b"hello", np.array([[-3]], np.int32)),
           "dtype": send(url, b"hello", np.array([[50]], np.int64))}
    for s in bad.values():
        s.wait()
        assert s.error is not None and s.outputs == [], s.error
    # in the client's terms (issue 47): the ensemble input it sent, then the model's own tensor (client_names)
    assert "input 'text_input' (QUERY in model 'preprocessing') row 0: text is not valid UTF-8" in bad["utf8"].error
    assert "input 'max_tokens' (REQUEST_OUTPUT_LEN in model 'preprocessing') row 0 is negative (-3)" in bad["negative"].error
    assert "max_tokens" in bad["dtype"].error
    assert "INT64" in bad["dtype"].error and "INT32" in bad["dtype"].error
    for t, s in zip(TEXTS, good):
        s.wait()
        assert s.error is None and b"".join(s.outputs) == t.encode()
    # the errors came while every good stream was still going
    assert max(s.ended for s in bad.values()) < min(s.ended for s in good)



def test_many_concurrent_streams_decode_piece_by_piece(llm_server: TritonServer) -> None:
    """48 streams at once (multilingual, emoji runs, CJK), interleaved through one postprocessing instance: every
    piece of every stream decodes strictly, each stream concatenates to its text; a stream cut by ``max_tokens``
    inside a character ends on the last whole character (its unfinished bytes are never sent)."""
    texts = [t.encode() for t in [*TEXTS, "😀🎉🍣🚀" * 12, "東京都の天気は晴れ、明日は雨でしょう。" * 3]]
    streams = [(t, send(llm_server.grpc_url, t, np.array([[1000]], np.int32))) for t in texts * 8]
    for text, s in streams:
        s.wait()
        assert s.error is None, s.error
        for o in s.outputs:
            o.decode("utf-8")
        assert b"".join(s.outputs) == text
    emoji = "😀🎉🍣🚀".encode()  # cut after a few tokens: inside an emoji for this tokenizer, or on a boundary
    for n in range(1, 9):
        s = send(llm_server.grpc_url, emoji, np.array([[n]], np.int32)).wait()
        assert s.error is None and all(_valid_utf8(o) for o in s.outputs)
        got = b"".join(s.outputs)
        assert emoji.startswith(got)
