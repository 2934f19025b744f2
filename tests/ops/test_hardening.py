"""Hardening of every public entry point (issue: findings of an adversarial run): caller-given offsets and
pre-tokens, int32 positions past ~716 MB, canonical ordering of combining marks as HF's NFD, vocabulary
lines read as HF's ``WordPiece::read_file``, and one-line errors for wrong parameter types. Each test here
failed before its fix (the reproducers of the issue are kept as they were reported)."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest
from model_dirs import write_model

from triton_textops import BertTokenizer, InputError, ReadabilityFeatures
from triton_textops.bundled import vocab_path
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.utf8 import invalid_utf8_rows
from triton_textops.ops.preprocess import preprocess
from triton_textops.ops.wordpiece.pretokenize import Normalizer, PreTokens
from triton_textops.ops.wordpiece.tokenizer import read_vocab
from triton_textops.testing import load_model

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import BertWordPieceTokenizer  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402
from tokenizers.normalizers import BertNormalizer  # noqa: E402

VOCAB_LINES = read_vocab(vocab_path())


@pytest.fixture(scope="module")
def feats():
    return ReadabilityFeatures(lowercase=True, stopwords_name="t", stopwords=["the", "a"], common=["x"],
                               rare=["hello"], mean=[0.0] * 9, std=[1.0] * 9)


def oracle(path=None, lowercase=True):
    return BertWordPieceTokenizer(str(path or vocab_path()), lowercase=lowercase)


def hf_rows(texts, max_length, path=None):
    o = oracle(path)
    o.enable_truncation(max_length)
    return np.array([e.ids + [0] * (max_length - len(e.ids)) for e in o.encode_batch(texts)])


# ------------------------------------------------------------------------------ 1. caller-given offsets

BIG = np.full(10_000_000, ord("a"), np.uint8)
BAD_SPANS = [  # (offsets into an 11-byte buffer, the first bad row)
    ([0, -1_000_000, 11], 0),
    ([0, 5, 5_000_000], 1),
    ([0, 11, 3], 1),
    ([-3, 4, 11], 0),
    ([0, 4, 12], 1),
    ([0, 2**62, 11], 0),
    ([0, 11, -(2**63)], 1),
]


def test_segfault_reproducer_is_an_input_error(tok):
    """The reported segfault: a TextBatch whose offsets point 1 MB before and 5 MB past its 11-byte view."""
    batch = TextBatch(BIG[5_000_000:5_000_011], np.array([0, -1_000_000, 11]), np)
    with pytest.raises(InputError, match="row 0: its offsets are not a non-decreasing span"):
        tok.encode_rows(batch, max_length=16)
    with pytest.raises(InputError, match="row 1"):
        tok.encode_rows(TextBatch(BIG[5_000_000:5_000_011], np.array([0, 5, 5_000_000]), np), max_length=16)


@pytest.mark.parametrize(("offsets", "row"), BAD_SPANS)
def test_every_offsets_path_checks_the_spans(tok, feats, offsets, row):
    data = BIG[:11].copy()
    offs = np.array(offsets, dtype=np.int64)
    calls = {
        "encode TextBatch": lambda: tok.encode_rows(TextBatch(data, offs, np), max_length=16),
        "encode pair": lambda: tok.encode_rows((data, offs), max_length=16),
        "encode windows": lambda: tok.encode_rows((data, offs), max_length=8, stride=2, return_overflowing_tokens=True),
        "pretokenize + check": lambda: tok.pretokenize((data, offs)).check(),
        "wordpiece": lambda: tok.wordpiece(tok.pretokenize((data, offs))),
        "features": lambda: feats.transform((data, offs)),
        "preprocess": lambda: preprocess(tok, feats, (data, offs), max_length=16),
        "normalizer": lambda: Normalizer.get(True).pretokenize(TextBatch(data, offs, np)).check(),
    }
    for name, call in calls.items():
        with pytest.raises(InputError, match=f"row {row}: its offsets") as e:
            call()
        assert e.value.rows[0] == row, name
    assert row in invalid_utf8_rows(data, offs)


def test_cudf_backend_checks_spans_and_utf8_on_the_host():
    """The optional cuDF path reads the texts on the host (no cuDF here: its reader alone)."""
    from triton_textops.ops.cudf_backend import _texts_on_host

    data = np.frombuffer(b"hello world\xff", np.uint8)
    assert _texts_on_host(TextBatch(data, np.array([0, 5, 11]), np)) == ["hello", " world"]
    for offs, why in (([0, 11, 3], "row 1: its offsets"), ([0, 5, 12], "row 1: text is not valid UTF-8"),
                      ([0, -1, 11], "row 0: its offsets")):
        with pytest.raises(InputError, match=why):
            _texts_on_host(TextBatch(data, np.array(offs), np))


def test_good_spans_that_do_not_cover_the_buffer_work(tok):
    data = np.frombuffer(b"xx hello world yy", np.uint8)
    enc = tok.encode_rows((data, np.array([3, 8, 8, 14])), max_length=6)  # "hello", "", " world"
    np.testing.assert_array_equal(enc.input_ids, hf_rows(["hello", "", " world"], 6))
    np.testing.assert_array_equal(tok.encode_rows((data, [3, 8, 8, 14]), max_length=6).input_ids, enc.input_ids)
    with pytest.raises(InputError, match="row 0: its offsets"):
        tok.encode_rows((data, [3, 2]), max_length=6)


def test_offsets_structure_is_checked():
    with pytest.raises(InputError, match="1-D uint8"):
        TextBatch(np.zeros(4, np.int16), np.array([0, 4]), np)
    with pytest.raises(InputError, match="offsets must be a 1-D integer"):
        TextBatch(np.zeros(4, np.uint8), np.array([0.0, 4.0]), np)
    with pytest.raises(InputError, match="offsets must be a 1-D integer"):
        TextBatch(np.zeros(4, np.uint8), np.array([], np.int64), np)
    with pytest.raises(InputError, match="TextBatch.data"):
        TextBatch([1, 2], np.array([0, 2]), np)
    b = TextBatch(np.frombuffer(b"abcd", np.uint8)[::2], np.array([0, 2], np.int32), np)  # strided, int32
    assert b.data.flags.c_contiguous and b.offsets.dtype == np.int64 and bytes(b.data) == b"ac"


def test_pack_checks_piece_offsets(tok):
    pieces = np.arange(10, dtype=np.int64)
    for offs in ([0, 5, 3], [1, 10], [0, 11], [[0, 10]]):
        with pytest.raises(InputError, match="piece_offsets must be"):
            tok.pack(pieces, np.array(offs), max_length=8)
    with pytest.raises(InputError, match="piece_offsets must be an integer array"):
        tok.pack(pieces, np.array([0.0, 10.0]), max_length=8)
    with pytest.raises(InputError, match="pieces must be an integer array"):
        tok.pack(pieces.astype(float), np.array([0, 10]), max_length=8)


def forged(pre: PreTokens, **arrays) -> PreTokens:
    fields = {f: getattr(pre, f) for f in ("xp", "target", "n", "data", "expand", "offs", "tok", "txt", "lowercase")}
    fields.update({k: v.copy() for k, v in fields.items() if isinstance(v, np.ndarray)})
    fields.update(arrays)
    return PreTokens(**fields)


def test_forged_pretokens_never_leave_their_text(tok, feats):
    """Pre-tokens a caller changed: token spans past the region, too many tokens, offsets past the
    arrays. Every consumer refuses the row (InputError) instead of reading elsewhere."""
    pre = tok.pretokenize(["hello world", "second text here"])
    bad = []
    t = pre.tok.copy()
    t[1, 0] = 10**6  # END of text 0's first token far past its region
    bad.append(forged(pre, tok=t))
    t = pre.tok.copy()
    t[0, 12] = -5  # START of a token of text 1 negative (as unsigned: past the region)
    bad.append(forged(pre, tok=t))
    x = pre.txt.copy()
    x[1, 0] = 50  # NTOK more than the text has bytes
    bad.append(forged(pre, txt=x))
    o = pre.offs.copy()
    o[1] = 10**9
    bad.append(forged(pre, offs=o))
    t = pre.tok.copy()
    t[0, 13] = t[1, 13]  # an empty token (a reader of punctuation looks at its first byte)
    bad.append(forged(pre, tok=t))
    for p in bad:
        for call in (lambda p=p: tok.encode_pretokens(p, max_length=8), lambda p=p: tok.wordpiece(p),
                     lambda p=p: tok.encode_pretokens(p, max_length=8, stride=1, return_overflowing_tokens=True),
                     lambda p=p: feats.transform_pretokens(p)):
            with pytest.raises(InputError, match="row [01]: its (pre-tokens are not consistent|offsets)"):
                call()
    with pytest.raises(InputError, match="PreTokens: tok must be int32"):
        forged(pre, tok=pre.tok.astype(np.int64))
    with pytest.raises(InputError, match="PreTokens: offs must be int64 of n"):
        forged(pre, n=5)


# ------------------------------------------------------------------------- 2. positions past ~716 MB

@pytest.mark.slow
def test_text_past_716_mb_gives_the_right_ids(tok):
    """The reported silent corruption: token positions were int32 and held 3x the byte offset."""
    n0 = 716_000_000
    data = np.empty(n0 + 11, np.uint8)
    data[:n0] = ord("a")
    data[n0:] = np.frombuffer(b"hello world", np.uint8)
    enc = tok.encode_rows((data, np.array([0, n0, n0 + 11])), max_length=8)
    assert enc.input_ids[1].tolist() == [101, 7592, 2088, 102, 0, 0, 0, 0]
    assert enc.input_ids[0].tolist() == [101, 100, 102, 0, 0, 0, 0, 0]  # one word of 716M characters: [UNK]


MODEL_1024 = """
max_batch_size: 1024
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [8] },
        { name: "ATTENTION_MASK" data_type: TYPE_INT64 dims: [8] }]
