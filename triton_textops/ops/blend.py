"""Score blending for the postprocess model: ``w * bert + (1 - w) * tree`` in float32.

``w`` is the request's ``BERT_WEIGHT`` (one value for the request, or one per row). When the BERT
rows are overflow windows of long texts, a text's BERT score is the mean of its windows' scores,
grouped by ``overflow_to_sample_mapping``. Every problem with what a caller sent (weight outside
[0, 1] or not finite, a non-finite score, mismatched sizes, a bad mapping) is an
:class:`~triton_textops.errors.InputError`, so the Triton glue can fail that one request
(INVALID_ARG) and still answer the rest of the batch: see :func:`blend_requests`.

Works on NumPy or CuPy arrays (the module of ``tree_scores``); the window mean is summed in a fixed
order (window 0, 1, 2, ... of each text) in float64, so NumPy and CuPy give identical float32 values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core.xp import array_module, bincount

__all__ = ["BlendRequest", "blend_requests", "blend_scores", "validate_blend_request"]


@dataclass(frozen=True)
class BlendRequest:
    """One request's inputs, checked and flattened (all arrays of module ``xp``)."""

    bert: Any  # float32 (R,): one score per BERT row (window)
    tree: Any  # float32 (n,): one score per text
    weight: Any  # float32 (n,): the weight of every text
    mapping: Any | None  # int64 (R,) text index of every BERT row, or None when R == n (row i is text i)
    counts: Any | None  # int64 (n,) windows per text when mapping is given
    shape: tuple[int, ...]  # shape of the result (that of tree_scores)
    xp: ModuleType

    @property
    def n(self) -> int:
        return int(self.tree.shape[0])


def _column(xp: ModuleType, arr: Any, what: str, kinds: str = "fiu") -> Any:
    """Accept shape (k,) or (k, 1) of a numeric dtype kind in ``kinds``; return a 1-D array of ``xp``."""
    a = arr if hasattr(arr, "shape") and array_module(arr) is xp else np.asarray(arr)
    if a.dtype.kind not in kinds:
        want = "integers" if kinds == "iu" else "numeric"
        raise InputError(f"{what} must be {want}, got dtype {a.dtype}")
    if a.ndim == 2 and a.shape[1] == 1:
        a = a.reshape(a.shape[0])
    if a.ndim != 1:
        raise InputError(f"{what} must have shape (batch,) or (batch, 1), got {tuple(a.shape)}")
    return xp.asarray(a)


def _scores(xp: ModuleType, arr: Any, what: str) -> Any:
    a = _column(xp, arr, what)
    if a.dtype.kind == "f" and a.size and not bool(xp.isfinite(a).all()):
        bad = int(xp.argmin(xp.isfinite(a)))
        raise InputError(f"{what} must be finite: row {bad} is {float(a[bad])}")
    return a.astype(np.float32)


def validate_blend_request(
    bert_scores: Any,
    tree_scores: Any,
    weight: Any,
    *,
    overflow_to_sample_mapping: Any | None = None,
    names: Mapping[str, str] | None = None,
) -> BlendRequest:
    """Check one request's blend inputs; raise :class:`InputError` (a ValueError) naming what is wrong.

    ``names`` maps the argument names (``bert_scores``, ``tree_scores``, ``weight``,
    ``overflow_to_sample_mapping``) to what the messages call them: a model passes its config's tensors
    (``"input 'BERT_LARGE_SCORE'"``), so a client reads the names it sent."""
    label = {"bert_scores": "bert_scores", "tree_scores": "tree_scores", "weight": "BERT_WEIGHT",
             "overflow_to_sample_mapping": "overflow_to_sample_mapping", **(names or {})}
    xp = array_module(tree_scores)
    tree_shape = tuple(np.shape(tree_scores)) if not hasattr(tree_scores, "shape") else tuple(tree_scores.shape)
    tree = _scores(xp, tree_scores, label["tree_scores"])
    bert = _scores(xp, bert_scores, label["bert_scores"])
    n, r = int(tree.shape[0]), int(bert.shape[0])

    w = weight if hasattr(weight, "dtype") and array_module(weight) is xp else np.asarray(weight)
    if w.dtype.kind not in "fiu":
        raise InputError(f"{label['weight']} must be numeric, got dtype {w.dtype}")
    w = xp.asarray(w).astype(np.float64).reshape(-1)
    if w.size == 0 and n > 0:
        raise InputError(f"{label['weight']} is empty: give one value for the request or one per row")
    if w.size not in (1, n):
        raise InputError(f"{label['weight']} has {w.size} values: expected 1 (whole request) or {n} (one per row)")
    ok = xp.isfinite(w) & (w >= 0) & (w <= 1)
    if not bool(ok.all()):
        bad = int(xp.argmin(ok))
        raise InputError(f"{label['weight']} must be finite and within [0, 1]: row {bad} is {float(w[bad])}")
    w32 = xp.repeat(w.astype(np.float32), n) if w.size == 1 else w.astype(np.float32)

    mapping = counts = None
    if overflow_to_sample_mapping is None:
        if r != n:
            raise InputError(
                f"mismatched batch sizes: {r} rows in {label['bert_scores']} but {n} in {label['tree_scores']} "
                f"(pass {label['overflow_to_sample_mapping']} when BERT rows are overflow windows)"
            )
    else:
        mname = label["overflow_to_sample_mapping"]
        m = _column(xp, overflow_to_sample_mapping, mname, "iu")
        if int(m.shape[0]) != r:
            raise InputError(f"{mname} has {m.shape[0]} rows but {label['bert_scores']} has {r}")
        m = m.astype(np.int64)
        if r and (int(m.min()) < 0 or int(m.max()) >= n):
            raise InputError(
                f"{mname} values must be text indices in [0, {n}): "
                f"got {int(m.min())}..{int(m.max())}"
            )
        counts = bincount(xp, m, n)
        if n and not bool((counts > 0).all()):
            raise InputError(f"text {int(xp.argmin(counts > 0))} has no BERT row in {mname}")
        mapping = m
    return BlendRequest(bert, tree, w32, mapping, counts, tree_shape, xp)


