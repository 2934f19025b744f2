"""Tokenizer files validated as strictly as their reference loaders (issue 50): the issue's seven cases, each
refusal one line naming the file and the field, and a structure-aware fuzzer (tests/file_fuzz.py) that holds the
package's accept / refuse decision and ids to HF ``tokenizers``' and tiktoken's on mutants of real files."""

from __future__ import annotations

import base64
import json
import os
import random
import re

import numpy as np
import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("tiktoken")

import file_fuzz as Z  # noqa: E402
from model_dirs import TOKENIZE, write_model  # noqa: E402

from triton_textops import Tokenizer  # noqa: E402
from triton_textops.errors import ConfigError, InputError  # noqa: E402
from triton_textops.ops.bpe import formats as F  # noqa: E402
from triton_textops.testing import ModelLoadError, load_model  # noqa: E402


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return Z.write_base_files(tmp_path_factory.mktemp("base"))


def _edit_json(src, dst, change):
    doc = json.loads(src.read_text(encoding="utf-8"))
    change(doc)
    dst.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return dst


def _refused(path, pattern, **kw):
    with pytest.raises(ConfigError) as e:
        Tokenizer.from_file(path, **kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    assert re.search(pattern, msg), msg
    return msg


def _rank_file(base, tmp_path, edit):
    lines = base["tiktoken"].read_text(encoding="utf-8").split("\n")[:-1]
    edit(lines)
    p = tmp_path / "edited.tiktoken"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _b64(s):
    return base64.b64encode(s.encode()).decode()


# ------------------------------------------------------------------------------------------ the cases
def test_base_files_load_as_their_references(base):
    for family, path in base.items():
        ok, got = Z.ours(path, family)
        assert ok, got
        assert Z.reference(path, family) == (True, got), family


def test_1_a_negative_vocab_id_is_refused_as_hf_does(base, tmp_path):
    p = _edit_json(base["gpt2_json"], tmp_path / "t.json", lambda d: d["model"]["vocab"].update(he=-1))
    _refused(p, r'model\.vocab\["he"\] = -1 is not a token id 0 \.\. 2\*\*32 - 1')
    assert Z.reference(p, "gpt2_json")[0] is False  # (HF: expected u32)


def test_2_a_negative_rank_is_refused_as_tiktoken_does(base, tmp_path):
    p = _rank_file(base, tmp_path, lambda ls: ls.__setitem__(300, ls[300].split()[0] + " -1"))
    _refused(p, r"line 301: the rank -1 is not 0 \.\. 2\*\*32 - 1", encoding="cl100k_base")
    assert Z.reference(p, "tiktoken")[0] is False


def test_3_two_tokens_with_one_rank_are_refused_as_tiktoken_panics(base, tmp_path):
    p = _rank_file(base, tmp_path, lambda ls: ls.append(f"{_b64('hell zz')} 300"))
    _refused(p, r"line 1501: the rank 300 is also the rank of line 301 \(tiktoken panics", encoding="cl100k_base")
    assert Z.reference(p, "tiktoken")[0] is False
    # a token listed twice keeps its last rank (as tiktoken's dict), the earlier rank left a hole
    p = _rank_file(base, tmp_path, lambda ls: ls.append(ls[400].split()[0] + " 1600"))
    assert Z.ours(p, "tiktoken") == Z.reference(p, "tiktoken")


@pytest.mark.parametrize("value", [262.5, 262.0, True, "262", None])
def test_4_a_fractional_or_mistyped_id_is_refused_as_serde_does(base, tmp_path, value):
    p = _edit_json(base["gpt2_json"], tmp_path / "t.json", lambda d: d["model"]["vocab"].update(he=value))
    _refused(p, r'model\.vocab\["he"\] = \S+ is (a number|a boolean|a string|null)')
    assert Z.reference(p, "gpt2_json")[0] is False


def test_4_minus_zero_is_a_float_to_serde(base, tmp_path):
    p = tmp_path / "t.json"
    p.write_text(base["gpt2_json"].read_text(encoding="utf-8").replace('"!":0', '"!":-0'), encoding="utf-8")
    _refused(p, r'model\.vocab\["!"\] = -0\.0')
    assert Z.reference(p, "gpt2_json")[0] is False


@pytest.mark.parametrize("family", ["gpt2_json", "bert_json", "tiktoken", "gpt2_files"])
def test_5_a_huge_id_is_refused_up_front_with_the_limit(base, tmp_path, family):
    if family == "tiktoken":
        p = _rank_file(base, tmp_path, lambda ls: ls.append(f"{_b64('zzqq')} {2**30}"))
        kw = {"encoding": "cl100k_base"}
    elif family == "gpt2_files":
        p = tmp_path / "g"
        p.mkdir()
        (p / "merges.txt").write_bytes((base[family] / "merges.txt").read_bytes())
        _edit_json(base[family] / "vocab.json", p / "vocab.json", lambda d: d.update(zzqq=2**30))
        with pytest.raises(ConfigError, match=r'vocab\.json: \["zzqq"\] = 1073741824 is over this package\'s id '
                                              r"limit 1048575"):
            Tokenizer.from_pretrained(p)
        return
    else:
        p = _edit_json(base[family], tmp_path / "t.json", lambda d: d["model"]["vocab"].update(zzqq=2**30))
        kw = {}
    _refused(p, r"1073741824 is over this package's id limit 1048575 \(max\(2\*\*20, 2 x the \d+ (entries|ranks)",
             **kw)
    assert Z.reference(p, family)[0] is True  # (the references keep sparse maps; a documented divergence)


@pytest.mark.parametrize(("family", "change", "pattern"), [
    ("gpt2_json", lambda d: d.update(added_tokens=[[1]]), r"added_tokens\[0\] = \[1\] is a list, not an object"),
    ("gpt2_json", lambda d: d["model"].update(merges=[["h", "e", "x"]]), r"model\.merges\[0\] = .* is neither"),
    ("gpt2_json", lambda d: d["model"].update(merges=[5]), r"model\.merges\[0\] = 5 is neither"),
    ("gpt2_json", lambda d: d["post_processor"].update(single=[5]), r"post_processor\.single\[0\] = 5"),
    ("gpt2_json", lambda d: d["post_processor"].pop("pair"), r"post_processor has no field 'pair'"),
    ("gpt2_json", lambda d: d.update(padding={"strategy": "BatchLongest"}), r"padding has no field 'direction'"),
    ("gpt2_json", lambda d: d["truncation"].update(max_length=-1), r"truncation\.max_length = -1"),
    ("gpt2_json", lambda d: d.update(extra=1), r"extra = 1 is not a field HF reads here"),
    ("gpt2_json", lambda d: d.pop("model"), r"no 'model' object"),
    ("gpt2_json", lambda d: d["model"].update(vocab=[["he", 1]]), r"model\.vocab = .* is a list, not an object"),
    ("gpt2_json", lambda d: d["added_tokens"][0].update(special=1), r"added_tokens\[0\]\.special = 1"),
    ("bert_json", lambda d: d["model"].pop("max_input_chars_per_word"), r"model has no field 'max_input_chars"),
    ("bert_json", lambda d: d["normalizer"].pop("lowercase"), r"normalizer has no field 'lowercase'"),
    ("llama3_json", lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(invert="no"),
     r"pre_tokenizer\.pretokenizers\[0\]\.invert = \"no\""),
])
def test_6_malformed_fields_name_the_field(base, tmp_path, family, change, pattern):
    p = _edit_json(base[family], tmp_path / "t.json", change)
    _refused(p, pattern)
    assert Z.reference(p, family)[0] is False


@pytest.mark.parametrize(("line", "pattern"), [
    ("h e x", r"line 2: \"h e x\" is not two tokens separated by one space \(HF: Merges text file invalid at line 2"),
    ("zq qz", r"line 2 = \"zq qz\" merges \"zq\", not a token of the vocabulary \(HF: Token `zq` out of vocabulary"),
    ("", r"line 2: \"\" is not two tokens"),
])
def test_6_merge_lines_hf_refuses_are_refused(base, tmp_path, line, pattern):
    d = tmp_path / "g"
    d.mkdir()
    (d / "vocab.json").write_bytes((base["gpt2_files"] / "vocab.json").read_bytes())
    lines = (base["gpt2_files"] / "merges.txt").read_text(encoding="utf-8").split("\n")
    (d / "merges.txt").write_text("\n".join([lines[0], line] + lines[1:]), encoding="utf-8")
    with pytest.raises(ConfigError, match=pattern) as e:
        Tokenizer.from_pretrained(d)
    assert "\n" not in str(e.value) and "merges.txt" in str(e.value)
    assert Z.reference(d, "gpt2_files")[0] is False


def test_6_merges_over_unknown_tokens_in_tokenizer_json(base, tmp_path):
    p = _edit_json(base["gpt2_json"], tmp_path / "t.json", lambda d: d["model"]["merges"].append(["h", "zq"]))
    _refused(p, r"model\.merges\[300\] = \"h zq\" merges \"zq\", not a token")
    assert Z.reference(p, "gpt2_json")[0] is False


def test_6_bad_json_names_the_file(base, tmp_path):
    p = tmp_path / "t.json"
    p.write_text(base["gpt2_json"].read_text(encoding="utf-8")[:-5], encoding="utf-8")
    _refused(p, r"not valid JSON")


def test_6_through_a_model_the_load_names_model_parameter_and_field(base, tmp_path):
    """The served model's load fails with the model's name, the parameter that named the file and the field."""
    bad = _edit_json(base["bert_json"], tmp_path / "bad.json", lambda d: d["model"]["vocab"].update(zz=-3))
    config = TOKENIZE + f'parameters: {{ key: "tokenizer" value: {{ string_value: "{bad}" }} }}\n'
    with pytest.raises(ModelLoadError) as e:
        load_model(write_model(tmp_path / "repo", "tok", "tokenize", config))
    msg = str(e.value).split("\n")[0]  # (then Triton's "At:" traceback lines, as the server shows a stub's error)
    assert re.search(rf"^Failed to initialize Python stub: ConfigError: model 'tok': parameter 'tokenizer': {re.escape(str(bad))}: model\.vocab\[\"zz\"\] = -3 is not "
                     r"a token id 0 \.\. 2\*\*32 - 1$", msg), msg


def test_7_decode_names_the_position_and_the_id(base):
    tok = Tokenizer.from_file(base["gpt2_json"])
    with pytest.raises(InputError, match=rf"row 0 position 2: id 1000000 is not an id of this vocabulary \(size "
                                         rf"{tok.vocab_size}\)"):
        tok.decode(np.array([5, 6, 1000000, 7]), np.array([0, 4]))
    bert = Tokenizer.from_file(base["bert_json"])
    with pytest.raises(InputError, match=r"row 1 position 0: id -4 is not an id of this vocabulary \(size 2000"):
        bert.decode(np.array([5, -4]), np.array([0, 1, 2]))


# ------------------------------------------------------------------------------------------ the fuzzer
def _fuzz(base, root, seed, n):
    rng = random.Random(seed)
    bad = []
    for family, what, path in Z.mutants(base, root, rng, n):
        got = Z.verdict(path, family)
        if got is not None:
            bad.append(f"{family} {what}: {got}")
    assert not bad, "\n".join(bad[:20])


def test_fuzz_mutants_decide_as_the_references(base, tmp_path):
    """A few mutants of each base file (a few seconds)."""
    _fuzz(base, tmp_path, 50, 15)


@pytest.mark.slow
def test_fuzz_mutants_decide_as_the_references_longer(base, tmp_path):
    """More mutants (TEXTOPS_FUZZ_FILES per base file, default 150: about a minute)."""
    _fuzz(base, tmp_path, int(os.environ.get("TEXTOPS_FUZZ_SEED", "1")),
          int(os.environ.get("TEXTOPS_FUZZ_FILES", "150")))


def test_a_merge_listed_twice_takes_its_last_rank_as_hf(base, tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "vocab.json").write_bytes((base["gpt2_files"] / "vocab.json").read_bytes())
    lines = (base["gpt2_files"] / "merges.txt").read_text(encoding="utf-8").split("\n")
    (d / "merges.txt").write_text("\n".join(lines[:-1] + lines[1:3] + [""]), encoding="utf-8")  # (ranked last)
    ok, got = Z.ours(d, "gpt2_files")
    assert ok and (ok, got) == Z.reference(d, "gpt2_files")
    left, right, rank, _ = F.read_gpt2_files(d / "vocab.json", d / "merges.txt").pair_table()
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    a, b = (vocab[t] for t in lines[1].split(" "))
    assert rank[(left == a) & (right == b)].tolist() == [len(lines) - 2]  # (one entry, the last of the 302 ranks)
