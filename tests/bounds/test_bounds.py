"""A quick subset of the oracle tests plus fuzzing, with every kernel array access bounds-checked: a
kernel that indexed outside an array would raise IndexError here (in production: a crashed stub)."""

from __future__ import annotations

from functools import partial

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textcases import ADVERSARIAL, SENTENCES

from triton_textops import InputError, ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs, vocab_path
from triton_textops.ops.features import same_bytes
from triton_textops.ops.preprocess import preprocess
from triton_textops.ops.wordpiece.pretokenize import PreTokens

tokenizers = pytest.importorskip("tokenizers")

AUSTEN = austen_paragraphs()
VOCAB_LINES = vocab_path().read_text(encoding="utf-8").splitlines()
VOCAB_SIZE, CLS = len(VOCAB_LINES), VOCAB_LINES.index("[CLS]")


def _same_entry(share, shares, n, a, i, b, j, ln, out):
    out[0] = same_bytes(a, i, b, j, ln)


def test_boundscheck_is_on():
    """The kernels' device functions, as compiled for the CPU here, really check: an index past the end
    raises IndexError (through a kernel entry, as the ops call them)."""
    from triton_textops.ops.core import kernels as K

    assert numba.config.BOUNDSCHECK
    entry = K.cpu(_same_entry)
    a = np.zeros(4, dtype=np.uint8)
    out = np.zeros(1, dtype=np.uint8)
    entry(0, 1, 1, a, 0, a, 0, 4, out)
    assert out[0] == 1
    with pytest.raises(IndexError):
        entry(0, 1, 1, a, 2, a, 0, 4, out)


def _refused_or(call, check) -> None:
    """The fuzz tests' one rule: ``call()`` refuses with an InputError or returns what ``check`` accepts (an
    IndexError from the bounds checks, or any other exception, fails the test)."""
    try:
        out = call()
    except InputError:
        return
    check(out)


def _check_rows(enc, n: int, width: int, kw: dict) -> None:
    """Rows of ``width`` for ``n`` texts (each text one row, or >= 1 rows mapped back to it with overflow), every
    row starting with [CLS] and every id a vocabulary id."""
    ids = np.asarray(enc.input_ids)
    assert ids.shape[1] == width and ids.dtype.kind == "i"
    if kw.get("return_overflowing_tokens"):
        rows = np.asarray(enc.overflow_to_sample_mapping)
        assert len(rows) == len(ids) and np.all(np.diff(rows) >= 0) and set(rows.tolist()) == set(range(n))
    else:
        assert len(ids) == n
    assert np.all(ids[:, 0] == CLS) and np.all((ids >= 0) & (ids < VOCAB_SIZE))


def _check_features(out, feats, n: int) -> None:
    out = np.asarray(out)
    assert out.shape == (n, feats.n_features) and np.isfinite(out).all()


def _check_pieces(ids, offsets, n: int) -> None:
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    assert len(offsets) == n + 1 and offsets[0] == 0 and offsets[-1] == len(ids) and np.all(np.diff(offsets) >= 0)
    assert np.all((ids >= 0) & (ids < VOCAB_SIZE))


@pytest.fixture(scope="module")
def feats():
    return ReadabilityFeatures.fit(AUSTEN[:300], n_common=30, n_rare=30)


def hf_rows(texts, max_length, stride=0, overflow=False):
    o = tokenizers.BertWordPieceTokenizer(str(vocab_path()), lowercase=True)
    o.enable_truncation(max_length, stride=stride)
    rows = [e.ids for enc in o.encode_batch(texts) for e in [enc, *(enc.overflowing if overflow else [])]]
    return np.array([r + [0] * (max_length - len(r)) for r in rows])


@pytest.mark.parametrize("kw", [{"max_length": 128}, {"max_length": 32, "stride": 8, "return_overflowing_tokens": True}])
def test_oracle_subset(tok, kw):
    texts = AUSTEN[:150] + ADVERSARIAL
    overflow = kw.get("return_overflowing_tokens", False)
    want = hf_rows(texts, kw["max_length"], kw.get("stride", 0), overflow)
    np.testing.assert_array_equal(tok.encode_rows(texts, **kw).input_ids, want)


def test_features_subset(feats):
    got = feats.transform([t for t, _ in SENTENCES] + AUSTEN[300:340], normalize=False)
    assert got[: len(SENTENCES), 3].tolist() == [n for _, n in SENTENCES]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=80) | st.text(max_size=80), max_size=6), st.integers(3, 40), st.integers(0, 20))
