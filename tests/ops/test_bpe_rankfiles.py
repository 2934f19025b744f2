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
