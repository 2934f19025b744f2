"""WordPiece tokenizer files: an HF ``tokenizer.json`` (model ``WordPiece``) or a ``vocab.txt``, read into one
:class:`WordPieceSpec` (everything the kernels and the decoder need, format-independent).

What a ``tokenizer.json`` may hold, and what is refused with a one-line :class:`~triton_textops.errors.ConfigError`
naming the field:

- ``normalizer``: ``BertNormalizer`` (every option set), ``Lowercase``, a ``Sequence`` of one of them, or none;
- ``pre_tokenizer``: ``BertPreTokenizer``, or the same split as a ``Sequence`` of ``WhitespaceSplit`` and
  ``Punctuation`` (behavior ``Isolated``);
- ``model``: ``WordPiece`` (``vocab`` of ids >= 0 that fit int32, possibly with holes; ``unk_token``, which the
  vocabulary must hold; ``continuing_subword_prefix``; ``max_input_chars_per_word``);
- ``post_processor``: ``BertProcessing``, ``RobertaProcessing`` (one sequence: the same), ``TemplateProcessing``
  (``$A`` with special tokens before and after, and their type ids), ``ByteLevel`` beside one of those, or none;
- ``decoder``: ``WordPiece`` (prefix, cleanup) or none (tokens joined by spaces, as HF's ``decode``);
- ``added_tokens``: matched in the raw text (``normalized`` false), HF's ids (file order; a content the vocabulary
  has keeps its id, a new one gets the next after the vocabulary's size); ``special`` (what ``decode`` skips),
  ``single_word`` honoured, ``lstrip`` / ``rstrip`` (they only take whitespace, which WordPiece drops);
- ``truncation`` and ``padding``: what HF's ``encode_batch`` applies (:func:`~triton_textops.ops.bpe.limits.plan_limits`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triton_textops.errors import ConfigError
from triton_textops.ops.core.files import HEAD, binary_kind
from triton_textops.ops.core.hf_json import AddedToken, Padding, Truncation, padding, read_config, truncation
from triton_textops.ops.core.validate import check_tokenizer_json, read_json
from triton_textops.ops.wordpiece.normalize import NormOptions

MAX_ID = (1 << 31) - 1  # ids and type ids are written as int32 (HF reads them as u32)
SPECIAL_NAMES = ("unk_token", "sep_token", "cls_token", "pad_token", "mask_token")  # BertWordPieceTokenizer's order
DEFAULT_NAMES = {"unk_token": "[UNK]", "sep_token": "[SEP]", "cls_token": "[CLS]", "pad_token": "[PAD]",
                 "mask_token": "[MASK]"}
# what Rust's str::trim_end strips (char::is_whitespace: the Unicode White_Space property); Python's
# str.rstrip() strips U+001C..U+001F too
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
              "\u2028\u2029\u202f\u205f\u3000"


@dataclass
class WordPieceSpec:
    """A WordPiece tokenizer, format-independent: the model (``vocab`` token -> id, ``unk_token``, the continuation
    ``prefix``, ``max_chars`` per word), the normalizer's options, the added tokens, the template (``pre`` / ``suf``:
    (id, type id) before / after the text, ``seq_type``: the text's type id), the decoder (``decoder``: (prefix,
    cleanup) of HF's WordPiece decoder, None: tokens joined by spaces), the file's truncation and padding, and the
    configuration beside it (tokenizer_config.json, then special_tokens_map.json)."""

    vocab: dict[str, int]
    unk_token: str = "[UNK]"
    prefix: str = "##"
    max_chars: int = 100
    norm: NormOptions = field(default_factory=NormOptions)
    added: list[AddedToken] = field(default_factory=list)
    pre: list[tuple[int, int]] = field(default_factory=list)
    suf: list[tuple[int, int]] = field(default_factory=list)
    seq_type: int = 0
    decoder: tuple[str, bool] | None = ("##", True)
    truncation: Truncation | None = None
    padding: Padding | None = None
    config: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # cls / sep of the post-processor
    source: str = ""


# --------------------------------------------------------------------------------------------- vocab.txt


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The tokens of a WordPiece ``vocab.txt`` (id = line number), read exactly as HF's
    ``WordPiece::read_file`` does: lines end at ``\\n`` only (a lone ``\\r`` inside a line is part of it), and
    each line loses its trailing Unicode White_Space (Rust's ``trim_end``), nothing else."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"vocabulary file not found: {path}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:  # (a NUL byte is text to HF: only a file that is not UTF-8 may be binary)
        binary = binary_kind(raw[:HEAD])
        if binary is not None and binary != "a binary file":
            raise ValueError(f"{path}: {binary}, not a WordPiece vocab.txt (not valid UTF-8: {e})") from None
        raise ValueError(f"vocabulary {path} is not valid UTF-8: {e}") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line (or an empty file)
        lines.pop()
    return [ln.rstrip(WHITE_SPACE) for ln in lines]


def spec_from_vocab(tokens: list[str], *, lowercase: bool = True, strip_accents: bool | None = None,
                    clean_text: bool = True, handle_chinese_chars: bool = True, names: dict[str, str] | None = None,
                    config: dict[str, Any] | None = None, source: str = "") -> WordPieceSpec:
    """What HF's ``BertWordPieceTokenizer(vocab, ...)`` builds from a vocabulary (id = position; a repeated token
    keeps its last id): ``BertNormalizer`` with these options, ``BertPreTokenizer``, ``WordPiece`` with ``##``,
    the special tokens it finds in the vocabulary added as special (unknown, separator, classifier, pad, mask:
    ``names``, default ``[UNK]`` ...), ``BertProcessing(sep, cls)`` and the ``WordPiece`` decoder (cleanup on)."""
    names = {**DEFAULT_NAMES, **(names or {})}
    ids: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        ids[tok] = i  # (HF's vocab reader: a HashMap, the last line wins)
    for key in ("sep_token", "cls_token"):
        if names[key] not in ids:
            raise ConfigError(f"{source or 'vocabulary'}: {key} {names[key]!r} is not in the vocabulary "
                              "(BertWordPieceTokenizer needs it for [CLS] ... [SEP])")
    if names["unk_token"] not in ids:
        raise ConfigError(f"{source or 'vocabulary'}: unk_token {names['unk_token']!r} is not in the vocabulary")
    added = []
    for key in SPECIAL_NAMES:
        tok = names[key]
        if tok in ids and all(a.content != tok for a in added):
            added.append(AddedToken(tok, ids[tok]))
    return WordPieceSpec(ids, names["unk_token"], "##", 100,
                         NormOptions.of(lowercase, strip_accents, clean_text, handle_chinese_chars), added,
                         [(ids[names["cls_token"]], 0)], [(ids[names["sep_token"]], 0)], 0, ("##", True),
                         config=dict(config or {}), names={"cls": names["cls_token"], "sep": names["sep_token"]},
                         source=source)


# -------------------------------------------------------------------------------------------- tokenizer.json


class _Refuse:
    """Raises the one-line ConfigError that names a field of one file."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, field_name: str, value: Any, why: str = "is not supported for WordPiece") -> None:
        raise ConfigError(f"{self.where}: {field_name} = {json.dumps(value)[:120]} {why}")


