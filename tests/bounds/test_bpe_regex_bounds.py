"""The regex engine's kernels with every array access bounds-checked: any bytes through a regex tokenizer (a
chain of Splits with every behaviour, lookarounds, anchors) and the PIECES kernel; an index outside an array
raises IndexError here, a bad input must be an InputError."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.bpe.regex import RegexSplitter  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402

LEVELS = [(r"\p{N}{1,3}", "MergedWithNext", False), (r"^\s+|\s+$|\b\w", "Contiguous", True),
          (r"(?<=\s)\S+(?!\p{L})|[^\s\p{L}]{1,2}+|(?i:ab)|\p{L}+?", "Removed", True),
          (r"\s+(?!\S)|\s+|\S+", "MergedWithPrevious", False)]
PIECES = st.sampled_from([" cat", "ant", "  ", "\r\n", "'s", "1234", "e\u0301", "😀", "中文", "ab" * 30, " ", "x",
                          "AB", "!!"])
_TOK: list = []  # the tokenizer, the splitter


def tokenizer() -> BPETokenizer:
    if not _TOK:
        d = Path(tempfile.mkdtemp())
        path = O.write_tokenizer_json(d, "gpt2", family_pattern=O.LLAMA3_PATTERN,
                                      added=[{"id": 50256, "content": "<s>", "rstrip": True}])
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": p}, "behavior": b, "invert": i} for p, b, i in LEVELS] + [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        _TOK.append(BPETokenizer.from_pretrained(d))
    return _TOK[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=30) | st.lists(PIECES, max_size=8).map(lambda p: "".join(p).encode()),
                min_size=1, max_size=5), st.integers(1, 12))
def test_fuzz_never_indexes_out_of_bounds(texts: list[bytes], width: int) -> None:
    tok = tokenizer()
    try:
        r = tok.encode(texts + [b"<s>  x"], allowed_special="all")
    except InputError:
        return
    tok.decode(r.ids, r.offsets, errors="replace")
    tok.encode_rows(texts, max_length=width)
    if not _TOK[1:]:
        _TOK.append(RegexSplitter(LEVELS, "onig"))
    _TOK[1].pre_tokenize([t for t in texts if _utf8(t)])


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
