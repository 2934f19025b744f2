"""The SentencePiece GPU kernels in the CUDA simulator: the same ids, rows and bytes as the CPU kernels, bit for
bit (BPE and Unigram .model files with a user symbol, Llama-2-, Gemma- and SpmConverter-style tokenizer.json), and
the launch discipline (fixed rows: one launch, one device-to-host copy)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import sp_oracles as O  # noqa: E402

from triton_textops.ops.core import kernels as K  # noqa: E402
from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer  # noqa: E402

pytest.importorskip("sentencepiece")
TEXTS = O.MULTILINGUAL[:6] + ["Hello  world<s> x</s>", " \u3000\t\n  lead", "<ud>y<ud>", "",
                              "a" * 130 + "é" * 30,  # one pre-token of over SHORT symbols: the heap path
                              "ＦＵＬＬ ﬁ ½ e\u0301 😀\u200d", "\u1100\u1161\u11a8 \u00a9\u200d\u00a9 \u0600a Ａ\u0300 \ufdfa"]


# unigram-precompiled: nmt_nfkc converted by SpmConverter, HF's Precompiled normalizer (grapheme clusters)
@pytest.fixture(scope="module", params=["model", "llama", "gemma", "unigram", "unigram-spm", "unigram-precompiled"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    root = tmp_path_factory.mktemp("sp")
    kind = "unigram" if request.param.startswith("unigram") else "bpe"
    model = O.train(root / "sp.model", vocab_size=600, byte_fallback=True, user_defined_symbols=["<ud>"],
                    model_type=kind, **({"normalization_rule_name": "identity"} if request.param == "unigram-spm" else {}))
    path = model if request.param in ("model", "unigram") else \
        O.convert(model, root / "tokenizer.json", "spm" if kind == "unigram" else request.param)
    return SentencePieceTokenizer.from_file(path, device="cpu"), SentencePieceTokenizer.from_file(path, device="cuda")


def test_encode_gpu_equals_cpu(pair: tuple) -> None:
    cpu, gpu = pair
    a, b = cpu.encode(TEXTS), gpu.encode(TEXTS)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    assert gpu.decode(b.ids, b.offsets, errors=None) == cpu.decode(a.ids, a.offsets, errors=None)


def test_rows_one_launch_one_copy(pair: tuple) -> None:
    cpu, gpu = pair
    K.COUNTS.clear()
    rows = gpu.encode_rows(TEXTS, max_length=20, padding_side="left", truncation_side="left")
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (1, 1)
    ref = cpu.encode_rows(TEXTS, max_length=20, padding_side="left", truncation_side="left")
    assert np.array_equal(rows.input_ids, ref.input_ids) and np.array_equal(rows.attention_mask, ref.attention_mask)
    K.COUNTS.clear()
    gpu.encode(TEXTS)
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (2, 1)
