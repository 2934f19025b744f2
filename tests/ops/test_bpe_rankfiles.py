"""Rank files with their own pattern and specials: ``from_tiktoken(pattern=, special_tokens=)`` exact to tiktoken,
tiktoken's empty-token lines, a near-miss file under an encoding name warned about, Mistral's Tekken files exact to
mistral-common's ``Tekkenizer`` (the two real files it ships), each recognized by ``Tokenizer.from_file``."""

from __future__ import annotations

import base64
import json
from importlib import resources

import bpe_oracles as O
import pytest
from test_bpe_regex import DEEPSEEK, MULTILINGUAL, SAMPLED_CODE_POINTS, TEXTS

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe import formats as F
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.tokenizer import Tokenizer

tiktoken = pytest.importorskip("tiktoken")

# fancy-regex forms (tiktoken's dialect): possessive intervals, DeepSeek's classes, a pattern that leaves text
# unmatched (tiktoken drops it), and Tekken's
OWN_PATTERNS = [
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,2}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    DEEPSEEK[2] + r"|\p{N}{1,3}",
    r"\p{L}+|\p{N}",
]


def _rank_file(path: O.Path, ranks: dict[bytes, int], extra: str = "") -> O.Path:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(ranks.items(),
                                                                                        key=lambda kv: kv[1])) + extra)
    return path


@pytest.mark.parametrize("k", range(len(OWN_PATTERNS)))
def test_own_pattern_and_specials_as_tiktoken(k: int) -> None:
    pattern = OWN_PATTERNS[k]
    specials = {"<|begin|>": 100300, "<|end|>": 100301, "[INST]": 100302}
    ours = BPETokenizer.from_tiktoken(O.DATA / "cl100k_base.tiktoken", pattern=pattern, special_tokens=specials)
    enc = tiktoken.Encoding("own", pat_str=pattern, mergeable_ranks=O.ranks("cl100k_base"), special_tokens=specials)
    texts = TEXTS + SAMPLED_CODE_POINTS
    assert [t[:40] for t, g, w in zip(texts, ours.encode(texts).tolist(), enc.encode_ordinary_batch(texts))
            if g != w] == []
    sp = ["a<|begin|>b [INST] x<|end|>", "<|begin|><|begin|>", "[INST"]
    assert ours.encode(sp, allowed_special="all").tolist() == [enc.encode(t, allowed_special="all") for t in sp]
    assert ours.spec.family == F.REGEX  # (none is a scanner's pattern)


def test_empty_token_line_as_tiktoken(tmp_path: O.Path) -> None:
    """A line whose token is ``=`` (base64 of nothing, as Whisper's multilingual file has one): tiktoken reads it
    as the empty token; no text encodes to it, its id decodes to nothing."""
    ranks = dict(O.ranks("gpt2"))
    path = _rank_file(tmp_path / "own.tiktoken", ranks, extra="= 50256\n")
    pattern = O.TIKTOKEN_PATTERNS["gpt2"]
    from tiktoken.load import load_tiktoken_bpe  # noqa: PLC0415

    loaded = load_tiktoken_bpe(str(path))
    assert loaded[b""] == 50256
    enc = tiktoken.Encoding("own", pat_str=pattern, mergeable_ranks=loaded, special_tokens={"<|eot|>": 50257})
    ours = BPETokenizer.from_tiktoken(path, pattern=pattern, special_tokens={"<|eot|>": 50257})
    assert ours.encode(TEXTS).tolist() == enc.encode_ordinary_batch(TEXTS)
    assert ours.decode([50256, 40], [0, 2], errors=None) == [enc.decode_bytes([50256, 40])]


