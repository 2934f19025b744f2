"""The Unigram kernels with every array access bounds-checked: any bytes (valid UTF-8 or not), caller-made buffers
with bad offsets, both references' rules, byte fallback with and without every byte piece, a model without unk_id,
and the per-pre-token stage called with too little room; an index outside an array raises IndexError here, a bad
input must be an InputError."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import unigram_cases as U  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.core.status import BAD_SPAN, SIZE_BOUND  # noqa: E402
from triton_textops.ops.sentencepiece.unigram import BYTE, ENCODE, NORMAL, UNKNOWN, Unigram  # noqa: E402

BYTE_PIECES = [f"<0x{b:02X}>" for b in range(256)]
MODELS: list[Unigram] = []


def models() -> list[Unigram]:
    if not MODELS:
        pieces, scores, _ = U.TIES[3]
        MODELS.extend([
            Unigram.from_pieces(pieces, scores, unk_id=0),
            Unigram.from_pieces(pieces + BYTE_PIECES, scores + [0.0] * 256, unk_id=0, byte_fallback=True,
                                types=[UNKNOWN] + [NORMAL] * (len(pieces) - 1) + [BYTE] * 256),
            Unigram.from_pieces(["<unk>", "xy", "a"] + BYTE_PIECES[:200], [30.0, 25.0, 30.0] + [30.0] * 200, unk_id=0,
                                byte_fallback=True),
            Unigram.from_pieces(["a", "ab", "中"], [-1.0, -1.5, -2.0], unk_id=None),
        ])
    return MODELS


PIECES = st.sampled_from(["a", "ab", "xy", "中", "文字", "<0x41>", "<unk>", "\u2603", "\U0001d11e", "\xff"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=30) | st.lists(PIECES, max_size=10).map(lambda p: "".join(p).encode()),
                min_size=1, max_size=6))
def test_fuzz_never_indexes_out_of_bounds(texts: list[bytes]) -> None:
    for m in models():
        try:
            r = m.encode(texts)
        except InputError:
            assert m.unk_id is None
            continue
        assert len(r) == len(texts) and all(len(ids) <= len(t) for ids, t in zip(r.tolist(), texts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=24), st.lists(st.integers(-3, 30), min_size=1, max_size=6))
def test_any_offsets(data: bytes, offsets: list[int]) -> None:
    for m in models():
        try:
            m.encode((np.frombuffer(data, dtype=np.uint8), np.array(offsets, dtype=np.int64)))
        except InputError as e:
            assert "row" in str(e)


@pytest.mark.parametrize("slots", [0, 1, 2])
@pytest.mark.parametrize("room", [(0, 0, 0), (3, 3, 2), (9, 9, 7), (9, 8, 8), (8, 9, 8), (9, 9, 8), (18, 18, 8)])
def test_too_little_room_is_a_status(slots: int, room: tuple[int, int, int]) -> None:
    """The encode kernel's CPU entry called with work rows or an ids scratch shorter than a text needs, with the CPU's
    work shares (``slots`` > 0) and the GPU's regions (``slots`` 0): SIZE_BOUND, never an access outside."""
    nbest, nback, nids = room
    data = np.frombuffer("中文".encode() + b"ab", dtype=np.uint8)  # 8 bytes: 9 work entries, 8 ids
    offsets = np.array([0, 8, 8, 6, 8][: 2 + (slots == 1) * 3], dtype=np.int64)  # (one: empty, backwards, short)
    for m in models():
        best, back = np.zeros(nbest), np.zeros(nback, dtype=np.int64)
        ids, cnt = np.zeros(nids, dtype=np.int64), np.zeros(offsets.shape[0] - 1, dtype=np.int64)
        for slot in range(max(slots, 1)):
            ENCODE[0](slot, slots, 0, 1, cnt.shape[0], data, offsets, m.on("cpu", np), (best, back), ids, cnt)
            for t in range(cnt.shape[0]):
                lo, hi = offsets[t], offsets[t + 1]
                if hi < lo:  # (a backwards span among them)
                    assert cnt[t] == -1 - BAD_SPAN
                    continue
                wb = lo + t if slots == 0 else slot * (nbest // slots)
                share = slots == 0 or hi - lo + 1 <= nbest // slots
                fits = share and wb + hi - lo + 1 <= min(nbest, nback) and hi <= nids
                assert (cnt[t] != -1 - SIZE_BOUND) == fits, (t, slot, cnt[t])
