"""WordPiece tokenizer.json options on the GPU kernels (numba.cuda.jit, run by the CUDA simulator): the same arrays
as the CPU kernels, bit for bit, for normalizer option sets beyond BERT's two, another continuation prefix and word
length, a template with type ids, added tokens with single_word, the file's truncation and padding, rows on either
side with overflow windows, and decode."""

from __future__ import annotations

import numpy as np
import pytest
from textcases import ADVERSARIAL
from tokenizers import AddedToken, Tokenizer, decoders
from tokenizers.models import WordPiece
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from tokenizers.processors import TemplateProcessing

from triton_textops.ops.core import kernels as K
from triton_textops.ops.wordpiece.formats import read_vocab
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer

OUTPUTS = ("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping")
EDGE = ["", " ", "x[SEP]y [MASK] [A] x[A] é[A]", "a" * 30, "é\u0301" * 12, "ctl\x00\x01\u2000\u200d end",
        "中文字符 ภาษาไทย العربية हिन्दी", "İstanbul ΣΊΣΥΦΟΣ ﬁ Ａ"]


def make(tmp_path, vocab_path, *, normalizer, prefix="##", max_chars=100, truncation=None, padding=None):
    """A CPU and a GPU tokenizer of one tokenizer.json made by HF tokenizers."""
    base = {t: i for i, t in enumerate(read_vocab(vocab_path))}
    vocab = {(prefix + t[2:] if t.startswith("##") else t): i for t, i in base.items()}
    t = Tokenizer(WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                            max_input_chars_per_word=max_chars))
    t.normalizer = normalizer
    t.pre_tokenizer = BertPreTokenizer()
    t.post_processor = TemplateProcessing(single="[CLS]:2 $A:1 [SEP]:3", special_tokens=[("[CLS]", 101), ("[SEP]", 102)])
    t.decoder = decoders.WordPiece(prefix=prefix)
    t.add_special_tokens(["[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"])
    t.add_tokens([AddedToken("[A]", single_word=True, normalized=False)])
    if truncation:
        t.enable_truncation(**truncation)
    if padding:
        t.enable_padding(**padding)
    path = tmp_path / "tokenizer.json"
    t.save(str(path))
    return BertTokenizer.from_pretrained(path, device="cpu"), BertTokenizer.from_pretrained(path, device="cuda")


@pytest.fixture(scope="module")
def texts(austen):
    return [p[:200] for p in austen[:4]] + ADVERSARIAL[:12] + EDGE


CASES = {
    "strip-only-no-clean": {"normalizer": BertNormalizer(clean_text=False, strip_accents=True, lowercase=False)},
    "lower-only-no-cjk": {"normalizer": BertNormalizer(handle_chinese_chars=False, strip_accents=False),
                          "prefix": "@@", "max_chars": 12},
    "none-left-limits": {"normalizer": None, "truncation": {"max_length": 20, "direction": "left"},
                         "padding": {"direction": "left", "pad_to_multiple_of": 8, "pad_id": 0}},
}


@pytest.fixture(scope="module", params=list(CASES))
def pair(request, tmp_path_factory, vocab_path):
    cpu, gpu = make(tmp_path_factory.mktemp(request.param), vocab_path, **CASES[request.param])
    assert K.SIMULATOR and gpu.target == "cuda" and cpu.target == "cpu"
    return cpu, gpu


def test_encode_and_decode_gpu_equal_cpu(pair, texts):
    cpu, gpu = pair
    for special in (True, False):
        a, b = cpu.encode(texts, add_special_tokens=special), gpu.encode(texts, add_special_tokens=special)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.offsets, b.offsets)
    for skip in (False, True):
        assert gpu.decode(b.ids, b.offsets, skip_special_tokens=skip) == \
            cpu.decode(a.ids, a.offsets, skip_special_tokens=skip)


@pytest.mark.parametrize(("pad", "trunc", "kw"), [
    ("left", "right", {"max_length": 16, "stride": 4, "return_overflowing_tokens": True, "dtype": "int32"}),
    ("left", "left", {"max_length": 16}),
    ("right", "left", {"max_length": 12, "stride": 2, "return_overflowing_tokens": True, "add_special_tokens": False}),
])
def test_rows_gpu_equal_cpu(pair, texts, pad, trunc, kw):
    cpu, gpu = pair
    a = cpu.encode_rows(texts, padding_side=pad, truncation_side=trunc, **kw)
    b = gpu.encode_rows(texts, padding_side=pad, truncation_side=trunc, **kw)
    for name in OUTPUTS:
        assert isinstance(getattr(b, name), np.ndarray)  # the simulator returns NumPy arrays
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype
