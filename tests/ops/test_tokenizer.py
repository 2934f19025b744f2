"""BertTokenizer against the HuggingFace oracle (tokenizers pinned in the dev extra)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textcases import ADVERSARIAL, mixed_texts

from triton_textops import BertTokenizer, InputError
from triton_textops.ops.core.batch import TextBatch, pack_host
from triton_textops.ops.core.utf8 import invalid_utf8_rows

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import BertWordPieceTokenizer  # noqa: E402


@pytest.fixture(scope="module")
def oracle(vocab_path):
    return BertWordPieceTokenizer(vocab_path, lowercase=True)


def reference_rows(oracle, texts, max_length, stride=0, overflow=False, special=True):
    """HF encodings (main + overflowing) as padded rows plus the row→text mapping."""
    oracle.no_padding()
    if overflow or max_length:
        oracle.enable_truncation(max_length, stride=stride)
    rows, mapping = [], []
    for i, enc in enumerate(oracle.encode_batch(texts, add_special_tokens=special)):
        for e in [enc, *(enc.overflowing if overflow else [])]:
            rows.append(e.ids)
            mapping.append(i)
    ids = np.zeros((len(rows), max_length), dtype=np.int64)
    mask = np.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask, np.array(mapping, dtype=np.int64)


def windows_by_definition(pieces, L, S, cls_id, sep_id):
    """tokenizer.md's window rule, written independently of the implementation."""
    C = L - 2
    if len(pieces) <= C:
        starts = [0]
    else:
        starts, k = [], 0
        while True:
            starts.append(k * (C - S))
            if k * (C - S) + C >= len(pieces):
                break
            k += 1
    return [[cls_id, *pieces[s : s + C], sep_id] for s in starts]


def assert_same(enc, ids, mask, mapping):
    np.testing.assert_array_equal(enc.input_ids, ids)
    np.testing.assert_array_equal(enc.attention_mask, mask)
    np.testing.assert_array_equal(enc.token_type_ids, np.zeros_like(ids))
    np.testing.assert_array_equal(enc.overflow_to_sample_mapping, mapping)


@pytest.mark.parametrize("max_length", [128, 512])
def test_austen_truncated(oracle, tok, austen, max_length):
    enc = tok.encode_rows(austen, max_length=max_length)
    assert enc.input_ids.dtype == np.int64 and enc.input_ids.shape == (len(austen), max_length)
    assert_same(enc, *reference_rows(oracle, austen, max_length))


@pytest.mark.parametrize(("max_length", "stride"), [(128, 32), (64, 0), (512, 100)])
def test_austen_overflow_windows(oracle, tok, austen, max_length, stride):
    enc = tok.encode_rows(austen, max_length=max_length, stride=stride, return_overflowing_tokens=True)
    ids, mask, mapping = reference_rows(oracle, austen, max_length, stride=stride, overflow=True)
    assert_same(enc, ids, mask, mapping)
    if max_length < 512:  # no Austen paragraph needs more than 512 tokens
        assert enc.input_ids.shape[0] > len(austen)  # long paragraphs really were split


def test_overflow_matches_the_written_definition(oracle, tok, austen):
    L, S = 32, 8
    texts = austen[:40] + ["", "short one"]
    enc = tok.encode_rows(texts, max_length=L, stride=S, return_overflowing_tokens=True)
    oracle.no_truncation()
    rows, mapping = [], []
    for i, e in enumerate(oracle.encode_batch(texts, add_special_tokens=False)):
        for w in windows_by_definition(e.ids, L, S, tok.cls_id, tok.sep_id):
            rows.append(w + [0] * (L - len(w)))
            mapping.append(i)
    np.testing.assert_array_equal(enc.input_ids, np.array(rows))
    np.testing.assert_array_equal(enc.overflow_to_sample_mapping, mapping)


@pytest.mark.parametrize("max_length", [16, 64])
def test_adversarial_unicode(oracle, tok, max_length):
    enc = tok.encode_rows(ADVERSARIAL, max_length=max_length)
    assert_same(enc, *reference_rows(oracle, ADVERSARIAL, max_length))
    enc = tok.encode_rows(ADVERSARIAL, max_length=max_length, stride=3, return_overflowing_tokens=True)
    assert_same(enc, *reference_rows(oracle, ADVERSARIAL, max_length, stride=3, overflow=True))


