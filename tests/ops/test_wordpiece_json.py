"""WordPiece tokenizer.json files against HF ``tokenizers`` (the pinned oracle): every BertNormalizer option set, the
continuation prefix, ``max_input_chars_per_word``, vocabularies with holes, added tokens and their flags, Bert /
Template post-processors with type ids, the file's truncation and padding, rows on either side with overflow
windows, decode with HF's WordPiece decoder, the loaders, and one-line errors for what is not supported.

The tokenizer.json files are made by HF ``tokenizers`` itself and saved into tmp_path; ids, rows and decoded text
must equal HF's with 0 differences on hard texts (Austen, CJK, Thai, Arabic, Hindi, combining marks, emoji ZWJ
sequences, control characters, every Unicode whitespace, long words, literal special tokens, every code point in
context, generated text)."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textcases import ADVERSARIAL, mixed_texts
from tokenizers import AddedToken, BertWordPieceTokenizer, Tokenizer, decoders
from tokenizers.models import WordPiece
from tokenizers.normalizers import BertNormalizer, Lowercase
from tokenizers.normalizers import Sequence as NormSequence
from tokenizers.pre_tokenizers import BertPreTokenizer, Punctuation, WhitespaceSplit
from tokenizers.pre_tokenizers import Sequence as PreSequence
from tokenizers.processors import BertProcessing, TemplateProcessing

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.core.hf_json import Padding, Truncation
from triton_textops.ops.core.output import Ragged, Rows
from triton_textops.ops.tokenizer import Tokenizer as Loader
from triton_textops.ops.wordpiece.formats import read_vocab
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer

SPECIALS = ["[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"]
WHITESPACE = "\t\n\x0b\x0c\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
             "\u2008\u2009\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
HARD = [
    *ADVERSARIAL,
    "東京都は日本の首都です中文没有空格的句子한국어문장도있다",  # CJK without spaces
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ สวัสดีครับ",  # Thai
    "العربية: مَرْحَبًا بِكُمْ في ٱلْعَالَم، ١٢٣ — كتاب.",  # Arabic with harakat
    "हिन्दी में क्षत्रिय, ज़िन्दगी और ॐ; বাংলা লিপি",  # Devanagari, Bengali
    "e\u0301\u0302\u0303 o\u0308\u0304 a\u0323\u0302 x\u0338\u20d2 \u1e9b\u0323 Q\u0307\u0323 \u0f73\u0f75",
    "👩‍👩‍👧‍👦 👨🏽‍💻 🏳️‍🌈 🧑‍🤝‍🧑 1️⃣ #️⃣ 🇯🇵🇺🇸 ☺︎ ❤️‍🔥",  # emoji ZWJ / modifiers / keycaps / flags
    "Crème Brûlée, Ærøskøbing, ŠKODA, İzmir ıi, ǅungla, Ωμέγα ΣΊΣΥΦΟΣ ς, ﬁnancial ﬀ",
    "ctl\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x1b\x7f\x80\x9f\u200e\u200f\u202a\u2066\ue000\U000f0000 end",
    "ws" + "|".join(WHITESPACE) + "end",
    "".join(f"w{c}x" for c in WHITESPACE),
    "supercalifragilisticexpialidocious" * 4, "a" * 100, "b" * 101, "é" * 100, "é" * 101, "中" * 150,
    ("antidisestablishmentarianism " * 20).strip(),
    "[CLS][SEP][PAD][MASK][UNK] x[CLS]y [CLS]abc abc[SEP] [cls] [MASK]]] [[UNK]",
    "don't you're we've I'm it's do not ... ? ! , ' n't",
    "Hello, World! HELLO world. Hello-World? hello_world 123,456.78 $5 50% #hash @at &amp;",
    "\u00ad soft\u00adhyphen zero\u200bwidth \u034fcgj \u2060wj \ufe0fvs16 \U000e0001tag \U000e0020",
    "\U0001d15f\U0001d160 \U0001d165\U0001d16d x\u302e\u1b44 x\u1b44\u302e \u0f71\u0f72\u0f74",
    "Ⅷ ⅷ ① ㈱ ㍿ ﷺ ﷽ Ａ ｱ ﾟ ㌀ \u2126 \u212a \u212b",
    "",
    " \t ",
]
TEMPLATE = TemplateProcessing(single="[CLS]:3 $A:1 [SEP]:2 [MASK]:4", special_tokens=[("[CLS]", 101), ("[SEP]", 102),
                                                                                      ("[MASK]", 103)])


# ----------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def uncased(vocab_path: str) -> dict[str, int]:
    return {t: i for i, t in enumerate(read_vocab(vocab_path))}


@pytest.fixture(scope="module")
def cased(uncased: dict[str, int]) -> dict[str, int]:
    """A cased vocabulary: the uncased one, then capitalized and upper-case forms of its words and a few accented
    and mixed-case pieces (ids contiguous)."""
    toks = list(uncased)
    extra = []
    for w in toks[1996:9000]:
        if w.isalpha() and len(w) > 1:
            extra += [w.capitalize(), w.upper(), "##" + w.capitalize()]
    extra += ["Café", "café", "é", "##é", "É", "Ö", "##ö", "naïve", "Ærø", "İ", "ǅ", "ΣΊΣΥΦΟΣ", "Ω", "##Ω", "ı"]
    return {t: i for i, t in enumerate(dict.fromkeys(toks + extra))}


@pytest.fixture(scope="module")
def texts(austen: list[str]) -> list[str]:
    return austen[:200] + HARD + mixed_texts(7, 150, ["hello", "world", "Café", "naïve", "ÉCOLE", "##ing"])


@pytest.fixture(scope="module")
def code_point_texts() -> list[str]:
    """Every code point but the surrogates, in context: 300 a text, in words of three separated by a space."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join(chr(c) + (" " if k % 3 == 2 else "") for k, c in enumerate(cps[i:i + 300]))
            for i in range(0, len(cps), 300)]


