"""Optional cuDF (>= 25.10) word-piece stage: ``CharacterNormalizer`` + ``WordPieceVocabulary``.

cuDF's old ``SubwordTokenizer`` was removed in 25.10; the new primitives give a list of ids per row and
nothing else, so BERT packing (specials, truncation, windows, padding, masks) stays ours (the post-processing stage of
:mod:`triton_textops.ops.wordpiece.tokenizer`). Known differences from the HuggingFace reference, from cuDF's
sources (``cpp/src/text/wordpiece_tokenize.cu``, ``normalize.hpp``): words of >= 200 *bytes* become
``[UNK]`` (HF: > 100 characters); the normalized text is split on ASCII space only; accents are stripped
only when lower-casing. Our own CuPy path has none of these and is the default.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.xp import to_numpy


def _texts_on_host(batch: TextBatch) -> list[str]:
    """The batch's texts as str on the host (cuDF takes a Series of them); a bad span or invalid UTF-8 is an
    InputError naming the row, as our kernels' checks give."""
    data, offs = to_numpy(batch.data), to_numpy(batch.offsets)
    raw = data.tobytes()
    out = []
    for i in range(len(offs) - 1):
        lo, hi = int(offs[i]), int(offs[i + 1])
        if not 0 <= lo <= hi <= len(raw):
            raise InputError(f"row {i}: its offsets are not a non-decreasing span inside the byte buffer",
                             rows=np.array([i]))
        try:
            out.append(raw[lo:hi].decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"row {i}: text is not valid UTF-8", rows=np.array([i])) from None
    return out


class CudfWordPiece:
    """Stages (a)+(b) through cuDF; returns pieces and per-text offsets as CuPy int64 arrays."""

    def __init__(self, vocab: list[str], specials: list[str], lowercase: bool) -> None:
        try:
            import cudf
            from cudf.core.character_normalizer import CharacterNormalizer
            from cudf.core.wordpiece_tokenize import WordPieceVocabulary
        except ImportError as e:  # pragma: no cover - needs cuDF and a GPU
            raise RuntimeError(
                "backend='cudf' needs cuDF >= 25.10 (pip install 'triton-textops[cudf]') and a GPU"
            ) from e
        self._cudf = cudf
        self.normalizer = CharacterNormalizer(do_lower=lowercase, special_tokens=cudf.Series(specials))
        self.vocab = WordPieceVocabulary(cudf.Series(vocab))

    def __call__(self, batch: TextBatch) -> tuple[Any, Any]:
        import cupy

        series = self._cudf.Series(_texts_on_host(batch))
        ids = self.vocab.tokenize(self.normalizer.normalize(series))
        pieces = ids.list.leaves.values.astype(cupy.int64)
        lens = ids.list.len().fillna(0).values.astype(cupy.int64)
        offsets = cupy.zeros(lens.shape[0] + 1, dtype=cupy.int64)
        offsets[1:] = cupy.cumsum(lens)
        return pieces, offsets
