"""Every model takes any tokenizer family (issue 43), in the in-process harness.

- ``llm_preprocess`` / ``llm_postprocess`` on a WordPiece tokenizer.json (made by HF ``tokenizers``) with a
  tokenizer_config.json naming its eos / pad tokens: every output equal, byte for byte, to TensorRT-LLM's own
  model.py run on a stand-in for ``transformers`` built on HF ``tokenizers`` alone (:data:`SHIM`: encode / decode of
  the file, the config's special tokens and clean-up rule, BertTokenizerFast's default special tokens), on the same
  configs and requests; a WordPiece tokenizer without an end token, or with ``streaming``, fails the load in one line.
- ``tokenize``: ``tokenizer`` (a tokenizer.json directory or file, WordPiece or byte-level BPE) beside ``vocab``:
  the same rows as ``vocab`` for WordPiece, HF ``tokenizers``' truncated / padded (and overflowing) encodings for
  BPE; both given, or ``lowercase`` with ``tokenizer``, is a load error naming both.
- ``preprocess``: a WordPiece tokenizer.json gives the vocab.txt's outputs (one pass), a BPE one (or a WordPiece one
  normalizing otherwise than the features) HF's rows and the ``features`` model's features (two passes).
"""

from __future__ import annotations

import json
import random
import re
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bpe_oracles as O
import llm_dirs as L
import numpy as np
import pytest
import tokenizers
from llm_reference import i32, obj, post_requests, run_batches
from llm_reference import same_outputs as _same
from model_dirs import FORCE_NO, PREPROCESS, write_model

from triton_textops import ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path
from triton_textops.ops.llm import LLMTokenizer
from triton_textops.testing import load_model
from triton_textops.testing.harness import ModelLoadError

# tokenizer_config.json of each WordPiece style: eos (and pad) named, clean-up on / off
WP_CONFIGS = {
    "wordpiece": {"tokenizer_class": "BertTokenizer", "eos_token": "[SEP]", "pad_token": "[PAD]",
                  "clean_up_tokenization_spaces": True},
    "wordpiece_plain": {"tokenizer_class": "BertTokenizer", "eos_token": "[MASK]",
                        "clean_up_tokenization_spaces": False},
    # the file truncates and pads (transformers turns both off; its padding names the pad token)
    "wordpiece_limited": {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "[SEP]"},
}
PADS = {"wordpiece": "[PAD]", "wordpiece_plain": "[PAD]", "wordpiece_limited": "[MASK]"}
# transformers as TensorRT-LLM's model.py uses it, on HF tokenizers only: put in sys.modules while the reference
# runs (shim_transformers)
SHIM = '''
import json
import os

import tokenizers

BERT_DEFAULTS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                 "mask_token": "[MASK]"}  # BertTokenizerFast's
CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


class _Fast:
    def __init__(self, d):
        self._t = tokenizers.Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            cfg = json.load(f)
        defaults = BERT_DEFAULTS if cfg.get("tokenizer_class") == "BertTokenizer" else {}
        if self._t.padding is not None:  # PreTrainedTokenizerFast: the file's padding names the pad token
            defaults = {"pad_token": self._t.padding["pad_token"], **defaults}
        self._t.no_truncation()  # (transformers, for a call that asks for neither)
        self._t.no_padding()
        self.eos_token = cfg.get("eos_token", defaults.get("eos_token"))
        self.pad_token = cfg.get("pad_token", defaults.get("pad_token"))
        self.clean_up = cfg.get("clean_up_tokenization_spaces", False)

    def encode(self, text, add_special_tokens=True):
        return self._t.encode(text, add_special_tokens=add_special_tokens).ids

    @property
    def vocab(self):
        return self._t.get_vocab(with_added_tokens=True)

    @property
    def vocab_size(self):
        return self._t.get_vocab_size(with_added_tokens=False)

    def batch_decode(self, seqs, skip_special_tokens=False):
        out = []
        for s in seqs:
            text = self._t.decode([int(i) for i in s], skip_special_tokens=skip_special_tokens)
            if self.clean_up:
                for a, b in CLEAN_UP:
                    text = text.replace(a, b)
            out.append(text)
        return out


class AutoTokenizer:
    @staticmethod
    def from_pretrained(d, **kwargs):
        return _Fast(d)


class AutoProcessor:
    pass


class T5Tokenizer:
    pass
'''