def hf_wordpiece(vocab: dict[str, int], *, normalizer=None, post=None, prefix: str = "##", max_chars: int = 100,
                 decoder=None, specials: list | None = None, added: list | None = None, pre=None) -> Tokenizer:
    """An HF WordPiece tokenizer as BertWordPieceTokenizer makes one, with the parts given."""
    t = Tokenizer(WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                            max_input_chars_per_word=max_chars))
    t.normalizer = normalizer
    t.pre_tokenizer = pre or BertPreTokenizer()
    if post is not None:
        t.post_processor = post
    t.decoder = decoder if decoder is not None else decoders.WordPiece(prefix=prefix)
    t.add_special_tokens(specials if specials is not None else [s for s in SPECIALS if s in vocab])
    if added:
        t.add_tokens(added)
    return t


def save(t: Tokenizer, d: Path, config: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    t.save(str(d / "tokenizer.json"))
    if config is not None:
        (d / "tokenizer_config.json").write_text(json.dumps(config))
    return d / "tokenizer.json"


def bert_post(vocab: dict[str, int]) -> BertProcessing:
    return BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))


def diffs(got: list, want: list, texts: list) -> list:
    assert len(got) == len(want)
    return [(i, texts[i][:60], g[:12], w[:12]) for i, (g, w) in enumerate(zip(got, want)) if g != w][:5]


def assert_same_ids(ours: BertTokenizer, hf: Tokenizer, texts: list[str], special: bool = True,
                    single: int = 12) -> None:
    """Our ragged ids are HF's encode_batch ids; and, one text at a time, HF's encode of the first ``single``."""
    got = ours.encode(texts, add_special_tokens=special).tolist()
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=special)]
    assert not diffs(got, want, texts)
    one = [ours.encode([t], add_special_tokens=special).tolist()[0] for t in texts[:single]]
    assert not diffs(one, [hf.encode(t, add_special_tokens=special).ids for t in texts[:single]], texts)


# ------------------------------------------------------------------------------------------- normalizer options

# the 16 tables, and strip_accents null (follow lowercase) twice
COMBOS = [(c, h, s, lo) for c in (True, False) for h in (True, False) for s in (True, False) for lo in (True, False)]
COMBOS += [(True, True, None, True), (False, False, None, False)]
FULL_SWEEP = {(True, True, None, True), (False, True, False, False), (True, False, False, True), (False, False, True, False),
              (True, True, True, False), (False, True, False, True), (True, False, True, True), (False, False, None, False)}