parameters: { key: "vocab" value: { string_value: "vocab.txt" } }
"""


@pytest.mark.slow
def test_model_batch_past_716_mb_gives_the_right_ids(tmp_path):
    """The reported model case: 700 requests of 1 MiB (the default max_text_bytes), then "hello world", in
    one execute. The model now takes such a batch in launches of at most LAUNCH_BYTES of text."""
    d = write_model(tmp_path, "tokenize", "tokenize", MODEL_1024, {"vocab.txt": vocab_path()})
    mib = np.array([[b"a" * (1 << 20)]], dtype=object)
    with load_model(d) as m:
        reqs = [m.make_request({"TEXT": mib}) for _ in range(700)]
        reqs.append(m.make_request({"TEXT": np.array([[b"hello world"]], dtype=object)}))
        out = m.execute(reqs)
        ids = [t for t in out[-1].output_tensors() if t.name() == "INPUT_IDS"][0].as_numpy()
        assert ids.tolist() == [[101, 7592, 2088, 102, 0, 0, 0, 0]]
        first = [t for t in out[0].output_tensors() if t.name() == "INPUT_IDS"][0].as_numpy()
        assert first.tolist() == [[101, 100, 102, 0, 0, 0, 0, 0]]


def test_model_launch_groups_give_the_same_outputs(tmp_path, monkeypatch):
    """Requests split into launches of at most LAUNCH_BYTES give the outputs of one launch."""
    from triton_textops.triton import base

    d = write_model(tmp_path, "tokenize", "tokenize", MODEL_1024, {"vocab.txt": vocab_path()})
    texts = [b"hello world", b"a" * 300, b"caf\xc3\xa9 x\xe3\x80\xae\xe1\xad\x84", b"", b"bad \xff", b"the end."]
    with load_model(d) as m:
        def run():
            return m.execute([m.make_request({"TEXT": np.array([[t]], dtype=object)}) for t in texts])

        whole = run()
        calls = []
        orig = m.instance.compute
        monkeypatch.setattr(m.instance, "compute", lambda items: calls.append(len(items)) or orig(items))
        monkeypatch.setattr(base, "LAUNCH_BYTES", 64)
        parts = run()
    assert calls == [1, 1, 3], calls  # 11 | 300 | 13 + 0 + 8 bytes (the bad request never reaches compute)
    for a, b in zip(whole, parts):
        assert (a.error() is None) == (b.error() is None)
        for ta, tb in zip(a.output_tensors(), b.output_tensors()):
            np.testing.assert_array_equal(ta.as_numpy(), tb.as_numpy())


# ------------------------------------------------------------------------ 3. canonical combining order

def nonzero_class_marks() -> list[str]:
    """Every Mn/Mc code point with a nonzero canonical combining class in Python's data (a superset of what
    HF's older data knows: the tables say which ones HF reorders)."""
    return [chr(c) for c in range(0x300, 0x110000)
            if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) in ("Mn", "Mc")
            and unicodedata.combining(chr(c))]