def read_tokenizer_json(path: str | os.PathLike) -> WordPieceSpec:
    """An HF ``tokenizer.json`` of a WordPiece model, or a ConfigError naming the field this package does not
    implement (see the module docstring)."""
    p = Path(path)
    doc = read_json(p)
    fc = check_tokenizer_json(doc, p, "WordPiece")
    refuse = _Refuse(str(p))
    model = doc["model"]
    vocab = fc.vocab(model["vocab"], "model.vocab")
    unk = model.get("unk_token", "[UNK]")
    if not isinstance(unk, str) or unk not in vocab:
        refuse("model.unk_token", unk, "is not a token of model.vocab (HF fails on any word it cannot split)")
    prefix = model.get("continuing_subword_prefix", "##")
    if not isinstance(prefix, str):
        refuse("model.continuing_subword_prefix", prefix, "is not a string")
    max_chars = min(model["max_input_chars_per_word"], MAX_ID)  # (a usize: past int32, no word is that long)
    spec = WordPieceSpec(vocab, unk, prefix, max_chars, _normalizer(doc.get("normalizer"), refuse), source=str(p))
    _pre_tokenizer(doc.get("pre_tokenizer"), refuse)
    spec.added = _added_tokens(doc.get("added_tokens") or [], vocab, refuse)
    spec.pre, spec.suf, spec.seq_type, spec.names = _template(doc.get("post_processor"), refuse)
    spec.decoder = _decoder(doc.get("decoder"), refuse)
    spec.truncation = truncation(doc.get("truncation"), refuse)
    spec.padding = padding(doc.get("padding"), refuse)
    spec.config = read_config(p.parent)
    return spec


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _normalizer(n: Any, refuse: _Refuse) -> NormOptions:
    """The BertNormalizer options a normalizer amounts to (none: every option off, the text as it is)."""
    if n is None:
        return NormOptions(False, False, False, False)
    if not isinstance(n, dict):
        refuse("normalizer", n, "is not an object")
    kind = n.get("type")
    if kind == "Sequence":
        steps = n.get("normalizers")
        if not isinstance(steps, list) or len(steps) > 1:
            refuse("normalizer.normalizers", [s.get("type") if isinstance(s, dict) else s for s in steps or []],
                   "is not supported for WordPiece (one BertNormalizer or Lowercase, or none)")
        return _normalizer(steps[0], refuse) if steps else NormOptions(False, False, False, False)
    if kind == "Lowercase":
        return NormOptions(False, False, False, True)
    if kind != "BertNormalizer":
        refuse("normalizer.type", kind, "is not supported for WordPiece (BertNormalizer, Lowercase, or none)")
    opts = {}
    for key, default in (("clean_text", True), ("handle_chinese_chars", True), ("lowercase", True)):
        v = n.get(key, default)
        if type(v) is not bool:
            refuse(f"normalizer.{key}", v, "is not true or false")
        opts[key] = v
    strip = n.get("strip_accents")
    if strip is not None and type(strip) is not bool:
        refuse("normalizer.strip_accents", strip, "is not null, true or false")
    return NormOptions.of(opts["lowercase"], strip, opts["clean_text"], opts["handle_chinese_chars"])


