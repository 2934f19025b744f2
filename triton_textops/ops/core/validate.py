"""The one validation layer of tokenizer files, run once at load: every field a reader takes is checked here first,
as strictly as the reference loader checks it (HF ``tokenizers``' serde structs and model builders, tiktoken's
``load_tiktoken_bpe`` + ``Encoding``), so that what the reference refuses is a one-line
:class:`~triton_textops.errors.ConfigError` naming the file, the field and what is wrong, and what it accepts loads.

The helpers (for every format reader, the later ones too: SentencePiece ``.model``, Tekken JSON):

- :class:`FileCheck` ``(path)``: the checks of one file. ``fc.fail(where, value, why)`` raises
  ``"{file}: {where} = {value} {why}"``; ``fc.line(n, why)`` raises ``"{file}: line {n}: {why}"``. ``where`` is a
  JSON path built with :func:`key` / :func:`at` (``model.vocab["he"]``, ``added_tokens[3].id``).
- typed readers ``fc.obj / lst / string / boolean / uint / token_id(value, where)``: the value if it has the type
  (serde's: a bool is not an integer, ``262.0`` is not an integer, ``-0`` is ``-0.0``), else ``fail``.
  :data:`U32` / :data:`USIZE` are serde's ranges; :data:`MAX_ID` the kernels' (ids are int32).
- ``fc.fields(obj, where, required, optional)``: a struct as serde reads it (every required field present, each
  present field read by its reader); readers are ``(fc, value, where) -> value`` (:func:`of`, :func:`opt`,
  :func:`list_of`, :func:`map_of`, :func:`one_of`, :func:`struct`).
- ``fc.vocab(mapping, where)``: token -> id with ids that fit the kernels, no two tokens sharing an id, the table
  :func:`dense_limit` allows (the kernels' tables are indexed by id: a sparse id is refused up front, named, never a
  huge allocation); ``fc.ids(pairs, where_of)`` the same over any (id, where) pairs (rank files, ``.model`` pieces).
- ``fc.merges(merges, vocab, where)``: HF's ``BPE`` builder rule (two parts, each and their concatenation known).
- :func:`read_json` ``(path)``: the JSON of a file, its errors naming the file; :func:`check_tokenizer_json`: the
  serde schema of an HF ``tokenizer.json`` (top level, added_tokens, truncation, padding, the components and the
  model of the types this package reads: BPE, WordPiece, Unigram); :func:`rank_lines`: tiktoken's rank-file rule
  with line numbers; :func:`merge_lines`: HF's merges-file rule; :func:`check_model_proto`: a sentencepiece
  ``.model`` as ``SentencePieceProcessor`` loads it (``pieces[i].type``); :func:`check_tekken`: a Tekken file as
  mistral-common's ``Tekkenizer.from_file`` loads it.

Where the package refuses a file its reference loads, the message says why (tests/file_fuzz.py lists them): an id
past :func:`dense_limit` or 2**31 - 1 (the references keep sparse maps of u32), two tokens sharing an id (HF's id ->
token map then keeps either), a byte-level vocabulary without all 256 single bytes (tiktoken panics when it meets
one), and the components the kernels do not implement (each family's reader names them); a ``.model`` piece that
is not UTF-8, or a BPE ``.model`` without an UNKNOWN piece (sentencepiece loads both). Not replicated yet:
sentencepiece's check of a precompiled charsmap's double-array trie (darts' ``validate``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from triton_textops.errors import ConfigError

U32 = (1 << 32) - 1  # serde's u32 (HF's ids, tiktoken's ranks)
USIZE = (1 << 64) - 1  # serde's usize (lengths, strides)
MAX_ID = (1 << 31) - 1  # ids are int32 in the kernels
DENSE_MIN = 1 << 20  # ids below this always fit the dense tables (see dense_limit)

Reader = Callable[["FileCheck", Any, str], Any]


def dense_limit(n: int) -> int:
    """The largest id + 1 a vocabulary of ``n`` entries may have: the kernels' tables are indexed by id, so holes
    cost memory; max(2**20, 2 n) keeps every real vocabulary (dense, or nearly) and bounds the tables' size."""
    return min(max(DENSE_MIN, 2 * n), MAX_ID + 1)


def key(where: str, k: str) -> str:
    """``where["k"]``, the JSON path of an object's entry."""
    return f"{where}[{json.dumps(k)[:60]}]"


def at(where: str, i: int) -> str:
    """``where[i]``, the JSON path of a list's item."""
    return f"{where}[{i}]"


def show(value: Any) -> str:
    """A value as it reads in a message: JSON, cut to 120 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def kind(value: Any) -> str:
    """The JSON type of a value, as a message says it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


