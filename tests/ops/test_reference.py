"""The plain-Python references (``tests/reference``) against HF ``tokenizers`` and tiktoken, the kernels against the
references (0 differences), and the SWAR helpers of the BPE scanners against per-byte loops.

The BERT reference classifies characters with Python's ``unicodedata``; HF with older tables (normalizer and
pre-tokenizer) and newer ones (NFD, lowercase). :func:`differing_code_points` measures where the two disagree, one
code point at a time; :func:`test_bert_unicode_differences` pins what kinds of code point those are, and the texts
the references are compared on lose them (:func:`usable`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

import bpe_oracles as O
import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reference import bert as RB
from reference import bpe as RBPE
from reference.wordpiece import WordPiece
from textcases import ADVERSARIAL, mixed_texts

from triton_textops import BertTokenizer, BPETokenizer
from triton_textops.ops.bpe import merge as M
from triton_textops.ops.bpe import pretok as P

tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("tiktoken")
from tokenizers import BertWordPieceTokenizer, models, normalizers, pre_tokenizers  # noqa: E402

# ------------------------------------------------------------------------------------------ texts

WHITE = "".join(sorted(RB.WHITE_SPACE))
HARD = [
    "我们今天去北京大学看樱花然后一起吃午饭再回家",  # CJK, no spaces
    "東京都渋谷区で日本語の文章を書いていますカタカナとひらがなが混在ｶﾀｶﾅ",
    "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ กรุงเทพมหานคร",
    "اللغة العربية جميلة، أليس كذلك؟ مَرْحَبًا بِكُمْ ١٢٣٤ ﷺ ﻻ",
    "e\u0301\u0323 a\u0323\u0301 o\u0308\u0304 \u0301start Z\u0351\u0352\u0353 \u1100\u1161\u11a8 \u212b A\u030a Å "
    "q\u0307\u0323 \u0344 \u0f73 \u1e9b\u0323 ǅ ᾈ ﬁ İstanbul ΣΑΣ",  # marks, reordering, singletons, Hangul jamo
    "👩\u200d🔬 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d⚧\ufe0f 🧑🏽\u200d🤝\u200d🧑🏿 ❤\ufe0f\u200d🔥 🫠 🇺🇳 #\ufe0f\u20e3 1\ufe0f\u20e3",
    "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xA0))) + "x\u200b\u200c\u200d\u2060\ufeff"
    "\u00ad\u061c\u202e\u2066\u180ey\ue000\U000f0000\ufffd\x00z\U000e0041\U000e007f",  # controls, format, private use
    "a" + WHITE + "b" + WHITE[::-1] + "c\x1c\x1d\x1e\x1fd" + WHITE * 3,  # every whitespace character, in runs
    *(f"x{c}y{c * 3}z {c}" for c in WHITE + "\x1c\x1f\x0b\x0c\x85\u200b\u180e"),
    "mixed" + "".join(f"{w}{p}" for w, p in zip(["word"] * 12, "!?.,;:'\"()[]")) + "¿¡«»‹›–—‘’“”„…‰※‼⁇",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "é" * 100 + " " + "é" * 101 + " " + "ab" * 60,
]


@functools.cache
def code_point_sample() -> list[str]:
    """Every 127th code point (surrogates left out) in the contexts of ``bpe_oracles.every_code_point_texts``."""
    cps = [c for c in range(0, 0x110000, 127) if not 0xD800 <= c < 0xE000]
    return ["".join(f"x{chr(c)} {chr(c)}{chr(c)}1{chr(c)}'s\n" for c in cps[i:i + 1024]) for i in range(0, len(cps), 1024)]


def _scan_cps() -> list[int]:
    """Planes 0, 1 and 14 whole, every 7th of planes 2 and 3 (CJK ideographs: Lo in every version), the
    noncharacters, and every 251st of the rest (unassigned or private use in every version); "|" is the probes'
    separator."""
    dense = [*range(0x20000), *range(0x20000, 0x40000, 7), *range(0xE0000, 0xF0000)]
    rest = [*range(0x40000, 0xE0000, 251), *range(0xF0000, 0x110000, 251)]
    nonchar = [p << 16 | 0xFFFE for p in range(17)] + [p << 16 | 0xFFFF for p in range(17)]
    return sorted({c for c in dense + rest + nonchar if not 0xD800 <= c < 0xE000 and c != 0x7C})


@functools.cache
def differing_code_points() -> dict[str, dict[int, tuple]]:
    """Per step, the code points where HF and the reference differ on the character alone: {cp: (HF's, ours)}.
    "clean": clean_text; "fold": NFD + nonspacing marks dropped + lowercase; "split": whitespace / punctuation /
    word character for the pre-tokenizer (each character doubled: punctuation splits it in two)."""
    chars = [chr(c) for c in _scan_cps()]
    joined = "|".join(chars)
    out = {}
    for step, kw in (("clean", dict(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)),
                     ("fold", dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=True))):
        hf = normalizers.BertNormalizer(**kw).normalize_str(joined).split("|")
        ref = RB.normalize(joined, **kw).split("|")
        assert len(hf) == len(ref) == len(chars)
        out[step] = {ord(c): (h, r) for c, h, r in zip(chars, hf, ref) if h != r}
    toks = [t for t, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(" ".join(c + c for c in chars))]
    k, split = 0, {}
    for c in chars:
        if k < len(toks) and toks[k] == c + c:
            h, k = "word", k + 1
        elif k + 1 < len(toks) and toks[k] == toks[k + 1] == c:
            h, k = "punct", k + 2
        else:
            h = "space"
        r = "space" if RB.is_whitespace(c) else "punct" if RB.is_punctuation(c) else "word"
        if h != r:
            split[ord(c)] = (h, r)
    assert k == len(toks)
    out["split"] = split
    return out


@functools.cache
def excluded() -> frozenset[str]:
    ex = frozenset(chr(c) for d in differing_code_points().values() for c in d)
    # (a broken reference must not hide itself by excluding what it gets wrong: test_bert_unicode_differences
    # says which code points may differ; here, none of ASCII or of the hand-written texts, and few)
    assert len(ex) < 800 and not ex & (set(map(chr, range(128))) | set("".join(HARD + ADVERSARIAL))), sorted(ex)[:20]
    return ex


def usable(text: str) -> str:
    """``text`` without the code points HF and the reference classify apart."""
    ex = excluded()
    return "".join(c for c in text if c not in ex)


SPECIALS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")
SPECIAL_RE = re.compile("(" + "|".join(map(re.escape, SPECIALS)) + ")")


def read_vocab(path: str) -> list[str]:
    """A vocab.txt's tokens as HF's WordPiece::read_file: lines end at \\n, each loses its trailing White_Space."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln.rstrip(WHITE) for ln in lines]


@pytest.fixture(scope="module")
def wp(vocab_path: str) -> WordPiece:
    """The uncased WordPiece reference over the BERT vocabulary fixture."""
    return WordPiece.from_tokens(read_vocab(vocab_path))


@pytest.fixture(scope="module")
def bert_texts(austen: list[str], wp: WordPiece) -> list[str]:
    words = [w for w in list(wp.vocab)[1000:] if w.isalpha()]
    texts = austen[:80] + HARD + ADVERSARIAL + O.BPE_ADVERSARIAL + mixed_texts(43, 120, words) + code_point_sample()
    return [usable(t) for t in texts]


def reference_ids(wp: WordPiece, text: str, lowercase: bool) -> list[int]:
    """HF's pipeline in the references: raw special tokens matched first, each text between normalized,
    pre-tokenized and split into word pieces."""
    out: list[int] = []
    for k, seg in enumerate(SPECIAL_RE.split(text)):
        out.extend([wp.vocab[seg]] if k % 2 else wp.ids(RB.pre_tokenize(RB.normalize(seg, lowercase=lowercase))))
    return out


@pytest.fixture(scope="module")
def bert_ref(bert_texts: list[str], wp: WordPiece) -> dict[bool, list[list[int]]]:
    return {lc: [reference_ids(wp, t, lc) for t in bert_texts] for lc in (True, False)}


def kernel_ids(tok: BertTokenizer, texts: list[str], longest: int) -> list[list[int]]:
    """Our BERT kernels' ids of each text, without [CLS]/[SEP] or truncation (rows longer than any text)."""
    enc = tok.encode_rows(texts, max_length=max(longest, 1), add_special_tokens=False)
    ids, mask = np.asarray(enc.input_ids), np.asarray(enc.attention_mask)
    return [row[:m].tolist() for row, m in zip(ids, mask.sum(axis=1))]


def first_diffs(got: list, exp: list, texts: list[str]) -> list[tuple]:
    return [(i, texts[i][:70], got[i][:12], exp[i][:12]) for i in range(len(texts)) if got[i] != exp[i]][:3]


# ------------------------------------------------------------------------------------------ BERT


def test_bert_unicode_differences() -> None:
    """What kinds of code point HF (tokenizers 0.22) and Python's unicodedata classify apart, and no others."""
    d = differing_code_points()
    cat = lambda c: unicodedata.category(chr(c))  # noqa: E731
    # clean_text: format characters newer than HF's tables (HF keeps them: U+0890, U+13430.., U+110CD)
    assert all(cat(c) == "Cf" and h == chr(c) and r == "" for c, (h, r) in d["clean"].items()), d["clean"]
    # fold: nonspacing marks newer than HF's tables (HF keeps them), a few marks whose category changed
    # (Mn <-> Mc), and case pairs newer than Python's Unicode (Cn here, lowercased by Rust)
    kinds = {c: cat(c) for c in d["fold"]}
    assert set(kinds.values()) <= {"Mn", "Mc", "Cn"}, kinds
    assert all(h != "" and r == chr(c) for c, (h, r) in d["fold"].items() if kinds[c] == "Cn")
    assert all(h == chr(c) and r == "" for c, (h, r) in d["fold"].items() if kinds[c] == "Mn")
    # split: punctuation newer than HF's tables (HF: word characters), and two that left P* since
    # (U+166D CANADIAN SYLLABICS CHI SIGN, now So; U+111C9 SHARADA SANDHI MARK, now Mn)
    assert all(cat(c)[0] == "P" and h == "word" or c in (0x166D, 0x111C9) and h == "punct"
               for c, (h, _) in d["split"].items()), d["split"]
    counts = [len(d[k]) for k in ("clean", "fold", "split")]
    assert sum(counts) < 800, counts
    if (unicodedata.unidata_version, tokenizers.__version__) == ("14.0.0", "0.22.2"):  # (as measured: Python 3.11)
        assert counts == [13, 441, 106]
    assert not set(map(ord, "".join(HARD + ADVERSARIAL))) & set().union(*d.values())


def test_cjk_ranges() -> None:
    """handle_chinese_chars on each end of each range, and in HF's gap 0x2B820..0x2B91F."""
    cps = [c + k for lo, hi in RB.CJK for c in (lo, hi) for k in (-1, 0, 1)] + [0x2B820, 0x2B91F, 0x3000, 0x30FF]
    text = "".join(f"a{chr(c)}b" for c in cps)
    kw = dict(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    assert RB.normalize(text, **kw) == normalizers.BertNormalizer(**kw).normalize_str(text)


@pytest.mark.parametrize(("strip_accents", "lowercase"), [(None, True), (None, False), (True, False), (False, True)])
def test_bert_normalizer_and_pretokenizer_vs_hf(bert_texts: list[str], strip_accents: bool | None,
                                                lowercase: bool) -> None:
    hf_norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents,
                                         lowercase=lowercase)
    hf_pre = pre_tokenizers.BertPreTokenizer()
    bad = []
    for t in bert_texts:
        ours = RB.normalize(t, strip_accents=strip_accents, lowercase=lowercase)
        if ours != hf_norm.normalize_str(t) or RB.pre_tokenize(ours) != [s for s, _ in hf_pre.pre_tokenize_str(ours)]:
            bad.append(t[:80])
    assert not bad, bad[:3]


@pytest.mark.filterwarnings("ignore:Deprecated in 0.9.0:DeprecationWarning")  # (BertWordPieceTokenizer's own)
@pytest.mark.parametrize("lowercase", [True, False])
def test_bert_reference_vs_hf(vocab_path: str, bert_texts: list[str], bert_ref: dict, lowercase: bool) -> None:
    """The whole pipeline (specials, normalizer, pre-tokenizer, WordPiece) against BertWordPieceTokenizer."""
    hf = BertWordPieceTokenizer(vocab_path, lowercase=lowercase)
    got = [e.ids for e in hf.encode_batch(bert_texts, add_special_tokens=False)]
    assert not first_diffs(bert_ref[lowercase], got, bert_texts)


EDGE_WORDS = ["a" * 99, "a" * 100, "a" * 101, "é" * 100, "é" * 101, "中" * 100, "😀" * 101, "##", "##a", "#", "[UNK]",
              "", "\u0378", "x\u0378", "unaffable", "ab" * 50, "ab" * 51, "1234567890" * 10, "straße", "\u0301"]


def test_wordpiece_reference_vs_hf(bert_texts: list[str], wp: WordPiece) -> None:
    """Every pre-token of the texts (normalized, cased and uncased) and the edge words, through HF's model."""
    hf = models.WordPiece(wp.vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    words = {w for t in bert_texts for lc in (True, False) for w in RB.pre_tokenize(RB.normalize(t, lowercase=lc))}
    words = sorted(words) + EDGE_WORDS
    bad = [(w, wp.tokenize(w)) for w in words if wp.tokenize(w) != [x.value for x in hf.tokenize(w)]]
    assert len(words) > 5000 and not bad, bad[:5]


SMALL = {"<unk>": 0, "a": 1, "ab": 2, "abc": 3, "@@b": 4, "@@bc": 5, "@@c": 6, "b": 7, "@@a": 8, "é": 9, "@@é": 10}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcé@", max_size=12), st.integers(1, 10))
def test_wordpiece_parameters_vs_hf(word: str, max_chars: int) -> None:
    """Another prefix, unknown token and length limit (counted in characters: "é" is two bytes)."""
    ours = WordPiece(SMALL, unk_token="<unk>", continuing_subword_prefix="@@", max_input_chars_per_word=max_chars)
    hf = models.WordPiece(SMALL, unk_token="<unk>", continuing_subword_prefix="@@", max_input_chars_per_word=max_chars)
    assert ours.tokenize(word) == [x.value for x in hf.tokenize(word)]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def bert(request: pytest.FixtureRequest, vocab_path: str) -> BertTokenizer:
    return BertTokenizer.from_vocab(vocab_path, lowercase=request.param)


def test_bert_kernels_vs_reference(bert: BertTokenizer, bert_texts: list[str], bert_ref: dict) -> None:
    exp = bert_ref[bert.lowercase]
    assert not first_diffs(kernel_ids(bert, bert_texts, max(map(len, exp))), exp, bert_texts)


_CHARS = st.one_of(st.characters(exclude_categories=["Cs"]),  # (any but surrogates: texts are valid UTF-8)
                   st.sampled_from(list(WHITE + "\x00\x1c\x85\ufffd\u200b中文。，!#[]ǅé\u0301İΣ😀\u200d")))
_TEXT = st.lists(st.one_of(st.text(_CHARS, max_size=30), st.sampled_from(SPECIALS)), max_size=5).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXT.map(usable), min_size=1, max_size=4))
def test_bert_kernels_vs_reference_hypothesis(bert: BertTokenizer, wp: WordPiece, texts: list[str]) -> None:
    exp = [reference_ids(wp, t, bert.lowercase) for t in texts]
    assert kernel_ids(bert, texts, max(map(len, exp))) == exp


# ------------------------------------------------------------------------------------------ BPE

RANKED = ["gpt2", "cl100k_base", "o200k_base", "qwen2"]


@functools.cache
def nfc() -> normalizers.Normalizer:
    return normalizers.NFC()  # (HF's NFC, as our tables: qwen2's tokenizer.json normalizes)


def assigned(text: str) -> str:
    """``text`` without the code points unassigned in Python's Unicode (14.0): the ``regex`` module classes some
    of them by a newer Unicode than tiktoken's (:func:`test_bpe_unicode_differences`)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cn")


@pytest.fixture(scope="module")
def bpe_texts(austen: list[str]) -> list[str]:
    texts = austen[:80] + HARD + ADVERSARIAL + O.BPE_ADVERSARIAL + O.random_texts(43, 120) + code_point_sample()
    return [assigned(t) for t in texts]


_BPE_REF: dict[str, list[list[int]]] = {}


def bpe_reference(name: str, texts: list[str]) -> list[list[int]]:
    """The reference encoder's ids of ``texts`` for ``name`` (computed once per module run)."""
    if name not in _BPE_REF:
        ref = RBPE.Encoder(O.ranks(name), O.TIKTOKEN_PATTERNS[name])
        _BPE_REF[name] = [ref.encode(nfc().normalize_str(t) if name == "qwen2" else t) for t in texts]
    return _BPE_REF[name]


@pytest.mark.parametrize("name", RANKED)
def test_bpe_reference_vs_tiktoken(name: str, bpe_texts: list[str]) -> None:
    enc = O.tiktoken_encoding(name)
    exp = enc.encode_ordinary_batch([nfc().normalize_str(t) if name == "qwen2" else t for t in bpe_texts])
    assert not first_diffs(bpe_reference(name, bpe_texts), exp, bpe_texts)


def test_bpe_unicode_differences() -> None:
    """Where the reference and tiktoken differ on the code point sample, unassigned code points are why (measured
    on every code point in those contexts: 17,480 for gpt2 and cl100k, 17,559 for o200k, all Cn in Python's
    Unicode 14, e.g. U+0558 and U+107BB, letters to ``regex`` but not to tiktoken), and there are some."""
    enc = O.tiktoken_encoding("o200k_base")
    ref = RBPE.Encoder(O.ranks("o200k_base"), O.TIKTOKEN_PATTERNS["o200k_base"])
    differ = [t for t in code_point_sample() if ref.encode(t) != enc.encode_ordinary(t)]
    assert differ
    assert all(ref.encode(assigned(t)) == enc.encode_ordinary(assigned(t)) for t in differ)


_PIECES = st.one_of(st.binary(max_size=40), st.text(max_size=20).map(str.encode),
                    st.sampled_from([b"a" * 300, b"ab" * 150, b" " * 77, b"\xf0\x9f\x98\x80" * 9, b"1" * 50]))


@settings(max_examples=300, deadline=None)
@given(_PIECES)
@example(b"")
def test_bpe_merge_vs_tiktoken(piece: bytes) -> None:
    """One piece merged (after tiktoken's whole-piece lookup) against tiktoken's own ``_byte_pair_merge``."""
    core = O.tiktoken_encoding("cl100k_base")._core_bpe
    ranks = O.ranks("cl100k_base")
    whole = ranks.get(piece)
    ours = [whole] if whole is not None else [ranks[t] for t in RBPE.merge(ranks, piece)]
    assert ours == (core.encode_single_piece(piece) if piece else [])


@pytest.fixture(scope="module", params=RANKED)
def bpe(request: pytest.FixtureRequest) -> tuple[str, BPETokenizer]:
    name = request.param
    if name == "gpt2":
        return name, BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe")
    return name, BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[name], encoding=name)


