"""tokenizer.json normalizers beyond NFC (NFD, NFKC, NFKD, Lowercase, StripAccents, Replace, Strip, Prepend and
Sequences of them) on byte-level BPE files and on SentencePiece BPE and Unigram files: exact ids against HF
``tokenizers`` (``encode_batch``) on hard text (every code point in context, compatibility characters, Hangul,
marks out of order, Turkish İ, Greek sigma, emoji ZWJ), normalized added tokens, and the load errors."""

from __future__ import annotations

import json
from pathlib import Path

import bpe_oracles as BO
import pytest
import sp_oracles as O
from textcases import ADVERSARIAL

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer
from triton_textops.ops.tokenizer import Tokenizer

tokenizers = pytest.importorskip("tokenizers")

HARD = ["ﬁﬂﬀﬃ ＡＢＣ１２３ ㎒㎏㍻ \ufdfa ½ ⁴ ℌ Ⅻ ① ǅ ﾊﾝｶｸ ｶﾞ ㌀", "İstanbul ıI ΣΑΣ ὈΔΥΣΣΕΎΣ ς ẞ ß Ǆ",
        "한국어 \u1100\u1161\u11a8 \uac00\u11a8", "a\u0316\u0301\u0300\u05b0 e\u0301\u0316 \u1e0b\u0323 q\u0307\u0323",
        "👨‍👩‍👧 👍🏽 🏳️‍🌈 e\u0301\u0301\u0301", "  \t lead and trail \u3000 ", " ", "", "Ｈｅｌｌｏ　ＷＯＲＬＤ！ 'S 'LL",
        "Crème Brûlée naïve façade Ångström", "<tok>x<TOK> <ﬁ>"]
TEXTS = HARD + ADVERSARIAL + BO.BPE_ADVERSARIAL + O.MULTILINGUAL + BO.random_texts(5, 100)
# every code point once, after a letter (it may compose with it) and before a mark (which may compose with it or
# reorder), in chunks of 2048 (~12 MB in all: the whole set for two cases, every 16th chunk for the others)
_CPS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
CONTEXT = ["".join(f"a{chr(c)}\u0316 " for c in _CPS[i:i + 2048]) for i in range(0, len(_CPS), 2048)]
FULL = ("nfkc+lower", "nfkd+strip_accents+lower")
SEQ = "Sequence"
NORMALIZERS = {
    "nfkc": {"type": "NFKC"},
    "nfd": {"type": "NFD"},
    "nfkd": {"type": "NFKD"},
    "lower": {"type": "Lowercase"},
    "nfkc+lower": {"type": SEQ, "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    "nfd+strip_accents+lower": {"type": SEQ, "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
                                                               {"type": "Lowercase"}]},
    "strip+replace+nfkd": {"type": SEQ, "normalizers": [
        {"type": "Strip", "strip_left": True, "strip_right": False},
        {"type": "Replace", "pattern": {"String": "o"}, "content": "\u00f6\u0301"}, {"type": "NFKD"}]},
    "nfc+strip_accents+nfkc": {"type": SEQ, "normalizers": [{"type": "NFC"}, {"type": "StripAccents"},
                                                             {"type": "Strip", "strip_left": False,
                                                              "strip_right": True}, {"type": "NFKC"}]},
}
ADDED = [{"id": 50257, "content": "<tok>", "normalized": True, "special": False},
         {"id": 50258, "content": "<ﬁ>", "normalized": True, "special": False},
         {"id": 50259, "content": "<TOK>", "normalized": False, "special": True}]


def _diff(got: list, want: list, texts: list[str]) -> list:
    return [(t[:40], g[:10], w[:10]) for t, g, w in zip(texts, got, want) if g != w]