@pytest.mark.parametrize("lowercase", [True, False])
def test_mixed_script_texts(vocab_path, lowercase):
    """1500 seeded texts mixing every script, control and space class, raw specials and over-long words: whole
    batch, overflow windows and batches of one against HF."""
    oracle = BertWordPieceTokenizer(vocab_path, lowercase=lowercase)
    tok = BertTokenizer.from_vocab(vocab_path, lowercase=lowercase)
    words = [w for w in open(vocab_path, encoding="utf-8").read().split("\n") if w and not w.startswith("[")]
    texts = mixed_texts(13 + lowercase, 1500, words)
    assert_same(tok.encode_rows(texts, max_length=48), *reference_rows(oracle, texts, 48))
    enc = tok.encode_rows(texts, max_length=20, stride=17, return_overflowing_tokens=True)
    assert_same(enc, *reference_rows(oracle, texts, 20, stride=17, overflow=True))
    for text in texts[:100]:
        assert_same(tok.encode_rows([text], max_length=32), *reference_rows(oracle, [text], 32))


def test_pieces_equal_oracle_tokens(oracle, tok):
    oracle.no_truncation()
    for text in ADVERSARIAL:
        assert tok.tokenize(text) == oracle.encode(text, add_special_tokens=False).tokens, text


def test_empty_and_whitespace_rows(tok):
    enc = tok.encode_rows(["", "   ", "\n\t"], max_length=8)
    expected = np.array([[101, 102, 0, 0, 0, 0, 0, 0]] * 3)
    np.testing.assert_array_equal(enc.input_ids, expected)
    np.testing.assert_array_equal(enc.attention_mask, (expected > 0).astype(np.int64))
    enc = tok.encode_rows(["", "a b"], max_length=4, add_special_tokens=False)
    np.testing.assert_array_equal(enc.attention_mask, [[0, 0, 0, 0], [1, 1, 0, 0]])
    empty = tok.encode_rows([], max_length=8)
    assert empty.input_ids.shape == (0, 8)


def test_without_special_tokens(oracle, tok, austen):
    enc = tok.encode_rows(austen[:50], max_length=40, add_special_tokens=False)
    assert_same(enc, *reference_rows(oracle, austen[:50], 40, special=False))


@pytest.mark.parametrize("lowercase", [False])
def test_cased_configuration(tmp_path, vocab_path, austen, lowercase):
    # A cased vocabulary: the uncased one plus capitalised and accented entries.
    base = open(vocab_path, encoding="utf-8").read().split("\n")[:-1]
    extra = ["The", "Elizabeth", "Darcy", "Mr", "Mrs", "##S", "Café", "É", "##é", "İ", "Σ", "Ωmega"]
    path = tmp_path / "cased-vocab.txt"
    path.write_text("\n".join(base + extra) + "\n", encoding="utf-8")
    oracle = BertWordPieceTokenizer(str(path), lowercase=False)
    tok = BertTokenizer.from_vocab(path, lowercase=False)
    texts = austen[:300] + ADVERSARIAL
    assert_same(tok.encode_rows(texts, max_length=96), *reference_rows(oracle, texts, 96))


def test_int32_and_input_forms(tok, austen):
    texts = austen[:20]
    ref = tok.encode_rows(texts, max_length=64)
    obj = np.array([t.encode() for t in texts], dtype=object)
    for form in (obj, obj.reshape(-1, 1), [t.encode() for t in texts], pack_host(texts)):
        np.testing.assert_array_equal(tok.encode_rows(form, max_length=64).input_ids, ref.input_ids)
    small = tok.encode_rows(texts, max_length=64, dtype="int32")
    assert small.input_ids.dtype == np.int32 and small.attention_mask.dtype == np.int32
    np.testing.assert_array_equal(small.input_ids, ref.input_ids)


