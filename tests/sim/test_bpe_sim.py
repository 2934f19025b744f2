"""The BPE GPU kernels in the CUDA simulator: the same ids, rows and bytes as the CPU kernels, bit for bit, and
the launch discipline (fixed rows: one launch, one device-to-host copy)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402

TEXTS = O.BPE_ADVERSARIAL[:12] + O.random_texts(3, 12) + ["a" * 120 + "é" * 30,  # > SHORT: the heap path
                                                           "\u0301!=\ufe0f'='<!\u0308\u0308/!>*=.*=-=#,*\u0301\U0001F600.,,"
                                                           "\u0301']--\ufe0f?*->="]  # (mixed ranks)


@pytest.fixture(scope="module", params=["cl100k_base", "o200k_base"])
def pair(request: pytest.FixtureRequest) -> tuple[BPETokenizer, BPETokenizer]:
    path = O.DATA / O.RANK_FILES[request.param]
    return (BPETokenizer.from_tiktoken(path, encoding=request.param, device="cpu"),
            BPETokenizer.from_tiktoken(path, encoding=request.param, device="cuda"))


def test_encode_gpu_equals_cpu(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    cpu, gpu = pair
    a = cpu.encode(TEXTS, allowed_special="all")
    b = gpu.encode(TEXTS, allowed_special="all")
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    assert gpu.decode(b.ids, b.offsets, errors=None) == cpu.decode(a.ids, a.offsets, errors=None)


def test_rows_one_launch_one_copy(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    cpu, gpu = pair
    K.COUNTS.clear()
    rows = gpu.encode_rows(TEXTS, max_length=16, padding_side="left", truncation_side="left")
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (1, 1)
    ref = cpu.encode_rows(TEXTS, max_length=16, padding_side="left", truncation_side="left")
    assert np.array_equal(rows.input_ids, ref.input_ids) and np.array_equal(rows.attention_mask, ref.attention_mask)


def test_invalid_utf8_names_the_row(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    from triton_textops.errors import InputError  # noqa: PLC0415

    with pytest.raises(InputError, match="row 2: text is not valid UTF-8"):
        pair[1].encode([b"a", b"b", b"\xc3("])


def test_added_token_flags_gpu_equals_cpu(tmp_path: Path) -> None:
    """A tokenizer.json's added tokens with every flag (an rstrip followed by a match inside its whitespace, a
    normalized non-NFC content under NFC, single_word, lstrip): the GPU kernels give the CPU's ids."""
    added = [{"id": 50256, "content": "\u00e9", "rstrip": True}, {"id": 50257, "content": " hello"},
             {"id": 50258, "content": "<s>", "lstrip": True, "rstrip": True},
             {"id": 50259, "content": "e\u0301", "special": False, "normalized": True},
             {"id": 50260, "content": "ab", "single_word": True},
             {"id": 50261, "content": " ", "lstrip": True, "rstrip": True}]  # (empty matches dropped)
    O.write_tokenizer_json(tmp_path, "gpt2", family_pattern=O.LLAMA3_PATTERN, nfc=True, added=added)
    cpu, gpu = (BPETokenizer.from_pretrained(tmp_path, device=d) for d in ("cpu", "cuda"))
    texts = ["z\u00e9 hello", "a  <s>  b", "\u00e9\u00e9 e\u0301x", "ab cab ab", "", "x\u00e9  hello <s>", "  a   b  "]
    a, b = cpu.encode(texts), gpu.encode(texts)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    got = a.tolist()  # (the overlap and the normalized pattern happen)
    assert got[0][-1] == cpu.added[" hello"].id and cpu.added["e\u0301"].id in got[2]


def test_file_limits_on_the_gpu_as_hf(tmp_path: Path) -> None:
    """A tokenizer.json's truncation and padding applied to the GPU kernels' ids (planned on the host from the
    counts, cut and padded by the compaction kernel): HF's encode_batch ids, with and without the template's BOS,
    and the CPU's; still two launches and one device-to-host copy (the counts)."""
    pytest.importorskip("tokenizers")
    for gpu, specials, expected, case in O.limit_cases(tmp_path, "cuda"):
        K.COUNTS.clear()
        got = gpu.encode(O.LIMIT_TEXTS, add_special_tokens=specials)
        assert (K.COUNTS["launch_cuda"], K.COUNTS["launch_cpu"], K.COUNTS["d2h"]) == (2, 0, 1), (case, K.COUNTS)
        assert got.tolist() == expected, (case, specials)
        assert got.tolist() == gpu.on_cpu().encode(O.LIMIT_TEXTS, add_special_tokens=specials).tolist()