TEXTS = [
    "Hello, world! Isn't it nice? I'm sure they're here.",
    "Hello , world ! Isn 't it nice ? I 'm sure they 're here , we 've seen it . ' quoted ' end .",
    "Déjà vu: naïve CAFÉ, 中文字符 and 日本語のテキスト, 한국어 😀👍🏽",
    "[CLS] raw [SEP] specials [MASK] inside [PAD] text [UNK]",
    "unbelievably tokenization's ##subwords and un##related",
    "tab\tand\nnewline\r\x00control\x7f chars \u200b zw \ufeff bom",
    "", "   ", "a", ("A long prompt of several sentences. " * 40)[:1200],
    *O.random_texts(43, 12),
]
WORDS = ["hello", " world", "Hello world", "", "中文", "😀", "[SEP]", " it's", "x y z", "unbelievable"]


def write_wordpiece_dir(root: Path, style: str, config: dict | None = None) -> Path:
    """``root/style``: HF tokenizers' BertWordPieceTokenizer over the bundled vocab.txt, saved as tokenizer.json,
    with a tokenizer_config.json."""
    d = root / style
    d.mkdir(parents=True, exist_ok=True)
    vocab = tokenizers.models.WordPiece.read_file(str(vocab_path()))
    tok = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    if style == "wordpiece_limited":
        tok.enable_truncation(8)
        tok.enable_padding(length=12, pad_id=103, pad_token="[MASK]")
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps(WP_CONFIGS[style] if config is None else config))
    return d


def pre_batches(seed: int) -> list[list[dict]]:
    """Mixed requests (several rows and words, empty words, bias words, END_ID / PAD_ID, decoder queries), then
    every text alone, and a batch of one."""
    rng = random.Random(seed)
    mixed = [
        {"QUERY": obj([[TEXTS[0]]]), "REQUEST_OUTPUT_LEN": i32([16])},
        {"QUERY": obj([[TEXTS[1]], [TEXTS[-2]], [""]]), "REQUEST_OUTPUT_LEN": i32([1, 2, 3]),
         "BAD_WORDS_DICT": obj([WORDS[:3], WORDS[3:6], WORDS[6:9]]),
         "STOP_WORDS_DICT": obj([WORDS[8:], WORDS[:2], ["", ""]]), "END_ID": i32([7, 8, 9]), "PAD_ID": i32([0, 1, 2])},
        {"QUERY": obj([[TEXTS[2]], [TEXTS[-1]]]), "REQUEST_OUTPUT_LEN": i32([5, 6]),
         "DECODER_QUERY": obj([["decoder one"], ["zwei 😀"]]),
         "EMBEDDING_BIAS_WORDS": obj([["hello", "hello", " world"], ["中文", "", "x y z"]]),
         "EMBEDDING_BIAS_WEIGHTS": np.array([[0.1, 0.2, -1.5], [0.3, 2.0, 1e-3]], dtype=np.float32)},
        {"QUERY": obj([[TEXTS[3]]]), "REQUEST_OUTPUT_LEN": i32([0]), "BAD_WORDS_DICT": np.empty((1, 0), dtype=object),
         "EMBEDDING_BIAS_WORDS": obj([["hello"]]), "PAD_ID": i32([5])},
        {"QUERY": obj([[TEXTS[4]]]), "REQUEST_OUTPUT_LEN": i32([3]),
         "EMBEDDING_BIAS_WEIGHTS": np.array([[1.0]], dtype=np.float32)},
    ]
    singles = []
    for t in TEXTS:
        req = {"QUERY": obj([[t]]), "REQUEST_OUTPUT_LEN": i32([rng.randint(1, 99)])}
        if rng.random() < 0.5:
            req["STOP_WORDS_DICT"] = obj([rng.sample(WORDS, 2)])
        singles.append(req)
    return [mixed, singles, [mixed[2]]]