@pytest.mark.parametrize(("clean", "chinese", "strip", "lower"), COMBOS)
def test_every_normalizer_option_set(tmp_path, uncased, cased, texts, code_point_texts, clean, chinese, strip, lower):
    """Each of BertNormalizer's 16 option sets (16 tables; strip_accents null too): ids with and without the template
    on hard texts, and every code point in context for the 8 option sets of FULL_SWEEP (two per stored table, each
    derivation step on and off), a sixth of them for the others."""
    vocab = uncased if lower else cased
    hf = hf_wordpiece(vocab, normalizer=BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                                       strip_accents=strip, lowercase=lower), post=bert_post(vocab))
    ours = Loader.from_file(save(hf, tmp_path))
    assert isinstance(ours, BertTokenizer)
    sweep = code_point_texts if (clean, chinese, strip, lower) in FULL_SWEEP else code_point_texts[::6]
    assert_same_ids(ours, hf, texts + sweep)
    assert_same_ids(ours, hf, texts, special=False)


@pytest.mark.parametrize(("clean", "chinese", "strip", "lower"), COMBOS[:16])
def test_normalized_text_is_hf_normalize_str(clean, chinese, strip, lower, code_point_texts):
    """Stage (a)'s normalized bytes are HF's normalize_str of the text, whitespace and all (which ids cannot show:
    U+2000 is U+2002 after NFD without clean_text), on the hard texts and every code point in context."""
    from triton_textops.ops.core.batch import TextBatch
    from triton_textops.ops.wordpiece.pretokenize import Normalizer

    norm = BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower)
    texts = HARD + code_point_texts[::3]
    pre = Normalizer.get(lower, strip_accents=strip, clean_text=clean, handle_chinese_chars=chinese).pretokenize(
        TextBatch.from_texts(texts))
    pre.check()
    data, offs, ln = pre.data, pre.offs, pre.text_len
    got = [data[offs[i] * pre.expand:offs[i] * pre.expand + ln[i]].tobytes().decode() for i in range(len(texts))]
    assert not diffs(got, [norm.normalize_str(t) for t in texts], texts)


