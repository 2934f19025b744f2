"""A tokenizer.json's ``truncation`` and ``padding``, applied to encode's ragged ids as HF's ``Tokenizer.encode_batch``
applies them (``tokenizers``' ``post_process`` and ``pad_encodings``): array glue on the tokenizer's device, run
only for a file that sets them.

Truncation cuts each text's ids (the model's, before the template's special tokens) to ``max_length``, less the
template's tokens when they are added; from the right or the left. HF subtracts without a check: a ``max_length``
under the template's count leaves every text whole when the template is added. Padding fills each text up to a fixed
length or the batch's longest, rounded up to ``pad_to_multiple_of``, on the right or the left, with ``pad_id``.
A text that HF fails on (truncated under ``OnlySecond``, which truncates only a second sequence; or with a
``stride`` not under the length it truncates to, where HF panics) is an :class:`~triton_textops.errors.InputError`
naming the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops import kernels as K
from triton_textops.ops.bpe.formats import Padding, Truncation


def apply_limits(ids: Any, offsets: Any, target: str, xp: Any, npre: int, nsuf: int, trunc: Truncation | None,
                 pad: Padding | None) -> tuple[Any, Any]:
    """(ids, offsets) of a ragged encode result after ``trunc`` and ``pad``; ``npre`` / ``nsuf``: the template's
    special ids at each text's start / end (0 when they were not added)."""
    n = offsets.shape[0] - 1
    if n == 0:
        return ids, offsets
    cnt = offsets[1:] - offsets[:-1]
    if trunc is not None:
        added = npre + nsuf
        limit = trunc.max_length - added
        if limit >= 0:  # (else HF's unsigned subtraction wraps: nothing is cut)
            drop = xp.maximum(cnt - added - limit, 0)
            cut = np.flatnonzero(K.to_host(drop, target) > 0)
            if cut.size and (trunc.only_second or 0 < limit <= trunc.stride):
                why = "truncation strategy OnlySecond truncates only a second sequence (HF: 'Second sequence not " \
                      "provided')" if trunc.only_second else f"truncation stride {trunc.stride} is not under the " \
                      f"length {limit} it truncates to (HF panics)"
                raise InputError(f"row {int(cut[0])}: its ids are over max_length {trunc.max_length}, and {why}",
                                 rows=cut.astype(np.int64))
            if cut.size:
                row, pos = _rows_of(offsets, ids.shape[0], xp)
                c, d = cnt[row], drop[row]
                gone = (pos >= npre) & (pos < npre + d) if trunc.left else (pos >= c - nsuf - d) & (pos < c - nsuf)
                ids = ids[~gone]
                cnt = cnt - drop
                offsets = _offsets(cnt, xp)
    if pad is not None:
        length = pad.length if pad.length is not None else int(K.to_host(cnt.max(keepdims=True), target)[0])
        if pad.multiple and length % pad.multiple:
            length += pad.multiple - length % pad.multiple
        new = xp.maximum(cnt, length)
        new_off = _offsets(new, xp)
        out = xp.full(int(K.to_host(new_off[-1:], target)[0]), pad.pad_id, dtype=np.int64)
        row, pos = _rows_of(offsets, ids.shape[0], xp)
        out[new_off[:-1][row] + pos + ((new - cnt)[row] if pad.left else 0)] = ids
        ids, offsets = out, new_off
    return ids, offsets


def _rows_of(offsets: Any, total: int, xp: Any) -> tuple[Any, Any]:
    """Each id's row and its position in that row."""
    at = xp.arange(total, dtype=np.int64)
    row = xp.searchsorted(offsets[1:], at, side="right")
    return row, at - offsets[:-1][row]


def _offsets(counts: Any, xp: Any) -> Any:
    off = xp.zeros(counts.shape[0] + 1, dtype=np.int64)
    xp.cumsum(counts, out=off[1:])
    return off
