"""HF ``tokenizers``' ``BertNormalizer`` and ``BertPreTokenizer`` (``normalizers/bert.rs``, ``pre_tokenizers/bert.rs``)
in plain Python, character by character: the definition the BERT kernels are checked against.

Character classes come from the running Python's :mod:`unicodedata` (Unicode 14.0 on Python 3.11); HF's from the
Rust crate ``unicode_categories`` (an older Unicode) for controls and punctuation, from newer Rust tables for NFD
and lowercase. Measured on tokenizers 0.22.2 (``test_reference.py``: ``differing_code_points``, which the tests
keep out of the texts they compare), 560 code points differ, all for that reason:

- clean_text: 13 format characters (Cf) newer than HF's tables, which HF keeps (U+0890, U+0891, U+08E2, U+110CD,
  U+13430..U+13438);
- strip_accents + lowercase: 384 nonspacing marks (Mn) newer than HF's tables, which HF keeps (e.g. U+07FD,
  U+0898..U+089F, U+1E2AE), U+1734 and U+11938 (Mc here, Mn to HF), and 55 case pairs newer than Unicode 14 (Cn
  here, lowercased by Rust: e.g. U+1C89, U+A7CB, U+10D50);
- punctuation: 104 P* characters newer than HF's tables (U+061D, U+2E43..U+2E4F, U+2E52..U+2E5D, ...), and
  U+166D (now So) and U+111C9 (now Mn), punctuation to HF.

Two things HF does that its source's comments do not say: unassigned code points (Cn) are kept by clean_text,
and White_Space is Rust's ``char::is_whitespace`` (spelled out here: Python's ``str.isspace`` also counts
U+001C..U+001F, which HF removes as controls).
"""

from __future__ import annotations

import unicodedata

# Rust's char::is_whitespace: the White_Space property (\t \n \r included, so HF's is_whitespace is the same set)
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}
# is_chinese_char of bert.rs, as HF wrote it (0x2B920, not the CJK Extension E start 0x2B820: a gap HF kept)
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_whitespace(c: str) -> bool:
    return c in WHITE_SPACE


def is_control(c: str) -> bool:
    """``is_other`` but tab, newline and carriage return (whitespace): Cc, Cf, Co, Cs. Not Cn, although bert.rs'
    comment says so: measured on HF, its crate's not-assigned test matches no code point (unassigned ones stay)."""
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


def is_punctuation(c: str) -> bool:
    """``is_bert_punc``: ASCII punctuation (33-47, 58-64, 91-96, 123-126) or a Unicode P* category."""
    o = ord(c)
    return 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126 or unicodedata.category(c)[0] == "P"


def is_chinese_char(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in CJK)


def normalize(text: str, *, clean_text: bool = True, handle_chinese_chars: bool = True,
              strip_accents: bool | None = None, lowercase: bool = True) -> str:
    """``BertNormalizer``: the four steps in bert.rs' order; ``strip_accents=None`` follows ``lowercase``."""
    if clean_text:  # drop NUL, U+FFFD and controls, then every whitespace character -> one space
        text = "".join(" " if is_whitespace(c) else c for c in text
                       if not (c in "\x00\ufffd" or is_control(c)))
    if handle_chinese_chars:
        text = "".join(f" {c} " if is_chinese_char(c) else c for c in text)
    if lowercase if strip_accents is None else strip_accents:  # NFD, then drop the nonspacing marks (Mn)
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    if lowercase:  # Rust's char::to_lowercase, one character at a time (no final-sigma rule of str.lower)
        text = "".join(c.lower() for c in text)
    return text


def pre_tokenize(text: str) -> list[str]:
    """``BertPreTokenizer``: split on whitespace (removed), then each punctuation character its own token."""
    out: list[str] = []
    word: list[str] = []
    for c in text:
        if is_whitespace(c) or is_punctuation(c):
            if word:
                out.append("".join(word))
                word = []
            if not is_whitespace(c):
                out.append(c)
        else:
            word.append(c)
    if word:
        out.append("".join(word))
    return out
