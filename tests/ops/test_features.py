"""Readability features: the vectorized implementation against the plain-Python reference of the spec."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_textops import InputError, ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.features import ARTIFACT_FORMAT, load_stopwords
from triton_textops.ops.wordpiece.pretokenize import Normalizer

sys.path.insert(0, str(Path(__file__).parent))
import features_reference as ref  # noqa: E402
from textcases import SENTENCES, mixed_texts  # noqa: E402

DATA = resources.files("triton_textops") / "data"


def _sw(name: str = "nltk-179") -> list[str]:
    return ref.load_stopwords(Path(str(DATA / "stopwords" / f"{name}.txt")))


@pytest.fixture(scope="module")
def austen_split():
    texts = austen_paragraphs()
    return texts[0::2], texts[1::2]


@pytest.fixture(scope="module")
def fitted(austen_split):
    train, _ = austen_split
    return ReadabilityFeatures.fit(train), ref.fit(train, _sw())


def _plain(common=(), rare=(), stopwords=None, lowercase=True) -> tuple[ReadabilityFeatures, ref.ReferenceFeatures]:
    """Implementation and reference with the same hand-picked word lists (mean 0, std 1)."""
    sw = _sw() if stopwords is None else list(stopwords)
    k = 7 + len(common) + len(rare)
    impl = ReadabilityFeatures(
        lowercase=lowercase, stopwords_name="test", stopwords=sw, common=list(common), rare=list(rare),
        mean=np.zeros(k), std=np.ones(k),
    )
    return impl, ref.ReferenceFeatures(lowercase, sw, list(common), list(rare), [0.0] * k, [1.0] * k)


# ------------------------------------------------------------------------------------------ Austen


def test_fit_matches_reference(fitted):
    impl, r = fitted
    assert impl.common == r.common and impl.rare == r.rare
    assert len(impl.common) == 100 and len(impl.rare) == 100
    assert not set(impl.common) & set(impl.rare)
    np.testing.assert_array_equal(impl.mean, np.array(r.mean, np.float32))
    np.testing.assert_array_equal(impl.std, np.array(r.std, np.float32))
    assert impl.feature_names == r.names and len(impl.feature_names) == 207
    assert impl.feature_names[:7] == [
        "n_words", "n_distinct_words", "n_punctuation", "n_sentences", "words_per_sentence",
        "n_stopwords", "stopwords_per_sentence",
    ]
    assert impl.feature_names[7] == "common:the"


def test_transform_held_out_half_raw_and_normalized(fitted, austen_split):
    impl, r = fitted
    _, test = austen_split
    raw = impl.transform(test, normalize=False)
    assert raw.dtype == np.float32 and raw.shape == (len(test), 207)
    np.testing.assert_array_equal(raw, r.raw(test))
    norm = impl.transform(test)
    assert norm.dtype == np.float32
    np.testing.assert_array_equal(norm, r.transform(test))
    # normalized columns of the fitting half are centred
    assert abs(float(impl.transform(austen_split[0][:500])[:, :7].mean())) < 0.5


def test_transform_pretokens_and_input_forms(fitted, austen_split):
    impl, _ = fitted
    texts = austen_split[1][:40]
    want = impl.transform(texts)
    pre = Normalizer.get(lowercase=True).pretokenize(TextBatch.from_texts(texts))
    np.testing.assert_array_equal(impl.transform_pretokens(pre), want)
    enc = [t.encode() for t in texts]
    np.testing.assert_array_equal(impl.transform(enc), want)
    np.testing.assert_array_equal(impl.transform(np.array(enc, dtype=object).reshape(-1, 1)), want)
    data = np.frombuffer(b"".join(enc), np.uint8)
    offsets = np.cumsum([0] + [len(e) for e in enc]).astype(np.int64)
    np.testing.assert_array_equal(impl.transform((data, offsets)), want)
    assert impl.transform([]).shape == (0, 207)


# ------------------------------------------------------------------------------------ sentence rules

@pytest.mark.parametrize("text, n_sent", SENTENCES)
def test_sentence_rules(text, n_sent):
    impl, r = _plain(common=["the"], rare=["mr"])
    got = impl.transform([text], normalize=False)
    want = r.raw([text])
    np.testing.assert_array_equal(got, want)
    assert got[0, 3] == n_sent, (text, got[0, :7])


def test_sentence_rules_in_one_batch():
    """Texts lie back to back in the normalized buffer: no adjacency across texts."""
    impl, r = _plain()
    texts = [t for t, _ in SENTENCES] + ["abc.", "def", "Mr.", "x", "Hi", "."]
    got = impl.transform(texts, normalize=False)
    np.testing.assert_array_equal(got, r.raw(texts))
    assert got[:len(SENTENCES), 3].tolist() == [n for _, n in SENTENCES]


def test_counts_on_a_small_text():
    impl, _ = _plain(common=["the", "didn"], rare=["t", "zebra"])
    x = impl.transform(["The cat didn't see the other cat. Did it?"], normalize=False)[0]
    # words: the cat didn t see the other cat did it  (10), distinct 8; punct: ' . ? (3)
    assert x[:7].tolist() == [10, 8, 3, 2, 5, 7, 3.5]  # stop words: the didn t the other did it
    assert x[7:].tolist() == [2, 1, 1, 0]


def test_cased_features_match_reference(austen_split):
    train = austen_split[0][:300]
    impl = ReadabilityFeatures.fit(train, n_common=30, n_rare=30, lowercase=False, stopwords="nltk-198")
    r = ref.fit(train, _sw("nltk-198"), 30, 30, lowercase=False)
    assert impl.common == r.common and impl.rare == r.rare
    texts = austen_split[1][:200] + ["Mr. Smith. MR. Jones. \u00c9T\u00c9. A. b"]
    np.testing.assert_array_equal(impl.transform(texts), r.transform(texts))
    assert "I" in impl.common and "i" not in impl.common and not impl.lowercase


# -------------------------------------------------------------------------------------- hypothesis

_FRAGMENTS = [
    "a", "I", "x", "mr", "Mr", "dr", "st", "prof", "the", "The", "of", "didn", "3", "5", "10", "caf\u00e9",
    "\u00dcn\u00efc\u00f8de", "\u4e2d", "\u0394\u03b9", "\u043c\u0438\u0440", "abcdefghij", "x" * 9,
    ".", "!", "?", "\u2026", '"', "'", ")", "]", "\u201d", "\u2019", "\u00bb", "(", ",", ";", "-", "\u3002",
    " ", " ", " ", "\n", "\t", "\u00a0", "\u3000", "\x00", "\u200b", "\u0301", "\ufffd", "\x07", "\U0001f600",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join), min_size=1, max_size=6))
def test_hypothesis_against_reference(texts):
    impl, r = _HYP
    np.testing.assert_array_equal(impl.transform(texts, normalize=False), r.raw(texts))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4))
def test_hypothesis_any_unicode(texts):
    impl, r = _HYP
    np.testing.assert_array_equal(impl.transform(texts, normalize=False), r.raw(texts))


_HYP = _plain(common=["the", "a", "mr", "x" * 9, "abcdefghij"], rare=["caf\u00e9", "didn", "3", "\u4e2d"])


@pytest.mark.parametrize(("lowercase", "stopwords"), [(True, "nltk-179"), (False, "nltk-198")])
def test_mixed_script_texts(austen_split, lowercase, stopwords):
    """Fit on Austen plus seeded mixed-script texts, then transform 1200 such texts (and 50 one at a time):
    the fitted words, mean/std and every feature equal the reference's."""
    words = austen_split[0][0].split()
    texts = mixed_texts(29 + lowercase, 1200, words + ["Mr.", "the", "The", "\n\n"])
    train = austen_split[0][:200] + texts[:300]
    impl = ReadabilityFeatures.fit(train, n_common=60, n_rare=60, lowercase=lowercase, stopwords=stopwords)
    r = ref.fit(train, _sw(stopwords), 60, 60, lowercase=lowercase)
    assert impl.common == r.common and impl.rare == r.rare
    np.testing.assert_array_equal(impl.mean, np.array(r.mean, np.float32))
    np.testing.assert_array_equal(impl.std, np.array(r.std, np.float32))
    np.testing.assert_array_equal(impl.transform(texts), r.transform(texts))
    for text in texts[:50]:
        np.testing.assert_array_equal(impl.transform([text], normalize=False), r.raw([text]))


