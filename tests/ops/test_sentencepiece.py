"""SentencePiece BPE with byte fallback and Unigram through the SentencePiece pipeline: exact ids and text against HF
tokenizers (tokenizer.json converted by transformers) and sentencepiece (.model files), on models trained here with
sentencepiece's trainer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import bpe_oracles as BO
import numpy as np
import pytest
import sp_oracles as O
from hypothesis import given, settings
from hypothesis import strategies as st
from textcases import ADVERSARIAL

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.sentencepiece.pretokenize import P_WORDS
from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer
from triton_textops.ops.tokenizer import Tokenizer

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

WS = [" \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2001\u2009\u200a\u2028\u2029\u202f\u205f\u3000", "a  b   c    d",
      "\t\tx\n\ny\r\n\r\nz", " \u3000 x\u3000\u3000y ", "\u00a0x\u00a0\u00a0y", "x" + " " * 33 + "y", "  ", "\n"]
TEXTS = (O.corpus(300)[:300] + ADVERSARIAL + BO.BPE_ADVERSARIAL + O.MULTILINGUAL + WS + BO.random_texts(7, 200)
         + ["<s>x</s> <s> <ud>y<ud> <unk>", "<ud><ud>", "hello<s>world", "\u2581x \u2581\u2581 y\u2581"])
# the models: (name, trainer options)
MODELS = {
    "nfkc": {"byte_fallback": True, "user_defined_symbols": ["<ud>"], "normalization_rule_name": "nmt_nfkc"},
    "identity": {"byte_fallback": True, "normalization_rule_name": "identity", "remove_extra_whitespaces": False},
    "small": {"byte_fallback": True, "vocab_size": 420, "character_coverage": 0.98},
    "unk": {"byte_fallback": False, "character_coverage": 0.98, "normalization_rule_name": "nfkc"},
    "cf": {"byte_fallback": True, "normalization_rule_name": "nmt_nfkc_cf", "add_dummy_prefix": False},
    "uni_nfkc": {"model_type": "unigram", "user_defined_symbols": ["<ud>"]},
    "uni_id": {"model_type": "unigram", "normalization_rule_name": "identity", "byte_fallback": True},
}
STYLES = {"llama": ["nfkc", "small", "unk"], "llama-metaspace": ["nfkc", "identity"], "gemma": ["nfkc", "small"],
          "spm": ["identity", "uni_id", "uni_nfkc", "nfkc", "unk", "cf"]}
CASES = [(s, m) for s, ms in STYLES.items() for m in ms]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spm")
    return {name: O.train(root / f"{name}.model", **kw) for name, kw in MODELS.items()}


@pytest.fixture(scope="module")
def converted(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("spm_json")
    return {(s, m): O.convert(models[m], root / f"{s}-{m}.json", s) for s, m in CASES}


def _rows(r) -> list[list[int]]:  # noqa: ANN001
    ids, off = np.asarray(r.ids), np.asarray(r.offsets)
    return [ids[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]


def _diff(got: list, want: list, texts: list[str]) -> list:
    return [(t[:60], g[:12], w[:12]) for t, g, w in zip(texts, got, want) if g != w]


@pytest.mark.parametrize(("style", "model"), CASES)
def test_tokenizer_json_matches_hf(converted: dict, style: str, model: str) -> None:
    path = converted[style, model]
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_file(path)
    assert isinstance(ours, SentencePieceTokenizer)
    for specials in (True, False):
        want = [e.ids for e in hf.encode_batch(TEXTS, add_special_tokens=specials)]
        assert _diff(_rows(ours.encode(TEXTS, add_special_tokens=specials)), want, TEXTS) == []


@pytest.mark.parametrize("model", list(MODELS))
def test_model_file_matches_sentencepiece(models: dict[str, Path], model: str) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models[model]))
    ours = Tokenizer.from_file(models[model])
    assert isinstance(ours, SentencePieceTokenizer)
    assert _diff(_rows(ours.encode(TEXTS)), [sp.encode(t) for t in TEXTS], TEXTS) == []


def test_every_code_point_in_context(models: dict[str, Path], converted: dict) -> None:
    texts = BO.every_code_point_texts(2048)
    for name in ("nfkc", "uni_nfkc"):
        sp = spm.SentencePieceProcessor(model_file=str(models[name]))
        assert _diff(_rows(Tokenizer.from_file(models[name]).encode(texts)), [sp.encode(t) for t in texts],
                     texts) == []
    for key in (("llama", "small"), ("spm", "uni_id"), ("spm", "uni_nfkc"), ("spm", "cf")):
        hf = tokenizers.Tokenizer.from_file(str(converted[key]))
        want = [e.ids for e in hf.encode_batch(texts)]
        assert _diff(_rows(Tokenizer.from_file(converted[key]).encode(texts)), want, texts) == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
                | st.lists(st.sampled_from(list(" \t\n\u3000\u00a0ab\u2581<s>é\u0301中😀\u200d")), max_size=30)
                .map("".join), min_size=1, max_size=4).map(lambda xs: "".join(xs)))
def test_hypothesis_texts(sp_all: tuple, text: str) -> None:
    for ours, ref in sp_all:
        assert _rows(ours.encode([text]))[0] == ref(text), text


@pytest.fixture(scope="module")
def sp_all(models: dict[str, Path], converted: dict) -> tuple:
    out = []
    for name in ("nfkc", "small", "uni_nfkc"):
        sp = spm.SentencePieceProcessor(model_file=str(models[name]))
        out.append((Tokenizer.from_file(models[name]), sp.encode))
    for key in (("llama", "small"), ("gemma", "nfkc"), ("llama-metaspace", "identity"), ("spm", "uni_id"),
                ("spm", "uni_nfkc"), ("spm", "nfkc")):
        hf = tokenizers.Tokenizer.from_file(str(converted[key]))
        out.append((Tokenizer.from_file(converted[key]), lambda t, hf=hf: hf.encode(t).ids))
    return tuple(out)


@pytest.mark.parametrize(("style", "model"), [("llama", "small"), ("gemma", "nfkc"), ("llama-metaspace", "nfkc")])
def test_decode_matches_hf(converted: dict, style: str, model: str) -> None:
    path = converted[style, model]
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_file(path)
    r = ours.encode(TEXTS)
    rows = _rows(r)
    for skip in (False, True):
        want = hf.decode_batch(rows, skip_special_tokens=skip)
        assert ours.decode(r.ids, r.offsets, skip_special_tokens=skip, errors="replace") == want
    # byte pieces that are not UTF-8 as a run, cut characters, byte pieces between pieces
    rng = np.random.default_rng(3)
    byte_ids = [i for i in (ours.token_to_id(f"<0x{b:02X}>") for b in range(256)) if i is not None]
    seqs = [[int(x) for x in rng.choice(byte_ids + list(range(260, 400)), size=rng.integers(1, 9))]
            for _ in range(300)] + [row[:k] for row in rows[:100] for k in (1, 2, 5)]
    off = np.cumsum([0] + [len(s) for s in seqs])
    flat = np.array([i for s in seqs for i in s], dtype=np.int64)
    assert ours.decode(flat, off, errors="replace") == hf.decode_batch(seqs, skip_special_tokens=False)
    raw = ours.decode(flat, off, errors=None)
    assert all(isinstance(b, bytes) for b in raw)
    with pytest.raises(InputError, match="not UTF-8"):
        ours.decode(flat, off)


@pytest.mark.parametrize("model", ["nfkc", "small", "cf", "identity", "unk", "uni_nfkc", "uni_id"])
def test_decode_matches_sentencepiece(models: dict[str, Path], model: str) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(models[model]))
    ours = Tokenizer.from_file(models[model])
    r = ours.encode(TEXTS)
    assert ours.decode(r.ids, r.offsets, errors="replace") == [sp.decode(x) for x in _rows(r)]
    rng = np.random.default_rng(5)
    byte_ids = [sp.piece_to_id(f"<0x{b:02X}>") for b in range(256)]
    seqs = [[int(x) for x in rng.choice(byte_ids + list(range(0, 330)), size=rng.integers(1, 9))] for _ in range(300)]
    off = np.cumsum([0] + [len(s) for s in seqs])
    flat = np.array([i for s in seqs for i in s], dtype=np.int64)
    assert ours.decode(flat, off, errors="replace") == [sp.decode(s) for s in seqs]


def test_long_texts_are_not_quadratic(converted: dict, models: dict[str, Path]) -> None:
    """One pre-token of 1 MB (Llama legacy: no pre-tokenizer; a run of one letter; CJK without spaces): the heap
    merge is n log n. Exact against HF on 200 KB; the 1 MB CPU time against 4x the 250 KB one (ratios,
    not times)."""
    hf = tokenizers.Tokenizer.from_file(str(converted["llama", "nfkc"]))
    ours = Tokenizer.from_file(converted["llama", "nfkc"])
    for unit in ("a", "中文字符测试日本語", "ab"):
        text = (unit * (200_000 // len(unit.encode())))
        assert _rows(ours.encode([text]))[0] == hf.encode(text).ids
        sizes = {}
        for n in (250_000, 1_000_000):
            t = unit * (n // len(unit.encode()))
            ours.encode([t])
            spent = []
            for _ in range(3):  # CPU time of this process (all its threads), least of 3: other load does not count
                start = time.process_time()
                ours.encode([t])
                spent.append(time.process_time() - start)
            sizes[n] = min(spent)
        assert sizes[1_000_000] < 8 * sizes[250_000] + 0.05, sizes


def test_rows_and_launches(converted: dict) -> None:
    path = converted["llama", "nfkc"]
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_file(path)
    texts = TEXTS[:50]
    want = [e.ids for e in hf.encode_batch(texts)]
    K.COUNTS.clear()
    r = ours.encode_rows(texts, max_length=24)
    assert K.COUNTS["launch"] == 1 and K.COUNTS["d2h"] <= 1
    for row, mask, w in zip(r.input_ids.tolist(), r.attention_mask.tolist(), want):
        keep = w[:24] if len(w) <= 24 else w[:24]
        assert row[:len(keep)] == keep and sum(mask) == len(keep)
    K.COUNTS.clear()
    ours.encode(texts)
    assert K.COUNTS["launch"] == 2 and K.COUNTS["d2h"] <= 1


def test_loader_and_slow_layout(models: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "slow"
    d.mkdir()
    (d / "tokenizer.model").write_bytes(models["nfkc"].read_bytes())
    (d / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True, "add_eos_token": False,
                                                         "bos_token": "<s>", "eos_token": "</s>"}))
    sp = spm.SentencePieceProcessor(model_file=str(models["nfkc"]))
    tok = Tokenizer.from_pretrained(d)
    assert tok.family == "sentencepiece" and tok.bos_id == sp.bos_id() and tok.eos_id == sp.eos_id()
    assert _rows(tok.encode(["Hello world"]))[0] == [sp.bos_id(), *sp.encode("Hello world")]
    assert _rows(tok.encode(["Hello world"], add_special_tokens=False))[0] == sp.encode("Hello world")
    assert tok.vocab_size == sp.get_piece_size() and tok.id_to_token(5) == sp.id_to_piece(5)
    assert tok.token_to_id("<ud>") == sp.piece_to_id("<ud>")


def test_load_errors(converted: dict, tmp_path: Path) -> None:
    doc = json.loads(converted["llama", "nfkc"].read_text())
    doc["model"]["dropout"] = 0.1
    bad = tmp_path / "tokenizer.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="dropout"):
        Tokenizer.from_file(bad)
    doc["model"]["dropout"] = None
    doc["normalizer"] = {"type": "Replace", "pattern": {"Regex": "[a-z]+"}, "content": "x"}
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"normalizer\[0\].pattern"):
        Tokenizer.from_file(bad)
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"\x0a\xff\xff\xff")
    with pytest.raises(ConfigError, match="not a sentencepiece ModelProto"):
        Tokenizer.from_file(junk)


def test_texts_that_outgrow_the_tight_scratch(models: dict[str, Path], converted: dict,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The scratch is first sized for normalized text of at most TIGHT_GROWTH (3) bytes per input byte; nmt_nfkc writes
    U+FDFA (3 bytes) as 33: a batch with such a text runs again with the worst-case scratch, same ids as the
    references (ragged and rows), and a batch without one runs once."""
    grow = ["\ufdfa" * 50, "x \ufdfa\ufdfa y", "\ufdfa", "\u3392\ufb01" * 40] + TEXTS[:40]
    engines = [(Tokenizer.from_file(models[m]), spm.SentencePieceProcessor(model_file=str(models[m])).encode)
               for m in ("nfkc", "uni_nfkc")]
    for key in (("spm", "nfkc"), ("spm", "uni_nfkc")):  # (tokenizer.json with the nmt_nfkc Precompiled)
        hf = tokenizers.Tokenizer.from_file(str(converted[key]))
        engines.append((Tokenizer.from_file(converted[key]), lambda t, hf=hf: hf.encode(t).ids))
    for ours, ref in engines:
        runs: list[bool] = []
        args = ours._args
        monkeypatch.setattr(ours, "_args",
                            lambda *a, tight=True, args=args, runs=runs: runs.append(tight) or args(*a, tight=tight))
        want = [ref(t) for t in grow]
        assert _diff(_rows(ours.encode(grow)), want, grow) == []
        assert runs == [True, False]
        r = ours.encode_rows(grow, max_length=64)
        for row, mask, w in zip(r.input_ids.tolist(), r.attention_mask.tolist(), want):
            assert row[:sum(mask)] == w[:64]
        runs.clear()
        assert _diff(_rows(ours.encode(TEXTS[:40])), [ref(t) for t in TEXTS[:40]], TEXTS[:40]) == []
        assert runs == [True]