def _window_mean(req: BlendRequest) -> Any:
    """Mean BERT score per text over its windows, summed window by window in a fixed order."""
    xp, m, counts = req.xp, req.mapping, req.counts
    if m is None:
        return req.bert
    r, n = int(m.shape[0]), req.n
    if r == n and bool((counts == 1).all()):
        out = xp.empty(n, dtype=np.float32)
        out[m] = req.bert
        return out
    order = xp.argsort(m * r + xp.arange(r, dtype=np.int64))  # by text, then row (unique keys)
    ms = m[order]
    bs = req.bert[order].astype(np.float64)
    starts = xp.cumsum(counts) - counts
    rank = xp.arange(r, dtype=np.int64) - starts[ms]
    acc = xp.zeros(n, dtype=np.float64)
    for k in range(int(counts.max())):
        sel = rank == k  # at most one row per text: a plain fancy-index add is exact
        acc[ms[sel]] += bs[sel]
    return (acc / counts).astype(np.float32)


def _one_minus(xp: ModuleType, w: Any) -> Any:
    """``1 - w`` in float32 on ``w``'s array module."""
    return xp.subtract(xp.ones(w.shape, dtype=np.float32), w)


def _blend(req: BlendRequest) -> Any:
    b = _window_mean(req)
    w = req.weight
    return (w * b + _one_minus(req.xp, w) * req.tree).astype(np.float32, copy=False)


def blend_scores(
    bert_scores: Any,
    tree_scores: Any,
    weight: Any,
    *,
    overflow_to_sample_mapping: Any | None = None,
) -> Any:
    """``w * bert + (1 - w) * tree`` in float32, shaped like ``tree_scores``.

    ``weight``: one value (scalar or shape (1,)) for the whole request, or one per text. With
    ``overflow_to_sample_mapping`` (one text index per BERT row), a text's BERT score is the mean
    of its windows. Raises :class:`InputError` for any invalid input.
    """
    req = validate_blend_request(
        bert_scores, tree_scores, weight, overflow_to_sample_mapping=overflow_to_sample_mapping
    )
    return _blend(req).reshape(req.shape)


def blend_requests(requests: Sequence[dict[str, Any] | BlendRequest]) -> list[Any]:
    """Blend several requests at once; each result is an array or the request's :class:`InputError`.

    Every request (a dict with ``bert_scores``, ``tree_scores``, ``weight`` and optionally
    ``overflow_to_sample_mapping``; or a :class:`BlendRequest` already checked by
    :func:`validate_blend_request`) is validated on its own, so one bad request is answered with its
    error while the valid ones are blended together in one vectorized pass (same values as
    :func:`blend_scores` on each request).
    """
    results: list[Any] = [None] * len(requests)
    valid: list[tuple[int, BlendRequest]] = []
    for i, kw in enumerate(requests):
        if isinstance(kw, BlendRequest):
            valid.append((i, kw))
            continue
        try:
            valid.append((i, validate_blend_request(
                kw["bert_scores"], kw["tree_scores"], kw["weight"],
                overflow_to_sample_mapping=kw.get("overflow_to_sample_mapping"),
            )))
        except InputError as e:
            results[i] = e
    groups: dict[int, list[tuple[int, BlendRequest]]] = {}
    for i, req in valid:  # NumPy and CuPy requests are blended separately
        groups.setdefault(id(req.xp), []).append((i, req))
    for members in groups.values():
        xp = members[0][1].xp
        bert, tree, weight, maps = [], [], [], []
        offset = 0
        for _, req in members:
            bert.append(req.bert)
            tree.append(req.tree)
            weight.append(req.weight)
            m = req.mapping if req.mapping is not None else xp.arange(req.n, dtype=np.int64)
            maps.append(m + offset)
            offset += req.n
        counts = bincount(xp, xp.concatenate(maps), offset)
        big = BlendRequest(
            xp.concatenate(bert), xp.concatenate(tree), xp.concatenate(weight),
            xp.concatenate(maps), counts, (offset,), xp,
        )
        out = _blend(big)
        offset = 0
        for i, req in members:
            results[i] = out[offset : offset + req.n].reshape(req.shape)
            offset += req.n
    return results