def test_similar_long_words_stay_apart():
    """Long words, words that share their first and last 8 bytes: table lookups and distinct counts
    compare the bytes, never only hashes or prefixes."""
    a, b = "abcdefgh" + "p" + "stuvwxyz", "abcdefgh" + "q" + "stuvwxyz"
    impl, r = _plain(common=[a, "the"], rare=[b, "abcdefghstuvwxyz"])  # a, b share length, head and tail
    texts = [f"{a} {b} {a}. {b}{b} abcdefghZstuvwxyz the {a}!", "abcdefghstuvwxyz abcdefgh stuvwxyz", a]
    want = r.raw(texts)
    np.testing.assert_array_equal(impl.transform(texts, normalize=False), want)
    assert want[0, 7:].tolist() == [3, 1, 1, 0] and want[0, 1] == 5
    impl2, r2 = _HYP
    texts = [t * 3 for t in _FRAGMENTS] + ["".join(_FRAGMENTS)]
    np.testing.assert_array_equal(impl2.transform(texts, normalize=False), r2.raw(texts))


# ------------------------------------------------------------------------------------------ artifact


def test_save_load_round_trip(fitted, austen_split, tmp_path):
    impl, _ = fitted
    path = tmp_path / "features.json"
    impl.save(path)
    d = json.loads(path.read_text("utf-8"))
    assert d["format"] == ARTIFACT_FORMAT and d["version"] == 1 and d["lowercase"] is True and d["n"] == 100
    assert d["stopwords"]["name"] == "nltk-179" and len(d["stopwords"]["words"]) == 179
    back = ReadabilityFeatures.load(path)
    assert back.common == impl.common and back.rare == impl.rare and back.stopwords == impl.stopwords
    np.testing.assert_array_equal(back.mean, impl.mean)
    np.testing.assert_array_equal(back.std, impl.std)
    texts = austen_split[1][:50]
    np.testing.assert_array_equal(back.transform(texts), impl.transform(texts))
    # the reference reads the same artifact and agrees
    np.testing.assert_array_equal(ref.from_artifact(path).transform(texts), impl.transform(texts))