class FileCheck:
    """The checks of one file, each failure a one-line ConfigError naming the file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def fail(self, where: str, value: Any, why: str) -> NoReturn:
        raise ConfigError(f"{self.path}: {where} = {show(value)} {why}")

    def line(self, n: int, why: str) -> NoReturn:
        raise ConfigError(f"{self.path}: line {n}: {why}")

    # ------------------------------------------------------------------------------------------ typed readers
    def obj(self, v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            self.fail(where, v, f"is {kind(v)}, not an object")
        return v

    def lst(self, v: Any, where: str) -> list:
        if not isinstance(v, list):
            self.fail(where, v, f"is {kind(v)}, not a list")
        return v

    def string(self, v: Any, where: str) -> str:
        if not isinstance(v, str):
            self.fail(where, v, f"is {kind(v)}, not a string")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(where, v, "is not UTF-8 (a lone surrogate)")
        return v

    def boolean(self, v: Any, where: str) -> bool:
        if type(v) is not bool:
            self.fail(where, v, f"is {kind(v)}, not true or false")
        return v

    def number(self, v: Any, where: str) -> float:
        if type(v) not in (int, float) or not math.isfinite(v):  # (serde_json: NaN, Infinity, 1e999 are no numbers)
            self.fail(where, v, f"is {kind(v)}, not a number")
        return float(v)

    def uint(self, v: Any, where: str, top: int = U32, what: str = "an integer") -> int:
        """A non-negative integer up to ``top`` (serde: a float, even 262.0, or a bool is not one)."""
        if type(v) is not int:
            self.fail(where, v, f"is {kind(v)}, not {what} (0 .. {_power(top)})")
        if not 0 <= v <= top:
            self.fail(where, v, f"is not {what} 0 .. {_power(top)}")
        return v

    def token_id(self, v: Any, where: str) -> int:
        """A token id: a u32 (what HF reads) that fits the kernels' int32 ids."""
        self.uint(v, where, U32, "a token id")
        if v > MAX_ID:
            self.fail(where, v, "is over 2**31 - 1, the largest id this package's int32 kernels hold")
        return v

    # ------------------------------------------------------------------------------------------ structs
    def fields(self, o: Any, where: str, required: Mapping[str, Reader], optional: Mapping[str, Reader] = {},
               *, closed: bool = False) -> dict:
        """``o`` as serde reads a struct: an object with every ``required`` field, each field of either map read by
        its reader; ``closed``: a field of neither is refused too (HF's Tokenizer refuses unknown fields)."""
        o = self.obj(o, where)
        for k, read in required.items():
            if k not in o:
                raise ConfigError(f"{self.path}: {where or 'the top level'} has no field {k!r}, which HF requires")
            read(self, o[k], f"{where}.{k}" if where else k)
        for k, read in optional.items():
            if k in o:
                read(self, o[k], f"{where}.{k}" if where else k)
        if closed:
            extra = [k for k in o if k not in required and k not in optional]
            if extra:
                self.fail(f"{where}.{extra[0]}" if where else extra[0], o[extra[0]], "is not a field HF reads here "
                          "(HF refuses the file)")
        return o

    # ------------------------------------------------------------------------------------------ vocabularies
    def vocab(self, v: Any, where: str) -> dict[str, int]:
        """A token -> id object: ids that fit the kernels, no shared id, within :func:`dense_limit`."""
        v = self.obj(v, where)
        for tok, i in v.items():
            self.string(tok, key(where, tok))
            self.token_id(i, key(where, tok))
        self.ids(((i, key(where, t)) for t, i in v.items()), len(v), "shares id {id} with {other}: HF then decodes "
                 "it as either token (its id -> token map keeps one); this package needs one token per id")
        return v

    def ids(self, pairs: Iterable[tuple[int, str]], n: int, shared: str) -> None:
        """Checks (id, where) pairs: none over :func:`dense_limit` of ``n`` entries, no id twice (``shared``: the
        message, with ``{id}`` and ``{other}``, the earlier entry's ``where``)."""
        seen: dict[int, str] = {}
        limit = dense_limit(n)
        for i, where in pairs:
            if i >= limit:
                self.fail(where, i, f"is over this package's id limit {limit - 1} (max(2**20, 2 x the {n} entries): "
                          "its tables are indexed by id; the reference keeps a sparse map)")
            if i in seen:
                self.fail(where, i, shared.format(id=i, other=seen[i]))
            seen[i] = where

    def merges(self, merges: Any, vocab: Mapping[str, Any], where: str, prefix: str = "") -> list[tuple[str, str]]:
        """HF's ``model.merges`` rule (``BPE`` builder): each a ``"a b"`` string of exactly two parts or a ``[a, b]``
        pair, with ``a``, ``b`` and ``a + b`` (``b`` less the continuing ``prefix``) tokens of ``vocab``."""
        out = []
        for n, m in enumerate(self.lst(merges, where)):
            w = at(where, n)
            if isinstance(m, str):
                parts = m.split(" ")
                if len(parts) != 2:
                    self.fail(w, m, f"is not two tokens separated by one space (HF: Merges text file invalid at "
                              f"line {n + 1})")
            elif isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m):
                parts = m
            else:
                self.fail(w, m, "is neither an \"a b\" string nor an [a, b] pair of strings")
            out.append(self.merge(parts[0], parts[1], vocab, w, prefix))
        return out

    def merge(self, a: str, b: str, vocab: Mapping[str, Any], where: str, prefix: str = "") -> tuple[str, str]:
        """One merge: ``a``, ``b`` and their result known (HF's error: Token `x` out of vocabulary)."""
        for t in (a, b, a + b[len(prefix):] if prefix and b.startswith(prefix) else a + b):
            if t not in vocab:
                self.fail(where, f"{a} {b}", f"merges {show(t)}, not a token of the vocabulary (HF: Token `{t}` "
                          "out of vocabulary)")
        return a, b