def _pre_tokenizer(pre: Any, refuse: _Refuse) -> None:
    """BertPreTokenizer, or its split spelled as WhitespaceSplit + Punctuation(Isolated); else refused."""
    why = "is not supported for WordPiece (BertPreTokenizer, or WhitespaceSplit + Punctuation)"
    if pre is None:
        refuse("pre_tokenizer", None, why)
    if not isinstance(pre, dict):
        refuse("pre_tokenizer", pre, why)
    kind = pre.get("type")
    if kind == "BertPreTokenizer":
        return
    if kind != "Sequence":
        refuse("pre_tokenizer.type", kind, why)
    steps = pre.get("pretokenizers")
    kinds = [s.get("type") if isinstance(s, dict) else None for s in steps] if isinstance(steps, list) else None
    if kinds == ["BertPreTokenizer"]:
        return
    if kinds is None or sorted(kinds) != ["Punctuation", "WhitespaceSplit"]:
        refuse("pre_tokenizer.pretokenizers", kinds, why)
    punct = steps[kinds.index("Punctuation")]
    if punct.get("behavior", "Isolated") != "Isolated":
        refuse(f"pre_tokenizer.pretokenizers[{kinds.index('Punctuation')}].behavior", punct.get("behavior"),
               "is not supported for WordPiece (Isolated)")


def _flag(t: dict, key: str, default: bool, n: int, refuse: _Refuse) -> bool:
    v = t.get(key, default)
    if type(v) is not bool:
        refuse(f"added_tokens[{n}].{key}", v, "is not true or false")
    return v