def test_batches_of_one_take_the_same_path_in_every_form():
    """A single text as a str, bytes, or a request's [1] / [1, 1] object array packs like the general path;
    invalid UTF-8 and wrong shapes are still refused."""
    for t in ["caf\u00e9 one", "", "x" * 1000]:
        want = pack_host([t, t])[0][: len(t.encode())]
        for form in ([t], [t.encode()], np.array([t.encode()], dtype=object), np.array([[t.encode()]], dtype=object)):
            data, offs = pack_host(form)
            assert data.tobytes() == want.tobytes() and offs.tolist() == [0, len(want)]
    with pytest.raises(InputError, match="shape"):
        pack_host(np.array(b"zero-d", dtype=object))
    with pytest.raises(InputError, match="row 0"):
        pack_host(["\ud800"])
    assert invalid_utf8_rows(*pack_host([b"\xff"])).tolist() == [0]


def test_truncated_rows_stop_reading_tokens_but_check_all_utf8(oracle, tok, austen):
    """Fixed-length rows stop the pre-tokenizer once the row is full: the rows equal HF's (raw special tokens before
    and after the cut included), and bytes past the cut are still checked to be UTF-8."""
    long = " ".join(austen[:40])
    texts = [long, "[CLS] " * 30 + long, long + " [SEP]", "x" * 10 + " [MASK]" * 3, long[:50]]
    for n in (8, 24, 128):
        assert_same(tok.encode_rows(texts, max_length=n), *reference_rows(oracle, texts, n))
    big = (long + " ") * 200  # ~ 2 MB: the rows are those of its first words
    np.testing.assert_array_equal(tok.encode_rows([big], max_length=16).input_ids, tok.encode_rows([long], max_length=16).input_ids)
    for tail in (b"\xff", b"\xe2\x82", b"ok \xed\xa0\x80"):
        with pytest.raises(InputError, match="row 1"):
            tok.encode_rows([b"fine", long.encode() + tail], max_length=8)


def test_invalid_utf8_names_the_row(tok):
    bad = [b"fine", b"also fine", b"broken \xff here", b"\xe2\x82", b"ok \xed\xa0\x80 surrogate"]
    with pytest.raises(InputError, match="row 2") as ei:
        tok.encode(bad)
    assert list(ei.value.rows) == [2, 3, 4]
    for b in (b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\x80", b"a\xc3"):
        with pytest.raises(InputError, match="row 1"):
            tok.encode([b"ok", b])
    # a character split across two rows is invalid in both
    data, offs = pack_host([b"\xc3\xa9", b"x"])
    with pytest.raises(InputError, match="row 0") as ei:
        tok.encode(TextBatch.from_texts((data, np.array([0, 1, 3]))))
    assert list(ei.value.rows) == [0, 1]


def test_vocab_without_specials_fails_at_load(tmp_path):
    p = tmp_path / "v.txt"
    p.write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[CLS\], \[SEP\]"):
        BertTokenizer.from_vocab(p)


def test_bad_packing_arguments(tok):
    with pytest.raises(InputError, match="stride"):
        tok.encode_rows(["a b c"], max_length=8, stride=6, return_overflowing_tokens=True)
    with pytest.raises(InputError, match="max_length"):
        tok.encode_rows(["a"], max_length=2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=60), min_size=1, max_size=6))