def post_batches(hf: tokenizers.Tokenizer, seed: int) -> list[list[dict]]:
    """Postprocessing requests (:func:`llm_reference.post_requests`), word pieces "##x" among the random ids."""
    enc = [e.ids for e in hf.encode_batch(TEXTS)]
    specials = [hf.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")]
    return post_requests(random.Random(seed), enc, specials, hf.get_vocab_size(with_added_tokens=True))


@pytest.fixture(scope="module")
def wp_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wordpiece")
    return {style: write_wordpiece_dir(root, style) for style in WP_CONFIGS}


# ------------------------------------------------------------------------------------------- LLM models


@contextmanager
def shim_transformers() -> Iterator[None]:
    """:data:`SHIM` as the ``transformers`` the reference's model.py imports, whether or not the real one is
    installed (the model directory comes after site-packages on sys.path, as the server puts it)."""
    shim = types.ModuleType("transformers")
    exec(compile(SHIM, "transformers_shim", "exec"), shim.__dict__)  # noqa: S102 (the test's own source)
    real = sys.modules.get("transformers")
    sys.modules["transformers"] = shim
    try:
        yield
    finally:
        if real is None:
            sys.modules.pop("transformers", None)
        else:
            sys.modules["transformers"] = real


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory: pytest.TempPathFactory, wp_dirs: dict) -> dict:
    """Our models' and the reference's responses to the same batches, per (style, kind, flag)."""
    root = tmp_path_factory.mktemp("llm_any")
    out = {}
    for style, flags in (("wordpiece", (True, False)), ("wordpiece_plain", (True,)), ("wordpiece_limited", (True,))):
        tok_dir = wp_dirs[style]
        hf = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
        hf.no_truncation()
        hf.no_padding()
        for flag in flags:
            name = f"_{style}_{flag}"
            pre, post = L.write_llm_models(root / "ours", tok_dir, name=name, add_special_tokens=flag,
                                           skip_special_tokens=flag)
            rpre, rpost = L.write_reference_models(root / "ref", tok_dir, name=name, add_special_tokens=flag,
                                                   skip_special_tokens=flag)
            for kind, ours_dir, ref_dir, batches in (("pre", pre, rpre, pre_batches(1)),
                                                     ("post", post, rpost, post_batches(hf, 2))):
                with shim_transformers():
                    ref = run_batches(ref_dir, batches)
                out[(style, kind, flag)] = (run_batches(ours_dir, batches), ref, batches)
    return out


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_wordpiece_llm_models_equal_tensorrt_llm_on_tokenizers(llm_runs: dict, kind: str) -> None:
    checked = 0
    for (style, k, flag), (ours, ref, batches) in llm_runs.items():
        if k != kind:
            continue
        for b, (o_batch, r_batch) in enumerate(zip(ours, ref)):
            assert len(o_batch) == len(r_batch) == len(batches[b])
            for i, (o, r) in enumerate(zip(o_batch, r_batch)):
                _same(o, r, f"{style} {kind} flag={flag} batch {b} request {i} ({list(batches[b][i])})")
                checked += 1
    assert checked == 4 * (5 + len(TEXTS) + 1 if kind == "pre" else len(TEXTS) + 12 + 1)