def _power(top: int) -> str:
    return {U32: "2**32 - 1", USIZE: "2**64 - 1", MAX_ID: "2**31 - 1"}.get(top, str(top))


# ---------------------------------------------------------------------------------------------- reader makers
def of(method: str, *args: Any) -> Reader:
    """A reader calling ``FileCheck.<method>(value, where, *args)``."""
    return lambda fc, v, w: getattr(fc, method)(v, w, *args)


def opt(read: Reader) -> Reader:
    """null or what ``read`` reads (serde's Option)."""
    return lambda fc, v, w: None if v is None else read(fc, v, w)


def list_of(read: Reader) -> Reader:
    return lambda fc, v, w: [read(fc, x, at(w, i)) for i, x in enumerate(fc.lst(v, w))]


def map_of(read: Reader) -> Reader:
    return lambda fc, v, w: {k: read(fc, x, key(w, k)) for k, x in fc.obj(v, w).items()}


def one_of(*names: str) -> Reader:
    """A string naming one of ``names`` (serde's unit enum variants)."""
    def read(fc: FileCheck, v: Any, w: str) -> str:
        if v not in names or not isinstance(v, str):
            fc.fail(w, v, f"is not one of {', '.join(names)}")
        return v
    return read


def struct(required: Mapping[str, Reader], optional: Mapping[str, Reader] = {}) -> Reader:
    return lambda fc, v, w: fc.fields(v, w, required, optional)


BOOL, STR, U32_, USIZE_, ID, NUM = of("boolean"), of("string"), of("uint"), of("uint", USIZE), of("token_id"), \
    of("number")


