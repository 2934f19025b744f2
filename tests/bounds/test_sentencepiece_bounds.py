"""The SentencePiece kernels with every array access bounds-checked: any bytes (valid UTF-8 or not), a .model
(sentencepiece's normalizer, a user symbol) and Llama-2 / Metaspace / Gemma / SpmConverter (Precompiled)
tokenizer.json files, ragged and fixed rows, decode of any ids; an index outside an array raises IndexError here,
a bad input must be an InputError."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import sp_oracles as O  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer  # noqa: E402

TOKS: list[SentencePieceTokenizer] = []
PIECES = st.sampled_from(["<s>", "</s>", "<ud>", " ", "  ", "\u3000", "\t\n", "\u2581", "e\u0301", "ﬁ", "😀", "中文",
                          "ab" * 40, "x", "<0x41>", "\ufb01\u0301", "\u1100\u1161", "\u00a9\u200d", "\u0600",
                          "\ufdfa"])


def tokenizers() -> list[SentencePieceTokenizer]:
    if not TOKS:
        d = Path(tempfile.mkdtemp())
        model = O.train(d / "sp.model", vocab_size=500, byte_fallback=True, user_defined_symbols=["<ud>"])
        TOKS.append(SentencePieceTokenizer.from_file(model))
        for style in ("llama", "llama-metaspace", "gemma", "spm"):  # spm: a Precompiled normalizer
            TOKS.append(SentencePieceTokenizer.from_file(O.convert(model, d / f"{style}.json", style)))
    return TOKS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=30) | st.lists(PIECES, max_size=8).map(lambda p: "".join(p).encode()),
                min_size=1, max_size=5), st.integers(1, 12), st.booleans())
def test_fuzz_never_indexes_out_of_bounds(texts: list[bytes], width: int, left: bool) -> None:
    for tok in tokenizers():
        try:
            r = tok.encode(texts)
        except InputError:
            continue
        rows = tok.encode_rows(texts, max_length=width, padding_side="left" if left else "right")
        assert rows.input_ids.shape == (len(texts), width)
        assert len(tok.decode(r.ids, r.offsets, errors=None)) == len(texts)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 700), max_size=40), st.booleans())
def test_decode_any_ids(ids: list[int], skip: bool) -> None:
    for tok in tokenizers():
        off = np.array([0, len(ids) // 2, len(ids)], dtype=np.int64)
        try:
            tok.decode(np.array(ids, dtype=np.int64), off, skip_special_tokens=skip, errors="replace")
        except InputError:
            pass