def test_hypothesis_arbitrary_unicode(oracle, tok, texts):
    enc = tok.encode_rows(texts, max_length=24, stride=4, return_overflowing_tokens=True)
    assert_same(enc, *reference_rows(oracle, texts, 24, stride=4, overflow=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab AÉé.,[]CLS#\u0301中😀")), max_size=40), min_size=1, max_size=4))
def test_hypothesis_dense_alphabet(oracle, tok, texts):
    assert_same(tok.encode_rows(texts, max_length=20), *reference_rows(oracle, texts, 20))


@pytest.mark.gpu
def test_gpu_equals_cpu(vocab_path, austen):
    import cupy as cp

    cpu = BertTokenizer.from_vocab(vocab_path, device="cpu")
    gpu = BertTokenizer.from_vocab(vocab_path, device="cuda")
    texts = austen + ADVERSARIAL
    for kw in ({"max_length": 128}, {"max_length": 64, "stride": 16, "return_overflowing_tokens": True}):
        a, b = cpu.encode_rows(texts, **kw), gpu.encode_rows(texts, **kw)
        for name in ("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"):
            assert isinstance(b[name], cp.ndarray)
            np.testing.assert_array_equal(a[name], cp.asnumpy(b[name]))
    data, offs = pack_host(texts)
    dev = gpu.encode_rows((cp.asarray(data), cp.asarray(offs)), max_length=128)
    np.testing.assert_array_equal(cp.asnumpy(dev.input_ids), cpu.encode_rows(texts, max_length=128).input_ids)
    for t in austen[:40] + ADVERSARIAL:  # batches of one: the whole-word lookup, then the walk
        np.testing.assert_array_equal(cp.asnumpy(gpu.encode_rows([t]).input_ids), cpu.encode_rows([t]).input_ids)


def test_cudf_backend_needs_a_gpu(vocab_path):
    with pytest.raises(ValueError, match="GPU"):
        BertTokenizer.from_vocab(vocab_path, device="cpu", backend="cudf")
    with pytest.raises(ValueError, match="backend"):
        BertTokenizer.from_vocab(vocab_path, backend="fast")


@pytest.mark.gpu
def test_cudf_backend_on_prose(vocab_path, austen):
    """cuDF's pieces equal ours on ordinary prose (its known differences are in cudf_backend's doc)."""
    pytest.importorskip("cudf")
    import cupy as cp

    ours = BertTokenizer.from_vocab(vocab_path, device="cuda")
    cudf_tok = BertTokenizer.from_vocab(vocab_path, device="cuda", backend="cudf")
    a = ours.encode_rows(austen[:500], max_length=128)
    b = cudf_tok.encode_rows(austen[:500], max_length=128)
    same = (cp.asnumpy(a.input_ids) == cp.asnumpy(b.input_ids)).all(axis=1)
    assert same.mean() > 0.99, f"{(~same).sum()} of 500 rows differ"


def test_one_text_at_a_time(oracle, tok, austen):
    """Batches of one (the walk path; a batch without special tokens) give the rows of the whole batch."""
    texts = austen[:120] + ADVERSARIAL + ["[CLS] x [SEP]", "[MASK]", "un[UNK]able"]
    ids, mask, mapping = reference_rows(oracle, texts, 64)
    for i, t in enumerate(texts):
        assert_same(tok.encode_rows([t], max_length=64), ids[i : i + 1], mask[i : i + 1], mapping[i : i + 1] * 0)


def test_vocab_table_verifies_every_hit():
    """A hash hit is only an answer once its bytes are compared: a slot whose key is forged to equal the
    query's hash, but whose bytes differ (with or without the ## prefix), finds nothing."""
    from triton_textops.ops.core.hashtable import FNV_CONT, ByteTable, find_bytes, fnv_host, slot_of

    table = ByteTable({"apple": 0, "##ing": 1, "pie": 2, "abcdefghijklmnopqr": 3})
    data = np.frombuffer(b"applepieingabcdefghijklmnopqrXpplq", dtype=np.uint8)

    def find(start: int, length: int, plen: int, slots: np.ndarray | None = None) -> int:
        h = fnv_host(data[start : start + length].tobytes(), FNV_CONT if plen else 0x811C9DC5)
        return find_bytes(h, data, start, length, plen, table.slots if slots is None else slots, table.pool,
                          table.mask, table.max_probe)

    assert [find(0, 5, 0), find(5, 3, 0), find(8, 3, 2), find(11, 18, 0)] == [0, 2, 1, 3]
    assert [find(8, 3, 0), find(0, 5, 2), find(29, 5, 0), find(0, 4, 0)] == [-1, -1, -1, -1]
    # forge: the slot of "apple" gets the key of "Xpplq" (same length, other bytes)
    forged = table.slots.copy()
    h_apple, h_fake = fnv_host(b"apple"), fnv_host(b"Xpplq")
    j = slot_of(h_apple, table.mask)
    while forged[j, 0] != (h_apple & 0x7FFFFFFF):
        j = (j + 1) & table.mask
    forged[j, 0] = h_fake & 0x7FFFFFFF
    k = slot_of(h_fake, table.mask)
    forged[[j, k]] = forged[[k, j]]  # put it where the forged key is probed first
    assert find(29, 5, 0, forged) == -1
    assert fnv_host(b"##") == FNV_CONT


def test_vocab_table_probe_bound_and_duplicates():
    """Every string is found within the measured probe bound; a repeated token keeps its last id."""
    from triton_textops.bundled import vocab_path as bundled_vocab
    from triton_textops.ops.core.hashtable import ByteTable, find_bytes, fnv_host

    words = open(bundled_vocab(), encoding="utf-8").read().split("\n")[:-1]
    ids = {w: i for i, w in enumerate(words)}
    table = ByteTable(ids)
    pool = np.frombuffer("".join(ids).encode(), dtype=np.uint8)
    pos = 0
    for w, i in ids.items():
        b = w.encode()
        assert find_bytes(fnv_host(b), pool, pos, len(b), 0, table.slots, table.pool, table.mask, table.max_probe) == i
        pos += len(b)
    tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "x", "x"])
    assert tok.encode_rows(["x"], max_length=4).input_ids.tolist() == [[2, 5, 3, 0]]