def references(marks: list[str]) -> list[str]:
    """One mark per (class, category) plus the issue's four, and a class-0 Mn (U+034F: ends a run)."""
    seen: dict = {}
    for m in marks:
        seen.setdefault((unicodedata.combining(m), unicodedata.category(m)), m)
    return sorted(set(seen.values()) | {"\u302e", "\u1b44", "\U0001d165", "\U0001d16d", "\u034f"})


@pytest.mark.parametrize("lowercase", [True, False])
def test_all_marks_in_both_orders_against_hf(lowercase):
    """Every nonzero-class mark against a reference of every class, in both orders, after "x", and with a
    starter, a removed control character and a barrier between them: the normalized tokens are HF's."""
    marks = nonzero_class_marks()
    refs = references(marks)
    texts = []
    for m in marks:
        for r in refs:
            texts += ["x" + m + r, "x" + r + m]
        texts += ["x" + m + "\x01" + refs[0], "x\u302e" + m + "\u034f\u1b44", "x" + m + "y\u1b44", "\U0001d15f" + m]
    norm = BertNormalizer(lowercase=lowercase)
    pre = Normalizer.get(lowercase).pretokenize(TextBatch.from_texts(texts))
    pre.check()
    pt = tokenizers.pre_tokenizers.BertPreTokenizer()
    diffs = [t for i, t in enumerate(texts)
             if [w.encode() for w, _ in pt.pre_tokenize_str(norm.normalize_str(t))] != pre.tokens(i)]
    assert len(texts) > 80_000 and diffs == [], [ascii(d) for d in diffs[:10]]


