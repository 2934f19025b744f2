"""ONE protocol every tokenizer family implements, and ONE loader that finds the family of any tokenizer file.

:class:`Tokenizer` is the protocol (names fixed: served models and outside checks call them):

- ``encode(texts, *, add_special_tokens=True, allowed_special=None)`` -> :class:`~triton_textops.ops.core.output.Ragged`
  (``ids`` flat int64, ``offsets`` n+1);
- ``encode_rows(texts, *, max_length, padding_side, truncation_side, stride=0, return_overflowing_tokens=False)``
  -> :class:`~triton_textops.ops.core.output.Rows` (``input_ids``, ``attention_mask``, ``token_type_ids``,
  ``overflow_to_sample_mapping``);
- ``decode(ids, offsets, *, skip_special_tokens=False, errors="strict")`` -> one str per text (``errors=None``:
  the raw bytes);
- ``vocab_size``, ``token_to_id``, ``id_to_token`` and the special ids ``bos_id``, ``eos_id``, ``pad_id``,
  ``unk_id`` (None where the file has none); ``family``, ``device``.

``texts`` is anything :meth:`~triton_textops.ops.core.batch.TextBatch.from_texts` takes. The loader,
:meth:`Tokenizer.from_pretrained` (a directory) and :meth:`Tokenizer.from_file` (one file, recognized by its content),
returns the family's tokenizer: :class:`~triton_textops.ops.wordpiece.tokenizer.BertTokenizer` (WordPiece),
:class:`~triton_textops.ops.bpe.tokenizer.BPETokenizer` (byte-level BPE) or
:class:`~triton_textops.ops.sentencepiece.tokenizer.SentencePieceTokenizer` (SentencePiece).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from triton_textops.errors import ConfigError
from triton_textops.ops.core.files import HEAD, sniff
from triton_textops.ops.core.validate import read_json

FAMILIES = ("WordPiece (tokenizer.json model.type WordPiece, or a vocab.txt)",
            "byte-level BPE (tokenizer.json model.type BPE with a ByteLevel pre-tokenizer or decoder, a .tiktoken "
            "rank file, GPT-2's encoder.json + vocab.bpe or vocab.json + merges.txt)",
            "SentencePiece BPE (tokenizer.json model.type BPE with byte_fallback or SentencePiece's normalizer / "
            "pre-tokenizer, or a sentencepiece .model file)")
_FAMILIES = "; the families this package loads: " + "; ".join(FAMILIES)
# ranks in the rank files of the encodings tiktoken ships (and Qwen2's): a rank file of one of these sizes is read
# with that encoding's pattern and specials; any other needs encoding= (a near-miss would be close but not exact)
RANKS_OF = {50256: "r50k_base", 50280: "p50k_base", 100256: "cl100k_base", 199998: "o200k_base", 151643: "qwen2",
            128000: "llama3", 200000: "llama4", 50257: "whisper-multilingual"}  # (lines: with Whisper's empty one)
NAMED_FILES = {"gpt2": "gpt2", "multilingual": "whisper-multilingual"}  # (Whisper's file names, first part)


@runtime_checkable
class Tokenizer(Protocol):
    """The tokenizer protocol (see the module's docstring) and the loader (:meth:`from_pretrained`,
    :meth:`from_file`)."""

    family: str
    device: str
    vocab_size: int

    def encode(self, texts: Any, *, add_special_tokens: bool = True, allowed_special: Any = None) -> Any: ...

    def encode_rows(self, texts: Any, *, max_length: int | None = None, padding_side: str = "right",
                    truncation_side: str = "right", stride: int = 0,
                    return_overflowing_tokens: bool = False) -> Any: ...

    def decode(self, ids: Any, offsets: Any, *, skip_special_tokens: bool = False,
               errors: str | None = "strict") -> list: ...

    def token_to_id(self, token: str) -> int | None: ...

    def id_to_token(self, i: int) -> str | None: ...

    @property
    def bos_id(self) -> int | None: ...

    @property
    def eos_id(self) -> int | None: ...

    @property
    def pad_id(self) -> int | None: ...

    @property
    def unk_id(self) -> int | None: ...

    @staticmethod
    def from_pretrained(directory: str | os.PathLike, *, device: str = "cpu", encoding: str | None = None) -> Any:
        """The tokenizer of an HF-style directory: ``tokenizer.json`` (+ ``tokenizer_config.json``,
        ``special_tokens_map.json``), else a ``vocab.txt``, GPT-2's files, or a single rank file in it."""
        return load_pretrained(directory, device=device, encoding=encoding)

    @staticmethod
    def from_file(path: str | os.PathLike, *, device: str = "cpu", encoding: str | None = None,
                  pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Any:
        """The tokenizer of one file, recognized by its content: a tokenizer.json, a ``.tiktoken`` rank file or
        Llama-3 / 4's tiktoken ``tokenizer.model`` (``encoding``: its encoding name, or ``pattern`` and
        ``special_tokens`` its own, else known by its file name or number of ranks), a WordPiece vocab.txt."""
        return load_file(path, device=device, encoding=encoding, pattern=pattern, special_tokens=special_tokens)


def load_pretrained(directory: str | os.PathLike, *, device: str = "cpu", encoding: str | None = None) -> Any:
    """:meth:`Tokenizer.from_pretrained`."""
    d = Path(directory)
    if d.is_file():
        return load_file(d, device=device, encoding=encoding)
    if not d.is_dir():
        raise FileNotFoundError(f"tokenizer directory not found: {d}")
    if (d / "tokenizer.json").is_file():
        return _from_tokenizer_json(d / "tokenizer.json", d, device)
    if (d / "vocab.txt").is_file():
        from triton_textops.ops.wordpiece.tokenizer import BertTokenizer  # noqa: PLC0415

        return BertTokenizer.from_pretrained(d, device=device)
    for enc, merges in (("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")):
        if (d / enc).is_file() and (d / merges).is_file():
            from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

            return BPETokenizer.from_gpt2_files(d / enc, d / merges, device=device)
    singles = sorted(p for p in d.iterdir() if p.suffix in (".tiktoken", ".model") and p.is_file())
    if len(singles) == 1 and singles[0].suffix == ".model" and _head_kind(singles[0]) != "tiktoken":
        # (transformers' slow layout: + tokenizer_config.json; Meta's Llama-3 / 4 tokenizer.model is a rank file)
        return _sentencepiece().from_pretrained(d, device=device)
    if len(singles) == 1:
        return load_file(singles[0], device=device, encoding=encoding)
    raise ConfigError(f"{d}: no tokenizer file found (tokenizer.json, vocab.txt, encoder.json + vocab.bpe, "
                      f"vocab.json + merges.txt, or one .tiktoken / .model file){_FAMILIES}")


def load_file(path: str | os.PathLike, *, device: str = "cpu", encoding: str | None = None,
              pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Any:
    """:meth:`Tokenizer.from_file`."""
    p = Path(path)
    if p.is_dir():
        if pattern is not None or special_tokens is not None:
            raise ConfigError(f"{p}: pattern= and special_tokens= go with a rank file, not a directory")
        return load_pretrained(p, device=device, encoding=encoding)
    kind = _head_kind(p)
    if kind != "tiktoken" and (encoding is not None or pattern is not None or special_tokens is not None):
        raise ConfigError(f"{p}: encoding=, pattern= and special_tokens= go with a tiktoken rank file, and this "
                          f"is not one ({kind})")
    if kind == "json":
        return _from_tokenizer_json(p, p.parent, device)
    if kind == "tiktoken":
        from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

        if pattern is not None:
            return BPETokenizer.from_tiktoken(p, encoding=encoding, pattern=pattern, special_tokens=special_tokens,
                                              device=device)
        if special_tokens is not None:
            raise ConfigError(f"{p}: special_tokens= goes with pattern= (a named encoding has its own)")
        return BPETokenizer.from_tiktoken(p, encoding=encoding or _encoding_of(p), device=device)
    if kind == "sentencepiece":
        return _sentencepiece_load(p, device)
    if kind == "vocab":
        from triton_textops.ops.wordpiece.tokenizer import BertTokenizer  # noqa: PLC0415

        return BertTokenizer.from_pretrained(p, device=device)
    raise ConfigError(f"{p}: {kind}{_FAMILIES}")


def _head_kind(p: Path) -> str:
    """:func:`sniff` of a file's first bytes."""
    try:
        with open(p, "rb") as f:
            head = f.read(HEAD)
    except FileNotFoundError:
        raise FileNotFoundError(f"tokenizer file not found: {p}") from None
    return sniff(head)


def _sentencepiece_load(path: Path, device: str) -> Any:
    """A SentencePiece file's tokenizer; its load errors name the families too."""
    try:
        return _sentencepiece().from_file(path, device=device)
    except ConfigError as e:
        raise ConfigError(f"{e}{_FAMILIES}") from None


def _sentencepiece() -> Any:
    from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer  # noqa: PLC0415

    return SentencePieceTokenizer


def is_sentencepiece(doc: dict) -> bool:
    """Whether a BPE tokenizer.json is SentencePiece-style: byte fallback, or no ByteLevel step anywhere (its
    pieces are characters with U+2581 for spaces, not GPT-2's byte alphabet)."""
    if doc["model"].get("byte_fallback"):
        return True
    steps = json.dumps([doc.get("pre_tokenizer"), doc.get("decoder"), doc.get("normalizer")])
    return '"ByteLevel"' not in steps and ("Metaspace" in steps or "\u2581" in steps or "▁" in steps)


def _encoding_of(path: Path) -> str:
    """The encoding of a rank file whose name or size says it; else a ConfigError asking for it."""
    stem = path.name.split(".")[0]
    if stem in RANKS_OF.values() or stem in NAMED_FILES:
        return NAMED_FILES.get(stem, stem)
    with open(path, "rb") as f:
        n = sum(1 for ln in f if ln.strip())
    if n in RANKS_OF:
        return RANKS_OF[n]
    raise ConfigError(f"{path}: a tiktoken rank file of {n} ranks, which is none of the known encodings' "
                      f"({', '.join(f'{v}: {k}' for k, v in RANKS_OF.items())}): pass encoding=, or pattern= and "
                      f"special_tokens=")


def _from_tokenizer_json(path: Path, directory: Path, device: str) -> Any:
    """Dispatch a tokenizer.json on its ``model.type`` (and, for BPE, whether it is byte-level)."""
    doc = read_json(path)
    model = doc.get("model") if isinstance(doc, dict) else None
    if model is None and isinstance(doc, dict) and isinstance(doc.get("config"), dict) \
            and "pattern" in doc["config"]:  # Mistral's Tekken file
        from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

        return BPETokenizer.from_tekken(path, device=device)
    if model is None and isinstance(doc, dict) and isinstance(doc.get("bpe_ranks"), str):  # a JS-tiktoken file
        from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

        return BPETokenizer.from_js_tiktoken(path, device=device)
    if not isinstance(model, dict):
        raise ConfigError(f"{path}: no 'model' object: not a tokenizer.json{_FAMILIES}")
    kind = model.get("type")
    if kind is None:  # (older files: the model's fields alone)
        kind = "WordPiece" if "continuing_subword_prefix" in model and "merges" not in model else \
            "BPE" if "merges" in model else "Unigram" if isinstance(model.get("vocab"), list) else None
    if kind == "WordPiece":
        from triton_textops.ops.wordpiece.tokenizer import BertTokenizer  # noqa: PLC0415

        return BertTokenizer.from_pretrained(path, device=device)
    if kind == "Unigram" and importlib.util.find_spec("triton_textops.ops.sentencepiece.unigram") is None:
        raise ConfigError(f"{path}: model.type = 'Unigram' is not loaded yet{_FAMILIES}")
    if kind == "Unigram" or kind == "BPE" and is_sentencepiece(doc):
        return _sentencepiece_load(path, device)
    if kind == "BPE":
        from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

        return BPETokenizer.from_pretrained(directory if path.name == "tokenizer.json" else path, device=device)
    raise ConfigError(f"{path}: model.type = {kind!r} is not loaded{_FAMILIES}")
