"""The Unigram GPU kernels in the CUDA simulator: the same ids as the CPU kernels, bit for bit, under both references'
rules (trained models, crafted ties and float32 near-ties, unknowns fused and byte-encoded), the same row errors,
and the launch discipline (two launches, one device-to-host copy: the counts)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import unigram_cases as U  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402
from triton_textops.ops.sentencepiece.unigram import NORMAL, UNKNOWN, Unigram  # noqa: E402

pytest.importorskip("sentencepiece")

TEXTS = U.texts(seed=3, n=12)[:48] + ["<unk>\u2603", "a<s>b", "中" * 60, "a" * 70]


def same(model: Unigram, texts: list) -> list[list[int]]:
    """The CPU's ids, after checking that the GPU kernels give the same arrays."""
    a = model.encode(texts, device="cpu")
    b = model.encode(texts, device="cuda")
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    return a.tolist()


@pytest.mark.parametrize("name", ["identity_bytes", "small_bytes"])
def test_trained_models_gpu_equals_cpu(name: str) -> None:
    proto = U.trained(name)
    sp = U.sp_processor(proto)
    norm = [sp.normalize(t) for t in TEXTS]
    assert same(U.ours_sp(proto), norm) == [sp.encode(t) for t in TEXTS]
    same(U.ours_hf(*U.hf_vocab(proto)), norm)


def test_crafted_vocabularies_gpu_equals_cpu() -> None:
    for pieces, scores, _ in U.TIES:
        types = [UNKNOWN] + [NORMAL] * (len(pieces) - 1)
        for model in (Unigram.from_pieces(pieces, scores, unk_id=0),
                      Unigram.from_pieces(pieces, scores, unk_id=0, types=types)):
            same(model, U.TIE_TEXTS)
    pieces, scores = U.float32_split()
    sp = Unigram.from_pieces(pieces, scores, unk_id=0, types=[UNKNOWN] + [NORMAL] * 4)
    hf = Unigram.from_pieces(pieces, scores, unk_id=0)
    assert same(sp, ["abc"]) == [[1, 2, 3]] and same(hf, ["abc"]) == [[4]]
    pieces, scores, text = U.rescaled()
    sp = Unigram.from_pieces(pieces, scores, unk_id=0, types=[UNKNOWN] + [NORMAL] * 6)
    assert same(sp, [text, text * 3])[0][-2:] == [4, 1]
    byte_pieces = [(f"<0x{b:02X}>", 30.0) for b in range(200)]  # HF: a fused run that is a piece, bytes, unk
    vocab = [("<unk>", 30.0), ("xy", 25.0), ("a", 30.0)] + byte_pieces
    assert same(U.ours_hf(vocab, 0, True), ["xy", "axy", "\u2603", "a\u00ff", b"\xff\xfea"]) == [
        [1], [2, 1], [0], [2, 3 + 0xC3, 3 + 0xBF], [0]]  # (0xFF leads 4 bytes: all three)


def test_launches_and_copies() -> None:
    model = U.ours_hf(*U.hf_vocab(U.trained("identity_bytes")))
    K.COUNTS.clear()
    model.encode(TEXTS[:10], device="cuda")
    assert (K.COUNTS["launch_cuda"], K.COUNTS["launch_cpu"], K.COUNTS["d2h"]) == (2, 0, 1)


def test_row_errors_on_the_gpu() -> None:
    m = Unigram.from_pieces(["a", "b"], [-1.0, -2.0], unk_id=None)
    with pytest.raises(InputError, match="row 1: .*no unk_id") as e:
        m.encode(["ab", "ac", "b", "c"], device="cuda")
    assert e.value.rows.tolist() == [1, 3]
    data = np.frombuffer(b"abab", dtype=np.uint8)
    with pytest.raises(InputError, match="row 1: its offsets"):
        m.encode((data, np.array([0, 2, 1, 4])), device="cuda")