# ---------------------------------------------------------------------------------------------- JSON files
def read_json(path: str | os.PathLike, what: str = "tokenizer.json") -> Any:
    """The JSON of ``path`` (a FileNotFoundError naming ``what``; a ConfigError naming the file for bad JSON). JSON's
    ``-0`` reads as ``-0.0``, as serde reads it (not an integer)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {p}") from None
    try:
        return json.loads(raw, parse_int=_int if b"-0" in raw else None)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: not valid JSON ({e})") from None
    except RecursionError:
        raise ConfigError(f"{p}: not valid JSON (nested too deep)") from None


def _int(s: str) -> int | float:
    return -0.0 if s == "-0" else int(s)


def _pair(fc: FileCheck, v: Any, w: str) -> Any:
    """A ``[token, id]`` pair (Roberta- / BertProcessing's ``cls`` / ``sep``)."""
    if not (isinstance(v, list) and len(v) == 2):
        fc.fail(w, v, "is not a [token, id] pair")
    fc.string(v[0], at(w, 0))
    fc.token_id(v[1], at(w, 1))
    return v


def _template(fc: FileCheck, v: Any, w: str) -> Any:
    """A TemplateProcessing template: a list of {"SpecialToken": {id, type_id}} / {"Sequence": {id A|B, type_id}}."""
    for n, item in enumerate(fc.lst(v, w)):
        wn = at(w, n)
        if not (isinstance(item, dict) and len(item) == 1 and next(iter(item)) in ("SpecialToken", "Sequence")):
            fc.fail(wn, item, "is not a {\"SpecialToken\": ...} or {\"Sequence\": ...} piece")
        (name, body), = item.items()
        fc.fields(body, f"{wn}.{name}", {"id": STR if name == "SpecialToken" else one_of("A", "B"), "type_id": U32_})
    return v


def _padding_strategy(fc: FileCheck, v: Any, w: str) -> Any:
    if v != "BatchLongest":
        if not (isinstance(v, dict) and list(v) == ["Fixed"]):
            fc.fail(w, v, 'is not "BatchLongest" or {"Fixed": n}')
        fc.uint(v["Fixed"], f"{w}.Fixed", USIZE)
    return v


def _component(family: str) -> Reader:
    """A normalizer / pre_tokenizer / post_processor / decoder: an object; one of the types this package reads has
    the fields HF requires (others are refused by the family's reader, naming the type)."""
    def read(fc: FileCheck, v: Any, w: str) -> Any:
        kinds = COMPONENTS[family]
        t = fc.obj(v, w).get("type")
        if isinstance(t, str) and t in kinds:
            fc.fields(v, w, *kinds[t])
        return v
    return read


_SPLIT = one_of("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
_BYTE_LEVEL = ({"add_prefix_space": BOOL, "trim_offsets": BOOL}, {"use_regex": BOOL})
_PATTERN = struct({}, {"String": STR, "Regex": STR})
_REPLACE = ({"pattern": _PATTERN, "content": STR}, {})


def _char(fc: FileCheck, v: Any, w: str) -> Any:
    """serde's ``char``: a string of one code point."""
    if len(fc.string(v, w)) != 1:
        fc.fail(w, v, "is not one character")
    return v


_METASPACE = ({"replacement": _char}, {"prepend_scheme": one_of("first", "never", "always"), "split": opt(BOOL)})
COMPONENTS: dict[str, dict[str, tuple[dict, dict]]] = {  # family -> type -> (required, optional fields)
    "normalizer": {
        "Prepend": ({"prepend": STR}, {}), "Replace": _REPLACE, "Strip": ({"strip_left": BOOL, "strip_right": BOOL},
                                                                          {}),
        "Precompiled": ({"precompiled_charsmap": opt(STR)}, {}),
        "BertNormalizer": ({"clean_text": BOOL, "handle_chinese_chars": BOOL, "lowercase": BOOL},
                           {"strip_accents": opt(BOOL)}),
        "Sequence": ({"normalizers": list_of(_component("normalizer"))}, {}),
        "NFC": ({}, {}), "NFD": ({}, {}), "NFKC": ({}, {}), "NFKD": ({}, {}), "Lowercase": ({}, {}),
        "StripAccents": ({}, {}),
    },
    "pre_tokenizer": {
        "ByteLevel": _BYTE_LEVEL,
        "Split": ({"pattern": struct({}, {"String": STR, "Regex": STR}), "behavior": _SPLIT, "invert": BOOL}, {}),
        "Sequence": ({"pretokenizers": list_of(_component("pre_tokenizer"))}, {}),
        "Punctuation": ({}, {"behavior": _SPLIT}),
        "BertPreTokenizer": ({}, {}), "WhitespaceSplit": ({}, {}), "Metaspace": _METASPACE,
    },
    "post_processor": {
        "TemplateProcessing": ({"single": _template, "pair": _template, "special_tokens": map_of(struct(
            {"id": STR, "ids": list_of(ID), "tokens": list_of(STR)}))}, {}),
        "RobertaProcessing": ({"sep": _pair, "cls": _pair}, {"trim_offsets": BOOL, "add_prefix_space": BOOL}),
        "BertProcessing": ({"sep": _pair, "cls": _pair}, {}),
        "ByteLevel": _BYTE_LEVEL,
        "Sequence": ({"processors": list_of(_component("post_processor"))}, {}),
    },
    "decoder": {
        "ByteLevel": _BYTE_LEVEL,
        "WordPiece": ({"prefix": STR, "cleanup": BOOL}, {}),
        "Metaspace": _METASPACE, "Replace": _REPLACE, "ByteFallback": ({}, {}), "Fuse": ({}, {}),
        "Strip": ({"content": _char, "start": USIZE_, "stop": USIZE_}, {}),
        "Sequence": ({"decoders": list_of(_component("decoder"))}, {}),
    },
}


def _dropout(fc: FileCheck, v: Any, w: str) -> Any:
    if v is not None and not 0.0 <= fc.number(v, w) <= 1.0:
        fc.fail(w, v, "is not between 0 and 1 (HF: Dropout should be between 0 and 1, inclusive)")
    return v


def _unigram_vocab(fc: FileCheck, v: Any, w: str) -> Any:
    """Unigram's ``vocab``: a non-empty list of [piece, score] pairs (HF: EmptyVocabulary)."""
    for n, item in enumerate(fc.lst(v, w)):
        if not (isinstance(item, list) and len(item) == 2):
            fc.fail(at(w, n), item, "is not a [piece, score] pair")
        fc.string(item[0], at(at(w, n), 0))
        fc.number(item[1], at(at(w, n), 1))
    if not v:
        fc.fail(w, v, "is empty (HF: EmptyVocabulary)")
    if len(v) > MAX_ID:
        fc.fail(w, f"{len(v)} pieces", "is over 2**31 - 1 pieces, the largest id this package's int32 kernels hold")
    return v


_VOCAB = map_of(of("uint", U32, "a token id"))  # (serde's u32; the kernels' limits: FileCheck.vocab, at use)
MODELS: dict[str, tuple[dict, dict]] = {  # model.type -> (required, optional fields)
    "BPE": ({"vocab": _VOCAB, "merges": of("lst")},
            {"type": STR, "dropout": _dropout, "unk_token": opt(STR), "continuing_subword_prefix": opt(STR),
             "end_of_word_suffix": opt(STR), "fuse_unk": opt(BOOL), "byte_fallback": opt(BOOL),
             "ignore_merges": opt(BOOL)}),
    "Unigram": ({"vocab": _unigram_vocab}, {"type": STR, "unk_id": opt(USIZE_), "byte_fallback": BOOL}),
    "WordPiece": ({"vocab": _VOCAB, "unk_token": STR, "continuing_subword_prefix": STR,
                   "max_input_chars_per_word": USIZE_}, {"type": STR}),
}
_ADDED = struct({"id": U32_, "content": STR, "single_word": BOOL, "lstrip": BOOL, "rstrip": BOOL,
                 "normalized": BOOL, "special": BOOL})
_TRUNCATION = struct({"max_length": USIZE_, "strategy": one_of("LongestFirst", "OnlyFirst", "OnlySecond"),
                      "stride": USIZE_}, {"direction": one_of("Left", "Right")})
_PADDING = struct({"strategy": _padding_strategy, "direction": one_of("Left", "Right"), "pad_id": U32_,
                   "pad_type_id": U32_, "pad_token": STR}, {"pad_to_multiple_of": opt(USIZE_)})


def _version(fc: FileCheck, v: Any, w: str) -> Any:
    if fc.string(v, w) != "1.0":
        fc.fail(w, v, "is not 1.0 (HF: Unknown tokenizer version)")
    return v


TOP_LEVEL = {"version": _version, "truncation": opt(_TRUNCATION), "padding": opt(_PADDING),
             "added_tokens": list_of(_ADDED), "normalizer": opt(_component("normalizer")),
             "pre_tokenizer": opt(_component("pre_tokenizer")), "post_processor": opt(_component("post_processor")),
             "decoder": opt(_component("decoder"))}


def check_tokenizer_json(doc: Any, path: str | os.PathLike, model_type: str) -> FileCheck:
    """An HF ``tokenizer.json`` checked as HF's serde reads it (the top level, a ``model`` of ``model_type``, the
    added tokens, truncation, padding and the components this package reads); its :class:`FileCheck`."""
    fc = FileCheck(path)
    fc.fields(doc, "", {"model": of("obj")}, TOP_LEVEL, closed=True)
    if doc["model"].get("type", model_type) != model_type:
        fc.fail("model.type", doc["model"].get("type"), f"is not {model_type}")
    fc.fields(doc["model"], "model", *MODELS[model_type])
    unk = doc["model"].get("unk_id")
    if model_type == "Unigram" and unk is not None and unk >= len(doc["model"]["vocab"]):
        fc.fail("model.unk_id", unk, f"is not an id of the {len(doc['model']['vocab'])} pieces (HF: "
                "UnkIdNotInVocabulary)")
    return fc


def gpt2_vocab(doc: Any, path: str | os.PathLike) -> dict[str, int]:
    """GPT-2's ``encoder.json`` / ``vocab.json`` as HF's ``BPE::read_file`` reads it: an object whose number values
    are ids (an entry of another type is skipped, a negative or fractional number refused: Bad vocabulary json
    file), then :meth:`FileCheck.vocab` (HF truncates an id past 2**32 - 1 to 32 bits: refused here)."""
    fc = FileCheck(path)
    doc = fc.obj(doc, "the vocabulary")
    kept = {t: i for t, i in doc.items() if type(i) in (int, float)}
    for t, i in kept.items():
        if type(i) is float or i < 0:
            fc.fail(key("", t), i, "is not a non-negative integer (HF: Bad vocabulary json file)")
    return fc.vocab(kept, "")


# ---------------------------------------------------------------------------------------------- line files
def merge_lines(data: bytes, path: str | os.PathLike, vocab: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A merges file (GPT-2's vocab.bpe, merges.txt) read as HF's ``BPE::read_file``: every line (split at ``\\n``,
    a ``\\r`` before it dropped) but those starting ``#version`` two tokens separated by one space, each and their
    concatenation tokens of ``vocab`` (:meth:`FileCheck.merge`)."""
    fc = FileCheck(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{fc.path}: not valid UTF-8 ({e})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    pairs = []
    for n, line in enumerate(lines, 1):
        line = line[:-1] if line.endswith("\r") else line
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            fc.line(n, f"{show(line)} is not two tokens separated by one space (HF: Merges text file invalid at "
                    f"line {n})")
        pairs.append(fc.merge(parts[0], parts[1], vocab, f"line {n}"))
    return pairs

def rank_lines(data: bytes, path: str | os.PathLike) -> dict[bytes, int]:
    """A ``.tiktoken`` rank file read by tiktoken's rule (``load_tiktoken_bpe`` + ``Encoding``): each non-empty line
    (``bytes.splitlines``) two whitespace-separated fields, base64 (not validated: other characters are dropped, as
    ``base64.b64decode`` does) and a Python ``int``; a rank a u32 (tiktoken: out of range integral type conversion)
    that fits the kernels and :func:`dense_limit`, no rank twice (tiktoken panics); a token listed twice keeps its
    last rank."""
    fc = FileCheck(path)
    out: dict[bytes, int] = {}
    line_of: dict[bytes, int] = {}
    for n, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            fc.line(n, f"{show(line.decode('utf-8', 'replace'))} is not 'base64(token) rank' (tiktoken refuses it)")
        try:
            tok = base64.b64decode(parts[0])
        except (binascii.Error, ValueError) as e:
            fc.line(n, f"the token {show(parts[0].decode('utf-8', 'replace'))} is not base64 ({e})")
        try:
            rank = int(parts[1])
        except ValueError:
            fc.line(n, f"the rank {show(parts[1].decode('utf-8', 'replace'))} is not an integer")
        if not 0 <= rank <= U32:
            fc.line(n, f"the rank {rank} is not 0 .. 2**32 - 1 (tiktoken: out of range integral type conversion)")
        if rank > MAX_ID:
            fc.line(n, f"the rank {rank} is over 2**31 - 1, the largest id this package's int32 kernels hold")
        out[tok] = rank
        line_of[tok] = n
    limit = dense_limit(len(out))
    ranks = set(out.values())
    if len(ranks) == len(out) and (not ranks or max(ranks) < limit):
        return out
    seen: dict[int, int] = {}
    for n, tok in sorted((n, t) for t, n in line_of.items()):
        rank = out[tok]
        if rank in seen:
            fc.line(n, f"the rank {rank} is also the rank of line {seen[rank]} (tiktoken panics: duplicate token "
                    "indices)")
        if rank >= limit:
            fc.line(n, f"the rank {rank} is over this package's id limit {limit - 1} (max(2**20, 2 x the {len(out)} "
                    "ranks): its tables are indexed by id; tiktoken keeps a sparse map)")
        seen[rank] = n
    return out


# ---------------------------------------------------------------------------------------------- sentencepiece .model
MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}  # sentencepiece's TrainerSpec.ModelType
PIECE_TYPES = {1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}


def check_model_proto(m: Any, path: str | os.PathLike) -> FileCheck:
    """A parsed sentencepiece ``ModelProto`` checked as ``SentencePieceProcessor`` loads it (``ModelFactory`` and
    ``ModelInterface::InitializePieces``): a known ``trainer_spec.model_type``; every piece UTF-8 and non-empty; no
    piece twice (BPE: at all; Unigram: in either of its two maps, normal / user-defined / unused pieces and unknown
    / control / byte ones); Unigram's scores finite;
    exactly one UNKNOWN piece; BYTE pieces ``<0xXX>`` only with ``trainer_spec.byte_fallback``, all 256 of them then;
    no more pieces than the kernels' int32 ids hold. (A type number the schema lacks reads as NORMAL, as in
    sentencepiece's protobuf runtime.)"""
    fc = FileCheck(path)
    ts = m.trainer_spec
    if ts.model_type not in MODEL_TYPES:
        fc.fail("trainer_spec.model_type", ts.model_type, "is not a sentencepiece model type (sentencepiece: Unknown "
                "model_type)")
    if len(m.pieces) > MAX_ID:
        fc.fail("pieces", len(m.pieces), "pieces: over 2**31 - 1, the largest id this package's int32 kernels hold")
    maps: tuple[dict[str, int], dict[str, int]] = ({}, {})
    unk = -1
    byte_values: set[int] = set()
    for i, p in enumerate(m.pieces):
        w = at("pieces", i)
        if not isinstance(p.piece, str):  # (protobuf hands a string field that is not UTF-8 as bytes)
            fc.fail(f"{w}.piece", repr(p.piece), "is not UTF-8")
        if not p.piece:
            fc.fail(f"{w}.piece", p.piece, "is empty (sentencepiece: piece must not be empty)")
        seen = maps[ts.model_type != 2 and p.type not in (1, 4, 5)]
        if p.piece in seen:
            fc.fail(f"{w}.piece", p.piece, f"is already defined, as pieces[{seen[p.piece]}] (sentencepiece refuses "
                    "it)")
        seen[p.piece] = i
        if ts.model_type == 1 and not math.isfinite(p.score):
            fc.fail(f"{w}.score", p.score, "is not finite (sentencepiece: score is NaN or Inf)")
        if p.type == 2:
            if unk >= 0:
                fc.fail(f"{w}.type", "UNKNOWN", f"is a second UNKNOWN piece, after pieces[{unk}] (sentencepiece: "
                        "unk is already defined)")
            unk = i
        elif p.type == 6:
            if not ts.byte_fallback:
                fc.fail(f"{w}.type", "BYTE", "is a byte piece although trainer_spec.byte_fallback is false "
                        "(sentencepiece refuses it)")
            b = _byte_piece(p.piece)
            if b < 0:
                fc.fail(f"{w}.piece", p.piece, "is a BYTE piece, not <0xXX> (sentencepiece refuses it)")
            byte_values.add(b)
    if unk < 0:
        fc.fail("pieces", f"{len(m.pieces)} pieces", "have no UNKNOWN piece (sentencepiece: unk is not defined)")
    if ts.byte_fallback and len(byte_values) != 256:
        fc.fail("trainer_spec.byte_fallback", True, f"but {len(byte_values)} of the 256 <0xXX> BYTE pieces "
                "(sentencepiece: there are not 256 byte pieces)")
    if ts.model_type == 2:
        _check_unused_merges(fc, m.pieces, maps[0])
        _check_orphan_chars(fc, m.pieces)
    return fc


def _check_orphan_chars(fc: FileCheck, pieces: Any) -> None:
    """A BPE model's NORMAL piece holding a character that is no piece itself is refused: sentencepiece merges
    such a character by its text (its symbol is unknown but keeps its string), this package's merges go by ids and
    cannot, so the file would load into other ids. sentencepiece's trainer adds every character its merges use as
    a piece, so a trained model never has one (a piece dropped from a file does)."""
    known = {p.piece for p in pieces if p.type in (1, 4, 5) and isinstance(p.piece, str)}
    for i, p in enumerate(pieces):
        if p.type == 1 and isinstance(p.piece, str) and len(p.piece) > 1:
            c = next((c for c in p.piece if c not in known), None)
            if c is not None:
                fc.fail(f"{at('pieces', i)}.piece", p.piece, f"holds {c!r}, which is no piece: not supported "
                        "(sentencepiece merges an unknown character by its text, this package's BPE by ids)")


def _check_unused_merges(fc: FileCheck, pieces: Any, merged: dict[str, int]) -> None:
    """A BPE model's UNUSED piece that two pieces (or characters) can merge into is refused: sentencepiece merges
    it and then splits it back into the pair that made it (``rev_merge`` in bpe_model.cc), which this package's
    merges do not do, so such a file would load into other ids. UNUSED pieces no merge reaches (Gemma-style
    placeholders such as ``<unused0>``) are never emitted by either and load."""
    for i, p in enumerate(pieces):
        if p.type != 5 or not isinstance(p.piece, str) or len(p.piece) < 2:
            continue
        s = p.piece
        if any((len(s[:k]) == 1 or s[:k] in merged) and (len(s[k:]) == 1 or s[k:] in merged)
               for k in range(1, len(s))):
            fc.fail(f"{at('pieces', i)}.type", "UNUSED", f"on {s!r}, which merges can reach: not supported (this "
                    "package's BPE does not split UNUSED pieces back as sentencepiece does)")


def _byte_piece(p: str) -> int:
    """The byte of a ``<0xXX>`` piece (two upper-case hex digits, as sentencepiece's PieceToByte), else -1."""
    if len(p) == 6 and p.startswith("<0x") and p.endswith(">") and all(c in "0123456789ABCDEF" for c in p[3:5]):
        return int(p[3:5], 16)
    return -1


# ---------------------------------------------------------------------------------------------- Tekken
TEKKEN_VERSIONS = ("v1", "v2", "v3", "v7", "v11", "v13")  # mistral-common 1.9.1's TokenizerVersion, in order


def check_tekken(doc: Any, path: str | os.PathLike) -> FileCheck:
    """A Mistral Tekken file checked as mistral-common's ``Tekkenizer.from_file`` loads it: ``config.version`` one
    it knows; ``special_tokens`` listed for versions after v7, their ``token_str`` distinct, at most
    ``default_num_special_tokens``; ``default_vocab_size`` at most the ranks plus the special tokens; each of the
    first ``default_vocab_size - default_num_special_tokens`` entries of ``vocab`` exactly ``rank`` (its index),
    ``token_bytes`` (base64; the first 256 the single bytes, in order, none twice) and ``token_str``."""
    fc = FileCheck(path)
    fc.obj(doc, "the top level")
    cfg = fc.obj(doc.get("config"), "config")
    version = cfg.get("version")
    if version not in TEKKEN_VERSIONS or not isinstance(version, str):
        fc.fail("config.version", version, f"is not a version mistral-common knows ({', '.join(TEKKEN_VERSIONS)})")
    if not fc.string(cfg.get("pattern"), "config.pattern"):
        fc.fail("config.pattern", "", "is empty (tiktoken panics on encode)")
    n_special = fc.uint(cfg.get("default_num_special_tokens"), "config.default_num_special_tokens", MAX_ID)
    size = fc.uint(cfg.get("default_vocab_size"), "config.default_vocab_size", MAX_ID)
    vocab = fc.lst(doc.get("vocab"), "vocab")
    specials = doc.get("special_tokens")
    if specials == {}:  # (mistral-common lists its keys: none)
        specials = []
    if specials is None:
        if TEKKEN_VERSIONS.index(version) > TEKKEN_VERSIONS.index("v7"):
            fc.fail("special_tokens", None, f"is missing, which mistral-common requires after v7 (version {version})")
    else:
        names: dict[str, int] = {}
        for i, s in enumerate(fc.lst(specials, "special_tokens")):
            t = fc.string(fc.obj(s, at("special_tokens", i)).get("token_str"), f"{at('special_tokens', i)}.token_str")
            if t in names:
                fc.fail(f"{at('special_tokens', i)}.token_str", t, f"is also special_tokens[{names[t]}] "
                        "(mistral-common: Special tokens must be unique)")
            names[t] = i
            if "rank" not in s:
                raise ConfigError(f"{fc.path}: {at('special_tokens', i)} has no field 'rank', which mistral-common "
                                  "requires")
            if isinstance(s["rank"], (list, dict)):  # (mistral-common keeps the ranks in a set)
                fc.fail(f"{at('special_tokens', i)}.rank", s["rank"], f"is {kind(s['rank'])} (mistral-common: "
                        "unhashable type)")
        if len(specials) > n_special:
            fc.fail("special_tokens", f"{len(specials)} tokens", f"are more than config.default_num_special_tokens "
                    f"= {n_special}")
    if size > len(vocab) + n_special:
        fc.fail("config.default_vocab_size", size, f"is over the {len(vocab)} ranks + {n_special} special tokens")
    if size < n_special:
        fc.fail("config.default_vocab_size", size, f"is under config.default_num_special_tokens = {n_special}")
    seen: dict[bytes, int] = {}
    for i, e in enumerate(vocab[:size - n_special]):
        w = at("vocab", i)
        if not isinstance(e, dict) or e.keys() != {"rank", "token_bytes", "token_str"}:
            fc.fail(w, e, "is not an object of exactly rank, token_bytes, token_str (mistral-common refuses it)")
        if type(e["rank"]) is not int or e["rank"] != i:
            fc.fail(f"{w}.rank", e["rank"], f"is not {i}, its index (mistral-common refuses it)")
        try:
            b = base64.b64decode(fc.string(e["token_bytes"], f"{w}.token_bytes"))
        except (binascii.Error, ValueError) as err:
            fc.fail(f"{w}.token_bytes", e["token_bytes"], f"is not base64 ({err})")
        if i < 256 and b != bytes([i]):
            fc.fail(f"{w}.token_bytes", e["token_bytes"], f"is not the single byte {i} (mistral-common: the first 256 "
                    "ranks are the bytes)")
        if b in seen:
            fc.fail(f"{w}.token_bytes", e["token_bytes"], f"is also vocab[{seen[b]}] (mistral-common refuses it)")
        seen[b] = i
    return fc
