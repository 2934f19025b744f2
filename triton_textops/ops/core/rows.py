"""Overflow windows as HF's ``Encoding.truncate(max_len, stride, direction)`` makes them, for every family: the
plan (how many windows each text gets) and, for families whose rows are framed on the host, the rows themselves."""

from __future__ import annotations

import numpy as np


def window_plan(counts: np.ndarray, content: int, step: int, overflow: bool) -> np.ndarray:
    """First row of each text's windows (n+1 entries, host int64): HF's overflow windows of ``content`` ids
    starting every ``step`` ids (``step = content - stride``), or one row per text."""
    lens = np.maximum(counts, 0)
    if overflow:
        wins = np.where(lens <= content, 1, 1 + (lens - content + step - 1) // step)
    else:
        wins = np.ones(lens.shape[0], dtype=np.int64)
    plan = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(wins, out=plan[1:])
    return plan


def window_rows(ids: np.ndarray, offsets: np.ndarray, *, width: int, stride: int, prefix: list[int],
                suffix: list[int], pad_id: int, left_pad: bool, left_trunc: bool,
                dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input_ids, attention_mask, overflow_to_sample_mapping) of every overflow window of every text (host
    arrays): each text's content ids (``ids[offsets[t]:offsets[t+1]]``, no template) cut into windows of
    ``width - len(prefix) - len(suffix)`` ids overlapping by ``stride``, in HF's order (right truncation: from the
    start; left: from the end), each framed by the template's ids and padded to ``width``."""
    npre, nsuf = len(prefix), len(suffix)
    content = width - npre - nsuf
    step = content - stride
    lens = np.diff(offsets).astype(np.int64)
    plan = window_plan(lens, content, step, True)
    n_rows = int(plan[-1])
    text = np.repeat(np.arange(lens.shape[0], dtype=np.int64), np.diff(plan))
    k = np.arange(n_rows, dtype=np.int64) - plan[:-1][text]  # the window's index within its text
    tl = lens[text]
    if left_trunc:
        stop = tl - k * step
        start = np.maximum(stop - content, 0)
    else:
        start = k * step
        stop = np.minimum(start + content, tl)
    start = np.minimum(start, tl)
    take = np.maximum(stop - start, 0)
    used = npre + take + nsuf
    at = width - used if left_pad else np.zeros(n_rows, dtype=np.int64)
    out = np.full((n_rows, width), pad_id, dtype=dtype)
    rows = np.arange(n_rows)
    for j, v in enumerate(prefix):
        out[rows, at + j] = v
    for j, v in enumerate(suffix):
        out[rows, at + npre + take + j] = v
    total = int(take.sum())
    if total:
        r = np.repeat(rows, take)
        j = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(take) - take, take)
        out[r, at[r] + npre + j] = ids[offsets[:-1][text][r] + start[r] + j]
    cols = np.arange(width)[None, :]
    mask = ((cols >= at[:, None]) & (cols < (at + used)[:, None])).astype(dtype)
    return out, mask, text.astype(dtype)