def test_whole_corpus_and_code_points_between_letters(tmp_path, uncased, cased, austen):
    """The whole Austen corpus, and every code point between two letters (``a`` + c + ``b``: the class of c decides
    the word boundaries), for BERT's two option sets (uncased and cased)."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    between = [" ".join("a" + chr(c) + "b" for c in cps[i:i + 200]) for i in range(0, len(cps), 200)]
    for lower in (True, False):
        vocab = uncased if lower else cased
        hf = hf_wordpiece(vocab, normalizer=BertNormalizer(lowercase=lower), post=bert_post(vocab))
        ours = BertTokenizer.from_pretrained(save(hf, tmp_path / f"{lower}"))
        assert_same_ids(ours, hf, austen + between)


@pytest.mark.parametrize("normalizer", [None, Lowercase(), NormSequence([BertNormalizer(lowercase=False)]),
                                        NormSequence([])], ids=["none", "lowercase", "sequence", "empty-sequence"])
def test_other_expressible_normalizers(tmp_path, cased, texts, code_point_texts, normalizer):
    hf = hf_wordpiece(cased, normalizer=normalizer, post=bert_post(cased))
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    assert_same_ids(ours, hf, texts + code_point_texts[::5])


def test_whitespace_split_and_punctuation_is_the_bert_pre_tokenizer(tmp_path, uncased, texts):
    for steps in ([WhitespaceSplit(), Punctuation()], [Punctuation("isolated"), WhitespaceSplit()],
                  [BertPreTokenizer()]):
        hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased), pre=PreSequence(steps))
        assert_same_ids(BertTokenizer.from_pretrained(save(hf, tmp_path)), hf, texts)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=6), st.booleans())
def test_generated_text(tmp_path_factory, uncased, cased, texts_list, lower):
    cache = test_generated_text.__dict__.setdefault("cache", {})
    if lower not in cache:
        vocab = uncased if lower else cased
        hf = hf_wordpiece(vocab, normalizer=BertNormalizer(lowercase=lower, clean_text=lower,
                                                           handle_chinese_chars=not lower, strip_accents=not lower),
                          post=TEMPLATE, added=[AddedToken("ab", single_word=True, normalized=False)])
        cache[lower] = (BertTokenizer.from_pretrained(save(hf, tmp_path_factory.mktemp("gen"))), hf)
    ours, hf = cache[lower]
    assert_same_ids(ours, hf, texts_list)
    assert_same_ids(ours, hf, texts_list, special=False)


# ------------------------------------------------------------------------------------------------ model fields


@pytest.mark.parametrize(("prefix", "max_chars"), [("@@", 100), ("", 100), ("##", 7), ("▁▁", 0), ("##", 250)])
def test_prefix_and_word_length(tmp_path, uncased, texts, prefix, max_chars):
    """Any continuation prefix (its bytes and hash state reach the kernel) and any word length limit."""
    vocab = {(prefix + t[2:] if t.startswith("##") else t): i for t, i in uncased.items()}
    vocab = {t: i for i, t in enumerate(vocab)}  # (a prefix "" can fold two tokens into one)
    hf = hf_wordpiece(vocab, normalizer=BertNormalizer(), post=bert_post(vocab), prefix=prefix, max_chars=max_chars)
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    assert_same_ids(ours, hf, texts)
    r = ours.encode(texts[:60] + HARD)
    want = hf.decode_batch([e.ids for e in hf.encode_batch(texts[:60] + HARD)], skip_special_tokens=False)
    assert ours.decode(r.ids, r.offsets) == want


def test_vocabulary_with_holes_and_new_added_ids(tmp_path, uncased, texts):
    """Ids need not be contiguous: every id doubled plus 5, added tokens the vocabulary lacks get HF's new ids."""
    vocab = {t: 2 * i + 5 for t, i in uncased.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = hf_wordpiece(vocab, normalizer=BertNormalizer(), post=bert_post(vocab),
                          specials=["[CLS]", "[SEP]", "<new>", "[MASK]"], added=[AddedToken("zq", normalized=False)])
        path = save(hf, tmp_path)
    ours = BertTokenizer.from_pretrained(path)
    extra = ["a <new> b zq zqzq <new><new>", "x<new>y"]
    assert_same_ids(ours, hf, texts + extra)
    assert ours.vocab_size == hf.get_vocab_size(with_added_tokens=True)
    for i in [*range(0, 40), 205, 207, 2 * 30521 + 5, 30522, 30523, 61049, 61050, 10**6]:
        assert ours.id_to_token(i) == hf.id_to_token(i), i
    for tok in ["<new>", "zq", "[CLS]", "hello", "##ing", "nope", ""]:
        assert ours.token_to_id(tok) == hf.token_to_id(tok), tok
    r = ours.encode(texts[:40] + extra)
    for skip in (False, True):
        assert ours.decode(r.ids, r.offsets, skip_special_tokens=skip) == \
            hf.decode_batch(r.tolist(), skip_special_tokens=skip)
    with pytest.raises(InputError, match=r"row 1 position 2: id 6 is not an id of this vocabulary \(size") as e:
        ours.decode(np.array([7, 9, 7, 9, 6]), np.array([0, 2, 5]))
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------------------------------------------- added tokens


def test_added_token_flags(tmp_path, uncased):
    """single_word (a match touching a word character is text), lstrip / rstrip (they take whitespace only), special
    or not (what decode skips), contents that split words (HF splits the text at every match)."""
    added = [AddedToken("[A]", single_word=True, normalized=False), AddedToken("ab", single_word=True, normalized=False),
             AddedToken("<x>", lstrip=True, normalized=False), AddedToken("<y>", rstrip=True, normalized=False),
             AddedToken("hell", normalized=False), AddedToken("A]", normalized=False),
             AddedToken("é✓", single_word=True, normalized=False)]
    hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased), added=added)
    hf.add_special_tokens([AddedToken("<s>", single_word=True)])
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    texts = ["[A]", "x[A]", "x [A]", "[A]x", "é[A]", "_[A]", "[A]_", "1[A]", "[A]\u0301", "\u200d[A]", "x[A]x", "[[A]]",
             "ab", "abc", "cab", " ab ", "ab,ab", "ab\u0301", "abab", "hello hell shell hellhell", "<x> <y> <x><y>",
             "a  <x>  b  <y>  c", "<s>x <s> x<s> é✓ xé✓ é✓x", "\u00e9[A] \u0301[A] \u4e00[A] \u0e01[A]", "A] [A]]"]
    texts += [f"{c}[A]{d}" for c in "a_ 1.é\u0301\u200c\u200d\u00b7\u0660" for d in " a_1\u0301\u2060"]
    assert_same_ids(ours, hf, texts)
    assert_same_ids(ours, hf, texts, special=False)
    r = ours.encode(texts)
    for skip in (False, True):
        assert ours.decode(r.ids, r.offsets, skip_special_tokens=skip) == \
            hf.decode_batch(r.tolist(), skip_special_tokens=skip)


