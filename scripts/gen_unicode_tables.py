#!/usr/bin/env python3
"""Generate ``triton_textops/data/unicode_tables.npz`` from the pinned HuggingFace ``tokenizers``.

Why: our tokenizer must give HF's ids exactly, and HF uses its own Unicode tables (Rust crates), which
differ from whatever ``unicodedata`` the running Python has. So the per-code-point tables are *measured*
on the oracle itself, once, and shipped as package data; nothing is rebuilt at import time.

For every code point except surrogates this records:
- the output of ``BertNormalizer`` (clean text, CJK padding, strip accents + lowercase) for the uncased
  and the cased (``lowercase=False``, accents kept) configurations, as UTF-8 bytes;
- its class under ``BertPreTokenizer``: 0 = part of a word, 1 = whitespace (splits), 2 = punctuation
  (isolated), measured on ``"a" + ch + "a"``.
BERT normalization is per character (clean/pad/NFD-strip/lowercase of one code point never depends on
its neighbours), so these tables reproduce it on whole texts; the test-suite checks that claim against
the oracle on real prose, adversarial Unicode and generated text.

Usage: python scripts/gen_unicode_tables.py [OUT.npz]   (needs tokenizers==0.22.2, the dev pin)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

N_CP = 0x110000
IDENTITY = -1


def _table(normalize) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense per-code-point (length, pool offset or IDENTITY) and the byte pool of replacements."""
    out_len = np.zeros(N_CP, dtype=np.uint8)
    out_off = np.full(N_CP, IDENTITY, dtype=np.int32)
    pool = bytearray()
    seen: dict[bytes, int] = {}
    for cp in range(N_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # not encodable in UTF-8: rejected by validation before the tables are used
        ch = chr(cp)
        res = normalize(ch)
        if res == ch:
            out_len[cp] = len(ch.encode("utf-8"))
            continue
        b = res.encode("utf-8")
        if len(b) > 255:
            raise RuntimeError(f"replacement of U+{cp:04X} longer than 255 bytes")
        out_len[cp] = len(b)
        if b not in seen:
            seen[b] = len(pool)
            pool += b
        out_off[cp] = seen[b]
    return out_len, out_off, np.frombuffer(bytes(pool), dtype=np.uint8)


def main(argv: list[str]) -> int:
    import tokenizers
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "triton_textops/data/unicode_tables.npz"
    uncased = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    cased = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=False)
    pre = BertPreTokenizer()

    arrays: dict[str, np.ndarray] = {}
    for name, norm in (("uncased", uncased), ("cased", cased)):
        ln, off, pool = _table(norm.normalize_str)
        arrays[f"{name}_len"], arrays[f"{name}_off"], arrays[f"{name}_pool"] = ln, off, pool
    cls = np.zeros(N_CP, dtype=np.uint8)
    for cp in range(N_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        toks = [t for t, _ in pre.pre_tokenize_str("a" + ch + "a")]
        if toks == ["a", "a"]:
            cls[cp] = 1
        elif toks == ["a", ch, "a"]:
            cls[cp] = 2
        elif toks != ["a" + ch + "a"]:
            raise RuntimeError(f"unexpected pre-tokenization of U+{cp:04X}: {toks}")
    arrays["pretok_class"] = cls
    arrays["tokenizers_version"] = np.array(tokenizers.__version__)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes) from tokenizers {tokenizers.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
