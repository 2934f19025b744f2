"""Fit :class:`~triton_textops.ops.features.ReadabilityFeatures` on a Dask collection of texts.

Corpus-scale fitting as two map-reduce passes over the partitions (each pass re-reads and re-tokenizes
a partition; nothing is kept between them, so the corpus never has to fit in one machine's memory):

1. **words**: every partition counts its words (the same pre-tokens and byte strings as the in-memory
   fit) into a ``Counter``; counters merge in a tree; one final task picks the common/rare words with the
   in-memory fit's ordering (count, then UTF-8 bytes) and returns only those and the totals.
2. **moments**: every partition computes its raw features (the serving code path, float32) and returns,
   per feature column, a histogram ``value -> number of texts``; histograms merge in a tree.

The driver turns the merged histograms into mean and std *exactly* as the in-memory fit does: that fit
takes ``math.fsum`` (the correctly rounded exact sum) of the float64 column, divides by the number of
texts, and does the same for ``(x - mean) ** 2`` in float64. Here each sum is accumulated exactly as a
rational (integer mantissas scaled to a common power of two, times the counts) and rounded once, which is
the same correctly rounded value; each squared deviation is computed with the same float64 NumPy
operation on the same value. The artifact is therefore bit-identical whatever the partitioning.

Accepted collections: ``dask.bag.Bag`` of ``str``/``bytes``, a ``dask.dataframe.Series`` (or a one-column
``DataFrame``) of texts, and dask-cudf series (partitions are brought to the host: word counting is host
Python, as in the in-memory fit). Work runs on the current Dask scheduler (a ``distributed.Client`` if
one is active).
"""

from __future__ import annotations

import math
import operator
import sys
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np

from triton_textops.ops.corpus import pretokenized_chunks

__all__ = ["exact_sum", "fit_dask", "is_dask_collection"]

_SPLIT_EVERY = 8  # partitions (or partial results) merged by one reduce task


def is_dask_collection(obj: Any) -> bool:
    """True for a Dask collection (never imports dask: a collection implies dask is loaded)."""
    if "dask" not in sys.modules:
        return False
    import dask  # noqa: PLC0415

    return bool(dask.is_dask_collection(obj))


# ------------------------------------------------------------------------------------ exact sums


def exact_sum(values: Any, counts: Any | None = None) -> Fraction:
    """Exact ``sum(counts[i] * values[i])`` of finite float64 values (counts: non-negative integers).

    Every double is ``mantissa * 2**exponent`` with an integer mantissa below ``2**53``; the products are
    summed as Python integers per exponent and shifted to the smallest exponent, so nothing is rounded.
    ``float(exact_sum(v))`` equals ``math.fsum(v)`` (both are the correctly rounded exact sum).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    c = np.ones(v.shape[0], dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64).reshape(-1)
    if v.shape != c.shape:
        raise ValueError("values and counts must have the same length")
    if not np.isfinite(v).all():
        raise ValueError("exact_sum needs finite values")
    m, e = np.frexp(v)  # v = m * 2**e, 0.5 <= |m| < 1 (m = 0 for 0)
    mant = np.ldexp(m, 53).astype(np.int64)  # exact integers, |mant| < 2**53
    exp = e.astype(np.int64) - 53
    keep = (mant != 0) & (c != 0)
    if not keep.any():
        return Fraction(0)
    mant, exp, c = mant[keep], exp[keep], c[keep]
    order = np.argsort(exp, kind="stable")
    mant, exp, c = mant[order], exp[order], c[order]
    starts = np.flatnonzero(np.r_[True, exp[1:] != exp[:-1]])
    ends = np.r_[starts[1:], exp.shape[0]]
    low = int(exp[0])
    total = 0
    for s, t in zip(starts.tolist(), ends.tolist()):
        part = sum(map(operator.mul, c[s:t].tolist(), mant[s:t].tolist()))
        total += part << (int(exp[s]) - low)
    return Fraction(total) * Fraction(2) ** low


# ------------------------------------------------------------------------------------ partitions


def _partitions(texts: Any) -> list[Any]:
    """The collection's partitions as a list of ``dask.delayed`` objects."""
    import dask.bag as db  # noqa: PLC0415

    if isinstance(texts, db.Bag):
        return list(texts.to_delayed())
    try:
        import dask.dataframe as dd  # noqa: PLC0415
    except ImportError:  # dask installed without its dataframe extra
        dd = None
    if dd is not None:
        if isinstance(texts, dd.DataFrame):
            if len(texts.columns) != 1:
                raise TypeError(
                    f"fit on a Dask DataFrame needs one column of texts, got {len(texts.columns)} columns: "
                    "pass the column, e.g. df['text']"
                )
            texts = texts[texts.columns[0]]
        if isinstance(texts, dd.Series):
            return list(texts.to_delayed())
    raise TypeError(
        f"cannot fit on a {type(texts).__module__}.{type(texts).__name__}: pass a dask.bag.Bag of texts, "
        "a dask dataframe column (Series) or a dask-cudf Series"
    )