def test_allowed_special(tmp_path, uncased):
    """allowed_special: only those added tokens are matched, the others are text (HF with only those added)."""
    path = save(hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased)), tmp_path)
    ours = BertTokenizer.from_pretrained(path)
    only = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased), specials=["[SEP]"])
    texts = ["a [SEP] b [CLS] c [MASK]", "[CLS][SEP]"]
    assert ours.encode(texts, allowed_special={"[SEP]"}).tolist() == [e.ids for e in only.encode_batch(texts)]
    assert ours.encode(texts, allowed_special="all").tolist() == ours.encode(texts).tolist()
    with pytest.raises(InputError, match=r"allowed_special: \['<nope>'\] are not added tokens"):
        ours.encode(texts, allowed_special=["<nope>"])


# ------------------------------------------------------------------------------------------ templates and rows


@pytest.fixture(scope="module")
def template_pair(tmp_path_factory, uncased) -> tuple[BertTokenizer, Tokenizer]:
    hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=TEMPLATE)
    return BertTokenizer.from_pretrained(save(hf, tmp_path_factory.mktemp("tpl"))), hf


def hf_rows(hf: Tokenizer, texts: list[str], L: int, stride: int, overflow: bool, pad: str, trunc: str,
            special: bool, pad_id: int) -> tuple[np.ndarray, ...]:
    hf.enable_truncation(L, stride=stride, direction=trunc)
    hf.enable_padding(direction=pad, pad_id=pad_id, length=L)
    try:
        ids, mask, types, mapping = [], [], [], []
        for i, e in enumerate(hf.encode_batch(texts, add_special_tokens=special)):
            for x in [e, *(e.overflowing if overflow else [])]:
                ids.append(x.ids)
                mask.append(x.attention_mask)
                types.append(x.type_ids)
                mapping.append(i)
    finally:
        hf.no_truncation()
        hf.no_padding()
    return tuple(np.array(a, dtype=np.int64).reshape(len(mapping), -1) for a in (ids, mask, types)) + (
        np.array(mapping, dtype=np.int64),)


@pytest.mark.parametrize("pad", ["right", "left"])
@pytest.mark.parametrize("trunc", ["right", "left"])
@pytest.mark.parametrize(("L", "stride", "overflow", "special"),
                         [(12, 0, False, True), (12, 3, True, True), (9, 2, True, False), (40, 0, False, False),
                          (6, 1, True, True)])
def test_rows_on_either_side(template_pair, austen, pad, trunc, L, stride, overflow, special):
    """encode_rows against HF's enable_truncation / enable_padding on either side: ids, mask, token types (the
    template's, the text's in the first window only, as HF), row -> text mapping; overflow windows with stride."""
    ours, hf = template_pair
    texts = austen[:25] + HARD[-20:] + ["", "a", "a b c d e f g h i j k l m n o p"]
    got = ours.encode_rows(texts, max_length=L, stride=stride, return_overflowing_tokens=overflow, padding_side=pad,
                           truncation_side=trunc, add_special_tokens=special)
    want = hf_rows(hf, texts, L, stride, overflow, pad, trunc, special, ours.pad_id)
    for name, w in zip(("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"), want):
        np.testing.assert_array_equal(getattr(got, name), w, err_msg=name)