def test_tune_host_allocator_is_idempotent():
    import sys

    from triton_textops.ops.core.xp import tune_host_allocator

    first = tune_host_allocator()
    assert tune_host_allocator() is first
    if sys.platform.startswith("linux"):
        import platform

        if platform.libc_ver()[0] == "glibc":
            assert first is True


@pytest.mark.parametrize("lowercase", [True, False])
def test_unicode_tables_respect_the_kernel_bounds(lowercase):
    """Stage (a) sizes its regions by two properties of the shipped tables: no code point normalizes to more
    than ``expand`` times its UTF-8 length, and none to more than one pre-token."""
    from triton_textops.ops.wordpiece.normalize import PUNCT, WORD, _host_tables
    from triton_textops.ops.wordpiece.pretokenize import Normalizer

    t = _host_tables()
    key = "uncased" if lowercase else "cased"
    out_len, out_off, pool, cls = t[f"{key}_len"], t[f"{key}_off"].astype(np.int64), t[f"{key}_pool"], t["pretok_class"]
    cp = np.arange(out_len.shape[0])
    in_len = np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4)))
    expand = Normalizer.get(lowercase).expand
    assert (out_len <= expand * in_len).all() and expand == (3 if lowercase else 2)
    for off, ln in np.unique(np.stack([out_off, out_len.astype(np.int64)])[:, out_off >= 0], axis=1).T:
        c = [int(cls[ord(ch)]) for ch in pool[off : off + ln].tobytes().decode("utf-8")]
        tokens = sum(1 for j, x in enumerate(c) if x == PUNCT or (x == WORD and (j == 0 or c[j - 1] != WORD)))
        assert tokens <= 1, (off, ln)


def test_ten_megabyte_inputs_and_empty_batches(tok):
    big = ("word " * 1_000_000) + "x" * 5_000_000
    enc = tok.encode_rows([big, "", "tail"], max_length=16)
    assert enc.input_ids.shape == (3, 16) and enc.input_ids[0, 1] == tok.vocab["word"]
    win = tok.encode_rows([big[:2_000_000]], max_length=64, stride=8, return_overflowing_tokens=True)
    assert win.input_ids.shape[0] == 1 + (400_000 - 62 + 53) // 54
    for kw in ({}, {"stride": 2, "return_overflowing_tokens": True}):
        assert tok.encode_rows([], max_length=8, **kw).input_ids.shape == (0, 8)


def test_pack_checks_offsets_and_unknown_specials_read_as_unk(tok):
    """pack() reads the pieces through the offsets: offsets past the pieces are refused, not followed."""
    pieces = np.array([7592, 2088], dtype=np.int64)
    with pytest.raises(InputError, match="offsets"):
        tok.pack(pieces, np.array([0, 5]))
    with pytest.raises(InputError, match="offsets"):
        tok.pack(pieces, np.array([1, 2]))
    assert tok.pack(pieces, np.array([0, 2]), max_length=5).input_ids.tolist() == [[101, 7592, 2088, 102, 0]]
    # pre-tokens marked with more raw specials than the tokenizer knows: the extra one becomes [UNK]
    pre = tok.normalizer.pretokenize(TextBatch.from_texts(["a <X> b"]), [*tok.special_bytes, b"<X>"])
    ids = tok.encode_pretokens(pre, max_length=8).input_ids.tolist()
    assert ids == [[101, 1037, tok.unk_id, 1038, 102, 0, 0, 0]]
