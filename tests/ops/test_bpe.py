"""Byte-level BPE: exact ids against tiktoken (rank files) and HF tokenizers (tokenizer.json, GPT-2 files)."""

from __future__ import annotations

import json

import bpe_oracles as O
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_textops.errors import InputError
from triton_textops.ops import llm
from triton_textops.ops.bpe.merge import mix64, piece_hash
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.core import kernels as K

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")

AUSTEN = [json.loads(x)["text"] for x in
          (O.Path(__file__).parents[2] / "triton_textops" / "data" / "austen-paragraphs.jsonl").read_text().splitlines()]
CODE = (O.Path(__file__).parents[2] / "triton_textops" / "ops" / "bpe" / "pretok.py").read_text().split("\n\n")
TEXTS = AUSTEN[:400] + CODE + O.BPE_ADVERSARIAL + O.random_texts(1, 300)
RANKED = ["gpt2", "cl100k_base", "o200k_base", "qwen2"]


@pytest.fixture(scope="module", params=RANKED)
def ranked(request: pytest.FixtureRequest) -> tuple[str, BPETokenizer]:
    name = request.param
    if name == "gpt2":
        return name, BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe")
    return name, BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[name], encoding=name)


def _nfc(name: str, texts: list[str]) -> list[str]:
    if name != "qwen2":
        return texts
    from tokenizers.normalizers import NFC  # noqa: PLC0415  (the oracle's NFC, as our tables)

    return [NFC().normalize_str(t) for t in texts]


def _diff(got: list[list[int]], exp: list[list[int]], texts: list[str]) -> list[tuple[str, list, list]]:
    return [(texts[i][:60], got[i][:12], exp[i][:12]) for i in range(len(texts)) if got[i] != exp[i]][:3]


def test_ranked_exact(ranked: tuple[str, BPETokenizer]) -> None:
    name, tok = ranked
    enc = O.tiktoken_encoding(name)
    assert not _diff(tok.encode(TEXTS).tolist(), enc.encode_ordinary_batch(_nfc(name, TEXTS)), TEXTS)


def test_ranked_word_boundaries(ranked: tuple[str, BPETokenizer]) -> None:
    """ASCII words in every case pattern between every kind of neighbour: where the scanners' ASCII fast paths
    (o200k's ``[A-Z]*[a-z]+``, eight bytes at a time) must stop or hand over (an apostrophe, a non-ASCII letter,
    mark or title-case letter after the word, CR / LF / digits / symbols before it), words of 7-24 letters across
    the eight-byte steps (all small, eight capitals and more, capitals then small), ending at the text's end too."""
    name, tok = ranked
    before = ["", " ", "  ", "\t", "\r", "\n", "\r\n", "-", "(", "\u2014", "\u00a0", "7", "'", "\u01c5", "\u00e9"]
    words = ["the", "The", "THE", "McDonald", "aB", "I", "a", "iPhone", "ABc", "x", "abcdefg", "abcdefgh",
             "abcdefghi", "Abcdefghijklmnopq", "ABCDEFGH", "ABCDEFGHIJk", "ABCDEFGhijklmnopqrstuvwx", "aBCDEFGHIJ"]
    after = ["", " ", "'s", "'S", "'t", "'re", "'LL", "'ve", "'d", "'M", "'x", "'", "\u00e9", "\u00c9", "\u0301", "\u01c5",
             "\u02b0", "7", ".", "\r", "\n", ",x", "\U0001F600", "_", "A", "z"]
    texts = [b + w + a for b in before for w in words for a in after]
    enc = O.tiktoken_encoding(name)
    assert not _diff(tok.encode(texts).tolist(), enc.encode_ordinary_batch(_nfc(name, texts)), texts)
    one = texts[::7]  # (the one-text path)
    assert not _diff([tok.encode([t]).tolist()[0] for t in one], enc.encode_ordinary_batch(_nfc(name, one)), one)


def test_ranked_every_code_point(ranked: tuple[str, BPETokenizer]) -> None:
    name, tok = ranked
    texts = O.every_code_point_texts()
    enc = O.tiktoken_encoding(name)
    assert not _diff(tok.encode(texts).tolist(), enc.encode_ordinary_batch(_nfc(name, texts)), texts)


def test_ranked_specials(ranked: tuple[str, BPETokenizer]) -> None:
    name, tok = ranked
    enc = O.tiktoken_encoding(name)
    texts = [t for t in O.BPE_ADVERSARIAL if "<|" in t] + ["<|endoftext|>", "a<|endoftext|>b <|endoftext|><|endoftext|>"]
    assert tok.encode(texts, allowed_special="all").tolist() == [enc.encode(t, allowed_special="all")
                                                                  for t in _nfc(name, texts)]
    with pytest.raises(InputError, match="row 0: .*disallowed special"):
        tok.encode(["x <|endoftext|>"], disallowed_special="all")
    with pytest.raises(ValueError):
        enc.encode("x <|endoftext|>")  # tiktoken's own check, which disallowed_special="all" mirrors