def test_wordpiece_llm_ids_are_the_files(wp_dirs: dict) -> None:
    """The end, pad ids and vocabulary length the LLM models take from a WordPiece directory: the config's tokens'
    ids in HF tokenizers' file (the pad token: the config's, else the file's padding's, else [PAD]), its vocabulary's
    size; a text's ids are HF tokenizers' encode, without the file's truncation and padding."""
    for style, cfg in WP_CONFIGS.items():
        tok = LLMTokenizer(wp_dirs[style])
        hf = tokenizers.Tokenizer.from_file(str(wp_dirs[style] / "tokenizer.json"))
        assert (hf.truncation is not None) == (style == "wordpiece_limited")
        hf.no_truncation()
        hf.no_padding()
        assert (tok.family, tok.bpe, tok.exact_stream) == ("wordpiece", None, False)
        assert tok.end_id == hf.token_to_id(cfg["eos_token"])
        assert tok.pad_id == hf.token_to_id(PADS[style])
        assert tok.vocab_len == tok.n_ids == hf.get_vocab_size(with_added_tokens=True) == 30522
        assert tok.has_template and tok.clean_up == cfg.get("clean_up_tokenization_spaces", False)
        texts = [t.encode() for t in TEXTS]
        data = np.frombuffer(b"".join(texts), np.uint8)
        offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
        for flag in (True, False):
            ids, off = tok.encode_groups([(data, offsets)], [flag])[0]
            got = [ids[off[i]:off[i + 1]].tolist() for i in range(len(texts))]
            assert got == [e.ids for e in hf.encode_batch(TEXTS, add_special_tokens=flag)]


@pytest.mark.parametrize(("config", "message"), [
    ({"pad_token": "[PAD]"}, r"parameter 'tokenizer_dir': .*no end token \(no eos_token in tokenizer_config.json\)"),
    ({"eos_token": "<|end|>"}, r"parameter 'tokenizer_dir': tokenizer_config.json's eos_token '<\|end\|>' is not a token"),
])
def test_wordpiece_llm_without_an_end_token_fails_load(tmp_path: Path, config: dict, message: str) -> None:
    tok_dir = write_wordpiece_dir(tmp_path, "wordpiece", config)
    for d in L.write_llm_models(tmp_path, tok_dir):
        with pytest.raises(ModelLoadError) as e:
            load_model(d)
        line = next(ln for ln in str(e.value).splitlines() if "tokenizer_dir" in ln)  # (then the harness's traceback)
        assert re.search(r"ConfigError: model '\w+': " + message, line), line  # the whole message on one line


def test_wordpiece_streaming_fails_load(tmp_path: Path, wp_dirs: dict) -> None:
    _, post = L.write_llm_models(tmp_path, wp_dirs["wordpiece"], streaming=True)
    with pytest.raises(ModelLoadError, match="streaming: tokenizer_dir is a wordpiece tokenizer.*byte-level BPE"):
        load_model(post)


# ------------------------------------------------------------------------------------------- tokenize

ROWS = ("INPUT_IDS", "ATTENTION_MASK", "TOKEN_TYPE_IDS")
TOKENIZE = FORCE_NO + """
max_batch_size: 64
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [24] },
        { name: "ATTENTION_MASK" data_type: TYPE_INT32 dims: [24] },
        { name: "TOKEN_TYPE_IDS" data_type: TYPE_INT64 dims: [24] }]
"""
WINDOWS = """
max_batch_size: 0
parameters: { key: "max_length" value: { string_value: "16" } }
parameters: { key: "stride" value: { string_value: "3" } }
parameters: { key: "return_overflowing_tokens" value: { string_value: "true" } }
"""
PAGES = [t for t in austen()[40:46]] + TEXTS


def param(key: str, value: object) -> str:
    return f'parameters: {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'


def batch_of(texts: list[str]) -> np.ndarray:
    return np.array([t.encode() for t in texts], dtype=object).reshape(-1, 1)


