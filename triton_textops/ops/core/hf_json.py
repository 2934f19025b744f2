"""What every family reads alike from an HF ``tokenizer.json``: its ``truncation`` and ``padding`` objects (applied
by the tokenizers as HF's ``encode_batch`` applies them), and the configuration beside it
(:func:`read_config`). ``refuse(field, value, why)`` raises the reader's one-line
ConfigError naming the field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_textops.errors import ConfigError

MAX_COUNT = (1 << 31) - 1  # ids, lengths and strides are int32 in the kernels (HF reads them as usize / u32)


@dataclass(frozen=True)
class Truncation:
    """tokenizer.json ``truncation``: ``max_length``, ``direction`` Left (``left``), ``strategy`` OnlySecond
    (``only_second``; LongestFirst and OnlyFirst act alike on one sequence), ``stride``."""

    max_length: int
    left: bool
    only_second: bool
    stride: int


@dataclass(frozen=True)
class Padding:
    """tokenizer.json ``padding``: ``strategy`` Fixed(``length``) or BatchLongest (``length`` None), ``direction``
    Left (``left``), ``pad_id``, ``pad_to_multiple_of`` (``multiple``, None or 0: none)."""

    length: int | None
    left: bool
    pad_id: int
    multiple: int | None


@dataclass(frozen=True)
class AddedToken:
    """An ``added_tokens`` entry as HF keeps it (tiktoken's specials too), matched in the raw text before
    pre-tokenization: its content (a str for WordPiece; the UTF-8 bytes for byte-level BPE, whose kernels match
    bytes), the id HF gives it, and its flags."""

    content: Any
    id: int
    special: bool = True
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False


def count(value: Any, field_name: str, refuse: Any) -> int:
    """An integer field 0 .. 2**31 - 1."""
    if type(value) is int and value > MAX_COUNT:
        refuse(field_name, value, "is over 2**31 - 1, the largest value this package's int32 kernels hold")
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        refuse(field_name, value, "is not an integer 0 .. 2**31 - 1")
    return value


def bound(value: Any, field_name: str, refuse: Any) -> int:
    """A length or stride HF reads as a usize, clamped to 2**31 - 1 (no text of a batch is longer)."""
    if type(value) is not int or value < 0:
        refuse(field_name, value, "is not a non-negative integer")
    return min(value, MAX_COUNT)


def direction(value: Any, field_name: str, refuse: Any) -> bool:
    """A ``direction`` field: True for Left."""
    if value not in ("Left", "Right"):
        refuse(field_name, value, "is not Left or Right")
    return value == "Left"


def truncation(t: Any, refuse: Any) -> Truncation | None:
    """The ``truncation`` object (None: none)."""
    if t is None:
        return None
    if not isinstance(t, dict):
        refuse("truncation", t, "is not an object")
    if t.get("strategy", "LongestFirst") not in ("LongestFirst", "OnlyFirst", "OnlySecond"):
        refuse("truncation.strategy", t.get("strategy"), "is not LongestFirst, OnlyFirst or OnlySecond")
    return Truncation(bound(t.get("max_length"), "truncation.max_length", refuse),
                      direction(t.get("direction", "Right"), "truncation.direction", refuse),
                      t.get("strategy") == "OnlySecond", bound(t.get("stride", 0), "truncation.stride", refuse))


def padding(p: Any, refuse: Any) -> Padding | None:
    """The ``padding`` object (None: none)."""
    if p is None:
        return None
    if not isinstance(p, dict):
        refuse("padding", p, "is not an object")
    strategy = p.get("strategy", "BatchLongest")
    if strategy != "BatchLongest" and not (isinstance(strategy, dict) and list(strategy) == ["Fixed"]):
        refuse("padding.strategy", strategy, 'is not "BatchLongest" or {"Fixed": n}')
    length = None if strategy == "BatchLongest" else count(strategy["Fixed"], "padding.strategy.Fixed", refuse)
    multiple = p.get("pad_to_multiple_of")
    return Padding(length, direction(p.get("direction", "Right"), "padding.direction", refuse),
                   count(p.get("pad_id", 0), "padding.pad_id", refuse),
                   None if multiple is None else count(multiple, "padding.pad_to_multiple_of", refuse))


def read_config(directory: Path) -> dict[str, Any]:
    """The ``tokenizer_config.json`` in ``directory`` as transformers (4.47) reads it with ``special_tokens_map.json``:
    a config without ``added_tokens_decoder`` (the legacy layout) takes the map's entries over its own
    (``additional_special_tokens``: its own list, then the map's tokens it lacks); a current one ignores the map.
    A special token given as an AddedToken object is its content; {} when neither file is there."""
    cfg = _json_object(directory / "tokenizer_config.json")
    out = {k: _content(v) for k, v in (cfg or {}).items()}
    smap = _json_object(directory / "special_tokens_map.json")
    if smap and "added_tokens_decoder" not in out:
        for k, v in smap.items():
            if k == "additional_special_tokens" and isinstance(v, list):
                have = [_content(t) for t in out.get("additional_special_tokens") or []]
                v = have + [t for t in map(_content, v) if t not in have]
            out[k] = _content(v)
    return out


def _content(v: Any) -> Any:
    """A token written as an AddedToken object: its content (lists of them too)."""
    if isinstance(v, list):
        return [_content(t) for t in v]
    return v["content"] if isinstance(v, dict) and isinstance(v.get("content"), str) else v


def _json_object(f: Path) -> dict[str, Any] | None:
    if not f.is_file():
        return None
    try:
        got = json.loads(f.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{f}: not valid JSON ({e})") from None
    if not isinstance(got, dict):
        raise ConfigError(f"{f}: not a JSON object")
    return got
