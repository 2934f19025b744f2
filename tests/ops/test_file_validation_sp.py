"""SentencePiece (``.model``, tokenizer.json BPE / Unigram) and Tekken files validated as strictly as their reference
loaders (issue 50): refusals are one line naming the file and the field, and the structure-aware fuzzer
(tests/file_fuzz.py) holds the package's accept / refuse decision and ids to sentencepiece's (in its own process),
HF ``tokenizers``' and mistral-common's on mutants of files trained here."""

from __future__ import annotations

import json
import os
import random
import re

import pytest

pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")
pytest.importorskip("transformers")
pytest.importorskip("mistral_common")

import file_fuzz as Z  # noqa: E402
from model_dirs import TOKENIZE, write_model  # noqa: E402

from triton_textops import Tokenizer  # noqa: E402
from triton_textops.errors import ConfigError  # noqa: E402
from triton_textops.ops.sentencepiece.model_proto import model_proto_class  # noqa: E402
from triton_textops.testing import ModelLoadError, load_model  # noqa: E402


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return Z.write_sp_base_files(tmp_path_factory.mktemp("spbase"))


def _refused(path, pattern):
    with pytest.raises(ConfigError) as e:
        Tokenizer.from_file(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    assert re.search(pattern, msg), msg
    return msg


def _edit_json(src, dst, change):
    doc = json.loads(src.read_text(encoding="utf-8"))
    change(doc)
    dst.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return dst


def _edit_model(src, dst, change):
    m = model_proto_class().FromString(src.read_bytes())
    change(m)
    dst.write_bytes(m.SerializeToString())
    return dst


def test_base_files_load_as_their_references(base):
    for family, path in base.items():
        assert Z.sp_verdict(path, family) is None, family
        assert Z.sp_ours(path, ["x"])[0], family


def _dup(m, i, t):
    m.pieces.append(type(m.pieces[i])(piece=m.pieces[i].piece, type=t))


@pytest.mark.parametrize(("family", "change", "pattern"), [
    ("sp_bpe_model", lambda m: _dup(m, 1, 1), r"pieces\[500\]\.piece = \"<s>\" is already defined, as pieces\[1\]"),
    ("sp_unigram_model", lambda m: _dup(m, 100, 4), r"pieces\[500\]\.piece = .* is already defined, as pieces\[100\]"),
    ("sp_bpe_model", lambda m: setattr(m.pieces[5], "type", 2), r"pieces\[5\]\.type = \"UNKNOWN\" is a second"),
    ("sp_bpe_model", lambda m: setattr(m.pieces[3], "piece", "<0xZZ>"), r"pieces\[3\]\.piece = \"<0xZZ>\" is a BYTE"),
    ("sp_bpe_model", lambda m: setattr(m.pieces[3], "piece", ""), r"pieces\[3\]\.piece = \"\" is empty"),
    ("sp_bpe_model", lambda m: setattr(m.trainer_spec, "byte_fallback", False),
     r"pieces\[3\]\.type = \"BYTE\" is a byte piece although trainer_spec\.byte_fallback is false"),
    ("sp_bpe_model", lambda m: m.pieces.__delitem__(40), r"trainer_spec\.byte_fallback = true but 255 of the 256"),
    ("sp_unigram_model", lambda m: setattr(m.pieces[50], "score", float("nan")), r"pieces\[50\]\.score = NaN is not"),
])
def test_bad_model_files_name_the_field(base, tmp_path, family, change, pattern):
    p = _edit_model(base[family], tmp_path / "bad.model", change)
    _refused(p, pattern)
    assert Z.sp_reference(p, family, ["a"])[0] is False


def test_a_model_without_unknown_piece_is_a_documented_divergence(base, tmp_path):
    p = _edit_model(base["sp_bpe_model"], tmp_path / "nounk.model", lambda m: setattr(m.pieces[0], "type", 1))
    msg = _refused(p, r"pieces = .* have no UNKNOWN piece")
    assert Z.sp_reference(p, "sp_bpe_model", ["a"])[0] is True  # (sentencepiece 0.2.3 loads a BPE model without)
    assert any(d in msg for d in Z.DIVERGENCES)


def _first_merged_piece(m):
    """Index of a NORMAL piece of two or more characters whose halves are pieces (one a merge makes)."""
    names = {p.piece for p in m.pieces}
    return next(i for i, p in enumerate(m.pieces) if p.type == 1 and len(p.piece) >= 2
                and any(p.piece[:k] in names and p.piece[k:] in names for k in range(1, len(p.piece))))


def test_a_bpe_unused_piece_merges_reach_is_refused_and_a_placeholder_loads(base, tmp_path):
    """sentencepiece merges a BPE model's UNUSED piece and splits it back (``rev_merge``); the package does not,
    so such a file is refused (a documented divergence) instead of loading into other ids. An UNUSED placeholder
    that no merge reaches (``<unused0>``, as Gemma's files have) loads, with sentencepiece's ids."""
    m = model_proto_class().FromString(base["sp_bpe_model"].read_bytes())
    i = _first_merged_piece(m)
    p = _edit_model(base["sp_bpe_model"], tmp_path / "unused.model", lambda m: setattr(m.pieces[i], "type", 5))
    msg = _refused(p, rf"pieces\[{i}\]\.type = \"UNUSED\" on .* which merges can reach: not supported")
    assert Z.sp_reference(p, "sp_bpe_model", ["a"])[0] is True
    assert any(d in msg for d in Z.DIVERGENCES)

    def placeholder(m):
        m.pieces.append(type(m.pieces[0])(piece="<unused0>", type=5, score=0.0))

    q = _edit_model(base["sp_bpe_model"], tmp_path / "placeholder.model", placeholder)
    texts = ["<unused0> hello world", "unused 0 <unused0><unused0>", "Pride and Prejudice"]
    ok, got = Z.sp_ours(q, texts)
    assert ok, got
    assert got == Z.sp_reference(q, "sp_bpe_model", texts)[1]


def test_a_bpe_piece_holding_a_character_that_is_no_piece_is_refused(base, tmp_path):
    """A BPE model's piece whose character is no piece (one dropped from the file): sentencepiece still merges the
    character by its text; the package refuses the file (a documented divergence) instead of loading other ids."""
    m = model_proto_class().FromString(base["sp_bpe_model"].read_bytes())
    i = _first_merged_piece(m)
    c = m.pieces[i].piece[0]
    j = next(k for k, p in enumerate(m.pieces) if p.piece == c)
    p = _edit_model(base["sp_bpe_model"], tmp_path / "orphan.model", lambda m: m.pieces.__delitem__(j))
    msg = _refused(p, rf"\.piece = .* holds {re.escape(repr(c))}, which is no piece: not supported")
    assert Z.sp_reference(p, "sp_bpe_model", ["a"])[0] is True
    assert any(d in msg for d in Z.DIVERGENCES)


def test_a_cut_model_file_is_one_line(base, tmp_path):
    p = tmp_path / "cut.model"
    p.write_bytes(base["sp_bpe_model"].read_bytes()[:1001])
    _refused(p, r"not a sentencepiece ModelProto")
    assert Z.sp_reference(p, "sp_bpe_model", ["a"])[0] is False


@pytest.mark.parametrize(("family", "change", "pattern"), [
    ("sp_unigram_json", lambda d: d["model"].update(unk_id=500), r"model\.unk_id = 500 is not an id of the 500"),
    ("sp_unigram_json", lambda d: d["model"].update(unk_id=-1), r"model\.unk_id = -1 is not"),
    ("sp_unigram_json", lambda d: d["model"].update(vocab=[]), r"model\.vocab = \[\] is empty"),
    ("sp_unigram_json", lambda d: d["model"]["vocab"][7].__setitem__(1, "x"), r"model\.vocab\[7\]\[1\] = \"x\" is a"),
    ("sp_unigram_json", lambda d: d["model"]["vocab"][7].append(1), r"model\.vocab\[7\] = .* is not a \[piece, sc"),
    ("sp_unigram_json", lambda d: d["model"].update(byte_fallback=None), r"model\.byte_fallback = null"),
    ("sp_unigram_json", lambda d: d["pre_tokenizer"].update(replacement="ab"),
     r"pre_tokenizer\.replacement = \"ab\" is not one character"),
    ("sp_bpe_json", lambda d: d["model"]["vocab"].update({"<s>": -2}), r"model\.vocab\[\"<s>\"\] = -2 is not a token"),
    ("sp_bpe_json", lambda d: d["model"]["merges"].append("zq qz"), r"model\.merges\[\d+\] = \"zq qz\" merges"),
    ("sp_bpe_json", lambda d: d["decoder"]["decoders"][3].pop("stop"), r"decoder\.decoders\[3\] has no field 'stop'"),
    ("sp_bpe_json", lambda d: d["normalizer"]["normalizers"][1].pop("content"),
     r"normalizer\.normalizers\[1\] has no field 'content'"),
    ("tekken", lambda d: d["config"].update(version="v9"), r"config\.version = \"v9\" is not a version"),
    ("tekken", lambda d: d["vocab"][300].update(rank=301), r"vocab\[300\]\.rank = 301 is not 300"),
    ("tekken", lambda d: d["vocab"][300].update(token_bytes=d["vocab"][299]["token_bytes"]),
     r"vocab\[300\]\.token_bytes = .* is also vocab\[299\]"),
    ("tekken", lambda d: d["vocab"][65].update(token_bytes="Qg=="), r"vocab\[65\]\.token_bytes = \"Qg==\" is not the"),
    ("tekken", lambda d: d["vocab"][5].pop("token_str"), r"vocab\[5\] = .* is not an object of exactly"),
    ("tekken", lambda d: d["special_tokens"].append(dict(d["special_tokens"][0])),
     r"special_tokens\[20\]\.token_str = \"<unk>\" is also special_tokens\[0\]"),
    ("tekken", lambda d: d["config"].update(default_vocab_size=5000), r"config\.default_vocab_size = 5000 is over"),
    ("tekken", lambda d: d["config"].update(version="v11") or d.pop("special_tokens"), r"special_tokens = null is m"),
])
def test_bad_json_files_name_the_field(base, tmp_path, family, change, pattern):
    p = _edit_json(base[family], tmp_path / "bad.json", change)
    _refused(p, pattern)
    assert Z.sp_reference(p, family, ["a"])[0] is False


@pytest.mark.parametrize(("family", "field"), [
    ("sp_unigram_model", r"pieces\[500\]\.piece = \"<s>\" is already defined, as pieces\[1\]"),
    ("sp_unigram_json", r"model\.unk_id = 999 is not an id of the 500 pieces"),
    ("tekken", r"vocab\[300\]\.rank = 7 is not 300"),
])
def test_through_a_model_the_load_names_model_parameter_and_field(base, tmp_path, family, field):
    if family.endswith("_model"):
        bad = _edit_model(base[family], tmp_path / "bad.model", lambda m: _dup(m, 1, 3))
    elif family == "tekken":
        bad = _edit_json(base[family], tmp_path / "bad.json", lambda d: d["vocab"][300].update(rank=7))
    else:
        bad = _edit_json(base[family], tmp_path / "bad.json", lambda d: d["model"].update(unk_id=999))
    config = TOKENIZE + f'parameters: {{ key: "tokenizer" value: {{ string_value: "{bad}" }} }}\n'
    with pytest.raises(ModelLoadError) as e:
        load_model(write_model(tmp_path / "repo", "sp", "tokenize", config))
    msg = str(e.value).split("\n")[0]
    assert re.search(rf"^Failed to initialize Python stub: ConfigError: model 'sp': parameter 'tokenizer': "
                     rf"{re.escape(str(bad))}: {field}", msg), msg


def _fuzz(base, root, seed, n):
    rng = random.Random(seed)
    bad = [f"{family} {what}: {got}" for family, what, path in Z.sp_mutants(base, root, rng, n)
           if (got := Z.sp_verdict(path, family)) is not None]
    assert not bad, "\n".join(bad[:20])


def test_fuzz_mutants_decide_as_the_references(base, tmp_path):
    """A few mutants of each base file (a few seconds: each .model is loaded by sentencepiece in its own process)."""
    _fuzz(base, tmp_path, 50, 3)


@pytest.mark.slow
def test_fuzz_mutants_decide_as_the_references_longer(base, tmp_path):
    """More mutants (TEXTOPS_FUZZ_FILES per base file, default 30: about ten seconds)."""
    _fuzz(base, tmp_path, int(os.environ.get("TEXTOPS_FUZZ_SEED", "1")),
          int(os.environ.get("TEXTOPS_FUZZ_FILES", "30")))
