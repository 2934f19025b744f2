"""The tokenizer protocol and the one loader: every family implements the same names, the loader recognizes each
file by its content, refuses what no family loads in one line naming the field, and BPE's protocol additions
(overflow windows, token names, special ids, strict decode) are exact to HF tokenizers."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path

import bpe_oracles as O
import numpy as np
import pytest
import tokenizers

from triton_textops import Tokenizer
from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.core.output import Ragged, Rows
from triton_textops.ops.core.rows import window_rows
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer

PROTOCOL = {
    "encode": ("add_special_tokens", "allowed_special"),
    "encode_rows": ("max_length", "padding_side", "truncation_side", "stride", "return_overflowing_tokens"),
    "decode": ("skip_special_tokens", "errors"),
    "token_to_id": (),
    "id_to_token": (),
}
ATTRS = ("family", "device", "vocab_size", "bos_id", "eos_id", "pad_id", "unk_id")
TEXTS = ["Hello world, this is a test of windows.", "", "a", "naïve café — 東京は晴れ 🙂 " * 3,
         "x" * 40, "one two three four five six seven eight nine ten eleven twelve"]


@pytest.fixture(scope="module")
def llama3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("llama3")
    O.write_tokenizer_json(d, "cl100k_base", family_pattern=O.LLAMA3_PATTERN, bos="<|begin_of_text|>",
                           added=O.LLAMA3_ADDED)
    (d / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<|begin_of_text|>",
                                                         "eos_token": "<|end_of_text|>"}))
    return d


@pytest.fixture(scope="module")
def llama3(llama3_dir: Path) -> tuple[BPETokenizer, tokenizers.Tokenizer]:
    return Tokenizer.from_pretrained(llama3_dir), tokenizers.Tokenizer.from_file(str(llama3_dir / "tokenizer.json"))


@pytest.mark.parametrize("cls", [BertTokenizer, BPETokenizer])
def test_every_family_has_the_protocols_names(cls: type) -> None:
    for name, keywords in PROTOCOL.items():
        params = inspect.signature(getattr(cls, name)).parameters
        missing = [k for k in keywords if k not in params or params[k].kind is not inspect.Parameter.KEYWORD_ONLY]
        assert not missing, f"{cls.__name__}.{name} lacks keyword-only {missing}"
    for attr in ATTRS:
        assert hasattr(cls, attr) or attr in ("device", "vocab_size"), f"{cls.__name__} lacks {attr}"


def test_instances_satisfy_the_protocol(llama3: tuple, vocab_path: str) -> None:
    bert = BertTokenizer.from_vocab(vocab_path)
    for tok in (llama3[0], bert):
        assert isinstance(tok, Tokenizer)
        r = tok.encode(["hello world"])
        assert isinstance(r, Ragged) and r.ids.dtype == np.int64 and r.offsets.shape == (2,)
        assert isinstance(tok.encode_rows(["hello world"], max_length=8), Rows)
        assert tok.decode(r.ids, r.offsets, skip_special_tokens=True)[0].strip() == "hello world"


def test_loader_recognizes_each_format_by_content(tmp_path: Path, vocab_path: str, llama3_dir: Path) -> None:
    # a rank file under a name that says nothing: known by its number of ranks
    plain = tmp_path / "ranks.txt"
    shutil.copy(O.DATA / "cl100k_base.tiktoken", plain)
    tok = Tokenizer.from_file(plain)
    assert isinstance(tok, BPETokenizer) and tok.family == "bpe"
    assert tok.encode(["hello world"]).tolist() == [O.tiktoken_encoding("cl100k_base").encode("hello world")]
    vocab = tmp_path / "some.vocab"
    shutil.copy(vocab_path, vocab)
    bert = Tokenizer.from_file(vocab)
    assert isinstance(bert, BertTokenizer) and bert.family == "wordpiece"
    want = BertTokenizer.from_vocab(vocab_path).encode_rows(["Hello, world!"], max_length=8).input_ids
    assert (bert.encode_rows(["Hello, world!"], max_length=8).input_ids == want).all()
    as_file = tmp_path / "any-name.json"
    shutil.copy(llama3_dir / "tokenizer.json", as_file)
    assert isinstance(Tokenizer.from_file(as_file), BPETokenizer)
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    for f in ("encoder.json", "vocab.bpe"):
        shutil.copy(O.DATA / f, gpt2 / f)
    assert Tokenizer.from_pretrained(gpt2).encode(["hello world"]).tolist() == [[31373, 995]]
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(O.DATA / "o200k_base.tiktoken", one / "o200k_base.tiktoken")
    assert Tokenizer.from_pretrained(one).encode(["hello world"]).tolist() == \
        [O.tiktoken_encoding("o200k_base").encode("hello world")]


@pytest.mark.parametrize(("content", "match"), [
    (b"\x0a\xff\xff\xff", "not a sentencepiece ModelProto"),
    (b"\x00\x01\x02\xff\xfe", "a binary file"),
    (b"", "the file is empty"),
    (json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0}}}).encode(), "model.type = 'WordLevel'"),
    (json.dumps({"model": {"type": "BPE", "byte_fallback": True, "dropout": 0.1, "vocab": {}, "merges": []}}).encode(),
     "model.dropout = 0.1 is not supported"),
    (json.dumps({"vocab": {"a": 0}}).encode(), "no 'model' object"),
    (b'{"model": ', "not valid JSON"),
])
def test_unsupported_files_are_one_line_errors(tmp_path: Path, content: bytes, match: str) -> None:
    p = tmp_path / "tokenizer.file"
    p.write_bytes(content)
    with pytest.raises(ConfigError, match=match) as err:
        Tokenizer.from_file(p)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{p}: ")
    assert "families this package loads" in msg or "not valid JSON" in msg


@pytest.mark.parametrize("reader", ["tiktoken", "vocab"])
def test_binary_file_given_to_a_text_reader_says_what_it_is(tmp_path: Path, reader: str) -> None:
    """A SentencePiece .model handed straight to a text reader says what it looks like, not "line 2 is not ..."."""
    p = tmp_path / "tokenizer.model"
    p.write_bytes(b"\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02\n\x0a\x07\x0a\x03abc\x15\x00\x00\x80\xbf")
    load = (lambda: BPETokenizer.from_tiktoken(p, encoding="cl100k_base")) if reader == "tiktoken" else \
        (lambda: BertTokenizer.from_vocab(p))
    with pytest.raises(ValueError, match=r"binary protobuf, as a SentencePiece \.model .*is, not a ") as err:
        load()
    assert "line" not in str(err.value) and str(err.value).startswith(f"{p}: ")


def test_unknown_rank_file_size_needs_an_encoding(tmp_path: Path) -> None:
    p = tmp_path / "small.tiktoken"
    p.write_bytes(b"".join(ln + b"\n" for ln in (O.DATA / "cl100k_base.tiktoken").read_bytes().split(b"\n")[:300]))
    with pytest.raises(ConfigError, match="300 ranks.*pass encoding="):
        Tokenizer.from_file(p)


def test_empty_directory_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no tokenizer file found"):
        Tokenizer.from_pretrained(tmp_path)


@pytest.mark.parametrize("trunc", ["right", "left"])
@pytest.mark.parametrize("pad", ["right", "left"])
@pytest.mark.parametrize(("max_length", "stride"), [(6, 0), (6, 2), (9, 4), (3, 0), (40, 5)])
def test_bpe_overflow_windows_match_hf(llama3: tuple, austen: list[str], trunc: str, pad: str, max_length: int,
                                      stride: int) -> None:
    ours, hf = llama3
    hf.enable_truncation(max_length, stride=stride, direction=trunc)
    hf.enable_padding(direction=pad, pad_id=7, length=max_length)
    try:
        texts = TEXTS + austen[:6]
        want_ids, want_mask, want_map = [], [], []
        for i, e in enumerate(hf.encode_batch(texts)):
            for w in [e, *e.overflowing]:
                want_ids.append(w.ids)
                want_mask.append(w.attention_mask)
                want_map.append(i)
        got = ours.encode_rows(texts, max_length=max_length, stride=stride, return_overflowing_tokens=True,
                               padding_side=pad, truncation_side=trunc, pad_id=7)
        assert got.input_ids.tolist() == want_ids
        assert got.attention_mask.tolist() == want_mask
        assert got.overflow_to_sample_mapping.tolist() == want_map
        assert not got.token_type_ids.any()
    finally:
        hf.no_truncation()
        hf.no_padding()


def test_window_rows_cover_every_id_once_without_stride() -> None:
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 30, 50)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    ids = rng.integers(10, 1000, int(offsets[-1]))
    for trunc in (False, True):
        rows, mask, mapping = window_rows(ids, offsets, width=7, stride=0, prefix=[1], suffix=[2], pad_id=0,
                                          left_pad=False, left_trunc=trunc, dtype=np.int64)
        for t in range(len(lens)):
            mine = rows[mapping == t]
            content = [int(x) for r in mine for x in r if x > 2]
            want = ids[offsets[t]:offsets[t + 1]].tolist()
            assert sorted(content) == sorted(want)
            assert (mask[mapping == t].sum(1) == (mine != 0).sum(1)).all()


def test_bpe_overflow_arguments_are_checked(llama3: tuple) -> None:
    ours, _ = llama3
    with pytest.raises(InputError, match="needs max_length"):
        ours.encode_rows(["a"], return_overflowing_tokens=True)
    with pytest.raises(InputError, match="stride=5 must be smaller"):
        ours.encode_rows(["a"], max_length=6, stride=5, return_overflowing_tokens=True)
    with pytest.raises(InputError, match="stride must be >= 0"):
        ours.encode_rows(["a"], max_length=6, stride=-1, return_overflowing_tokens=True)


def test_bpe_token_names_and_special_ids_match_hf(llama3: tuple) -> None:
    ours, hf = llama3
    assert ours.vocab_size == hf.get_vocab_size(with_added_tokens=True)
    rng = np.random.default_rng(1)
    for i in [*rng.integers(0, ours.vocab_size, 2000).tolist(), 0, 255, ours.vocab_size - 1]:
        name = hf.id_to_token(i)
        assert ours.id_to_token(i) == name, i
        if name is not None:
            assert ours.token_to_id(name) == hf.token_to_id(name)
    assert ours.id_to_token(10**9) is None and ours.token_to_id("no such token \u2603\u2603") is None
    assert ours.token_to_id(b"hello") == hf.token_to_id("hello")
    assert ours.bos_id == hf.token_to_id("<|begin_of_text|>")
    assert ours.eos_id == hf.token_to_id("<|end_of_text|>")
    assert ours.pad_id is None and ours.unk_id is None


def test_bpe_decode_strict_names_the_row(llama3: tuple) -> None:
    ours, _ = llama3
    half = np.array([ours.token_to_id(b"\xc3")], dtype=np.int64)  # the first byte of "é" alone
    ok = ours.encode(["fine"], add_special_tokens=False).ids
    ids = np.concatenate([ok, half])
    off = np.array([0, len(ok), len(ids)])
    with pytest.raises(InputError, match="row 1: its tokens' bytes are not UTF-8 at byte 0"):
        ours.decode(ids, off)
    assert ours.decode(ids, off, errors="replace") == ["fine", "\ufffd"]
    assert ours.decode(ids, off, errors=None) == [b"fine", b"\xc3"]
    with pytest.raises(InputError, match=r"row 0 position 1: id 999999999 is not an id of this vocabulary"):
        ours.decode([5, 999999999], [0, 2])


def test_config_reads_special_tokens_map_as_transformers(tmp_path: Path) -> None:
    """transformers 4.47 (tokenization_utils_base._from_pretrained): a tokenizer_config.json without
    added_tokens_decoder (legacy) takes special_tokens_map.json's entries over its own; a current one ignores it."""
    from triton_textops.ops.core.hf_json import read_config

    assert read_config(tmp_path) == {}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"pad_token": "[PAD]", "do_lower_case": False, "additional_special_tokens": ["<a>"]}))
    (tmp_path / "special_tokens_map.json").write_text(json.dumps(
        {"pad_token": {"content": "<pad>", "lstrip": False}, "eos_token": "</s>",
         "additional_special_tokens": [{"content": "<b>"}, "<a>"]}))
    assert read_config(tmp_path) == {"pad_token": "<pad>", "do_lower_case": False, "eos_token": "</s>",
                                     "additional_special_tokens": ["<a>", "<b>"]}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"pad_token": {"content": "[PAD]"}, "added_tokens_decoder": {}}))
    assert read_config(tmp_path) == {"pad_token": "[PAD]", "added_tokens_decoder": {}}
    (tmp_path / "special_tokens_map.json").write_text("[1]")
    (tmp_path / "tokenizer_config.json").unlink()
    with pytest.raises(ConfigError, match="special_tokens_map.json: not a JSON object"):
        read_config(tmp_path)