def _as_list(part: Any) -> list[Any]:
    """One partition's texts as a host list (pandas/cuDF series, lists, any iterable)."""
    if type(part).__module__.split(".")[0] == "cudf":
        return part.to_arrow().to_pylist()
    if hasattr(part, "tolist"):
        return part.tolist()
    return list(part)


def _batches(part: Any, index: int, lowercase: bool) -> Any:
    """Pre-tokens of a partition, ``FIT_CHUNK`` texts at a time (invalid UTF-8 names partition and row)."""
    return pretokenized_chunks(_as_list(part), lowercase, where=f"partition {index}")


# ------------------------------------------------------------------------------------ pass 1: words


def _count_words(part: Any, index: int, lowercase: bool) -> tuple[int, Counter[bytes]]:
    n = 0
    counts: Counter[bytes] = Counter()
    for pre in _batches(part, index, lowercase):
        counts.update(pre.word_bytes())
        n += pre.n
    return n, counts


def _merge_counts(parts: list[tuple[int, Counter[bytes]]]) -> tuple[int, Counter[bytes]]:
    out: Counter[bytes] = Counter()
    n = 0
    for k, c in parts:
        n += k
        out.update(c)
    return n, out


def _select_words(merged: tuple[int, Counter[bytes]], n_common: int, n_rare: int) -> dict[str, Any]:
    """The in-memory fit's word choice (count, then UTF-8 bytes), run next to the merged counts."""
    total, counts = merged
    out: dict[str, Any] = {"texts": total, "words": int(sum(counts.values())), "distinct_words": len(counts)}
    if len(counts) < n_common + n_rare:
        return out
    by_bytes = sorted(counts)  # ascending UTF-8 bytes; the stable sorts below keep it as tie-break
    out["common"] = [w.decode("utf-8") for w in sorted(by_bytes, key=lambda w: -counts[w])[:n_common]]
    out["rare"] = [w.decode("utf-8") for w in sorted(by_bytes, key=lambda w: counts[w])[:n_rare]]
    return out


# ------------------------------------------------------------------------------------ pass 2: moments