def test_reordered_marks_get_hf_ids_and_one_feature_word(tmp_path):
    """The issue's cases: a vocabulary holding x U+1D165 U+1D16D, and features counting both orders of two
    marks as one distinct word."""
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB_LINES + ["x\U0001d165\U0001d16d", "\u1b44\u302e"]) + "\n", encoding="utf-8")
    texts = ["x\U0001d16d\U0001d165", "x\U0001d165\U0001d16d", "\u302e\u1b44 a\u0301\u302e\u1b44!", "x\U0001d15f\U0001d16d"]
    ours = BertTokenizer.from_vocab(path).encode_rows(texts, max_length=12).input_ids
    np.testing.assert_array_equal(ours, hf_rows(texts, 12, path))
    assert ours[0, 1] == len(VOCAB_LINES)
    f = ReadabilityFeatures(lowercase=True, stopwords_name="t", stopwords=[], common=[], rare=[], mean=[0.0] * 7,
                            std=[1.0] * 7)
    assert f.transform(["x\u302e\u1b44 x\u1b44\u302e"], normalize=False)[0, :2].tolist() == [2, 1]


LONG_MARKS = "x" + "\u302e\u1b44" * 150_000 + " y"  # marks in falling order: each sorts before the run so far


def test_long_runs_of_marks_are_exact(tok):
    """An adversarial run of marks: the same tokens as HF."""
    pre = tok.pretokenize([LONG_MARKS])
    want = BertNormalizer(lowercase=True).normalize_str(LONG_MARKS).split(" ")
    assert pre.tokens(0) == [w.encode() for w in want]