def hf_rows(hf: tokenizers.Tokenizer, texts: list[str], max_length: int, pad_id: int, stride: int | None = None):
    """HF tokenizers' rows (truncated, padded to max_length; with ``stride`` every overflowing window) and the text
    of each row."""
    hf.enable_truncation(max_length, stride=stride or 0)
    hf.enable_padding(length=max_length, pad_id=pad_id)
    rows, of = [], []
    for i, e in enumerate(hf.encode_batch(texts)):
        for r in [e, *e.overflowing] if stride is not None else [e]:
            rows.append(r)
            of.append(i)
    return {"INPUT_IDS": np.array([r.ids for r in rows]), "ATTENTION_MASK": np.array([r.attention_mask for r in rows]),
            "TOKEN_TYPE_IDS": np.array([r.type_ids for r in rows])}, np.array(of)


@pytest.fixture(scope="module")
def bpe_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Llama-3-style (BOS template; its config's pad token is not in the file: pads with 0) and Qwen2-style (no
    template; pads with <|endoftext|>) tokenizer.json directories."""
    root = tmp_path_factory.mktemp("bpe")
    return {style: L.write_tokenizer_dir(root, style) for style in ("llama3", "qwen2")}


def test_tokenize_wordpiece_tokenizer_json_equals_vocab(tmp_path: Path, wp_dirs: dict) -> None:
    """A WordPiece tokenizer.json (its directory or the file) gives the vocab.txt's rows, which are HF's."""
    tok_dir = wp_dirs["wordpiece"]
    dirs = [write_model(tmp_path, "vocab", "tokenize", TOKENIZE, {"vocab.txt": vocab_path()}),
            write_model(tmp_path, "json_dir", "tokenize", TOKENIZE + param("tokenizer", tok_dir)),
            write_model(tmp_path, "json_file", "tokenize", TOKENIZE + param("tokenizer", tok_dir / "tokenizer.json"))]
    want, _ = hf_rows(tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json")), PAGES, 24, 0)
    for d in dirs:
        with load_model(d) as m:
            out = m.infer({"TEXT": batch_of(PAGES)})
        assert out["ATTENTION_MASK"].dtype == np.int32
        for name in ROWS:
            np.testing.assert_array_equal(out[name], want[name], err_msg=f"{d.name} {name}")


@pytest.mark.parametrize("style", ["llama3", "qwen2"])
def test_tokenize_bpe_tokenizer_is_hf(tmp_path: Path, bpe_dirs: dict, style: str) -> None:
    """A byte-level BPE tokenizer.json: HF tokenizers' truncated and padded rows (pad: the config's pad token where
    the file has it, else 0), batched; and its overflow windows with stride, unbatched, each window's text."""
    tok_dir = bpe_dirs[style]
    hf = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    pad = hf.token_to_id(L.CONFIGS[style]["pad_token"]) or 0
    assert (pad != 0) == (style == "qwen2")
    texts = PAGES + [t for t in O.BPE_ADVERSARIAL if t][:8]
    assert len(texts) <= 36
    with load_model(write_model(tmp_path, "rows", "tokenize", TOKENIZE + param("tokenizer", tok_dir))) as m:
        reqs = [m.make_request({"TEXT": batch_of(texts[a:b])}) for a, b in ((0, 5), (5, 20), (20, len(texts)))]
        got = [{t.name(): t.as_numpy() for t in r.output_tensors()} for r in m.execute(reqs)]
    want, _ = hf_rows(hf, texts, 24, pad)
    for name in ROWS:
        np.testing.assert_array_equal(np.concatenate([g[name] for g in got]), want[name], err_msg=name)
    with load_model(write_model(tmp_path, "windows", "tokenize", WINDOWS + param("tokenizer", tok_dir))) as m:
        out = m.infer({"TEXT": batch_of(texts)})
    want, of = hf_rows(hf, texts, 16, pad, stride=3)
    assert len(of) > 2 * len(texts)  # (long texts: several windows)
    for name in ROWS[:2]:
        np.testing.assert_array_equal(out[name], want[name], err_msg=name)
    np.testing.assert_array_equal(out["OVERFLOW_TO_SAMPLE_MAPPING"][:, 0], of)


