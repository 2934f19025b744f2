"""The BPE kernels with every array access bounds-checked: any bytes (valid UTF-8 or not), caller-made buffers
with bad offsets, added tokens with every flag, prefix spaces and NFC, ragged and fixed rows, decode of any ids;
an index outside an array raises IndexError here, a bad input must be an InputError."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402

TOKS: dict[str, BPETokenizer] = {}
PIECES = st.sampled_from(["<|endoftext|>", "<|im_start|>", "<mask>", " cat", "ant", "  ", "\r\n", "'s", "1234",
                          "e\u0301", "\u1100\u1161", "😀", "中文", "ab" * 30, " ", "x"])


def tokenizers() -> list[BPETokenizer]:
    if not TOKS:
        TOKS["qwen2"] = BPETokenizer.from_tiktoken(O.DATA / "qwen.tiktoken", encoding="qwen2")
        TOKS["o200k"] = BPETokenizer.from_tiktoken(O.DATA / "o200k_base.tiktoken", encoding="o200k_base")
        d = Path(tempfile.mkdtemp())  # a GPT-2 tokenizer.json with prefix spaces and flagged added tokens
        doc = {"model": {"type": "BPE", "vocab": json.loads((O.DATA / "encoder.json").read_text()),
                         "merges": (O.DATA / "vocab.bpe").read_text().split("\n")[1:-1]},
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
               "added_tokens": [{"id": 50257, "content": "<mask>", "single_word": False, "lstrip": True,
                                 "rstrip": True, "normalized": False, "special": True},
                                {"id": 50258, "content": "ant", "single_word": True, "lstrip": False,
                                 "rstrip": False, "normalized": True, "special": False}]}
        (d / "tokenizer.json").write_text(json.dumps(doc))
        TOKS["gpt2"] = BPETokenizer.from_pretrained(d)
    return list(TOKS.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=30) | st.lists(PIECES, max_size=8).map(lambda p: "".join(p).encode()),
                min_size=1, max_size=5), st.integers(1, 12), st.booleans())
def test_fuzz_never_indexes_out_of_bounds(texts, width, left):
    for tok in tokenizers():
        try:
            r = tok.encode(texts, allowed_special="all")
        except InputError:
            continue
        offsets = np.asarray(r.offsets)
        assert len(offsets) == len(texts) + 1 and offsets[-1] == len(r.ids) and np.all(np.diff(offsets) >= 0)
        assert len(tok.decode(r.ids, r.offsets, errors="replace")) == len(texts)
        side = "left" if left else "right"
        rows = tok.encode_rows(texts, max_length=width, padding_side=side, truncation_side=side,
                               allowed_special="all")
        assert np.asarray(rows.input_ids).shape == (len(texts), width)


def test_bad_caller_buffers_and_ids() -> None:
    tok = tokenizers()[0]
    data = np.frombuffer(b"hello world, again", dtype=np.uint8)
    for offsets in ([0, 5, 3], [0, 99], [-1, 4], [4, 2]):
        with pytest.raises(InputError, match="row"):
            tok.encode((data, np.array(offsets, dtype=np.int64)))
    for ids, offs in (([1, -1], [0, 2]), ([10**9], [0, 1]), ([1, 2], [0, 3]), ([1], [1, 0])):
        with pytest.raises(InputError, match="row"):
            tok.decode(np.array(ids), np.array(offs), errors=None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(PIECES | st.text(max_size=12), max_size=10).map("".join), min_size=1, max_size=12),
       st.sampled_from([(4, 4, 2, 2), (8, 8, 64, 16), (16, 32, 300, 300)]))
def test_merge_cache_full_and_reset_in_bounds(texts, shape):
    """The merge cache emptied and refilled all the time (tiny shapes: pieces that never fit, that fit once):
    every access in bounds, ids equal to the uncached tokenizer's."""
    import triton_textops.ops.bpe.tokenizer as T  # noqa: PLC0415

    texts = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts]
    tok = tokenizers()[1]
    expected = tok.encode(texts).tolist()
    small = BPETokenizer.__new__(BPETokenizer)
    small.__dict__.update(tok.__dict__)
    small._place()  # its own thread-local scratch and cache
    saved = T.CACHE_SHAPE
    T.CACHE_SHAPE = shape
    try:
        for _ in range(2):
            assert small.encode(texts).tolist() == expected
    finally:
        T.CACHE_SHAPE = saved


LIMITED: list[tuple] = []


def limited() -> list[tuple]:
    """(ours, HF's tokenizer) of each :data:`bpe_oracles.LIMIT_CASES` file (truncation x padding, every side)."""
    if not LIMITED:
        import tokenizers as hf  # noqa: PLC0415

        root = Path(tempfile.mkdtemp())
        for i, (trunc, pad) in enumerate(O.LIMIT_CASES):
            d = O.write_limited_json(root / f"t{i}", trunc, pad)
            LIMITED.append((BPETokenizer.from_pretrained(d), hf.Tokenizer.from_file(str(d / "tokenizer.json"))))
    return LIMITED


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(PIECES | st.text(max_size=12), max_size=10).map("".join), max_size=6), st.booleans())
def test_file_limits_in_bounds_and_as_hf(texts, specials):
    """A file's truncation and padding (planned on the host, cut and padded by the compaction kernel): every access
    in bounds, HF's encode_batch ids, in a batch and one text at a time."""
    texts = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts]
    for ours, hf in limited():
        expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=specials)]
        assert ours.encode(texts, add_special_tokens=specials).tolist() == expected
        assert [ours.encode([t], add_special_tokens=specials).tolist()[0] for t in texts] == \
            [hf.encode(t, add_special_tokens=specials).ids for t in texts]