def test_bpe_kernels_vs_reference(bpe: tuple[str, BPETokenizer], bpe_texts: list[str]) -> None:
    name, tok = bpe
    exp = bpe_reference(name, bpe_texts)
    assert not first_diffs(tok.encode(bpe_texts).tolist(), exp, bpe_texts)
    one = list(range(0, len(bpe_texts), 9))  # (the one-text path)
    assert not first_diffs([tok.encode([bpe_texts[i]]).tolist()[0] for i in one], [exp[i] for i in one],
                           [bpe_texts[i] for i in one])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(_CHARS, max_size=40).map(assigned), min_size=1, max_size=4))
def test_bpe_kernels_vs_reference_hypothesis(bpe: tuple[str, BPETokenizer], texts: list[str]) -> None:
    name, tok = bpe
    ref = RBPE.Encoder(O.ranks(name), O.TIKTOKEN_PATTERNS[name])
    assert tok.encode(texts).tolist() == [ref.encode(nfc().normalize_str(t) if name == "qwen2" else t) for t in texts]


# ------------------------------------------------------------------------------------------ SWAR helpers

REP = 0x0101010101010101  # a byte repeated in each of eight
njit = functools.cache(numba.njit)  # each helper compiled once, called as a kernel would


def bytes_in_loop(w: int, lo: int, hi: int) -> int:
    """bytes_in byte by byte: 0x80 in each byte of ``w`` that is ASCII and in lo..hi."""
    return sum(0x80 << 8 * k for k in range(8) if (b := w >> 8 * k & 0xFF) < 0x80 and lo <= b <= hi)