def _added_tokens(tokens: Any, vocab: dict[str, int], refuse: _Refuse) -> list[AddedToken]:
    """``added_tokens`` as HF's ``Tokenizer.from_file`` takes them: in file order, a content the vocabulary (or an
    earlier entry) has keeps that id, a new one gets the next id after the vocabulary's size and the ids given so
    far (HF does not read the file's ``id``). An empty content, or a repeat of an earlier entry, is skipped."""
    if not isinstance(tokens, list):
        refuse("added_tokens", type(tokens).__name__, "is not a list")
    size = len(vocab)
    ids: dict[str, int] = {}
    flags: dict[str, tuple] = {}
    top = -1  # the largest id given so far
    out: list[AddedToken] = []
    edge = False
    for n, t in enumerate(tokens):
        content = t.get("content") if isinstance(t, dict) else None
        if not isinstance(content, str) or not _utf8(content):
            refuse(f"added_tokens[{n}].content", content, "is not a string (of UTF-8)")
        special = _flag(t, "special", False, n, refuse)
        f = (special, _flag(t, "normalized", not special, n, refuse), _flag(t, "lstrip", False, n, refuse),
             _flag(t, "rstrip", False, n, refuse), _flag(t, "single_word", False, n, refuse))
        if not content or flags.get(content) == f:
            continue
        if content in flags:
            refuse(f"added_tokens[{n}]", content, "is listed again with other flags (not supported for WordPiece)")
        if f[1]:
            refuse(f"added_tokens[{n}].normalized", True, f"({content!r}) is not supported for WordPiece (added "
                   "tokens are matched in the raw text: normalized false)")
        flags[content] = f
        tid = ids.get(content, vocab.get(content))
        if tid is None:
            tid = size if top < 0 or (top < size and size) else top + 1
        if tid > MAX_ID:
            refuse(f"added_tokens[{n}]", content, "gets an id past 2**31 - 1")
        ids[content] = tid
        top = max(top, tid)
        edge |= content[0] in WHITE_SPACE or content[-1] in WHITE_SPACE
        out.append(AddedToken(content, tid, *f))
    if edge and any(a.lstrip or a.rstrip for a in out):
        refuse("added_tokens", [a.content for a in out if a.content[0] in WHITE_SPACE or a.content[-1] in WHITE_SPACE],
               "start or end with whitespace beside lstrip / rstrip tokens (not supported for WordPiece)")
    return out


def _token_id(value: Any, field_name: str, refuse: _Refuse) -> int:
    if type(value) is not int or not 0 <= value <= MAX_ID:
        refuse(field_name, value, "is not an integer 0 .. 2**31 - 1")
    return value


def _template(post: Any, refuse: _Refuse) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int, dict[str, str]]:
    """(ids and type ids before the text, after it, the text's type id, the cls / sep names) of a post-processor of
    one sequence: BertProcessing / RobertaProcessing (cls, the text, sep, all type 0), TemplateProcessing's
    ``single``; ByteLevel beside one of those (offsets only); none."""
    if post is None:
        return [], [], 0, {}
    if not isinstance(post, dict):
        refuse("post_processor", post, "is not an object")
    steps = post.get("processors") if post.get("type") == "Sequence" else [post]
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        refuse("post_processor.processors", steps, "is not a list of processors")
    adding = [s for s in steps if s.get("type") != "ByteLevel"]
    if len(adding) > 1:
        refuse("post_processor.processors", [s.get("type") for s in steps], "has more than one processor that adds "
               "tokens (not supported for WordPiece)")
    if not adding:
        return [], [], 0, {}
    step = adding[0]
    kind = step.get("type")
    if kind in ("BertProcessing", "RobertaProcessing"):
        pairs = {}
        for key in ("cls", "sep"):
            pair = step.get(key)
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                refuse(f"post_processor.{key}", pair, "is not a [token, id] pair")
            pairs[key] = (pair[0], _token_id(pair[1], f"post_processor.{key}[1]", refuse))
        return [(pairs["cls"][1], 0)], [(pairs["sep"][1], 0)], 0, {k: v[0] for k, v in pairs.items()}
    if kind != "TemplateProcessing":
        refuse("post_processor.type", kind, "is not supported for WordPiece (BertProcessing, RobertaProcessing, "
               "TemplateProcessing, or none)")
    single = step.get("single")
    if not isinstance(single, list):
        refuse("post_processor.single", single, "is not a list")
    specials = step.get("special_tokens") or {}
    pre: list[tuple[int, int]] = []
    suf: list[tuple[int, int]] = []
    seq_type, seen = 0, False
    names: list[list[str]] = [[], []]
    for n, item in enumerate(single):
        if not isinstance(item, dict) or len(item) != 1:
            refuse(f"post_processor.single[{n}]", item, "is not a SpecialToken or a Sequence")
        (kind, body), = item.items()
        if not isinstance(body, dict):
            refuse(f"post_processor.single[{n}]", item, "is not a SpecialToken or a Sequence")
        type_id = _token_id(body.get("type_id", 0), f"post_processor.single[{n}].type_id", refuse)
        if kind == "Sequence":
            if body.get("id") != "A" or seen:
                refuse(f"post_processor.single[{n}]", item, "is not supported (one sequence, $A, in the template)")
            seen, seq_type = True, type_id
        elif kind == "SpecialToken":
            sid = body.get("id")
            entry = specials.get(sid) if isinstance(sid, str) else None
            ids = entry.get("ids") if isinstance(entry, dict) else None
            if not isinstance(ids, list):
                refuse("post_processor.special_tokens", sid, "is missing from the template's special_tokens")
            side = suf if seen else pre
            side.extend((_token_id(x, f"post_processor.special_tokens.{sid}.ids", refuse), type_id) for x in ids)
            names[seen].append(sid)
        else:
            refuse(f"post_processor.single[{n}]", item, "is not a SpecialToken or a Sequence")
    if not seen:
        refuse("post_processor.single", single, "has no $A (not supported)")
    got = {}
    if len(names[0]) == 1:
        got["cls"] = names[0][0]
    if len(names[1]) == 1:
        got["sep"] = names[1][0]
    return pre, suf, seq_type, got