def test_template_of_several_ids_per_special_token(tmp_path, uncased, austen):
    post = TemplateProcessing(single="[CLS]:1 $A:0 [SEP]:5", special_tokens=[
        {"id": "[CLS]", "ids": [101, 103], "tokens": ["[CLS]", "[MASK]"]}, ("[SEP]", 102)])
    hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=post)
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    texts = austen[:10] + HARD[-8:]
    assert_same_ids(ours, hf, texts)
    assert (ours.cls_id, ours.sep_id) == (101, 102)  # (no one id before the text: [CLS]'s)
    for pad, trunc in (("right", "right"), ("left", "left")):
        got = ours.encode_rows(texts, max_length=10, stride=2, return_overflowing_tokens=True, padding_side=pad,
                               truncation_side=trunc)
        want = hf_rows(hf, texts, 10, 2, True, pad, trunc, True, 0)
        for name, w in zip(("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"), want):
            np.testing.assert_array_equal(getattr(got, name), w, err_msg=name)


def test_rows_bert_processing_int32_and_longest(tmp_path, vocab_path, austen):
    hf = BertWordPieceTokenizer(vocab_path)
    ours = BertTokenizer.from_pretrained(save(hf._tokenizer, tmp_path))
    texts = austen[:40] + HARD
    for pad, trunc in (("left", "left"), ("right", "left"), ("left", "right")):
        got = ours.encode_rows(texts, max_length=20, stride=4, return_overflowing_tokens=True, padding_side=pad,
                               truncation_side=trunc, dtype="int32")
        want = hf_rows(hf._tokenizer, texts, 20, 4, True, pad, trunc, True, 0)
        assert got.input_ids.dtype == np.int32
        for name, w in zip(("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"), want):
            np.testing.assert_array_equal(getattr(got, name), w, err_msg=name)
    longest = ours.encode_rows(texts[:5], max_length=None)
    want = [e.ids for e in hf.encode_batch(texts[:5])]
    assert longest.input_ids.shape[1] == max(map(len, want))
    assert [r[m == 1].tolist() for r, m in zip(longest.input_ids, longest.attention_mask)] == want


@pytest.mark.parametrize(("trunc", "pad"), [
    ({"max_length": 24, "direction": "left"}, {"direction": "left", "pad_to_multiple_of": 8}),
    ({"max_length": 30, "stride": 3}, {"length": 40, "direction": "right"}),
    ({"max_length": 1}, None),
    (None, {"direction": "left"}),
], ids=["left-multiple", "right-fixed", "under-the-template", "pad-only"])
def test_file_truncation_and_padding_apply_to_encode(tmp_path, template_pair, austen, trunc, pad):
    """A tokenizer.json's truncation / padding: ragged encode gives HF's encode_batch ids (every text padded to the
    batch's longest or the fixed length, on its side)."""
    _, base = template_pair
    hf = Tokenizer.from_str(base.to_str())
    if trunc is not None:
        hf.enable_truncation(**trunc)
    if pad is not None:
        hf.enable_padding(pad_id=0, **pad)
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    texts = austen[:30] + HARD[-12:]
    for special in (True, False):
        assert_same_ids(ours, hf, texts, special, single=0 if pad else 12)  # (HF pads one text to its own length)


# --------------------------------------------------------------------------------------------------------- decode


@pytest.mark.parametrize("decoder", [decoders.WordPiece(), decoders.WordPiece(cleanup=False), None],
                         ids=["cleanup", "no-cleanup", "none"])