def test_fuzz_never_indexes_out_of_bounds(tok, feats, texts, max_length, stride):
    for kw in ({}, {"stride": min(stride, max_length - 3), "return_overflowing_tokens": True}):
        _refused_or(partial(tok.encode_rows, texts, max_length=max_length, **kw),
                    partial(_check_rows, n=len(texts), width=max_length, kw=kw))
    _refused_or(lambda: feats.transform(texts), lambda f: _check_features(f, feats, len(texts)))


def test_large_and_degenerate_inputs(tok, feats):
    big = ("Supercalifragilistic " * 10) + "x" * 5_000_000 + " ...!? [CLS] " + "é" * 1000
    enc = tok.encode_rows([big, ""], max_length=64, stride=16, return_overflowing_tokens=True)
    assert enc.overflow_to_sample_mapping[-1] == 1
    assert feats.transform([big, "", " "]).shape == (3, feats.n_features)
    assert tok.encode_rows([]).input_ids.shape == (0, 128)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=40), st.lists(st.integers(-50, 60) | st.sampled_from([2**62, -(2**63)]),
                                                   min_size=1, max_size=6))
def test_fuzz_caller_offsets(tok, feats, data, offsets):
    """Offsets a caller builds (any values, in any order) into every entry point: an InputError for a bad
    span, never an index outside the arrays (which raises IndexError here)."""
    buf, offs = np.frombuffer(data, np.uint8).copy(), np.array(offsets, dtype=np.int64)
    n, over = len(offs) - 1, {"stride": 2, "return_overflowing_tokens": True}
    _refused_or(lambda: tok.encode_rows((buf, offs), max_length=8), lambda e: _check_rows(e, n, 8, {}))
    _refused_or(lambda: tok.encode_rows((buf, offs), max_length=8, **over), lambda e: _check_rows(e, n, 8, over))
    _refused_or(lambda: feats.transform((buf, offs)), lambda f: _check_features(f, feats, n))
    _refused_or(lambda: preprocess(tok, feats, (buf, offs), max_length=8),
                lambda out: (_check_rows(out[0], n, 8, {}), _check_features(out[1], feats, n)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 5), st.integers(0, 200), st.integers(-(2**31), 2**31 - 1))
def test_fuzz_forged_pretokens(tok, feats, row, col, value):
    """Pre-tokens with one entry of the token or text rows changed to any value: refused or read safely."""
    pre = tok.pretokenize(["Mr. Darcy said: caf\u00e9 x\u302e\u1b44!", "", "[CLS] one two three"])
    tk, tx = pre.tok.copy(), pre.txt.copy()
    if row < 6:
        tk[row, col % tk.shape[1]] = value
    else:
        tx[col % 3, col % pre.n] = value
    bad = PreTokens(pre.xp, pre.target, pre.n, pre.data.copy(), pre.expand, pre.offs.copy(), tk, tx)
    over = {"stride": 1, "return_overflowing_tokens": True}
    _refused_or(lambda: tok.encode_pretokens(bad, max_length=8), lambda e: _check_rows(e, 3, 8, {}))
    _refused_or(lambda: tok.encode_pretokens(bad, max_length=8, **over), lambda e: _check_rows(e, 3, 8, over))
    _refused_or(lambda: tok.wordpiece(bad), lambda w: _check_pieces(*w, 3))
    _refused_or(lambda: feats.transform_pretokens(bad), lambda f: _check_features(f, feats, 3))


def test_long_runs_of_marks(tok, feats):
    """Runs of combining marks sorted through the token scratch, at every length up to a few hundred."""
    texts = ["x" + "\u302e\u1b44" * k + ("y" if k % 2 else "") for k in range(0, 300, 7)]
    _check_rows(tok.encode_rows(texts, max_length=16), len(texts), 16, {})
    _check_features(feats.transform(texts), feats, len(texts))


def test_empty_punctuation_token_at_the_end_of_the_buffer(tok, feats):
    """A forged empty punctuation token at the very end of the normalized bytes: the features' reader of
    punctuation looked at its first byte, one past the array (IndexError here, found in review); such
    pre-tokens are refused now."""
    pre = tok.pretokenize(["ab ."])
    t, x = pre.tok.copy(), pre.txt.copy()
    k = int(x[1, 0]) - 1  # the "." token
    size = pre.expand * 4
    t[0, k], t[1, k], t[3, k] = size, size, 1
    bad = PreTokens(pre.xp, pre.target, pre.n, pre.data[:size].copy(), pre.expand, pre.offs.copy(), t, x)
    with pytest.raises(InputError, match="row 0: its pre-tokens are not consistent"):
        feats.transform_pretokens(bad)