def first_byte_loop(stop: int) -> int:
    return next(k for k in range(8) if stop >> (8 * k + 7) & 1)


@st.composite
def word_and_range(draw: st.DrawFn) -> tuple[int, int, int]:
    """(word, lo, hi): a range of ASCII (lo > hi: empty) and eight bytes drawn mostly on its edges, 0x7F / 0x80."""
    lo, hi = draw(st.integers(0, 0x7F)), draw(st.integers(0, 0x7F))
    edge = st.sampled_from(sorted({lo, hi, (lo - 1) & 0xFF, (hi + 1) & 0xFF, lo | 0x80, hi | 0x80, 0, 0x7F, 0x80, 0xFF}))
    byte = draw(st.sampled_from([edge, st.integers(0, 0xFF), st.integers(lo, max(lo, hi))]))
    return int.from_bytes(bytes(draw(byte) for _ in range(8)), "little"), lo, hi


@settings(max_examples=400, deadline=None)
@given(word_and_range())
@example((0x6161616161616161, 0x61, 0x7A))  # all in range
@example((0x8080808080808080, 0, 0x7F))  # none: non-ASCII only
@example((0x7F7F7F7F7F7F7F7F, 0x7F, 0x7F))  # all at the ASCII top
@example((0xFFFFFFFFFFFFFFFF, 0, 0x7F))
@example((0, 0, 0))
@example((0x0102030405060708, 5, 3))  # an empty range
def test_bytes_in(case: tuple[int, int, int]) -> None:
    w, lo, hi = case
    args = (np.uint64(w), np.uint64(lo * REP), np.uint64((0x80 | hi) * REP))
    exp = bytes_in_loop(w, lo, hi)
    assert int(P.bytes_in(*args)) == exp
    assert int(njit(P.bytes_in)(*args)) == exp


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_bytes_in_letter_ranges(w: int) -> None:
    """The scanners' own range constants: a-z and A-Z."""
    assert int(P.bytes_in(np.uint64(w), P._A8, P._Z8)) == bytes_in_loop(w, 0x61, 0x7A)
    assert int(P.bytes_in(np.uint64(w), P._UA8, P._UZ8)) == bytes_in_loop(w, 0x41, 0x5A)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 0xFF), st.integers(0, 2**64 - 1), st.integers(0, 0x7F), st.integers(0, 0x7F))