def _write_rank_file(path: O.Path, ranks: dict[bytes, int]) -> O.Path:
    """A tiktoken ``.tiktoken`` file (base64 token, space, rank per line) of ``ranks``."""
    import base64  # noqa: PLC0415

    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(ranks.items(),
                                                                                        key=lambda kv: kv[1])))
    return path


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "p50k_base"])
def test_gpt2_family_rank_files(name: str, tmp_path: O.Path) -> None:
    """``from_tiktoken`` with GPT-2's pattern and ``<|endoftext|>`` = 50256 (gpt2, r50k_base, p50k_base) from a
    rank file. No p50k file is here: GPT-2's ranks plus p50k's shape, 24 ranks past the special (50257-50280, runs
    of 2-25 spaces, as p50k adds whitespace runs for code) and none at 50256, checked against tiktoken built on
    the same ranks as tiktoken_ext defines p50k_base (explicit_n_vocab 50281)."""
    ranks = dict(O.ranks("gpt2"))
    if name == "p50k_base":
        ranks.update({b" " * k: 50255 + k for k in range(2, 26)})
    enc = tiktoken.Encoding(name, pat_str=O.TIKTOKEN_PATTERNS["gpt2"], mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=len(ranks) + 1)
    tok = BPETokenizer.from_tiktoken(_write_rank_file(tmp_path / f"{name}.tiktoken", ranks), encoding=name)
    texts = TEXTS + ["def f():\n" + "".join(" " * k + f"x{k}\n" for k in range(1, 30)), "a" + " " * 40 + "b"]
    exp = enc.encode_ordinary_batch(texts)
    if name == "p50k_base":  # (the space runs are reached: the texts exercise the ranks past the special)
        assert max(max(e, default=0) for e in exp) > 50256
    assert not _diff(tok.encode(texts).tolist(), exp, texts)
    spec = [t for t in O.BPE_ADVERSARIAL if "<|" in t] + ["a<|endoftext|>b <|endoftext|><|endoftext|>"]
    assert tok.encode(spec, allowed_special="all").tolist() == [enc.encode(t, allowed_special="all") for t in spec]
    with pytest.raises(InputError, match="row 1: .*disallowed special"):
        tok.encode(["x", "x <|endoftext|>"], disallowed_special="all")
    r = tok.encode(texts[:50])
    assert tok.decode(r.ids, r.offsets, errors=None) == [t.encode() for t in texts[:50]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_ranked_hypothesis(texts: list[str]) -> None:
    texts = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts]
    for name in ("cl100k_base", "o200k_base"):
        tok = _ranked_cached(name)
        assert tok.encode(texts).tolist() == O.tiktoken_encoding(name).encode_ordinary_batch(texts)


_CACHE: dict[str, BPETokenizer] = {}


def _ranked_cached(name: str) -> BPETokenizer:
    if name not in _CACHE:
        _CACHE[name] = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[name], encoding=name)
    return _CACHE[name]


@pytest.fixture(scope="module")
def llama3(tmp_path_factory: pytest.TempPathFactory) -> tuple[BPETokenizer, object]:
    d = tmp_path_factory.mktemp("llama3")
    O.write_tokenizer_json(d, "cl100k_base", family_pattern=O.LLAMA3_PATTERN, bos="<|begin_of_text|>",
                           added=O.LLAMA3_ADDED)
    return BPETokenizer.from_pretrained(d), tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))


def test_llama3_style_tokenizer_json(llama3: tuple) -> None:
    ours, hf = llama3
    texts = TEXTS + ["<|begin_of_text|>x<|eot_id|> <|plain|> a<|plain|>b", "<|begin_of_text|"]
    for specials in (True, False):
        exp = [e.ids for e in hf.encode_batch(texts, add_special_tokens=specials)]
        assert not _diff(ours.encode(texts, add_special_tokens=specials).tolist(), exp, texts)


def test_hf_gpt2_files() -> None:
    from tokenizers import ByteLevelBPETokenizer  # noqa: PLC0415

    hf = ByteLevelBPETokenizer(str(O.DATA / "encoder.json"), str(O.DATA / "vocab.bpe"))
    ours = BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe")
    exp = [e.ids for e in hf.encode_batch(TEXTS)]
    assert not _diff(ours.encode(TEXTS).tolist(), exp, TEXTS)


def test_decode_roundtrip(ranked: tuple[str, BPETokenizer]) -> None:
    name, tok = ranked
    texts = _nfc(name, TEXTS[:200])
    r = tok.encode(texts)
    assert tok.decode(r.ids, r.offsets, errors=None) == [t.encode() for t in texts]
    ids = np.array([tok.encode(["é"]).ids[0]], dtype=np.int64) if name != "qwen2" else None
    if ids is not None and len(tok.encode(["é"]).ids) > 1:  # half a character: U+FFFD, as HF's decoder
        assert tok.decode(ids, [0, 1], errors="replace") == [tok.token_bytes(int(ids[0])).decode("utf-8", "replace")]
    with pytest.raises(InputError, match=rf"row 1 position 0: id {tok.n_ids} is not an id of this vocabulary \(size {tok.n_ids}\)"):
        tok.decode([1, tok.n_ids], [0, 1, 2])


def test_encode_rows(llama3: tuple) -> None:
    ours, hf = llama3
    texts = ["hello world, this is a longer text", "", "short"]
    for side in ("left", "right"):
        for trunc in ("left", "right"):
            rows = ours.encode_rows(texts, max_length=6, padding_side=side, truncation_side=trunc, pad_id=7)
            hf.enable_truncation(6, direction=trunc)
            hf.enable_padding(direction=side, pad_id=7, length=6)
            encs = hf.encode_batch(texts)
            assert rows.input_ids.tolist() == [e.ids for e in encs]
            assert rows.attention_mask.tolist() == [e.attention_mask for e in encs]
    hf.no_truncation()
    hf.no_padding()


def test_bad_input() -> None:
    tok = _ranked_cached("cl100k_base")
    with pytest.raises(InputError, match="row 1: text is not valid UTF-8"):
        tok.encode([b"ok", b"\xff bad"])
    assert tok.encode([]).tolist() == []
    assert tok.encode(["", ""]).tolist() == [[], []]
    big = "word " * 2_000_000  # 10 MB
    assert tok.encode([big]).tolist()[0] == O.tiktoken_encoding("cl100k_base").encode_ordinary(big)