@pytest.mark.timing
def test_long_runs_of_marks_are_linear(tok):
    """The run is sorted once when it ends, not quadratically (10x the marks take well under 30x the time, best
    of 3 each; a quadratic sort would take ~100x)."""
    import time

    def best(text):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            tok.pretokenize([text])
            times.append(time.perf_counter() - t0)
        return min(times)

    best(LONG_MARKS[:1000])  # compiled (or loaded from numba's cache) before timing
    assert best(LONG_MARKS) < 30 * best("x" + "\u302e\u1b44" * 15_000 + " y")


# ------------------------------------------------------------------------------ 4. vocabulary lines

ENDINGS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029", "\xa0",
           " ", "\t", "\u3000", "\u200b", "\ufeff", "\x00"]


def hf_vocab(path) -> dict[str, int]:
    return WordPiece.read_file(str(path))


def ours(path) -> dict[str, int]:
    return {t: i for i, t in enumerate(read_vocab(path))}


def test_vocab_reproducers_give_hf_ids(tmp_path):
    lines = list(VOCAB_LINES)
    lines[1000] += "\rzzz"
    lines[2000] = "to\x1c"
    path = tmp_path / "vocab.txt"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    assert ours(path) == hf_vocab(path)
    texts = ["hello world", "to", "zzz"]
    np.testing.assert_array_equal(BertTokenizer.from_vocab(path).encode_rows(texts, max_length=6).input_ids,
                                  hf_rows(texts, 6, path))


@pytest.mark.parametrize("seed", range(6))
def test_vocab_reader_fuzz_against_hf(tmp_path, seed):
    """Random tokens with random line endings, embedded and trailing whitespace / control characters,
    repeated tokens, empty lines, with and without a final newline: the same token -> id map as HF."""
    rng = random.Random(seed)
    out = []
    for _ in range(400):
        tokn = "".join(rng.choice(["a", "##b", "[X]", "é", "中", *ENDINGS[2:]]) for _ in range(rng.randint(0, 4)))
        out.append(tokn + rng.choice(["", *ENDINGS[2:]]) * rng.randint(0, 2) + rng.choice(ENDINGS[:2]))
    raw = "".join(out)
    if seed % 2:
        raw = raw.rstrip("\r\n")
    path = tmp_path / "vocab.txt"
    path.write_bytes(raw.encode())
    assert ours(path) == hf_vocab(path)


def test_vocab_edge_files(tmp_path):
    for raw in (b"", b"\n", b"\n\n", b"a", b"a\r", b"a\r\n\r\n", b"\xef\xbb\xbfa\nb"):
        path = tmp_path / "v.txt"
        path.write_bytes(raw)
        assert ours(path) == hf_vocab(path), raw
    path.write_bytes(b"a\n\xff\n")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        read_vocab(path)


# ---------------------------------------------------------------------------------- 5. parameter types

def test_two_texts_in_a_tuple_are_texts(tok):
    np.testing.assert_array_equal(tok.encode_rows(("hello", "world")).input_ids, tok.encode_rows(["hello", "world"]).input_ids)
    np.testing.assert_array_equal(tok.encode_rows((b"hello", b"world")).input_ids, tok.encode_rows(["hello", "world"]).input_ids)


@pytest.mark.parametrize(("kw", "message"), [
    ({"stride": 2.5, "return_overflowing_tokens": True, "max_length": 8}, "stride must be an integer"),
    ({"max_length": 2**40}, "max_length must be <= "),
    ({"max_length": 8.0}, "max_length must be an integer"),
    ({"max_length": "8"}, "max_length must be an integer"),
    ({"max_length": True}, "max_length must be an integer"),
    ({"max_length": 0}, "max_length must be >= 1"),
    ({"stride": -1}, "stride must be >= 0"),
    ({"return_overflowing_tokens": "yes"}, "return_overflowing_tokens must be True or False"),
    ({"add_special_tokens": 1}, "add_special_tokens must be True or False"),
    ({"dtype": "float32"}, "dtype must be int64 or int32"),
    ({"dtype": np.float64}, "dtype must be int64 or int32"),
    ({"dtype": "nonsense"}, "dtype must be int64 or int32"),
])
def test_bad_parameters_are_one_line_errors(tok, kw, message):
    for call in (lambda: tok.encode_rows(["a b"], **kw), lambda: tok.encode_pretokens(tok.pretokenize(["a b"]), **kw),
                 lambda: tok.pack(np.array([5]), np.array([0, 1]), **kw)):
        with pytest.raises(InputError, match=message) as e:
            call()
        assert "\n" not in str(e.value)