@pytest.mark.parametrize(("extra", "message"), [
    (param("vocab", "vocab.txt"), r"parameters 'tokenizer' and 'vocab' are both given"),
    (param("lowercase", "false"), r"parameters 'tokenizer' and 'lowercase' are both given"),
])
def test_tokenize_tokenizer_with_vocab_or_lowercase_fails_load(tmp_path: Path, wp_dirs: dict, extra: str,
                                                                message: str) -> None:
    d = write_model(tmp_path, "tok", "tokenize", TOKENIZE + param("tokenizer", wp_dirs["wordpiece"]) + extra,
                    {"vocab.txt": vocab_path()})
    with pytest.raises(ModelLoadError, match=message):
        load_model(d)


def test_tokenize_unreadable_tokenizer_fails_load(tmp_path: Path) -> None:
    wordlevel = tmp_path / "wordlevel.json"
    wordlevel.write_text(json.dumps({"model": {"type": "WordLevel", "vocab": {"a": 0}}}))
    for value, message in ((tmp_path / "missing", "parameter 'tokenizer'.*file not found"),
                           (wordlevel, r"parameter 'tokenizer': .*model.type = 'WordLevel' is not loaded")):
        with pytest.raises(ModelLoadError, match=message):
            load_model(write_model(tmp_path, f"tok_{Path(value).stem}", "tokenize", TOKENIZE + param("tokenizer", value)))


# ------------------------------------------------------------------------------------------- preprocess


def test_preprocess_takes_any_family(tmp_path: Path, features_artifact: Path, wp_dirs: dict, bpe_dirs: dict) -> None:
    """A WordPiece tokenizer.json normalizing as the features do gives the vocab.txt's outputs (one pass); a BPE
    one, or a WordPiece one that keeps accents, gives HF tokenizers' rows on it and the features of the text (two
    passes)."""
    files = {"features.json": features_artifact}
    texts = PAGES[:10]
    feats = ReadabilityFeatures.load(features_artifact).transform([t.encode() for t in texts])
    with load_model(write_model(tmp_path, "pre_vocab", "preprocess", PREPROCESS,
                                {**files, "vocab.txt": vocab_path()})) as m:
        want = m.infer({"INPUT0": batch_of(texts)})
    np.testing.assert_array_equal(want["TREE_FEATS"], feats)
    with load_model(write_model(tmp_path, "pre_wp", "preprocess", PREPROCESS + param("tokenizer", wp_dirs["wordpiece"]),
                                files)) as m:
        assert m.instance.one_pass
        got = m.infer({"INPUT0": batch_of(texts)})
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    accents = tmp_path / "accents" / "tokenizer.json"  # uncased, accents kept: not the features' normalization
    accents.parent.mkdir()
    tokenizers.BertWordPieceTokenizer(tokenizers.models.WordPiece.read_file(str(vocab_path())), lowercase=True,
                                      strip_accents=False).save(str(accents))
    for name, tok in (("bpe", bpe_dirs["llama3"] / "tokenizer.json"), ("accents", accents)):
        rows, _ = hf_rows(tokenizers.Tokenizer.from_file(str(tok)), texts, 64, 0)
        with load_model(write_model(tmp_path, f"pre_{name}", "preprocess", PREPROCESS + param("tokenizer", tok.parent),
                                    files)) as m:
            assert not m.instance.one_pass
            got = m.infer({"INPUT0": batch_of(texts)})
        np.testing.assert_array_equal(got["BERT_IDS"], rows["INPUT_IDS"], err_msg=name)
        np.testing.assert_array_equal(got["BERT_AM"], rows["ATTENTION_MASK"], err_msg=name)
        np.testing.assert_array_equal(got["TREE_FEATS"], feats, err_msg=name)
    assert any(r != want["BERT_IDS"][i].tolist() for i, r in enumerate(rows["INPUT_IDS"].tolist()))  # (accents)