def test_near_miss_file_under_an_encoding_name_warned(tmp_path: O.Path) -> None:
    ranks = dict(O.ranks("cl100k_base"))
    del ranks[max(ranks, key=ranks.get)]
    path = _rank_file(tmp_path / "near.tiktoken", ranks)
    with pytest.warns(UserWarning, match="encoding 'cl100k_base' has 100256 ranks"):
        BPETokenizer.from_tiktoken(path, encoding="cl100k_base")
    with pytest.raises(ConfigError, match="a rank of the file"):
        BPETokenizer.from_tiktoken(path, pattern=OWN_PATTERNS[2], special_tokens={"<x>": 5})


TEKKEN_FILES = ["tekken_240718.json", "tekken_240911.json"]


@pytest.mark.parametrize("name", TEKKEN_FILES)
def test_tekken_as_mistral_common(name: str) -> None:
    pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: PLC0415

    with resources.as_file(resources.files("mistral_common") / "data" / name) as path:
        ref = Tekkenizer.from_file(path)
        ours = Tokenizer.from_file(path)
    assert isinstance(ours, BPETokenizer) and ours.spec.family == F.REGEX
    texts = TEXTS + MULTILINGUAL + SAMPLED_CODE_POINTS + ["[INST] hi [/INST]</s><s>", "<unk><pad>[IMG]"]
    got = ours.encode(texts).tolist()
    assert [t[:40] for t, g in zip(texts, got) if g != ref.encode(t, bos=False, eos=False)] == []
    assert ours.token_to_id("[INST]") == ref.get_special_token("[INST]")
    assert ours.token_to_id("</s>") == ref.eos_id and ours.token_to_id("<s>") == ref.bos_id
    assert ours.vocab_size == ref.n_words
    r = ours.encode(texts[:50])
    assert ours.decode(r.ids, r.offsets) == [ref.decode(x) for x in got[:50]]


def test_tekken_refuses_a_bad_config(tmp_path: O.Path) -> None:
    doc = {"config": {"pattern": r"\p{L}+", "default_vocab_size": 10, "default_num_special_tokens": 2, "version": "v3"},
           "vocab": [{"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(), "token_str": None}
                     for i in range(256)], "special_tokens": []}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="default_vocab_size - default_num_special_tokens = 8"):
        Tokenizer.from_file(tmp_path / "t.json")


# ------------------------------------------------------------------------------------------- family layouts
# Llama-3 / 4's tokenizer.model (Meta's llama-models) and Whisper's rank files: not shipped here (Llama's licence;
# size), so files of their shape are written from the ranks here: cl100k's 100256 + 27744 of o200k's (Llama-3's
# 128000: its first 100256 are cl100k's), o200k's 199998 + 2, GPT-2's 50256 + Whisper's empty-token line. The ids
# below are the published ones (llama-models' tokenizer.py, whisper's tokenizer.py; the main ones are HF's too,
# whose Llama-3 reserved names, from the older Llama-3.0 code, differ).
LLAMA3_IDS = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|start_header_id|>": 128006,
              "<|end_header_id|>": 128007, "<|eot_id|>": 128009, "<|python_tag|>": 128010,
              "<|reserved_special_token_2|>": 128012, "<|reserved_special_token_245|>": 128255}
LLAMA4_IDS = {"<|begin_of_text|>": 200000, "<|end_of_text|>": 200001, "<|header_start|>": 200005,
              "<|eot|>": 200008, "<|python_start|>": 200016, "<|finetune_right_pad|>": 200018,
              "<|image_start|>": 200080, "<|image|>": 200090, "<|patch|>": 200092,
              "<|reasoning_thinking_end|>": 201143, "<|reserved_special_token_903|>": 202047}
WHISPER_IDS = {"<|endoftext|>": 50257, "<|startoftranscript|>": 50258, "<|en|>": 50259, "<|su|>": 50357,
               "<|translate|>": 50358, "<|transcribe|>": 50359, "<|notimestamps|>": 50363, "<|0.00|>": 50364,
               "<|30.00|>": 51864}


