"""The LLM models' ops on a GPU tokenizer (CUDA simulator): the same outputs as on the CPU, every text of every
request in one encode (two launches: counts, ids) and every sequence in one decode (two launches)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops.core import kernels as K  # noqa: E402
from triton_textops.ops.core.batch import pack_host  # noqa: E402
from triton_textops.ops.llm import LLMTokenizer, PreRequest, Words, check_sequences  # noqa: E402


@pytest.fixture(scope="module")
def pair() -> tuple[LLMTokenizer, LLMTokenizer]:
    path = O.DATA / "cl100k_base.tiktoken"
    return (LLMTokenizer(path, encoding="cl100k_base", device="cpu"),
            LLMTokenizer(path, encoding="cl100k_base", device="cuda", gpu_min_batch=0))


def _requests() -> list[PreRequest]:
    words = Words(pack_host([b"hello", b" world", b"", "中文".encode()]), 2, 2)
    return [PreRequest(pack_host(["Hello there 😀", "x"]), np.array([[3], [4]], np.int32), bad=words,
                       bias_words=words, bias_weights=np.array([[0.5, 1], [2, 3]], np.float32)),
            PreRequest(pack_host(["ÉCOLE naïve <|endoftext|>"]), np.array([[1]], np.int32))]


def test_gpu_equals_cpu_one_encode_one_decode(pair: tuple[LLMTokenizer, LLMTokenizer]) -> None:
    cpu, gpu = pair
    K.COUNTS.clear()
    got = gpu.preprocess(_requests(), add_special_tokens=True)
    assert K.COUNTS["launch"] == 2  # every query and word of both requests: one count pass, one write pass
    want = cpu.preprocess(_requests(), add_special_tokens=True)
    for g, w in zip(got, want):
        assert set(g) == set(w) and all(np.array_equal(g[k], w[k]) for k in w)
    seqs = [check_sequences(np.array([[g["input_id"][0]]], np.int32), g["request_input_len"][:1].reshape(1, 1),
                            cpu.bpe.n_ids, {"tokens": "T", "sequence_length": "S"}) for g in got]
    K.COUNTS.clear()
    texts = gpu.postprocess(seqs, skip_special_tokens=False)
    assert K.COUNTS["launch"] == 2
    assert [t.tolist() for t in texts] == [t.tolist() for t in cpu.postprocess(seqs, skip_special_tokens=False)]
    assert texts[1].tolist() == ["ÉCOLE naïve <|endoftext|>".encode()]