@pytest.mark.parametrize("name", list(NORMALIZERS))
def test_byte_level_bpe_matches_hf(tmp_path: Path, name: str) -> None:
    path = BO.write_tokenizer_json(tmp_path, "gpt2", family_pattern=BO.LLAMA3_PATTERN, normalizer=NORMALIZERS[name],
                                   added=ADDED)
    ours = Tokenizer.from_file(path)
    assert isinstance(ours, BPETokenizer)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = TEXTS + (CONTEXT if name in FULL else CONTEXT[::16])
    want = [e.ids for e in hf.encode_batch(texts)]
    assert _diff(ours.encode(texts).tolist(), want, texts) == []
    assert hf.token_to_id("<tok>") in want[-1 - (len(texts) - len(HARD))]  # (the normalized added token matched)


def test_byte_level_prefix_space_and_long_text(tmp_path: Path) -> None:
    """ByteLevel's add_prefix_space after a program (the prefix-space copies go after its areas), and one long text
    of the worst expansion (U+FDFA: 11 bytes out per byte in, twice through a Sequence)."""
    from tokenizers import ByteLevelBPETokenizer  # noqa: PLC0415

    (tmp_path / "base").mkdir()
    ByteLevelBPETokenizer(str(BO.DATA / "encoder.json"), str(BO.DATA / "vocab.bpe")).save(
        str(tmp_path / "base" / "tokenizer.json"))
    doc = json.loads((tmp_path / "base" / "tokenizer.json").read_text())
    doc["pre_tokenizer"]["add_prefix_space"] = True
    for name in ("nfkc+lower", "strip+replace+nfkd", "nfkc"):
        doc["normalizer"] = NORMALIZERS[name]
        path = tmp_path / name / "tokenizer.json"
        path.parent.mkdir()
        path.write_text(json.dumps(doc))
        ours, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))
        texts = HARD + ["\ufdfa" * 3000 + " o" * 500, "x" + "㎒" * 2000]
        assert _diff(ours.encode(texts).tolist(), [e.ids for e in hf.encode_batch(texts)], texts) == []


@pytest.fixture(scope="module")
def sp_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """transformers' conversions of a SentencePiece BPE (byte fallback) and a Unigram model trained here."""
    root = tmp_path_factory.mktemp("spn")
    bpe = O.train(root / "bpe.model", byte_fallback=True, vocab_size=600)
    uni = O.train(root / "uni.model", model_type="unigram", vocab_size=600, byte_fallback=True)
    return {"bpe": json.loads(O.convert(bpe, root / "bpe.json", "llama").read_text()),
            "uni": json.loads(O.convert(uni, root / "uni.json", "spm").read_text())}


SP_CASES = {
    "nfkc": [{"type": "NFKC"}],
    "nfkd+strip_accents+lower": [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}],
    "nfd+lower": [{"type": "NFD"}, {"type": "Lowercase"}],
    "lower+nfkc": [{"type": "Lowercase"}, {"type": "NFKC"}],
    "strip_accents": [{"type": "StripAccents"}],
}


@pytest.mark.parametrize("model", ["bpe", "uni"])
@pytest.mark.parametrize("case", list(SP_CASES))
def test_sentencepiece_matches_hf(sp_files: dict, tmp_path: Path, model: str, case: str) -> None:
    doc = json.loads(json.dumps(sp_files[model]))
    old = doc["normalizer"]
    steps = old["normalizers"] if old and old["type"] == SEQ else [old] if old else []
    doc["normalizer"] = {"type": SEQ, "normalizers": SP_CASES[case] + steps}  # before the Prepend / Replace /
    path = tmp_path / "tokenizer.json"  # Precompiled of the conversion
    path.write_text(json.dumps(doc))
    ours = Tokenizer.from_file(path)
    assert isinstance(ours, SentencePieceTokenizer)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = TEXTS + (CONTEXT if case in FULL and model == "uni" else CONTEXT[::16])
    got = []
    for k in range(0, len(texts), 64):  # (a bound of 11 x 2 x the charsmap's bytes out per byte in, twice: chunks)
        r = ours.encode(texts[k:k + 64])
        got += [r.ids[r.offsets[i]:r.offsets[i + 1]].tolist() for i in range(len(r.offsets) - 1)]
    assert _diff(got, [e.ids for e in hf.encode_batch(texts)], texts) == []


