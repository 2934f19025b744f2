"""The SentencePiece formats read into one :class:`SPSpec`: an HF ``tokenizer.json`` (BPE with byte fallback, or
Unigram; its normalizer, pre-tokenizer, post-processor and decoder) and a sentencepiece ``.model`` file (the
``ModelProto``: pieces, scores, types, trainer and normalizer specs). A field this package does not implement is
a ConfigError naming it, at load."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe.formats import _hf_added_ids, _template
from triton_textops.ops.core.hf_json import AddedToken, Padding, Truncation, padding, read_config, truncation
from triton_textops.ops.core.validate import check_model_proto, check_tokenizer_json
from triton_textops.ops.sentencepiece import normalize as N
from triton_textops.ops.sentencepiece import pretokenize as P
from triton_textops.ops.sentencepiece.unigram import Unigram

SPACE = "\u2581"  # sentencepiece's whitespace symbol
# piece types of a ModelProto
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE, UNUSED = 1, 2, 3, 4, 6, 5


@dataclass
class Decoder:
    """The decoder chain as the decode kernels apply it: each token's text with ``replace`` pairs applied (in
    order), ``<0xXX>`` pieces as their byte (``byte_fallback``), the first token's ``first_drop`` character removed
    everywhere in it (HF's Metaspace decoder), then ``strip_left`` leading spaces of the whole text removed (HF's
    Strip after Fuse; sentencepiece's dummy prefix). ``spm``: sentencepiece's decode (U+FFFD per invalid byte; an
    unknown piece is " \u2047 ")."""

    replace: list[tuple[str, str]] = field(default_factory=list)
    byte_fallback: bool = False
    first_drop: str | None = None
    strip_left: int = 0
    spm: bool = False
    spm_lead: int = 0  # sentencepiece: 1 a leading U+2581 dropped from each piece until the text has a byte, 2 from
    # the first that has one only (no remove_extra_whitespaces), 0 none


@dataclass
class SPSpec:
    """One SentencePiece tokenizer, whatever file it came from. ``pieces``: id -> the piece's text (None where
    the id is not the model's); ``vocab``: the model's piece bytes -> id (what a symbol may be); ``pairs``:
    (left id, right id, rank, result id) arrays of the BPE merges (lower rank first, equal ranks leftmost);
    ``byte_ids``: 256 ids of the ``<0xXX>`` pieces (-1: none); ``frozen``: user-defined pieces a .model's BPE
    matches whole and never merges."""

    model: str  # "bpe" or "unigram"
    pieces: list[str | None]
    vocab: dict[bytes, int]
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    byte_ids: np.ndarray
    unk_id: int
    fuse_unk: bool
    byte_fallback: bool
    ignore_merges: bool = False
    scores: np.ndarray | None = None  # Unigram: each id's score
    frozen: list[tuple[bytes, int]] = field(default_factory=list)
    types: list[int] = field(default_factory=list)  # a .model's piece types (NORMAL ...)
    unigram: Any = None  # the Unigram model stage (ops.sentencepiece.unigram.Unigram), for model "unigram"
    normalizer: N.Program = field(default_factory=N.Program)
    pretokenizer: P.Program = field(default_factory=P.Program)
    added: list[AddedToken] = field(default_factory=list)
    prefix: list[int] = field(default_factory=list)
    suffix: list[int] = field(default_factory=list)
    decoder: Decoder = field(default_factory=Decoder)
    source: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    truncation: Truncation | None = None
    padding: Padding | None = None

    @property
    def n_ids(self) -> int:
        return max([len(self.pieces) - 1] + [a.id for a in self.added]) + 1


def _byte_ids(vocab: dict[bytes, int]) -> np.ndarray:
    return np.array([vocab.get(f"<0x{b:02X}>".encode(), -1) for b in range(256)], dtype=np.int64)


def _pieces(vocab: dict[str, int], size: int) -> list[str | None]:
    out: list[str | None] = [None] * size
    for tok, i in vocab.items():
        out[i] = tok
    return out


# ------------------------------------------------------------------------------------------ tokenizer.json


def read_tokenizer_json(path: str | os.PathLike, doc: dict, directory: Path) -> SPSpec:
    """A SentencePiece-style ``tokenizer.json`` (already parsed as ``doc``): BPE with ``byte_fallback`` (or any
    BPE whose normalizer / pre-tokenizer are SentencePiece's: Metaspace, Prepend, Replace, Precompiled) or
    Unigram."""
    where = os.fspath(path)

    def refuse(field_name: str, value: Any, why: str = "is not supported") -> None:
        raise ConfigError(f"{where}: {field_name} = {json.dumps(value)[:160]} {why}")

    model = doc.get("model") or {}
    kind = model.get("type")
    if kind is None and isinstance(model, dict):  # (HF's untagged model: read as the first variant it fits)
        kind = "Unigram" if isinstance(model.get("vocab"), list) else "BPE" if "merges" in model else None
    if kind in ("BPE", "Unigram"):
        fc = check_tokenizer_json(doc, path, kind)
    if kind == "BPE":
        for key, ok in (("dropout", (None,)), ("continuing_subword_prefix", (None, "")),
                        ("end_of_word_suffix", (None, ""))):
            if model.get(key) not in ok:
                refuse(f"model.{key}", model.get(key), "is not supported (a non-null dropout samples its merges)")
        str_vocab = fc.vocab(model["vocab"], "model.vocab")
        fc.merges(model["merges"], str_vocab, "model.merges")
        size = max(str_vocab.values(), default=-1) + 1
        vocab = {t.encode(): int(i) for t, i in str_vocab.items()}
        left, right, rank, result = [], [], [], []
        for r, m in enumerate(model.get("merges") or []):
            parts = m.split(" ") if isinstance(m, str) else m
            if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(x, str) for x in parts)):
                refuse(f"model.merges[{r}]", m, "is not two tokens")
            a, b = parts[0].encode(), parts[1].encode()
            ia, ib, ic = vocab.get(a), vocab.get(b), vocab.get(a + b)
            if ia is None or ib is None or ic is None:
                refuse(f"model.merges[{r}]", m, "names a token the vocabulary lacks")
            left.append(ia)
            right.append(ib)
            rank.append(r)
            result.append(ic)
        pairs = tuple(np.asarray(x, dtype=np.int64) for x in (left, right, rank, result))
        unk = model.get("unk_token")
        if unk not in str_vocab:  # (HF fails a text that needs an unknown token the vocabulary lacks)
            unk = None
        spec = SPSpec("bpe", _pieces(str_vocab, size), vocab, pairs, _byte_ids(vocab),
                      -1 if unk is None else str_vocab[unk], bool(model.get("fuse_unk", False)),
                      bool(model.get("byte_fallback", False)), bool(model.get("ignore_merges", False)))
    elif kind == "Unigram":
        items = model.get("vocab") or []
        if not isinstance(items, list) or not all(isinstance(x, list) and len(x) == 2 for x in items):
            refuse("model.vocab", items[:3] if isinstance(items, list) else items, "is not a list of [piece, score]")
        str_vocab = {}
        for i, (t, _) in enumerate(items):
            str_vocab.setdefault(t, i)
        vocab = {t.encode(): i for t, i in str_vocab.items()}
        unk = model.get("unk_id")
        empty = tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
        spec = SPSpec("unigram", [t for t, _ in items], vocab, empty, _byte_ids(vocab),
                      -1 if unk is None else int(unk), True, bool(model.get("byte_fallback", False)),
                      scores=np.array([float(s) for _, s in items], dtype=np.float64))
        try:
            spec.unigram = Unigram.from_tokenizer_json(model)
        except ValueError as e:
            refuse("model", {"type": "Unigram"}, f"is not a valid Unigram model ({e})")
    else:
        refuse("model.type", kind, "is not a SentencePiece model (BPE or Unigram)")
    spec.source = where
    spec.normalizer = N.from_json(doc.get("normalizer"), refuse)
    spec.pretokenizer = P.from_json(doc.get("pre_tokenizer"), refuse)
    spec.decoder = _decoder(doc.get("decoder"), refuse)
    for content, tid, flags in _hf_added_ids(doc.get("added_tokens") or [], str_vocab, where):
        spec.added.append(AddedToken(content.encode(), tid, *flags))
        while tid >= len(spec.pieces):
            spec.pieces.append(None)
        if spec.pieces[tid] is None:
            spec.pieces[tid] = content
    spec.prefix, spec.suffix = _template(doc.get("post_processor"), refuse)
    spec.truncation = truncation(doc.get("truncation"), refuse)
    spec.padding = padding(doc.get("padding"), refuse)
    spec.config = read_config(directory)
    return spec


def _decoder(dec: Any, refuse: Any) -> Decoder:
    """HF's decoder chain, of the shapes SentencePiece conversions write: Replace / ByteFallback / Metaspace on
    each token, Fuse, then Strip of the fused text."""
    out = Decoder()
    if dec is None:
        refuse("decoder", dec, "is missing (HF then joins tokens with spaces: not supported)")
    steps = dec.get("decoders") if dec.get("type") == "Sequence" else [dec]
    fused = False
    for i, st in enumerate(steps):
        kind = st.get("type")
        if kind == "Replace" and not fused:
            pat = st.get("pattern") or {}
            if list(pat) != ["String"] or not pat["String"]:
                refuse(f"decoder[{i}].pattern", pat, "is not supported (a non-empty string)")
            out.replace.append((pat["String"], st.get("content", "")))
        elif kind == "ByteFallback" and not fused:
            out.byte_fallback = True
        elif kind == "Metaspace" and not fused:
            rep = st.get("replacement", SPACE)
            out.replace.append((rep, " "))
            if st.get("prepend_scheme", "always") != "never":
                out.first_drop = rep
        elif kind == "Fuse":
            fused = True
        elif kind == "Strip" and fused:
            if st.get("content") != " " or st.get("stop", 0) != 0:
                refuse(f"decoder[{i}]", st, "is not supported (Strip of leading spaces after Fuse)")
            out.strip_left = int(st.get("start", 0))
        else:
            refuse(f"decoder[{i}]", st, "is not supported here (Replace, ByteFallback, Metaspace, Fuse, then Strip)")
    return out


# ------------------------------------------------------------------------------------------ .model files


def read_model_file(path: str | os.PathLike) -> SPSpec:
    """A sentencepiece ``.model`` (ModelProto) as ``SentencePieceProcessor.encode`` reads it: BPE merged by piece
    score (sentencepiece's bpe_model.cc: the highest-scoring adjacent pair, leftmost on ties), or Unigram; its
    normalizer spec (precompiled charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces)."""
    from triton_textops.ops.sentencepiece.model_proto import model_proto_class  # noqa: PLC0415

    where = os.fspath(path)
    try:
        m = model_proto_class().FromString(Path(path).read_bytes())
    except Exception as e:  # noqa: BLE001 (protobuf's DecodeError and friends)
        raise ConfigError(f"{where}: not a sentencepiece ModelProto ({e})") from None
    check_model_proto(m, where)
    ts, ns = m.trainer_spec, m.normalizer_spec
    if ts.model_type not in (1, 2):
        raise ConfigError(f"{where}: trainer_spec.model_type = {ts.model_type} is not supported (UNIGRAM 1, BPE 2)")
    if ts.treat_whitespace_as_suffix:
        raise ConfigError(f"{where}: trainer_spec.treat_whitespace_as_suffix = true is not supported")
    if m.HasField("denormalizer_spec") and m.denormalizer_spec.precompiled_charsmap:
        raise ConfigError(f"{where}: denormalizer_spec rules are not supported")
    pieces = [p.piece for p in m.pieces]
    types = [p.type for p in m.pieces]
    scores = np.array([p.score for p in m.pieces], dtype=np.float64)
    vocab: dict[bytes, int] = {}
    frozen = []
    for i, (p, t) in enumerate(zip(pieces, types)):
        if t in (NORMAL, USER_DEFINED, UNUSED):
            vocab.setdefault(p.encode(), i)
        if t == USER_DEFINED:
            frozen.append((p.encode(), i))
    unk = next((i for i, t in enumerate(types) if t == UNKNOWN), -1)
    bytes_vocab = {p.encode(): i for i, (p, t) in enumerate(zip(pieces, types)) if t == BYTE}
    if ts.model_type == 2:
        pairs = _score_pairs(pieces, types, scores, vocab)
        spec = SPSpec("bpe", list(pieces), vocab, pairs, _byte_ids(bytes_vocab), unk, True, ts.byte_fallback,
                      frozen=frozen)  # (sentencepiece writes a run of unknown pieces as one)
    else:
        empty = tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
        spec = SPSpec("unigram", list(pieces), vocab, empty, _byte_ids(bytes_vocab), unk, True, ts.byte_fallback,
                      scores=scores, frozen=frozen)
        try:
            spec.unigram = Unigram.from_model_proto(m)
        except ValueError as e:
            raise ConfigError(f"{where}: not a valid sentencepiece Unigram model ({e})") from None
    spec.source = where
    spec.types = types
    spec.normalizer = N.from_spm(bytes(ns.precompiled_charsmap), ns.add_dummy_prefix, ns.remove_extra_whitespaces,
                                 ns.escape_whitespaces, [f for f, _ in frozen])
    lead = 0 if not (ns.add_dummy_prefix or ns.remove_extra_whitespaces) else 1 if ns.remove_extra_whitespaces else 2
    spec.decoder = Decoder(replace=[(SPACE, " ")], byte_fallback=True, spm=True, spm_lead=lead)
    spec.config = read_config(Path(where).parent)
    return spec


def _score_pairs(pieces: list[str], types: list[int], scores: np.ndarray, vocab: dict[bytes, int]) -> tuple:
    """The pair table of a BPE ModelProto: every split of a mergeable piece into two pieces that are symbols
    (normal or unused; user-defined ones are frozen), ranked by the result's score, highest first, equal scores
    one rank (sentencepiece then takes the leftmost pair)."""
    left, right, result = [], [], []
    for i, (p, t) in enumerate(zip(pieces, types)):
        if t not in (NORMAL, USER_DEFINED, UNUSED) or len(p) < 2:
            continue
        for k in range(1, len(p)):
            a, b = vocab.get(p[:k].encode()), vocab.get(p[k:].encode())
            if a is not None and b is not None and types[a] != USER_DEFINED and types[b] != USER_DEFINED:
                left.append(a)
                right.append(b)
                result.append(i)
    res = np.asarray(result, dtype=np.int64)
    _, rank = np.unique(-scores[res], return_inverse=True) if res.size else (None, res)
    return (np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64), rank.astype(np.int64), res)
