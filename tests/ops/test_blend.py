"""Score blending: values against a plain-Python reading of the spec, errors, per-request isolation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_textops import InputError, blend_scores
from triton_textops.ops.blend import blend_requests, validate_blend_request


def _ref(bert, tree, weight, mapping=None):
    """Straight from the spec: mean of windows per text, then w*b + (1-w)*t in float32."""
    n = len(tree)
    if mapping is None:
        b = [float(np.float32(x)) for x in bert]
    else:
        sums = [0.0] * n
        cnt = [0] * n
        for x, m in zip(bert, mapping):
            sums[m] += float(np.float32(x))
            cnt[m] += 1
        b = [float(np.float32(s / c)) for s, c in zip(sums, cnt)]
    ws = [float(x) for x in np.ravel(weight)]
    ws = ws * n if len(ws) == 1 else ws
    out = []
    for wi, bi, ti in zip(ws, b, tree):
        w = np.float32(wi)
        out.append(w * np.float32(bi) + (np.float32(1) - w) * np.float32(ti))
    return np.array(out, dtype=np.float32)


def test_scalar_weight_and_shape():
    bert = np.array([[0.5], [1.0], [-2.0]], np.float32)
    tree = np.array([[1.5], [0.0], [2.0]], np.float32)
    out = blend_scores(bert, tree, 0.25)
    assert out.dtype == np.float32 and out.shape == (3, 1)
    np.testing.assert_array_equal(out[:, 0], _ref(bert[:, 0], tree[:, 0], 0.25))
    np.testing.assert_allclose(out[:, 0], [1.25, 0.25, 1.0])


def test_per_row_weights_and_extremes():
    bert = np.array([1.0, 2.0, 3.0], np.float32)
    tree = np.array([10.0, 20.0, 30.0], np.float32)
    out = blend_scores(bert, tree, np.array([0.0, 1.0, 0.5], np.float32))
    np.testing.assert_array_equal(out, np.array([10.0, 2.0, 16.5], np.float32))
    assert blend_scores(bert, tree, np.array([[1.0]])).tolist() == [1.0, 2.0, 3.0]


def test_overflow_windows_are_averaged():
    bert = np.array([1.0, 3.0, 5.0, 7.0, 2.0, 4.0], np.float32)
    mapping = np.array([0, 0, 1, 2, 2, 2], np.int64)
    tree = np.array([0.0, 0.0, 0.0], np.float32)
    out = blend_scores(bert, tree, 1.0, overflow_to_sample_mapping=mapping)
    np.testing.assert_array_equal(out, np.array([2.0, 5.0, 13.0 / 3.0], np.float32))
    # rows of one text need not be contiguous
    perm = np.array([4, 0, 2, 5, 1, 3])
    out2 = blend_scores(bert[perm], tree, 1.0, overflow_to_sample_mapping=mapping[perm])
    np.testing.assert_allclose(out2, out, rtol=1e-7)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 8),
)
def test_hypothesis_against_reference(data, n):
    wins = data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    mapping = [i for i, k in enumerate(wins) for _ in range(k)]
    fl = st.floats(-1e4, 1e4, allow_nan=False, width=32)
    bert = data.draw(st.lists(fl, min_size=len(mapping), max_size=len(mapping)))
    tree = data.draw(st.lists(fl, min_size=n, max_size=n))
    per_row = data.draw(st.booleans())
    wt = st.floats(0, 1, width=32)
    weight = data.draw(st.lists(wt, min_size=n, max_size=n)) if per_row else data.draw(wt)
    out = blend_scores(np.array(bert, np.float32), np.array(tree, np.float32), np.array(weight, np.float32),
                       overflow_to_sample_mapping=np.array(mapping))
    exp = _ref(bert, tree, weight if per_row else [weight], mapping)
    np.testing.assert_array_equal(out, exp)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(weight=1.5), r"\[0, 1\]"),
        (dict(weight=-0.1), r"\[0, 1\]"),
        (dict(weight=float("nan")), "finite"),
        (dict(weight=float("inf")), "finite"),
        (dict(weight=np.array([0.5, 0.5])), "expected 1"),
        (dict(weight=np.array([], np.float32)), "empty"),
        (dict(weight="0.5"), "numeric"),
        (dict(bert=np.array([1.0, np.nan, 2.0], np.float32)), "bert_scores must be finite: row 1"),
        (dict(tree=np.array([1.0, 2.0, np.inf], np.float32)), "tree_scores must be finite: row 2"),
        (dict(bert=np.array([1.0, 2.0], np.float32)), "mismatched batch sizes"),
        (dict(bert=np.zeros((3, 2), np.float32)), r"shape \(batch,\)"),
        (dict(mapping=np.array([0, 1], np.int64)), "has 2 rows"),
        (dict(mapping=np.array([0, 1, 3], np.int64)), r"\[0, 3\)"),
        (dict(mapping=np.array([0, 0, 2], np.int64)), "text 1 has no BERT row"),
        (dict(mapping=np.array([0.0, 1.0, 2.0])), "integers"),
    ],
)
def test_errors_are_input_errors(kwargs, match):
    args = dict(bert=np.ones(3, np.float32), tree=np.ones(3, np.float32), weight=0.5, mapping=None)
    args.update(kwargs)
    with pytest.raises(InputError, match=match) as ei:
        blend_scores(args["bert"], args["tree"], args["weight"], overflow_to_sample_mapping=args["mapping"])
    assert isinstance(ei.value, ValueError)


def test_blend_requests_isolates_bad_request():
    good1 = dict(bert_scores=np.array([1.0, 2.0], np.float32), tree_scores=np.array([3.0, 4.0], np.float32),
                 weight=np.array([0.5], np.float32))
    bad = dict(bert_scores=np.array([1.0], np.float32), tree_scores=np.array([3.0], np.float32), weight=2.0)
    good2 = dict(bert_scores=np.array([1.0, 5.0, 2.0], np.float32), tree_scores=np.array([[1.0], [0.0]], np.float32),
                 weight=np.array([0.25, 1.0], np.float32), overflow_to_sample_mapping=np.array([0, 0, 1]))
    res = blend_requests([good1, bad, good2])
    assert isinstance(res[1], InputError) and "[0, 1]" in str(res[1])
    for i in (0, 2):
        kw = dict([good1, bad, good2][i])
        exp = blend_scores(kw.pop("bert_scores"), kw.pop("tree_scores"), kw.pop("weight"), **kw)
        assert res[i].shape == exp.shape
        np.testing.assert_array_equal(res[i], exp)
    assert res[2][:, 0].tolist() == [0.25 * 3.0 + 0.75 * 1.0, 2.0]


def test_validate_returns_flattened_request():
    req = validate_blend_request(np.ones((2, 1)), np.zeros((2, 1)), [0.5, 0.25])
    assert req.n == 2 and req.weight.dtype == np.float32 and req.weight.tolist() == [0.5, 0.25]
    assert math.isclose(float(blend_scores(np.ones(1), np.zeros(1), 0.0)[0]), 0.0)


@pytest.mark.gpu
def test_cupy_equals_numpy():
    import cupy as cp

    rng = np.random.default_rng(0)
    mapping = np.sort(rng.integers(0, 50, 200))
    mapping = np.concatenate([np.arange(50), mapping])
    bert = rng.normal(size=mapping.size).astype(np.float32)
    tree = rng.normal(size=50).astype(np.float32)
    w = rng.random(50).astype(np.float32)
    cpu = blend_scores(bert, tree, w, overflow_to_sample_mapping=mapping)
    gpu = blend_scores(cp.asarray(bert), cp.asarray(tree), cp.asarray(w),
                       overflow_to_sample_mapping=cp.asarray(mapping))
    assert isinstance(gpu, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(gpu), cpu)
    with pytest.raises(InputError):
        blend_scores(cp.asarray(bert[:50]), cp.asarray(tree), cp.asarray([2.0]))