def _layout_file(tmp_path: O.Path, kind: str) -> tuple[O.Path, dict[bytes, int]]:
    if kind == "llama3":
        base = dict(O.ranks("cl100k_base"))
        extra = [t for t, _ in sorted(O.ranks("o200k_base").items(), key=lambda kv: kv[1]) if t not in base]
        base.update({t: 100256 + i for i, t in enumerate(extra[:27744])})
        return _rank_file(tmp_path / "tokenizer.model", base), base
    if kind == "llama4":
        base = dict(O.ranks("o200k_base"))
        base.update({b"  \xe2\x80\x94 ": 199998, b"\xe2\x80\x94 ": 199999})
        return _rank_file(tmp_path / "tokenizer.model", base), base
    base = dict(O.ranks("gpt2"))
    return _rank_file(tmp_path / "multilingual.tiktoken", base, extra="= 50256\n"), {**base, b"": 50256}


@pytest.mark.parametrize(("kind", "pattern", "ids"), [("llama3", O.LLAMA3_PATTERN, LLAMA3_IDS),
                                                      ("llama4", O.TIKTOKEN_PATTERNS["o200k_base"], LLAMA4_IDS),
                                                      ("whisper-multilingual", O.TIKTOKEN_PATTERNS["gpt2"],
                                                       WHISPER_IDS)])
