#!/usr/bin/env python3
"""Generate ``triton_textops/data/bpe_classes.npz``: the Unicode classes the BPE pre-tokenizer scanners use.

Why measured: the pre-tokenization patterns (GPT-2, cl100k / Llama-3, Qwen2, o200k) are regular expressions
over Unicode classes, and each engine has its own Unicode tables (the Rust ``regex`` crate in tiktoken,
Oniguruma in HF tokenizers). Our kernels replace the regex with hand-written scanners over a per-code-point
class table, which must be the oracle's own: it is measured here on tiktoken by matching every code point
with a one-class pattern (tiktoken drops what a pattern does not match, so a 256-byte vocabulary returns
exactly the bytes of the matched characters), then cross-checked on HF tokenizers' ``Split`` regex, never
read from the running Python's ``unicodedata``.

``classes`` (uint8, one per code point): bit ``L`` ``\\p{L}``, ``N`` ``\\p{N}``, ``S`` ``\\s``,
``UP`` ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]`` and ``LO`` ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]`` (o200k's
cased letter runs), ``W`` ``\\w`` (HF's ``single_word`` added tokens test it with the Rust
``regex`` crate, tiktoken's engine; Oniguruma's ``\\w`` is only reported). ``fold_cp`` / ``fold_to``: the non-ASCII code points that ``(?i:X)`` matches for a
contraction letter X (``s t r e v m l d``), e.g. U+017F (long s) for ``s``.

Usage: python scripts/gen_bpe_tables.py [OUT.npz]   (needs tiktoken and tokenizers, the dev extras)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

N_CP = 0x110000
L, N, S, UP, LO, W = 1, 2, 4, 8, 16, 32
CLASS_PATTERNS = {L: r"\p{L}", N: r"\p{N}", S: r"\s", UP: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
                  LO: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", W: r"\w"}
CONTRACTION_LETTERS = "strevmld"


def all_code_points() -> list[int]:
    return [c for c in range(N_CP) if not 0xD800 <= c < 0xE000]


def tiktoken_members(pattern: str, cps: list[int]) -> set[int]:
    """The code points of ``cps`` that tiktoken's regex matches with ``pattern`` (each one character)."""
    import tiktoken  # noqa: PLC0415

    enc = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks={bytes([i]): i for i in range(256)},
                            special_tokens={})
    out = bytes(enc.encode_ordinary("".join(map(chr, cps)))).decode("utf-8")
    return set(map(ord, out))


def hf_members(pattern: str, cps: list[int]) -> set[int]:
    """The same, on HF tokenizers' ``Split`` (Oniguruma), characters separated by a control character that
    no class here holds."""
    from tokenizers import Regex, pre_tokenizers  # noqa: PLC0415

    split = pre_tokenizers.Split(Regex(pattern), behavior="removed", invert=True)
    got: set[int] = set()
    step = 1 << 16
    for i in range(0, len(cps), step):
        text = "".join(chr(c) for c in cps[i:i + step])
        for piece, _ in split.pre_tokenize_str(text):
            got.update(map(ord, piece))
    return got


def measure() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cps = all_code_points()
    classes = np.zeros(N_CP, dtype=np.uint8)
    for bit, pattern in CLASS_PATTERNS.items():
        tk = tiktoken_members(pattern, cps)
        hf = hf_members(pattern, cps)
        diff = sorted(tk ^ hf)
        print(f"{pattern}: {len(tk)} code points (tiktoken); HF differs on {len(diff)}"
              + (f": {[hex(c) for c in diff[:10]]}" if diff else ""))
        if diff and bit != W:
            raise SystemExit("tiktoken and HF tokenizers disagree on a class: the scanners cannot equal both")
        classes[sorted(tk)] |= bit
    fold_cp, fold_to = [], []
    for x in CONTRACTION_LETTERS:
        tk = tiktoken_members(f"(?i:{x})", cps)
        hf = hf_members(f"(?i:{x})", cps)
        if tk != hf:
            raise SystemExit(f"(?i:{x}): tiktoken {sorted(map(hex, tk))} vs HF {sorted(map(hex, hf))}")
        if {x, x.upper()} - set(map(chr, tk)):
            raise SystemExit(f"(?i:{x}) does not match {x} and {x.upper()}")
        for c in sorted(tk):
            if c >= 0x80:
                fold_cp.append(c)
                fold_to.append(ord(x))
        print(f"(?i:{x}): {sorted(map(hex, tk))}")
    return classes, np.array(fold_cp, dtype=np.int32), np.array(fold_to, dtype=np.int32)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parent.parent / "triton_textops" / "data" / "bpe_classes.npz")
    classes, fold_cp, fold_to = measure()
    np.savez_compressed(out, classes=classes, fold_cp=fold_cp, fold_to=fold_to)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