def test_words_are_cut_at_spaces_only_where_no_merge_crosses(converted: dict, models: dict[str, Path],
                                                             tmp_path: Path) -> None:
    """Gemma-style and Llama-2 legacy files (and .model BPEs) have no pre-tokenizer split: the model stage cuts each
    pre-token before each U+2581 that follows another character (P_WORDS), as no merge joins across such a cut.
    A file whose merges do join across one (``e`` + ``▁``, merged first) keeps its pre-tokens whole; both exact."""
    for path in (converted["gemma", "nfkc"], converted["llama", "small"], models["nfkc"]):
        assert Tokenizer.from_file(path)._pre_host[0][P_WORDS] == 1
    doc = json.loads(converted["gemma", "nfkc"].read_text())
    vocab = doc["model"]["vocab"]
    vocab["e\u2581"] = len(vocab)
    doc["model"]["merges"].insert(0, ["e", "\u2581"] if isinstance(doc["model"]["merges"][0], list) else "e \u2581")
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    ours = Tokenizer.from_file(path)
    assert ours._pre_host[0][P_WORDS] == 0
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = TEXTS[:200] + ["the  cat sat", "e e e", "one two three"]
    want = [e.ids for e in hf.encode_batch(texts)]
    assert any(vocab["e\u2581"] in w for w in want)
    assert _diff(_rows(ours.encode(texts)), want, texts) == []