def _merge_hist(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Merge ``(sorted unique keys, counts)`` histograms into one."""
    parts = [p for p in parts if p[0].shape[0]]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    if len(parts) == 1:
        return parts[0]
    keys = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(counts, starts)


def _feature_histogram(part: Any, index: int, cls: Any, spec: dict[str, Any]) -> tuple[Any, Any]:
    """Per partition: histogram of ``(feature column, float32 bits)`` over its texts' raw features."""
    feats = cls.from_dict(spec, source="the fit's word lists")
    col = np.arange(feats.n_features, dtype=np.uint64) << np.uint64(32)
    hists = []
    for pre in _batches(part, index, feats.lowercase):
        x = np.ascontiguousarray(feats.transform_pretokens(pre, normalize=False), dtype=np.float32)
        keys = x.view(np.uint32).astype(np.uint64) | col[None, :]
        u, c = np.unique(keys.reshape(-1), return_counts=True)
        hists.append((u, c.astype(np.int64)))
    return _merge_hist(hists)


def _moments(keys: Any, counts: Any, k: int, total: int) -> tuple[Any, Any]:
    """float64 mean/std per column from the merged histogram, as the in-memory fit computes them."""
    cols = (keys >> np.uint64(32)).astype(np.int64)
    vals = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32).astype(np.float64)
    bounds = np.searchsorted(cols, np.arange(k + 1))
    mean = np.empty(k, dtype=np.float64)
    std = np.empty(k, dtype=np.float64)
    for j in range(k):
        v, c = vals[bounds[j] : bounds[j + 1]], counts[bounds[j] : bounds[j + 1]]
        if int(c.sum()) != total:  # every text gives one value per column
            raise RuntimeError(f"feature {j}: histogram holds {int(c.sum())} values for {total} texts")
        mean[j] = float(exact_sum(v, c)) / total
        std[j] = math.sqrt(float(exact_sum((v - mean[j]) ** 2, c)) / total)
    return mean, std


# ------------------------------------------------------------------------------------ the fit


def _tree(items: list[Any], fn: Any) -> Any:
    """Reduce delayed ``items`` with ``fn(list)`` in a tree of fan-in ``_SPLIT_EVERY``."""
    from dask import delayed  # noqa: PLC0415

    if not items:
        return delayed(fn)([])
    while len(items) > 1:
        items = [delayed(fn)(items[i : i + _SPLIT_EVERY]) for i in range(0, len(items), _SPLIT_EVERY)]
    return items[0]


def fit_dask(
    cls: Any,
    texts: Any,
    *,
    n_common: int,
    n_rare: int,
    stopwords: tuple[str, list[str]],
    lowercase: bool,
    progress: Any = None,
) -> Any:
    """:meth:`ReadabilityFeatures.fit` over a Dask collection (see the module docstring).

    ``stopwords`` is the resolved ``(name, words)`` pair. ``progress`` is called once per pass, with the
    pass's phase name and ``(texts, texts)``.
    """
    import dask  # noqa: PLC0415
    from dask import delayed  # noqa: PLC0415

    sw_name, sw_words = stopwords
    parts = _partitions(texts)
    counted = [delayed(_count_words)(p, i, lowercase) for i, p in enumerate(parts)]
    chosen = delayed(_select_words)(_tree(counted, _merge_counts), n_common, n_rare)
    (info,) = dask.compute(chosen)
    total = info["texts"]
    if total == 0:
        raise ValueError("cannot fit readability features on an empty corpus")
    need = n_common + n_rare
    if "common" not in info:
        raise ValueError(
            f"the corpus has {info['distinct_words']} distinct words, fewer than n_common + n_rare = {need}: "
            "fit on a larger corpus or ask for fewer words"
        )
    if progress is not None:
        progress("tokenize", total, total)
    k = cls.N_BASE + need
    fitted_on = {"texts": total, "words": info["words"], "distinct_words": info["distinct_words"]}
    words_only = cls(
        lowercase=lowercase,
        stopwords_name=sw_name,
        stopwords=sw_words,
        common=info["common"],
        rare=info["rare"],
        mean=np.zeros(k, np.float32),
        std=np.ones(k, np.float32),
        fitted_on=fitted_on,
    )
    spec = delayed(words_only.to_dict(), traverse=False)
    hists = [delayed(_feature_histogram)(p, i, cls, spec) for i, p in enumerate(parts)]
    ((keys, counts),) = dask.compute(_tree(hists, _merge_hist))
    mean, std = _moments(keys, counts, k, total)
    if progress is not None:
        progress("features", total, total)
    std32 = std.astype(np.float32)
    return cls(
        lowercase=lowercase,
        stopwords_name=sw_name,
        stopwords=sw_words,
        common=info["common"],
        rare=info["rare"],
        mean=mean.astype(np.float32),
        std=np.where(std32 == 0, np.float32(1), std32).astype(np.float32),
        fitted_on=fitted_on,
    )