def test_decode(tmp_path, uncased, texts, decoder):
    """HF's decode_batch: tokens (skipping the special added ones when asked), then the WordPiece decoder's prefix
    and cleanup rules per token (or no decoder: joined by spaces), on encoded texts and random id sequences."""
    vocab = dict(uncased)
    for t in ["n't", "'m", "'s", "'ve", "'re", "do not", "x .y ?", " ' ", "##n't", "a , b ! c", "don't do not"]:
        vocab[t] = len(vocab)  # (tokens a WordPiece never makes, but decode takes: every cleanup rule)
    hf = hf_wordpiece(vocab, normalizer=BertNormalizer(), post=bert_post(vocab), decoder=decoder)
    if decoder is None:
        hf.decoder = None
    ours = BertTokenizer.from_pretrained(save(hf, tmp_path))
    rng = random.Random(3)
    tricky = [ours.token_to_id(t) for t in [".", "?", "!", ",", "'", "n", "t", "m", "s", "ve", "re", "do", "not",
                                            "##s", "##t", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]", "a"]]
    tricky += list(range(30522, len(vocab)))
    seqs = [e.ids for e in hf.encode_batch(texts)]
    seqs += [[rng.choice(tricky) if rng.random() < 0.7 else rng.randrange(30522) for _ in range(rng.randint(0, 30))]
             for _ in range(300)] + [[], [101], [1005, 1056], [2079, 2025], [1005, 2222, 1005]]
    flat = np.array([i for s in seqs for i in s], dtype=np.int64)
    offsets = np.cumsum([0] + [len(s) for s in seqs])
    for skip in (False, True):
        want = hf.decode_batch(seqs, skip_special_tokens=skip)
        assert ours.decode(flat, offsets, skip_special_tokens=skip) == want
        assert ours.decode(flat, offsets, skip_special_tokens=skip, errors=None) == [w.encode() for w in want]


# ------------------------------------------------------------------------------------------- loading and protocol


def test_loaders_and_the_vocab_txt(tmp_path, vocab_path, austen, uncased):
    """A directory with tokenizer.json, one with vocab.txt + tokenizer_config.json (do_lower_case), the files
    themselves, through BertTokenizer.from_pretrained and the package's loader; from_vocab keeps the same ids."""
    texts = austen[:50] + HARD
    d = tmp_path / "vocabdir"
    d.mkdir()
    (d / "vocab.txt").write_bytes(Path(vocab_path).read_bytes())
    ref = BertWordPieceTokenizer(vocab_path, lowercase=True)
    for tok in (BertTokenizer.from_pretrained(d), Loader.from_pretrained(d), Loader.from_file(d / "vocab.txt"),
                BertTokenizer.from_vocab(vocab_path)):
        assert_same_ids(tok, ref, texts)
        r = tok.encode(texts[:30])
        assert tok.decode(r.ids, r.offsets) == ref.decode_batch(r.tolist(), skip_special_tokens=False)
    (d / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "strip_accents": True,
                                                         "tokenize_chinese_chars": False}))
    ref = BertWordPieceTokenizer(vocab_path, lowercase=False, strip_accents=True, handle_chinese_chars=False)
    assert_same_ids(BertTokenizer.from_pretrained(d), ref, texts)
    j = tmp_path / "jsondir"
    path = save(ref._tokenizer, j, {"bos_token": "[CLS]", "eos_token": {"content": "[SEP]"}})
    for tok in (BertTokenizer.from_pretrained(j), BertTokenizer.from_pretrained(path), Loader.from_pretrained(j),
                Loader.from_file(path)):
        assert isinstance(tok, BertTokenizer) and tok.family == "wordpiece"
        assert_same_ids(tok, ref, texts)
        assert (tok.bos_id, tok.eos_id) == (101, 102)


def test_protocol_attributes(tmp_path, uncased):
    hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased))
    tok = BertTokenizer.from_pretrained(save(hf, tmp_path))
    assert isinstance(tok, Loader)  # (the protocol: runtime-checkable)
    r = tok.encode(["hello world", ""])
    assert isinstance(r, Ragged) and r.ids.dtype == np.int64 and r.offsets.tolist() == [0, 4, 6]
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id) == (None, None, 0, 100, 101, 102)
    assert tok.vocab_size == hf.get_vocab_size(with_added_tokens=True) == 30522
    for i in [0, 100, 101, 999, 30521, 30522]:
        assert tok.id_to_token(i) == hf.id_to_token(i)
    rows = tok.encode_rows(["hello world"], max_length=6)
    assert isinstance(rows, Rows) and rows.input_ids.tolist() == [[101, 7592, 2088, 102, 0, 0]]
    with pytest.warns(DeprecationWarning, match="encode_rows"):
        old = tok.encode(["hello world"], max_length=6)
    np.testing.assert_array_equal(old.input_ids, rows.input_ids)
    with pytest.warns(DeprecationWarning, match="ragged"):
        np.testing.assert_array_equal(tok.encode(["hello world"]).input_ids, tok.encode_rows(["hello world"]).input_ids)
    with pytest.raises(InputError, match="padding_side must be 'left' or 'right'"):
        tok.encode_rows(["a"], padding_side="middle")