def _corrupt(d: dict, how: str) -> dict:
    d = json.loads(json.dumps(d))
    if how == "version":
        d["version"] = 2
    elif how == "format":
        d["format"] = "something-else"
    elif how == "missing":
        del d["rare"]
    elif how == "mean_len":
        d["mean"] = d["mean"][:-1]
    elif how == "std_zero":
        d["std"][0] = 0.0
    elif how == "words_type":
        d["common"][0] = 5
    elif how == "n_mismatch":
        d["n_common"] = 3
        d["n"] = None
    elif how == "n_spec":
        d["n"] = 99
    elif how == "names":
        d["feature_names"][8] = "common:zzz"
    elif how == "casing":
        d["casing"] = "cased"
    return d


@pytest.mark.parametrize(
    "how, match",
    [
        ("version", "version 2 is not supported"),
        ("format", "format is 'something-else'"),
        ("missing", "missing field 'rare'"),
        ("mean_len", "'mean' must be a list of"),
        ("std_zero", "std finite and > 0"),
        ("words_type", "lists of strings"),
        ("n_mismatch", "do not match the word lists"),
        ("n_spec", r"n \(99\) does not match"),
        ("names", "feature_names"),
        ("casing", "casing"),
    ],
)
def test_bad_artifacts(fitted, tmp_path, how, match):
    impl, _ = fitted
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_corrupt(impl.to_dict(), how)), "utf-8")
    with pytest.raises(ValueError, match=match):
        ReadabilityFeatures.load(path)


