"""The Unicode forms and maps (ops.core.unorm) and the normalizer program of a byte-level BPE file and of a
SentencePiece file, GPU entry points in the CUDA simulator: exactly the CPU entries' bytes and ids."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402
from triton_textops.ops.core.unorm import map_normalize, nfc_normalize  # noqa: E402

TEXTS = ["plain ASCII", "", "ﬁ ＡＢ ㎒ \ufdfa ½", "İ ΣΑΣ ẞ", "\u1100\u1161\u11a8 \uac00\u11a8", "a\u0316\u0301\u0300 e\u0301",
         "👨‍👩‍👧 Ǆ", "  x  "]
SEQ = {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
                                           {"type": "Strip", "strip_left": True, "strip_right": True}, {"type": "NFC"}]}


@pytest.mark.parametrize("form", ["nfd", "nfkc", "nfkd"])
def test_forms_gpu_equal_cpu(form: str) -> None:
    assert K.SIMULATOR
    caps = [11 * len(t.encode()) for t in TEXTS]
    caps[2] = 20  # does not fit: None on both
    cpu = nfc_normalize(TEXTS, "cpu", form=form, caps=caps)
    assert nfc_normalize(TEXTS, "cuda", form=form, caps=caps) == cpu and cpu[2] is None


@pytest.mark.parametrize("name", ["lower", "strip"])
def test_maps_gpu_equal_cpu(name: str) -> None:
    assert map_normalize(TEXTS, name, "cuda") == map_normalize(TEXTS, name, "cpu")


def test_bpe_program_gpu_equals_cpu(tmp_path: Path) -> None:
    O.write_tokenizer_json(tmp_path, "gpt2", family_pattern=O.LLAMA3_PATTERN, normalizer=SEQ,
                           added=[{"id": 50257, "content": "<ﬁ>", "normalized": True, "special": False}])
    cpu, gpu = BPETokenizer.from_pretrained(tmp_path), BPETokenizer.from_pretrained(tmp_path, device="cuda")
    texts = [*TEXTS, "x<ﬁ>y <fi>"]
    a, b = cpu.encode(texts), gpu.encode(texts)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    K.COUNTS.clear()
    rows = gpu.encode_rows(texts, max_length=8)
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (1, 1)
    assert np.array_equal(rows.input_ids, cpu.encode_rows(texts, max_length=8).input_ids)


def test_sentencepiece_program_gpu_equals_cpu(tmp_path: Path) -> None:
    pytest.importorskip("sentencepiece")
    pytest.importorskip("transformers")
    import sp_oracles  # noqa: PLC0415

    from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer  # noqa: PLC0415

    model = sp_oracles.train(tmp_path / "u.model", model_type="unigram", vocab_size=600, byte_fallback=True)
    doc = json.loads(sp_oracles.convert(model, tmp_path / "u.json", "spm").read_text())
    doc["normalizer"] = {"type": "Sequence", "normalizers": [*SEQ["normalizers"], doc["normalizer"]]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    cpu, gpu = SentencePieceTokenizer.from_file(path), SentencePieceTokenizer.from_file(path, device="cuda")
    a, b = cpu.encode(TEXTS), gpu.encode(TEXTS)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
