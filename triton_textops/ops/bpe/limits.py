"""A tokenizer.json's ``truncation`` and ``padding``, planned on the host from each text's id count as HF's
``Tokenizer.encode_batch`` applies them (``tokenizers``' ``post_process`` and ``pad_encodings``); the ids are then
cut and padded on the device by the compaction kernel (:data:`~triton_textops.ops.bpe.encode.COMPACT`), which
copies each text's ids out of the scratch anyway. The counts are on the host already (encode copies them to size
its output), so a file's limits cost no device-to-host copy and no launch more.

Truncation cuts each text's ids (the model's, before the template's special tokens) to ``max_length``, less the
template's tokens when they are added; from the right or the left. HF subtracts without a check: a ``max_length``
under the template's count leaves every text whole when the template is added. Padding fills each text up to a fixed
length or the batch's longest, rounded up to ``pad_to_multiple_of``, on the right or the left, with ``pad_id``.
A text that HF fails on (truncated under ``OnlySecond``, which truncates only a second sequence; or with a
``stride`` not under the length it truncates to, where HF panics) is an :class:`~triton_textops.errors.InputError`
naming the rows.
"""

from __future__ import annotations

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core.hf_json import Padding, Truncation

# the compaction kernel's limits array (int64): truncate on the left, pad on the left, the pad id
L_LEFT_TRUNC, L_LEFT_PAD, L_PAD_ID = range(3)


def limits_array(trunc: Truncation | None, pad: Padding | None) -> np.ndarray:
    """The compaction kernel's limits array of a file's truncation and padding (zeros without them)."""
    return np.array([int(trunc is not None and trunc.left), int(pad is not None and pad.left),
                     pad.pad_id if pad is not None else 0], dtype=np.int64)


def plan_limits(counts: np.ndarray, npre: int, nsuf: int, trunc: Truncation | None, pad: Padding | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(each text's id count after ``trunc`` and ``pad``, the ids truncation drops from each) of the texts' id
    ``counts`` (host int64, the template's ids included); ``npre`` / ``nsuf``: the template's special ids at each
    text's start / end (0 when they were not added). The drops are empty when nothing is cut."""
    cnt = counts
    drop = np.zeros(0, dtype=np.int64)
    if trunc is not None and cnt.shape[0]:
        added = npre + nsuf
        limit = trunc.max_length - added
        if limit >= 0:  # (else HF's unsigned subtraction wraps: nothing is cut)
            over = np.maximum(cnt - added - limit, 0)
            cut = np.flatnonzero(over)
            if cut.size and (trunc.only_second or 0 < limit <= trunc.stride):
                why = "truncation strategy OnlySecond truncates only a second sequence (HF: 'Second sequence not " \
                      "provided')" if trunc.only_second else f"truncation stride {trunc.stride} is not under the " \
                      f"length {limit} it truncates to (HF panics)"
                raise InputError(f"row {int(cut[0])}: its ids are over max_length {trunc.max_length}, and {why}",
                                 rows=cut.astype(np.int64))
            if cut.size:
                drop = over
                cnt = cnt - over
    if pad is not None and cnt.shape[0]:
        length = pad.length if pad.length is not None else int(cnt.max())
        if pad.multiple and length % pad.multiple:
            length += pad.multiple - length % pad.multiple
        cnt = np.maximum(cnt, length)
    return cnt, drop