def test_first_byte(bits: int, w: int, lo: int, hi: int) -> None:
    """Its contract: ``stop`` has only high bits (as bytes_in gives), one or more; and as letters_end uses it,
    on bytes_in ^ 0x80.. (the first byte out of the range)."""
    stop = sum(0x80 << 8 * k for k in range(8) if bits >> k & 1)
    with np.errstate(over="ignore"):  # (the multiply wraps by design; NumPy's scalars warn)
        assert int(P.first_byte(np.uint64(stop))) == first_byte_loop(stop)
        assert int(njit(P.first_byte)(np.uint64(stop))) == first_byte_loop(stop)
        out = P.bytes_in(np.uint64(w), np.uint64(lo * REP), np.uint64((0x80 | hi) * REP)) ^ P._HIGH8
        if out:
            exp = next(k for k in range(8) if not (w >> 8 * k & 0xFF < 0x80 and lo <= w >> 8 * k & 0xFF <= hi))
            assert int(P.first_byte(out)) == exp


@st.composite
def buffer_span(draw: st.DrawFn) -> tuple[bytes, int, int]:
    buf = draw(st.one_of(st.binary(max_size=24), st.sampled_from([b"\xff" * 8, b"\x80" * 9, bytes(range(256))[-20:]])))
    i = draw(st.integers(0, len(buf)))
    return buf, i, draw(st.integers(i, len(buf)))


@settings(max_examples=400, deadline=None)
@given(buffer_span())
@example((b"\xff" * 8, 0, 8))  # the top byte's bit 63: negative
@example((b"abcdefgh", 0, 3))  # eight bytes there, the span's end masks
@example((b"abcdefghi", 1, 9))  # exactly eight to the buffer's end (the unrolled loads)
@example((b"abcdefghi", 2, 9))  # seven to the buffer's end (the loop)
@example((b"abc", 3, 3))  # empty at the buffer's end
@example((b"", 0, 0))
def test_word_at(case: tuple[bytes, int, int]) -> None:
    raw, i, hi = case
    buf = np.frombuffer(raw, dtype=np.uint8).copy()
    x = int.from_bytes(raw[i:min(i + 8, hi)], "little")
    exp = x - (1 << 64) if x >> 63 else x  # (an int64)
    assert int(M.word_at(buf, i, hi)) == exp
    assert int(njit(M.word_at)(buf, i, hi)) == exp