def _doc(tmp_path: Path, uncased: dict[str, int]) -> dict:
    hf = hf_wordpiece(uncased, normalizer=BertNormalizer(), post=bert_post(uncased))
    return json.loads(hf.to_str())


_FLAGS = {"single_word": False, "lstrip": False, "rstrip": False}


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.update(normalizer={"type": "NFKC"}), "normalizer.type = \"NFKC\" is not supported for WordPiece"),
    (lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}),
     "normalizer.normalizers"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer.type = \"Whitespace\""),
    (lambda d: d.update(pre_tokenizer=None), "pre_tokenizer = null"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Removed"}]}), "behavior"),
    (lambda d: d["model"]["vocab"].update(bad=-1), "model.vocab[\"bad\"] = -1"),
    (lambda d: d["model"]["vocab"].update(bad=2**31), "model.vocab[\"bad\"]"),
    (lambda d: d["model"]["vocab"].update(bad=1.5), "model.vocab[\"bad\"] = 1.5"),
    (lambda d: d["model"]["vocab"].update(bad=True), "model.vocab[\"bad\"] = true"),
    (lambda d: d["model"]["vocab"].update(bad=5), "shares id 5"),
    (lambda d: d["model"].update(unk_token="<unk>"), "model.unk_token = \"<unk>\""),
    (lambda d: d["model"].update(max_input_chars_per_word=-3), "model.max_input_chars_per_word"),
    (lambda d: d["added_tokens"].append({"id": 9, "content": "zz", "normalized": True, "special": False, **_FLAGS}),
     "added_tokens[5].normalized"),
    (lambda d: d["added_tokens"].append({"id": 9, "content": "\u0301", "normalized": False, "special": True, **_FLAGS}),
     "normalize to nothing"),
    (lambda d: d.update(post_processor={"type": "ByteLevel"}) or d.update(post_processor={"type": "Bad"}),
     "post_processor.type = \"Bad\""),
    (lambda d: d.update(post_processor={"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B", "type_id": 0}}],
                                        "pair": [], "special_tokens": {}}), "post_processor.single[0]"),
    (lambda d: d.update(decoder={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}),
     "decoder.type = \"ByteLevel\""),
    (lambda d: d.update(truncation={"max_length": 5, "strategy": "Weird"}), "truncation.strategy"),
    (lambda d: d.update(padding={"strategy": {"Fixed": -1}}), "padding.strategy.Fixed"),
    (lambda d: d["model"].update(type="BPE"), "model.type"),
])
def test_what_is_refused_is_one_line_naming_the_field(tmp_path, uncased, change, field):
    doc = _doc(tmp_path, uncased)
    change(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        BertTokenizer.from_pretrained(path)
    assert field in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_limits_dataclasses_are_shared():
    """(The file's truncation / padding are read as BPE's, by ops/core/hf_json, and share BPE's planner.)"""
    from triton_textops.ops.bpe import formats as bpe_formats
    from triton_textops.ops.core.hf_json import padding, truncation
    from triton_textops.ops.wordpiece.formats import _Refuse

    r = _Refuse("x")
    assert truncation({"max_length": 5, "direction": "Left"}, r) == Truncation(5, True, False, 0)
    assert padding({"strategy": {"Fixed": 7}, "pad_id": 3}, r) == Padding(7, False, 3, None)
    assert bpe_formats.Padding is Padding and bpe_formats.Truncation is Truncation
    with pytest.raises(ConfigError, match=r"x: truncation.stride = -1 is not a non-negative integer"):
        truncation({"max_length": 5, "stride": -1}, r)
