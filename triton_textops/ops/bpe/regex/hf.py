"""HF ``tokenizer.json`` pre-tokenizers as Split levels for :class:`~triton_textops.ops.bpe.regex.RegexSplitter`.

A ``Split`` (``Regex`` or ``String`` pattern, any behaviour, ``invert``), a ``Sequence`` of them (DeepSeek-V3's
three), then the byte-level step ``ByteLevel`` (``use_regex``: its GPT-2 regex as one more Isolated level;
``trim_offsets`` only moves offsets). HF's ByteLevel ``add_prefix_space`` after a Split (a space before every piece
of the Split) is refused, as is every other pre-tokenizer type.
"""

from __future__ import annotations

from typing import Any

from triton_textops.ops.bpe.regex import BYTE_LEVEL_PATTERN, Level

_BEHAVIOURS = {"removed": "Removed", "isolated": "Isolated", "mergedwithprevious": "MergedWithPrevious",
               "mergedwithnext": "MergedWithNext", "contiguous": "Contiguous"}


def literal_pattern(text: str) -> str:
    """A regex that matches ``text`` literally (HF's ``String`` pattern)."""
    return "".join(c if c.isalnum() or ord(c) >= 0x80 or c == " " else "\\" + c if c.isprintable()
                   else f"\\x{{{ord(c):X}}}" for c in text)


def split_levels(pre: Any, refuse: Any) -> tuple[list[Level], bool]:
    """(Split levels, ByteLevel's add_prefix_space) of a pre-tokenizer whose last step is ByteLevel; ``refuse``
    (field name, value, why) raises the format's error."""
    steps = (pre.get("pretokenizers") or []) if isinstance(pre, dict) and pre.get("type") == "Sequence" else [pre]
    levels: list[Level] = []
    prefix_space = False
    for i, step in enumerate(steps):
        name = f"pre_tokenizer.pretokenizers[{i}]" if len(steps) > 1 else "pre_tokenizer"
        kind = step.get("type") if isinstance(step, dict) else None
        if kind == "Split":
            pat = step.get("pattern") or {}
            if "Regex" in pat and isinstance(pat["Regex"], str):
                regex = pat["Regex"]
            elif "String" in pat and isinstance(pat["String"], str) and pat["String"]:
                regex = literal_pattern(pat["String"])
            else:
                refuse(f"{name}.pattern", pat, "is not a Regex or a non-empty String pattern")
            behaviour = _BEHAVIOURS.get(str(step.get("behavior", "")).replace("_", "").lower())
            if behaviour is None:
                refuse(f"{name}.behavior", step.get("behavior"), "is not a Split behavior")
            levels.append((regex, behaviour, bool(step.get("invert", False))))
        elif kind == "ByteLevel" and i == len(steps) - 1:
            prefix_space = bool(step.get("add_prefix_space", False))
            if prefix_space and levels:
                refuse(f"{name}.add_prefix_space", True, "after a Split is not supported (HF adds a space before "
                       "every piece of the Split that does not start with one)")
            if step.get("use_regex", True):
                levels.append((BYTE_LEVEL_PATTERN, "Isolated", False))
        else:
            refuse(name, step, "is not supported (Split steps, then ByteLevel)")
    if not steps or (steps[-1] or {}).get("type") != "ByteLevel":
        refuse("pre_tokenizer", pre, "has no ByteLevel step last: not a byte-level BPE")
    return levels, prefix_space