def test_load_errors(tmp_path: O.Path) -> None:
    d = tmp_path / "x"
    O.write_tokenizer_json(d, "cl100k_base", family_pattern=r"\p{L}+|\s+", added=[])  # (no scanner's: the
    # compiled regex engine, tests/ops/test_bpe_regex.py; the text between its matches is a piece too, as HF's)
    hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
    assert BPETokenizer.from_pretrained(d).encode(TEXTS[:50]).tolist() == [e.ids for e in hf.encode_batch(TEXTS[:50])]
    with pytest.raises(ValueError, match="encoding must be one of"):
        BPETokenizer.from_tiktoken(O.DATA / "cl100k_base.tiktoken", encoding="cl200k")
    e = tmp_path / "prefix"
    O.write_tokenizer_json(e, "cl100k_base", family_pattern=O.LLAMA3_PATTERN)
    doc = json.loads((e / "tokenizer.json").read_text())
    doc["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = True  # (HF: a space before each Split piece)
    (e / "tokenizer.json").write_text(json.dumps(doc))
    assert tokenizers.Tokenizer.from_file(str(e / "tokenizer.json")).encode("a|b").ids == [264, 765, 65]  # " a" " |" b
    with pytest.raises(ValueError, match=r"pretokenizers\[1\].add_prefix_space = true after a Split"):
        BPETokenizer.from_pretrained(e)


def test_post_processors_as_hf(tmp_path: O.Path) -> None:
    """RobertaProcessing and BertProcessing (cls, the text, sep: RoBERTa's, BART's byte-level BPE files), and a
    Sequence of ByteLevel and a TemplateProcessing (Llama-3's shape) add HF's ids; two processors that add tokens
    in one Sequence are a load error (HF composes them oddly, or panics)."""
    added = [{"id": 50256, "content": "<s>"}, {"id": 50257, "content": "</s>"}]
    O.write_tokenizer_json(tmp_path / "base", "gpt2", family_pattern=O.LLAMA3_PATTERN, added=added)
    doc = json.loads((tmp_path / "base" / "tokenizer.json").read_text())
    single = [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    template = {"type": "TemplateProcessing", "single": single, "pair": single,
                "special_tokens": {"<s>": {"id": "<s>", "ids": [50256], "tokens": ["<s>"]}}}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    roberta = {"type": "RobertaProcessing", "sep": ["</s>", 50257], "cls": ["<s>", 50256], "trim_offsets": True,
               "add_prefix_space": False}
    texts = ["hello world", "", "a<s>b </s>"]
    for i, post in enumerate((roberta, {"type": "BertProcessing", "sep": ["</s>", 50257], "cls": ["<s>", 50256]},
                              {"type": "Sequence", "processors": [byte_level, template]})):
        d = tmp_path / f"p{i}"
        d.mkdir()
        (d / "tokenizer.json").write_text(json.dumps({**doc, "post_processor": post}))
        ours = BPETokenizer.from_pretrained(d)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        for specials in (True, False):
            assert ours.encode(texts, add_special_tokens=specials).tolist() == \
                [e.ids for e in hf.encode_batch(texts, add_special_tokens=specials)], (post["type"], specials)
    (tmp_path / "base" / "tokenizer.json").write_text(json.dumps(
        {**doc, "post_processor": {"type": "Sequence", "processors": [template, roberta]}}))
    with pytest.raises(ValueError, match="post_processor.processors = .* more than one processor that adds"):
        BPETokenizer.from_pretrained(tmp_path / "base")
    # an id the kernels' int32 ids cannot hold (HF's are u32) is a load error naming the field, not a wrapped id
    big = {**template, "special_tokens": {"<s>": {"id": "<s>", "ids": [1 << 31], "tokens": ["<s>"]}}}
    for post, field in ((big, r"post_processor.special_tokens\[\"<s>\"\].ids\[0\] = 2147483648"),
                        ({**roberta, "cls": ["<s>", -1]}, r"post_processor.cls\[1\] = -1")):
        (tmp_path / "base" / "tokenizer.json").write_text(json.dumps({**doc, "post_processor": post}))
        with pytest.raises(ValueError, match=f"{field} is (not a token id|over 2\\*\\*31 - 1)"):
            BPETokenizer.from_pretrained(tmp_path / "base")


def test_file_truncation_and_padding_as_hf(tmp_path: O.Path) -> None:
    """A tokenizer.json's truncation and padding, as HF's encode_batch applies them (the template's BOS kept, a
    max_length under the template's count cutting nothing when it is added), with and without special tokens, in
    a batch and one text at a time; the LLM models read the file as transformers does (neither applied)."""
    texts = O.LIMIT_TEXTS
    base = O.write_limited_json(tmp_path / "base", None, None)
    doc = json.loads((base / "tokenizer.json").read_text())
    for i, (trunc, pad) in enumerate((t, p) for t in O.TRUNCATIONS for p in O.PADDINGS):
        d = O.write_limited_json(tmp_path / f"t{i}", trunc, pad)
        ours = BPETokenizer.from_pretrained(d)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        for specials in (True, False):
            exp = [e.ids for e in hf.encode_batch(texts, add_special_tokens=specials)]
            assert ours.encode(texts, add_special_tokens=specials).tolist() == exp, (trunc, pad, specials)
            assert [ours.encode([t], add_special_tokens=specials).tolist()[0] for t in texts] == \
                [hf.encode(t, add_special_tokens=specials).ids for t in texts], (trunc, pad, specials)
        if trunc is not None and pad is None:  # transformers turns the file's limits off for a plain call
            assert BPETokenizer(llm.load_spec(d)).encode(texts).tolist() == \
                BPETokenizer.from_pretrained(base).encode(texts).tolist()
    # what HF fails on: a text truncated under OnlySecond (an error), a stride not under the cut length (a panic)
    for i, (trunc, why) in enumerate(((dict(O.TRUNCATIONS[-1], max_length=3), "OnlySecond"),
                                      ({"direction": "Right", "max_length": 3, "strategy": "LongestFirst", "stride": 2},
                                       "stride 2 is not under the length 2"))):
        d = O.write_limited_json(tmp_path / f"bad{i}", trunc, None)
        ours = BPETokenizer.from_pretrained(d)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        assert ours.encode(["a b", "a"]).tolist() == [e.ids for e in hf.encode_batch(["a b", "a"])]  # (nothing cut)
        with pytest.raises(InputError, match=f"row 1: its ids are over max_length 3, and .*{why}"):
            ours.encode(["a", "a b c d"])
    trunc, pad = {"max_length": 4, "strategy": "LongestFirst", "stride": 0}, O.PADDINGS[1]
    for field, value, why in (("truncation", {**trunc, "max_length": -1}, r"max_length = -1 is not an integer 0 \.\."),
                              ("truncation", {**trunc, "direction": "Up"}, "direction = .* is not one of Left, Right"),
                              ("padding", {**pad, "strategy": "Longest"}, "strategy = .* is not")):
        (base / "tokenizer.json").write_text(json.dumps({**doc, field: value}))
        with pytest.raises(ValueError, match=f"{field}.{why}"):
            BPETokenizer.from_pretrained(base)


def test_long_run_is_exact() -> None:
    big = "a" * 1_000_000
    assert _ranked_cached("cl100k_base").encode([big]).tolist()[0] == O.tiktoken_encoding(
        "cl100k_base").encode_ordinary(big)


@pytest.mark.timing
def test_long_runs_not_quadratic() -> None:
    import time  # noqa: PLC0415

    tok = _ranked_cached("cl100k_base")
    tok.encode(["a" * 1_000_000])  # (the thread's scratch grown once, outside the timing)
    for unit in ("a", "7", "😀", "ab"):
        small, big = unit * 100_000, unit * 1_000_000
        fast_small = fast_big = float("inf")
        for _ in range(2):  # the faster of two calls of each size: another test process shares the cores
            a = time.perf_counter()
            tok.encode([small])
            b = time.perf_counter()
            tok.encode([big])
            fast_small, fast_big = min(fast_small, b - a), min(fast_big, time.perf_counter() - b)
        t0, t1, t2 = 0.0, fast_small, fast_small + fast_big
        assert (t2 - t1) < 30 * (t1 - t0) + 0.05, unit  # 10x the input: ~10x the time, never ~100x


LONG_PIECE_UNITS = {  # one pre-token each, mixed ranks: symbols, marks and emoji; letters; digits (o200k, gpt2)
    "symbols": list("'\"]/<)#>?,!-=*.;:_~^&%$@|+") + ["\u0301", "\u0308", "\ufe0f", "\U0001F600", "\u2014", "\u00bf"],
    "letters": list("abcdefghijklmnopqrstuvwxyzet") + ["\u00e9", "\u00df", "\u0436", "\u4e2d", "\u3042"],
    "digits": list("0123456789"),
    # runs of real words written without spaces (CJK, kana, Thai, camelCase): deep merges between mixed symbols
    "words": ["的", "我们", "服务器", "模型", "東京", "ひらがな", "カタカナ", "です", "กรุงเทพ", "ภาษาไทย", "Get",
              "User", "Account", "Settings", "Handler", "Factory", "Id"],
}


def test_long_pieces_merge_exactly(ranked: tuple[str, BPETokenizer], llama3: tuple) -> None:
    """Pre-tokens of over SHORT (48) bytes of mixed bytes, merged with the heap: the ids tiktoken and HF give.
    (Building the heap sifted entries up as well as down, which left it out of order: ~3% of such symbol pieces
    merged in another order, on rank files and HF merges alike; runs of one unit, all the tests had, were right.)"""
    import random  # noqa: PLC0415

    name, tok = ranked
    rng = random.Random(3)
    texts = [" " * (kind == "symbols") + "".join(rng.choice(units) for _ in range(rng.randint(17, 160)))
             for kind, units in LONG_PIECE_UNITS.items() for _ in range(150)]
    assert not _diff(tok.encode(texts).tolist(), O.tiktoken_encoding(name).encode_ordinary_batch(_nfc(name, texts)),
                     texts)
    if name == "cl100k_base":
        ours, hf = llama3
        assert not _diff(ours.encode(texts).tolist(), [e.ids for e in hf.encode_batch(texts)], texts)


def test_qwen2_style_tokenizer_json(tmp_path: O.Path) -> None:
    """NFC normalizer + Qwen's single-digit pattern + specials, against HF tokenizers (which NFCs per segment)."""
    added = [{"id": 151643 + i, "content": c} for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
    pat = next(p for p, f in O.F.PATTERNS.items() if f == O.F.QWEN2)
    O.write_tokenizer_json(tmp_path, "qwen2", family_pattern=pat, nfc=True, added=added)
    ours = BPETokenizer.from_pretrained(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = TEXTS[::3] + O.every_code_point_texts(1 << 15)[:4] + [
        "<|im_start|>e\u0301<|im_end|>\u0301 Å Å ḳ́ 가 가 ᄀ<|endoftext|>\u1161 >\u0338 <|im_end|>\u0338"]
    assert not _diff(ours.encode(texts).tolist(), [e.ids for e in hf.encode_batch(texts)], texts)


def test_added_token_flags_and_prefix_space(tmp_path: O.Path) -> None:
    """HF's added-token flags (lstrip, rstrip, single_word, normalized, special or not) and ByteLevel's
    add_prefix_space, on a GPT-2 tokenizer.json, against HF tokenizers."""
    from tokenizers import ByteLevelBPETokenizer  # noqa: PLC0415

    ByteLevelBPETokenizer(str(O.DATA / "encoder.json"), str(O.DATA / "vocab.bpe")).save(str(tmp_path / "t.json"))
    doc = json.loads((tmp_path / "t.json").read_text())
    flags = [dict(lstrip=True), dict(rstrip=True), dict(single_word=True), dict(lstrip=True, rstrip=True),
             dict(special=False, normalized=True), dict(special=False, normalized=True, single_word=True)]
    names = ["<mask>", "<sep>", "cat", "[X]", "dog", "ant"]
    vocab = doc["model"]["vocab"]
    ids = iter(range(50257, 50300))  # as HF numbers them: a token the model has keeps the model's id
    doc["added_tokens"] = [{"id": vocab[c] if c in vocab else next(ids), "content": c, "single_word": False,
                            "lstrip": False, "rstrip": False, "normalized": False, "special": True, **f}
                           for c, f in zip(names, flags)]
    texts = ["I saw a <mask> and <sep>  then", "concatenate cat cats a cat. _cat cat_ (cat)", "  [X]  y[X]z [X]",
             "hotdog dog dogs ant pants ant", "<mask><mask>  <mask>", "  <sep>   <sep>x", "", "x", "   "] + TEXTS[:60]
    for prefix in (False, True):
        for step in doc["pre_tokenizer"].get("pretokenizers", [doc["pre_tokenizer"]]):
            step["add_prefix_space"] = prefix
        d = tmp_path / f"p{int(prefix)}"
        d.mkdir()
        (d / "tokenizer.json").write_text(json.dumps(doc))
        ours = BPETokenizer.from_pretrained(d)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        assert not _diff(ours.encode(texts).tolist(), [e.ids for e in hf.encode_batch(texts)], texts), prefix


ADDED_ID_CASES = {  # added_tokens whose "id" fields disagree with the ids HF gives them, which HF does not read
    "gap": [{"id": 100300, "content": "<|a|>"}, {"id": 100301, "content": "<|b|>"}],
    "swapped": [{"id": 100257, "content": "<|a|>"}, {"id": 100256, "content": "<|b|>"}],
    "in the model, another id": [{"id": 100256, "content": "hello", "special": False},
                                 {"id": 100257, "content": "<|b|>"}],
    "after one in the model": [{"id": 100256, "content": "<|a|>"}, {"id": 100400, "content": "hello"},
                               {"id": 100999, "content": "<|b|>", "special": False}],
    "repeated": [{"id": 100256, "content": "<|a|>"}, {"id": 100257, "content": "<|a|>"},
                 {"id": 100258, "content": "<|b|>"}],
    "repeated, other flags": [{"id": 100256, "content": "<|a|>", "special": False},
                              {"id": 100257, "content": "<|a|>", "special": True, "lstrip": True},
                              {"id": 100258, "content": "<|b|>", "rstrip": True, "special": False},
                              {"id": 100259, "content": "<|b|>", "special": False}],
    "empty content": [{"id": 100256, "content": ""}, {"id": 100257, "content": "<|a|>"}],
}


ADDED_POOL = ["<|a|>", "<|b|>", "hello", " hello", "\u0120hello", "ab", "<s>", "\u00e9", "e\u0301", "x y", "<|a|>x",
              "a", "\u00e9 x", " "]


@pytest.mark.parametrize("kind", ["split", "split+nfc", "bytelevel+prefix"])
def test_added_tokens_random_files_as_hf(kind: str, tmp_path: O.Path) -> None:
    """Random added_tokens lists (contents the model has or not, repeats with other flags, ids that disagree,
    lstrip / rstrip / single_word / normalized / special, an NFC normalizer and non-NFC contents; a Split + ByteLevel
    file, or GPT-2's single ByteLevel with add_prefix_space) on random texts of those contents: ids and decoded
    strings equal HF's. What this found: HF strips and checks a match by the flags of the last entry of its id; it
    searches on from a match's own end, so a match may start inside the whitespace an rstrip took (an lstrip one
    then starts where that strip ended, and is dropped when that leaves it empty); it matches a normalized token's
    content after normalizing it."""
    import random  # noqa: PLC0415

    rng = random.Random(11 + len(kind))
    if kind == "bytelevel+prefix":
        from tokenizers import ByteLevelBPETokenizer  # noqa: PLC0415

        (tmp_path / "base").mkdir()
        ByteLevelBPETokenizer(str(O.DATA / "encoder.json"), str(O.DATA / "vocab.bpe")).save(
            str(tmp_path / "base" / "tokenizer.json"))
        doc = json.loads((tmp_path / "base" / "tokenizer.json").read_text())
        doc["pre_tokenizer"]["add_prefix_space"] = True
    else:
        O.write_tokenizer_json(tmp_path / "base", "gpt2", family_pattern=O.LLAMA3_PATTERN, nfc=kind == "split+nfc")
        doc = json.loads((tmp_path / "base" / "tokenizer.json").read_text())
    for trial in range(16):
        added = []
        for _ in range(rng.randint(1, 6)):
            special = rng.random() < 0.6
            added.append({"id": rng.choice([40, 50256, 50257, 50258, 50259, 50300]), "content": rng.choice(ADDED_POOL),
                          "single_word": rng.random() < 0.15, "lstrip": rng.random() < 0.25,
                          "rstrip": rng.random() < 0.25, "normalized": (not special) != (rng.random() < 0.3),
                          "special": special})
        d = tmp_path / f"t{trial}"
        d.mkdir()
        (d / "tokenizer.json").write_text(json.dumps({**doc, "added_tokens": (doc["added_tokens"] or []) + added}))
        ours = BPETokenizer.from_pretrained(d)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        texts = ["".join(rng.choice([*ADDED_POOL, " ", "  ", "z", "\n"]) for _ in range(rng.randint(0, 8)))
                 for _ in range(30)]
        exp = [e.ids for e in hf.encode_batch(texts)]
        assert not _diff(ours.encode(texts).tolist(), exp, texts), added
        ids = sorted({i for e in exp for i in e})
        for skip in (False, True):
            assert ours.decode(ids, [0, len(ids)], skip_special_tokens=skip, errors="replace") == \
                [hf.decode(ids, skip_special_tokens=skip)], added


def test_added_token_listed_twice_raw_and_normalized(tmp_path: O.Path) -> None:
    """A content listed twice, once normalized and once not, is matched in both passes (HF keeps both entries):
    under NFC its normalized pattern, listed before another token of the same pattern, wins that match."""
    added = [{"id": 50256, "content": "e\u0301", "special": False, "normalized": True, "lstrip": True},
             {"id": 50257, "content": "\u00e9", "special": False, "normalized": True},
             {"id": 50258, "content": "e\u0301", "special": False, "normalized": False, "rstrip": True}]
    O.write_tokenizer_json(tmp_path, "gpt2", family_pattern=O.LLAMA3_PATTERN, nfc=True, added=added)
    ours = BPETokenizer.from_pretrained(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = ["x\u00e9y e\u0301 z", "  \u00e9", "e\u0301  e\u0301\u00e9"]
    exp = [e.ids for e in hf.encode_batch(texts)]
    assert ours.encode(texts).tolist() == exp
    assert hf.token_to_id("e\u0301") in exp[0]  # (the normalized entry matched the precomposed text)


@pytest.mark.parametrize("case", ADDED_ID_CASES)
def test_added_token_ids_as_hf_gives_them(case: str, tmp_path: O.Path) -> None:
    """HF's Tokenizer.from_file ignores an added token's ``id``: in file order, a content the model (or an earlier
    added token) has keeps that id, a new one takes the next id; repeats share it. Ids, specials skipped in decode
    and decoded strings equal HF's for such files (a consistent file reads the same either way)."""
    O.write_tokenizer_json(tmp_path, "cl100k_base", family_pattern=O.LLAMA3_PATTERN, added=ADDED_ID_CASES[case])
    ours = BPETokenizer.from_pretrained(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = ["x<|a|>y<|b|> hello", " <|a|>  <|b|>  <|a|>x", "<|b|><|a|>", "hello world", ""]
    assert not _diff(ours.encode(texts).tolist(), [e.ids for e in hf.encode_batch(texts)], texts)
    ids = [hf.token_to_id(c) for c in ("<|a|>", "<|b|>", "hello")] + [100256, 100257, 15339, 40]
    ids = [i for i in ids if i is not None and i < hf.get_vocab_size(with_added_tokens=True)]
    for skip in (False, True):
        assert ours.decode(ids, [0, len(ids)], skip_special_tokens=skip, errors="replace") == \
            [hf.decode(ids, skip_special_tokens=skip)]


def test_merge_cache_exact_when_full_and_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU kernels keep merged pieces per share, across calls: ids stay exact when the cache empties itself
    all the time (a tiny one), across calls, in both shares of a parallel batch, and for a piece whose bytes
    share a hash slot with others."""
    import triton_textops.ops.bpe.tokenizer as T  # noqa: PLC0415
    from triton_textops.ops.core import kernels as K  # noqa: PLC0415

    enc = O.tiktoken_encoding("cl100k_base")
    texts = O.BPE_ADVERSARIAL + [t for t in TEXTS if any(ord(c) > 0x7F for c in t)][:200] + AUSTEN[:64]
    expected = enc.encode_ordinary_batch(texts)
    for shape in ((8, 8, 64, 16), (4, 4, 2, 2), T.CACHE_SHAPE):
        monkeypatch.setattr(T, "CACHE_SHAPE", shape)
        tok = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES["cl100k_base"], encoding="cl100k_base")
        for threads in (1, 2):
            K.set_num_threads(threads)
            try:
                for _ in range(2):  # the second call reads what the first cached
                    assert not _diff(tok.encode(texts).tolist(), expected, texts), shape
                    assert tok.encode([texts[5]]).tolist() == [expected[5]]
            finally:
                K.set_num_threads(None)
        used = tok._merge_cache()[0][:, 0]  # entries per share
        assert used.max() * 2 <= shape[0]  # never over half the slots
    assert used[0] > 0 and used[1] > 0  # the full-size cache: both shares kept pieces


def test_merge_cache_of_a_gone_tokenizer_is_taken_over_emptied(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tokenizer made on a thread after another was dropped there takes over its merge cache (no fresh pages),
    emptied: another vocabulary then encodes exactly (cl100k's entries left in it would give cl100k's ids); one
    made while the other is alive gets its own. A new tokenizer has its default options' one-text call ready: its
    first one-text encode makes no plan."""
    import triton_textops.ops.bpe.tokenizer as T  # noqa: PLC0415

    monkeypatch.setattr(T._POOL, "spare_caches", [])  # (none left by the tests before)
    texts = AUSTEN[:200] + O.BPE_ADVERSARIAL + [t for t in TEXTS if any(ord(c) > 0x7F for c in t)][:100]
    a = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES["cl100k_base"], encoding="cl100k_base")
    a.encode(texts)
    meta = a._merge_cache()[0]
    assert meta[:, 0].min() > 0  # every kernel share kept pieces
    b = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES["o200k_base"], encoding="o200k_base")
    assert b._merge_cache()[0] is not meta
    del a  # (no reference cycle keeps it: gone now, not at the collector's next pass)
    c = BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe")
    with monkeypatch.context() as m:
        m.setattr(BPETokenizer, "_one_plan", lambda *a, **k: pytest.fail("a plan made at the first call"))
        assert c._merge_cache()[0] is meta and meta[:, 0].max() == 0
        assert c.encode([texts[3]]).tolist() == [O.tiktoken_encoding("gpt2").encode_ordinary(texts[3])]
    for tok, name in ((c, "gpt2"), (b, "o200k_base")):
        expected = O.tiktoken_encoding(name).encode_ordinary_batch(texts)
        assert not _diff(tok.encode(texts).tolist(), expected, texts), name
    spares = T._POOL.spare_caches
    assert not spares
    more = [BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe") for _ in range(3)]
    del b, c, more
    assert len(spares) == T.CACHES_FREE  # (the rest freed)


def test_one_text_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """One text (a list of one str / bytes, or a (data, offsets) pair of one text) takes the direct kernel call
    with arguments made once per thread and options: exact against tiktoken when the texts grow past the scratch
    the call was made for, when the options change call to call, when a batch replaces the thread's scratch in
    between, on a sub-span of a buffer, from several threads at once; a bad span or bad UTF-8 is an InputError."""
    import threading  # noqa: PLC0415

    import triton_textops.ops.bpe.tokenizer as T  # noqa: PLC0415

    monkeypatch.setattr(T, "SCRATCH_KEEP", 1 << 17)  # a 100 KB text outgrows the kept scratch
    enc = O.tiktoken_encoding("cl100k_base")
    tok = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES["cl100k_base"], encoding="cl100k_base")
    texts = ["", "a", AUSTEN[0], AUSTEN[1] * 40, "hello <|endoftext|> world", AUSTEN[2], "x" * 300_000, "é" * 3,
             AUSTEN[3] * 200, AUSTEN[4]]
    for _ in range(2):
        for t in texts:
            assert tok.encode([t]).tolist() == [enc.encode_ordinary(t)]
            assert tok.encode([t.encode()]).tolist() == [enc.encode_ordinary(t)]
            assert tok.encode([t], allowed_special="all").tolist() == [enc.encode(t, allowed_special="all")]
            assert tok.encode([t], allowed_special=["<|endoftext|>"]).tolist() == \
                [enc.encode(t, allowed_special="all")]  # (an unhashable collection: no plan kept)
        tok.encode(AUSTEN[:300])  # a batch on this thread: its scratch replaced
    from triton_textops.ops.core import kernels as K  # noqa: PLC0415

    K.COUNTS.clear()
    tok.encode(["abc"])
    plans = dict(tok._tls.plans)
    tok.encode(["abcd"])
    assert K.COUNTS["launch"] == 2 and tok._tls.plans == plans and plans  # one launch each, the plan kept
    raw = b"".join(t.encode() for t in AUSTEN[:3])
    a, b = len(AUSTEN[0].encode()), len(AUSTEN[0].encode()) + len(AUSTEN[1].encode())
    data = np.frombuffer(raw, np.uint8).copy()  # a writable buffer, as a request's
    r = tok.encode((data, np.array([a, b])))
    assert r.tolist() == [enc.encode_ordinary(AUSTEN[1])] and r.offsets.tolist() == [0, len(r.ids)]
    for bad in ([b, a], [0, len(raw) + 1], [-1, 3]):
        with pytest.raises(InputError, match="row 0: its offsets are not"):
            tok.encode((data, np.array(bad)))
    with pytest.raises(InputError, match="row 0: text is not valid UTF-8"):
        tok.encode([b"ok \xff"])
    with pytest.raises(InputError, match="row 0: text is not valid UTF-8"):
        tok.encode(["\ud800"])
    assert tok.encode([AUSTEN[5]]).tolist() == [enc.encode_ordinary(AUSTEN[5])]  # (after the errors)

    errors: list[str] = []

    def worker(k: int) -> None:
        for t in AUSTEN[k::4][:60]:
            if tok.encode([t]).tolist() != [enc.encode_ordinary(t)]:
                errors.append(t[:40])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


def test_tokenizers_of_one_thread_share_its_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU scratch a thread keeps serves every tokenizer it runs: a second tokenizer's first batch allocates no
    new ids scratch; a format with NFC (Qwen2) after one without (its placeholder normalized-text buffer) and back,
    batches and one-text calls alternating, texts growing past the kept scratch: each exact against tiktoken."""
    import triton_textops.ops.bpe.tokenizer as T  # noqa: PLC0415

    monkeypatch.setattr(T, "SCRATCH_KEEP", 1 << 17)
    toks = {name: BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[name], encoding=name)
            for name in ("cl100k_base", "qwen2")}
    toks["cl100k_base"].encode(AUSTEN[:50])
    kept = T._POOL.ids
    toks["qwen2"].encode(AUSTEN[50:60])
    assert T._POOL.ids is kept
    batches = [AUSTEN[:40], [AUSTEN[1] * 60], O.BPE_ADVERSARIAL, ["e\u0301" * 5000, "A\u030a"], AUSTEN[40:45] * 30]
    for _ in range(2):
        for batch in batches:
            for name, tok in toks.items():
                enc = O.tiktoken_encoding(name)
                assert tok.encode(batch).tolist() == enc.encode_ordinary_batch(_nfc(name, batch))
                assert tok.encode([batch[-1]]).tolist() == [enc.encode_ordinary(_nfc(name, [batch[-1]])[0])]


def test_long_tokens(tmp_path: O.Path) -> None:
    """Tokens of 255 bytes and more (a slot holds lengths up to 254; longer ones are compared on their entry's
    length): looked up whole and merged exactly as tiktoken does, next to their shorter prefixes."""
    import base64  # noqa: PLC0415

    toks = [bytes([b]) for b in range(256)] + [b"a" * (1 << k) for k in range(1, 10)] + [b"a" * 255, b"a" * 300,
                                                                                        b" " + b"b" * 299]
    ranks = {t: i for i, t in enumerate(dict.fromkeys(toks))}
    path = tmp_path / "long.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n" for t, i in ranks.items()))
    tok = BPETokenizer.from_tiktoken(path, pattern=O.TIKTOKEN_PATTERNS["cl100k_base"], special_tokens={})
    enc = tiktoken.Encoding("long", pat_str=O.TIKTOKEN_PATTERNS["cl100k_base"], mergeable_ranks=ranks,
                            special_tokens={})
    texts = ["a" * n for n in (254, 255, 256, 299, 300, 301, 512, 1000)] + [" " + "b" * 299, " " + "b" * 298,
                                                                          "x" + "a" * 255 + " " + "b" * 299]
    got = tok.encode(texts).tolist()
    assert got == enc.encode_ordinary_batch(texts)
    assert got[1] == [ranks[b"a" * 255]] and got[4] == [ranks[b"a" * 300]] and got[8] == [ranks[b" " + b"b" * 299]]


def test_host_table_build_matches_the_kernels_hashing_and_probing() -> None:
    """The vocabulary and pair tables are built with NumPy (no kernel compiled at load): the vectorized FNV and pair
    mix equal the kernels' device functions (run as Python: word by word, the first word), and every key's slot is reached by linear probing from
    its home over filled slots only (wrapping at the end), each slot taken once, within the longest run returned:
    random homes, a pile-up on one home and pile-ups at the table's end (the wrap)."""
    from triton_textops.ops.bpe import merge as M

    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 40, 300)
    lengths[:8] = [1, 255, 300, 7, 8, 9, 16, 17]
    lengths[-3:] = [3, 9, 5]
    pool = rng.integers(0, 256, int(lengths.sum())).astype(np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    h, first = M._hash_all(pool, starts, lengths)  # (the last tokens end within 8 bytes of the pool's end)
    with np.errstate(over="ignore"):  # (NumPy's scalars warn where the kernels' uint64 products wrap)
        got = [M.piece_hash(pool, a, a + n) for a, n in zip(starts.tolist(), lengths.tolist())]
    assert list(zip(h.tolist(), first.tolist())) == got
    assert first[3] == int.from_bytes(pool[starts[3]:starts[3] + min(8, lengths[3])].tobytes(), "little", signed=True)
    keys = (rng.integers(0, 1 << 18, 500) << 32) | rng.integers(0, 1 << 18, 500)
    with np.errstate(over="ignore"):
        assert M._mix64_all(keys).tolist() == [M.mix64(int(k)) for k in keys]

    for size, home in [(64, rng.integers(0, 64, 40)), (64, np.full(40, 3)), (64, np.full(40, 60)),
                       (16, np.array([15, 15, 14, 0, 15, 1, 15])), (1024, rng.integers(0, 1024, 511)),
                       (16, np.zeros(0, np.int64))]:
        slot, longest = M._place(home.astype(np.int64), size)
        assert len(set(slot.tolist())) == len(slot) and ((0 <= slot) & (slot < size)).all()
        filled = set(slot.tolist())
        runs = [(s - h) % size for h, s in zip(home.tolist(), slot.tolist())]
        for h, r in zip(home.tolist(), runs):
            assert all((h + k) % size in filled for k in range(r + 1))
        assert longest == max(runs, default=0)


def _hashes_cpu(share, shares, n, buf, start, length, h, q, keys, mixed):  # noqa: ANN001, ANN202
    for t in range(share, n, shares):
        h[t], q[t] = piece_hash(buf, start[t], start[t] + length[t])
        mixed[t] = mix64(keys[t])


HASHES = K.cpu(_hashes_cpu)


def test_compiled_hashes_equal_the_host_build() -> None:
    """The kernels' piece hash and pair mix as numba compiles them equal the host's vectorized build, on random
    bytes with the high bit set and pieces up to the buffer's last byte (the bytewise tail of word_at). Both hash
    in uint64: numba compiles an int64 product as ``mul nsw`` (overflow undefined), and LLVM then dropped the 63-bit
    mask after one (this test failed with int64 products)."""
    from triton_textops.ops.bpe import merge as M  # noqa: PLC0415

    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 4000).astype(np.uint8)
    start = rng.integers(0, 3990, 3000)
    length = np.minimum(rng.integers(1, 70, 3000), 4000 - start)
    start[:4], length[:4] = [3999, 3992, 3990, 0], [1, 8, 10, 4000]
    keys = (rng.integers(0, 1 << 31, 3000) << 32) | rng.integers(0, 1 << 31, 3000)
    h, q, mixed = (np.zeros(3000, dtype=np.int64) for _ in range(3))
    K.run_cpu(HASHES, 3000, buf, start, length, h, q, keys, mixed)
    host_h, host_q = M._hash_all(buf, start, length)
    assert (h == host_h).all() and (q == host_q).all() and (mixed == M._mix64_all(keys)).all()


# (the hash run as Python: NumPy's uint64 scalars wrap as the kernels' do, with a warning)
@pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning")
def test_slot_table_finds_every_token_from_its_one_slot() -> None:
    """SLOTS as the host builds it and :func:`merge.lookup` reads it (run as Python): every token of 1-300 bytes
    (8 and 9 bytes: the slot's inline bytes and one past them; 255+: the length capped in the tag) is found by
    its bytes, its WHOLE flag cleared only answers ``whole=False``; its bytes with one byte changed past the 8th,
    one byte short or one byte longer are not found; a hit is checked on the bytes (forged tables)."""
    from triton_textops.ops.bpe import merge as M

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 20, 400)
    lengths[:8] = [1, 7, 8, 9, 16, 255, 256, 300]
    pool = rng.integers(0, 256, int(lengths.sum())).astype(np.uint8)
    off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    size = 1024
    slots, slot_of, longest = M._fill_slots(pool, off, size)
    slots[slot_of[3], 0] &= ~M.WHOLE
    voc = (pool, off, slots.reshape(-1), None, None, None, np.array([size - 1, 0, longest, 0, len(lengths)]))
    for i, (a, b) in enumerate(zip(off[:-1].tolist(), off[1:].tolist())):
        assert M.lookup(pool, a, b, *M.piece_hash(pool, a, b), voc, False) == i
        assert M.lookup(pool, a, b, *M.piece_hash(pool, a, b), voc, True) == (-1 if i == 3 else i)
    for i in range(2, 8):  # 8+ bytes: change the last one, drop it, add one
        a, b = int(off[i]), int(off[i + 1])
        bad = pool[a:b].copy()
        bad[-1] ^= 1
        longer = np.concatenate([pool[a:b], [7]]).astype(np.uint8)
        for buf, n in ((bad, b - a), (pool[a:b - 1].copy(), b - a - 1), (longer, b - a + 1)):
            assert M.lookup(buf, 0, n, *M.piece_hash(buf, 0, n), voc, False) != i
    # a hit is verified on the bytes, not on the hash: forge the slot's inline bytes, or a stored byte past the 8th
    a, b = int(off[2]), int(off[3])
    query = pool[a:b].copy()
    slots[slot_of[2], 1] ^= 1 << 56
    assert M.lookup(query, 0, b - a, *M.piece_hash(query, 0, b - a), voc, False) == -1
    a, b = int(off[4]), int(off[5])
    query = pool[a:b].copy()
    assert M.lookup(query, 0, b - a, *M.piece_hash(query, 0, b - a), voc, False) == 4
    pool[b - 1] ^= 1
    assert M.lookup(query, 0, b - a, *M.piece_hash(query, 0, b - a), voc, False) == -1
