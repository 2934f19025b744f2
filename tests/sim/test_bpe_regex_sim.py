"""The regex engine's GPU kernels in the CUDA simulator: the PIECES kernel and a regex tokenizer's encode kernel
give the CPU kernels' pieces and ids, bit for bit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops.bpe.regex import BYTE_LEVEL_PATTERN, RegexSplitter  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402

DEEPSEEK = [r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+",
            r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""]  # noqa: E501
TEXTS = O.BPE_ADVERSARIAL[:10] + O.random_texts(5, 10) + ["中文12345テスト x'LL  \n\n y", ""]


@pytest.mark.parametrize("levels", [
    [(p, "Isolated", False) for p in DEEPSEEK],
    [(r"\p{N}+", "MergedWithNext", False), (r"\s", "Contiguous", True), (r"[\p{P}]", "Removed", False),
     (BYTE_LEVEL_PATTERN, "MergedWithPrevious", False)],
    [(r"(?i:the)\b|\w+(?=\s)|(?<=\s)\S|[^a-z]{1,2}+", "Removed", True)],
])
def test_pieces_gpu_equals_cpu(levels: list) -> None:
    sp = RegexSplitter(levels, "onig")
    assert sp.pre_tokenize(TEXTS, target="cuda") == sp.pre_tokenize(TEXTS, target="cpu")


def test_regex_tokenizer_gpu_equals_cpu(tmp_path: Path) -> None:
    path = O.write_tokenizer_json(tmp_path, "gpt2", family_pattern=O.LLAMA3_PATTERN)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated", "invert": False} for p in DEEPSEEK] + [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    cpu, gpu = BPETokenizer.from_pretrained(tmp_path), BPETokenizer.from_pretrained(tmp_path, device="cuda")
    a, b = cpu.encode(TEXTS), gpu.encode(TEXTS)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    ra, rb = cpu.encode_rows(TEXTS, max_length=12), gpu.encode_rows(TEXTS, max_length=12)
    assert np.array_equal(ra.input_ids, rb.input_ids)