def test_corrupt_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "triton-textops/readability-features", "vers', "utf-8")
    with pytest.raises(ValueError, match="not a valid readability-features artifact"):
        ReadabilityFeatures.load(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="not a valid readability-features artifact"):
        ReadabilityFeatures.load(path)


# -------------------------------------------------------------------------------------------- errors


def test_too_few_distinct_words():
    with pytest.raises(ValueError, match="fewer than n_common \\+ n_rare = 200"):
        ReadabilityFeatures.fit(["the cat sat on the mat"] * 3)
    f = ReadabilityFeatures.fit(["a b c d", "d e f"], n_common=3, n_rare=3)
    assert f.common == ["d", "a", "b"] and f.rare == ["a", "b", "c"]  # ties broken by UTF-8 bytes
    with pytest.raises(ValueError, match="empty corpus"):
        ReadabilityFeatures.fit([])


def test_invalid_utf8_names_the_row():
    impl, _ = _plain()
    with pytest.raises(InputError, match="row 2"):
        impl.transform([b"ok", b"fine", b"bad \xff"])
    corpus = [f"text number {i}" for i in range(1100)]
    corpus[1050] = b"broken \xc3"
    with pytest.raises(InputError, match="row 1050"):
        ReadabilityFeatures.fit(corpus, n_common=1, n_rare=1)


def test_stopword_sources(tmp_path, monkeypatch):
    name, words = load_stopwords("nltk-179")
    assert name == "nltk-179" and len(words) == 179 and words[:3] == ["i", "me", "my"]
    name, words = load_stopwords("nltk-198")
    assert len(words) == 198 and set(load_stopwords("nltk-179")[1]) < set(words)
    p = tmp_path / "mine.txt"
    p.write_text("zebra\n\n  cat \ncat\n", "utf-8")
    assert load_stopwords(p) == ("file:mine.txt", ["zebra", "cat"])
    f = ReadabilityFeatures.fit(["zebra cat dog", "a b c d e"], n_common=2, n_rare=2, stopwords=str(p))
    assert f.transform(["the zebra and the cat"], normalize=False)[0, 5] == 2
    with pytest.raises(ValueError, match="unknown stop-word list"):
        load_stopwords("nltk-999")
    # stopwords="nltk": the installed corpus, or a clear error
    monkeypatch.setitem(sys.modules, "nltk.corpus", None)
    with pytest.raises(ValueError, match="needs the nltk package"):
        load_stopwords("nltk")


def test_stopwords_nltk_corpus_missing(tmp_path, monkeypatch):
    nltk = pytest.importorskip("nltk")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    monkeypatch.delenv("NLTK_DATA", raising=False)
    with pytest.raises(ValueError, match="corpus is not installed"):
        load_stopwords("nltk")


def test_casing_mismatch_with_pretokens(fitted):
    impl, _ = fitted
    pre = Normalizer.get(lowercase=False).pretokenize(TextBatch.from_texts(["x"]))
    if hasattr(pre, "lowercase"):
        with pytest.raises(ValueError, match="casing"):
            impl.transform_pretokens(pre)


# ----------------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_cupy_equals_numpy(fitted, austen_split):
    import cupy as cp

    impl, _ = fitted
    texts = austen_split[1][:600] + [t for t, _ in SENTENCES] + ["".join(_FRAGMENTS) * 3]
    for normalize in (False, True):
        cpu = impl.transform(texts, normalize=normalize)
        gpu = impl.transform(texts, normalize=normalize, device="cuda")
        assert isinstance(gpu, cp.ndarray) and gpu.dtype == cp.float32
        np.testing.assert_array_equal(cp.asnumpy(gpu), cpu)
    assert impl.transform([], device="cuda").shape == (0, 207)