def test_memory_for_rows_is_an_input_error_naming_max_length(tok):
    with pytest.raises(InputError, match=r"max_length=2000000000: 1000 rows .* GiB"):
        tok.encode_rows(["a"] * 1000, max_length=2_000_000_000)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, "int32", np.dtype("int64"), "i4"])
def test_numpy_dtypes_work(tok, dtype):
    enc = tok.encode_rows(["hello world"], max_length=8, dtype=dtype)
    assert enc.input_ids.dtype == np.dtype(dtype)
    assert enc.input_ids.tolist() == [[101, 7592, 2088, 102, 0, 0, 0, 0]]


def test_numpy_integer_parameters_work(tok):
    a = tok.encode_rows(["a b c d e f g"], max_length=np.int32(6), stride=np.int16(1), return_overflowing_tokens=np.True_)
    b = tok.encode_rows(["a b c d e f g"], max_length=6, stride=1, return_overflowing_tokens=True)
    np.testing.assert_array_equal(a.input_ids, b.input_ids)


def test_other_public_functions_check_their_parameters(tok, feats):
    checks = [
        (lambda: feats.transform(["a"], normalize="no"), "normalize must be True or False"),
        (lambda: feats.transform_pretokens(tok.pretokenize(["a"]), check=None), "check must be True or False"),
        (lambda: feats.transform_pretokens(["a"]), "pre must be PreTokens"),
        (lambda: tok.encode_pretokens(["a"]), "pre must be PreTokens"),
        (lambda: tok.wordpiece("a"), "pre must be PreTokens"),
        (lambda: preprocess(tok, feats, ["a"], max_length=2.5), "max_length must be an integer"),
        (lambda: preprocess(tok, feats, ["a"], normalize=1), "normalize must be True or False"),
        (lambda: preprocess(tok, "feats", ["a"]), "preprocess takes a BertTokenizer"),
        (lambda: ReadabilityFeatures.fit(["a b c"], n_common=2.5), "n_common must be an integer"),
        (lambda: BertTokenizer(VOCAB_LINES, lowercase="yes"), "lowercase must be True or False"),
        (lambda: BertTokenizer("vocab.txt"), "vocab must be a sequence of str"),
        (lambda: tok.tokenize(b"abc"), "text must be a str"),
        (lambda: Normalizer.get(True).pretokenize(["a"]), "batch must be a TextBatch"),
        (lambda: Normalizer.get(True).pretokenize(TextBatch.from_texts(["a"]), [b""]), "specials must be non-empty"),
    ]
    for call, message in checks:
        with pytest.raises(ValueError, match=message):
            call()


# -------------------------------------------------------------- more of the same kind: float32 counters

@pytest.mark.slow
def test_feature_counts_past_2_24_are_exact():
    """A corpus word 17 million times in one text (34 MB): float32 counters stopped at 2**24 = 16777216; the
    spec's values are the exact counts (and ratios of them) rounded once to float32."""
    n = 17_000_001
    text = "a " * n + "bb. cc. dd."
    f = ReadabilityFeatures(lowercase=True, stopwords_name="t", stopwords=["a"], common=["a"], rare=["bb"],
                            mean=[0.0] * 9, std=[1.0] * 9)
    x = f.transform([text], normalize=False)[0]
    n_words, n_sent = n + 3, 3
    want = [n_words, 4, 3, n_sent, n_words / n_sent, n, n / n_sent, n, 1]
    assert x.tolist() == [float(np.float32(v)) for v in want]