def test_load_errors(tmp_path: Path) -> None:
    for norm, where in (({"type": "NFKC", "x": 1}, None), ({"type": SEQ, "normalizers": [{"type": "Strip"}]},
                                                           "strip_left"),
                        ({"type": "Precompiled", "precompiled_charsmap": "!!"}, "precompiled_charsmap"),
                        ({"type": "Replace", "pattern": {"Regex": "[a-z]+"}, "content": "x"}, "pattern")):
        path = BO.write_tokenizer_json(tmp_path / str(len(where or "")), "gpt2", family_pattern=BO.LLAMA3_PATTERN,
                                       normalizer=norm)
        if where is None:  # (HF ignores unknown fields, as the validator does)
            assert isinstance(Tokenizer.from_file(path), BPETokenizer)
            continue
        with pytest.raises(ConfigError, match=where):
            Tokenizer.from_file(path)


def _js_tiktoken_file(path: Path, pattern: str, shift: int, specials: dict[str, int]) -> dict[bytes, int]:
    """A JS-tiktoken rank JSON of GPT-2's ranks shifted by ``shift`` (as claude.json's, after its specials),
    compressed as js-tiktoken's are: lines ``name offset tok ...`` of up to 100 consecutive ranks (one line
    restating a token, whose later rank must win, and a gap)."""
    import base64  # noqa: PLC0415

    rk = {t: r + shift for t, r in BO.ranks("gpt2").items()}
    items = sorted(rk.items(), key=lambda x: x[1])
    lines = []
    for k in range(0, len(items), 100):
        chunk = items[k:k + 100]
        lines.append(f"{chunk[0][0].hex()[:6] or 'x'} {chunk[0][1]} " + " ".join(
            base64.b64encode(t).decode() for t, _ in chunk))
    lines.insert(3, f"dup {items[-1][1]} {base64.b64encode(items[-1][0]).decode()}")  # (restated, same rank)
    path.write_text(json.dumps({"pat_str": pattern, "special_tokens": specials, "bpe_ranks": "\n".join(lines) + "\n"}))
    return rk


def test_js_tiktoken_rank_json(tmp_path: Path) -> None:
    """A JS-tiktoken rank JSON (``@anthropic-ai/tokenizer``'s claude.json layout: specials first, ranks after)
    loads by content and encodes as that package does: NFKC, then tiktoken with every special allowed."""
    tiktoken = pytest.importorskip("tiktoken")
    specials = {"<EOT>": 0, "<META>": 1, "<META_START>": 2, "<META_END>": 3, "<SOS>": 4}
    pattern = BO.TIKTOKEN_PATTERNS["gpt2"]
    rk = _js_tiktoken_file(tmp_path / "claude.json", pattern, 5, specials)
    ours = Tokenizer.from_file(tmp_path / "claude.json")
    assert isinstance(ours, BPETokenizer)
    ref = tiktoken.Encoding("js", pat_str=pattern, mergeable_ranks=rk, special_tokens=specials)
    nfkc = tokenizers.normalizers.NFKC().normalize_str
    texts = [*TEXTS, *CONTEXT[::16], "<EOT>x<META> ＜EOT＞ <SOS>\ufdfa<META_END>", "<EOT", "ﬁ<EOT>ﬁ"]
    want = [ref.encode(nfkc(t), allowed_special="all") for t in texts]
    assert _diff(ours.encode(texts).tolist(), want, texts) == []
    assert want[-3][:3] == [0, 87 + 5, 1]  # the specials matched (U+FF1C U+FF1E: NFKC makes a special of them)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"pat_str": pattern, "special_tokens": {}, "bpe_ranks": "a b c\n"}))
    with pytest.raises(ConfigError, match="bpe_ranks line 1"):
        Tokenizer.from_file(bad)
