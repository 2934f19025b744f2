"""Reading a corpus for fitting: texts in chunks through normalize + pre-tokenize, bad rows named in the whole corpus.

Shared by the in-memory fit (:mod:`triton_textops.ops.features`) and the Dask fit
(:mod:`triton_textops.ops.features_dask`), so both see exactly the same pre-tokens.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.wordpiece.pretokenize import Normalizer, PreTokens

FIT_CHUNK = 1024  # texts normalized at once while fitting


def shift_row_error(e: InputError, offset: int) -> InputError:
    """Re-number the rows of an InputError raised for a chunk of the corpus that starts at ``offset``."""
    rows = getattr(e, "rows", None)
    if rows is None:
        return InputError(f"{e} (in the chunk of texts starting at row {offset})")
    rows = np.asarray(rows, dtype=np.int64) + offset
    msg = str(e)
    prefix = f"row {int(rows[0]) - offset}"
    if msg.startswith(prefix):
        msg = f"row {int(rows[0])}" + msg[len(prefix):]
    return InputError(msg, rows=rows)


def pretokenized_chunks(texts: Sequence[Any], lowercase: bool, where: str = "") -> Iterator[PreTokens]:
    """Normalize + pre-tokenize ``texts`` on the CPU, ``FIT_CHUNK`` at a time; invalid UTF-8 raises
    :class:`InputError` naming the row in ``texts`` (prefixed with ``where``, e.g. a partition)."""
    norm = Normalizer.get(lowercase, "cpu")
    for lo in range(0, len(texts), FIT_CHUNK):
        try:
            pre = norm.pretokenize(TextBatch.from_texts(texts[lo : lo + FIT_CHUNK], np))
            pre.check()
        except InputError as e:
            shifted = shift_row_error(e, lo) if lo else e
            if not where:
                raise shifted from None
            raise InputError(f"{where}: {shifted}", rows=getattr(shifted, "rows", None)) from None
        yield pre