def test_family_rank_files_known_by_content(tmp_path: O.Path, kind: str, pattern: str, ids: dict[str, int]) -> None:
    """A Llama-3 / 4 ``tokenizer.model`` or Whisper's ``multilingual.tiktoken``: ``from_file`` and
    ``from_pretrained`` know it by content (a SentencePiece ``.model`` name, tiktoken lines; its size), with the
    family's pattern (a scanner's) and specials; exact to tiktoken so built."""
    path, ranks = _layout_file(tmp_path, kind)
    ours = Tokenizer.from_file(path)
    assert isinstance(ours, BPETokenizer) and ours.spec.family != F.REGEX
    assert {t: ours.token_to_id(t) for t in ids} == ids
    from triton_textops.ops.bpe.rankfiles import LAYOUTS  # noqa: PLC0415

    specials = {t: len(ranks) + i for i, t in enumerate(LAYOUTS[kind][1])}
    assert specials.items() >= ids.items()
    enc = tiktoken.Encoding(kind, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    assert ours.vocab_size == enc.n_vocab
    texts = TEXTS[::2] + MULTILINGUAL + SAMPLED_CODE_POINTS[::3]
    assert [t[:40] for t, g, w in zip(texts, ours.encode(texts).tolist(), enc.encode_ordinary_batch(texts))
            if g != w] == []
    sp = ["".join(ids) + " x " + "".join(reversed(ids)), "<|eot|<|eot_id|>>"]
    assert ours.encode(sp, allowed_special="all").tolist() == [enc.encode(t, allowed_special="all") for t in sp]
    r = ours.encode(sp, allowed_special="all")
    assert ours.decode(r.ids, r.offsets) == [enc.decode(x) for x in r.tolist()]
    if path.suffix == ".model":
        again = Tokenizer.from_pretrained(tmp_path)
        assert again.encode(texts[:20]).tolist() == ours.encode(texts[:20]).tolist()


def test_llm_models_read_family_encodings(tmp_path: O.Path) -> None:
    """The LLM models' ``encoding`` parameter takes the family names too (one reader for both kinds of name): a
    Llama-3 file under ``encoding="llama3"`` gives from_tiktoken's specials; a wrong name lists both kinds."""
    from triton_textops.ops.llm import load_spec  # noqa: PLC0415

    path, _ = _layout_file(tmp_path, "llama3")
    spec = load_spec(path, "llama3")
    want = BPETokenizer.from_tiktoken(path, encoding="llama3")
    assert BPETokenizer(spec).encode(TEXTS[:8]).tolist() == want.encode(TEXTS[:8]).tolist()
    assert BPETokenizer(spec).token_to_id("<|eot_id|>") == LLAMA3_IDS["<|eot_id|>"] == 128009
    with pytest.raises(ValueError, match="llama3") as exc:
        load_spec(path, "llama-3")
    assert "cl100k_base" in str(exc.value)


def test_whisper_names_and_large_v3(tmp_path: O.Path) -> None:
    """``encoding="whisper-large-v3"``: 100 languages (``<|yue|>``), the timestamps one later; ``"whisper"`` on
    ``gpt2.tiktoken`` (English models: the same specials from 50256); a near-miss name is refused, a file of
    another family's size warned about."""
    path, _ = _layout_file(tmp_path, "whisper-multilingual")
    v3 = BPETokenizer.from_tiktoken(path, encoding="whisper-large-v3")
    assert (v3.token_to_id("<|yue|>"), v3.token_to_id("<|translate|>"), v3.token_to_id("<|0.00|>")) == \
        (50358, 50359, 50365)
    en = BPETokenizer.from_tiktoken(_rank_file(tmp_path / "gpt2.tiktoken", O.ranks("gpt2")), encoding="whisper")
    assert (en.token_to_id("<|endoftext|>"), en.token_to_id("<|startoftranscript|>"), en.vocab_size) == \
        (50256, 50257, 51864)
    with pytest.raises(ConfigError, match="encoding must be one of .*whisper-multilingual"):
        BPETokenizer.from_tiktoken(path, encoding="whisper_multilingual")
    with pytest.warns(UserWarning, match="50257 ranks, but a llama3 file has 128000"):
        BPETokenizer.from_tiktoken(path, encoding="llama3")


def test_whisper_package_files_as_whisper() -> None:
    """Whisper's own files and ``get_encoding``, where the ``openai-whisper`` package is installed."""
    pytest.importorskip("whisper")
    from whisper.tokenizer import get_encoding  # noqa: PLC0415

    root = resources.files("whisper") / "assets"
    for name, file, langs in (("whisper", "gpt2", 99), ("whisper-multilingual", "multilingual", 99),
                              ("whisper-large-v3", "multilingual", 100)):
        enc = get_encoding(file, num_languages=langs)
        with resources.as_file(root / f"{file}.tiktoken") as path:
            ours = BPETokenizer.from_tiktoken(path, encoding=name)
        texts = TEXTS[::3] + MULTILINGUAL
        assert ours.encode(texts).tolist() == enc.encode_ordinary_batch(texts)
        assert {t: ours.token_to_id(t) for t in enc.special_tokens_set} == enc._special_tokens


def test_from_file_passes_pattern_and_specials(tmp_path: O.Path) -> None:
    """``Tokenizer.from_file(path, pattern=, special_tokens=)`` is ``from_tiktoken`` with them; they are refused
    for a file that is not a rank file, and an unknown-size rank file asks for them."""
    specials = {"<|a|>": 100300}
    got = Tokenizer.from_file(O.DATA / "cl100k_base.tiktoken", pattern=OWN_PATTERNS[2], special_tokens=specials)
    enc = tiktoken.Encoding("own", pat_str=OWN_PATTERNS[2], mergeable_ranks=O.ranks("cl100k_base"),
                            special_tokens=specials)
    texts = TEXTS[:60] + ["x<|a|>y"]
    assert got.encode(texts, allowed_special="all").tolist() == [enc.encode(t, allowed_special="all") for t in texts]
    with pytest.raises(ConfigError, match="special_tokens= goes with pattern="):
        Tokenizer.from_file(O.DATA / "cl100k_base.tiktoken", special_tokens=specials)
    with pytest.raises(ConfigError, match="go with a tiktoken rank file"):
        Tokenizer.from_file(O.DATA / "encoder.json", pattern=OWN_PATTERNS[2])
    odd = _rank_file(tmp_path / "tokenizer.model", {bytes([b]): b for b in range(256)})
    with pytest.raises(ConfigError, match="256 ranks.*pass encoding=, or pattern= and special_tokens="):
        Tokenizer.from_file(odd)
    assert Tokenizer.from_file(odd, pattern=r"\S+", special_tokens={}).encode(["ab c"]).tolist() == [[97, 98, 99]]