def _decoder(dec: Any, refuse: _Refuse) -> tuple[str, bool] | None:
    if dec is None:
        return None
    if not isinstance(dec, dict) or dec.get("type") != "WordPiece":
        refuse("decoder.type", dec.get("type") if isinstance(dec, dict) else dec,
               "is not supported for WordPiece (WordPiece, or none)")
    prefix, cleanup = dec.get("prefix", "##"), dec.get("cleanup", True)
    if not isinstance(prefix, str):
        refuse("decoder.prefix", prefix, "is not a string")
    if type(cleanup) is not bool:
        refuse("decoder.cleanup", cleanup, "is not true or false")
    return prefix, cleanup


def read_pretrained(path: str | os.PathLike) -> WordPieceSpec:
    """A WordPiece tokenizer from ``path``: a directory (its ``tokenizer.json``, else its ``vocab.txt``) or one file
    (a tokenizer.json, known by its content, or a vocab.txt), with ``tokenizer_config.json`` /
    ``special_tokens_map.json`` beside it when present. A vocab.txt is read as transformers' ``BertTokenizerFast``
    builds it (the same pipeline as ``BertWordPieceTokenizer``): ``do_lower_case`` (default true), ``strip_accents``,
    ``tokenize_chinese_chars`` and the special tokens' names from the configuration."""
    p = Path(path)
    if p.is_dir():
        if (p / "tokenizer.json").is_file():
            return read_tokenizer_json(p / "tokenizer.json")
        if not (p / "vocab.txt").is_file():
            raise FileNotFoundError(f"{p}: neither a tokenizer.json nor a vocab.txt")
        p = p / "vocab.txt"
    try:
        with open(p, "rb") as f:
            head = f.read(4096).lstrip()
    except FileNotFoundError:
        raise FileNotFoundError(f"tokenizer file not found: {p}") from None
    if head[:1] == b"{":
        return read_tokenizer_json(p)
    cfg = read_config(p.parent)
    lower = cfg.get("do_lower_case", True)
    strip = cfg.get("strip_accents")
    chinese = cfg.get("tokenize_chinese_chars", True)
    refuse = _Refuse(str(p.parent / "tokenizer_config.json"))
    for key, v, ok in (("do_lower_case", lower, (True, False)), ("strip_accents", strip, (None, True, False)),
                       ("tokenize_chinese_chars", chinese, (True, False))):
        if not any(v is x for x in ok):
            refuse(key, v, "is not true or false")
    names = {k: cfg[k] for k in SPECIAL_NAMES if isinstance(cfg.get(k), str)}
    return spec_from_vocab(read_vocab(p), lowercase=lower, strip_accents=strip, handle_chinese_chars=chinese,
                           names=names, config=cfg, source=str(p))
