"""BERT WordPiece tokenization, identical to HuggingFace's ``BertWordPieceTokenizer``, on the CPU or the GPU.

Stages, each a kernel compiled from one source for both targets (:mod:`triton_textops.ops.kernels`):
(a) UTF-8 check + normalization + pre-tokenization (:mod:`triton_textops.ops.text`, shared with the
readability features), (b) WordPiece and (c) BERT packing (:mod:`triton_textops.ops.wordpiece`): ``[CLS] …
[SEP]``, truncation, overflow windows with stride, padding, masks, row→text mapping. Fixed-length rows
take two kernel launches and one device-to-host copy (the rows' UTF-8 status); overflow windows take three
launches and still one copy (piece counts and status together).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops import kernels as K
from triton_textops.ops.hashtable import ByteTable
from triton_textops.ops.text import N_TOK_ROWS, STATUS, Normalizer, PreTokens, TextBatch, raise_bad_rows
from triton_textops.ops.wordpiece import (
    COUNT_PIECES,
    ENCODE_FUSED,
    ENCODE_ROWS,
    ENCODE_WINDOWS,
    MAX_INPUT_CHARS_PER_WORD,
    PACK_PIECES,
    WRITE_PIECES,
    pre_args,
    window_plan,
)
from triton_textops.ops.xp import get_xp, resolve_device, target_of

SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")  # HF registers those present in the vocab
REQUIRED_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]")
__all__ = ["MAX_INPUT_CHARS_PER_WORD", "BertTokenizer", "Encoding"]


@dataclass
class Encoding:
    """Tokenizer output: arrays of the device's array module."""

    input_ids: Any  # (rows, max_length)
    attention_mask: Any  # (rows, max_length)
    token_type_ids: Any  # (rows, max_length), zeros
    overflow_to_sample_mapping: Any  # (rows,) index of the text each row came from

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


class BertTokenizer:
    """HuggingFace-exact BERT WordPiece tokenizer over a ``vocab.txt``."""

    def __init__(self, vocab: list[str], *, lowercase: bool = True, device: str = "cpu", backend: str = "native") -> None:
        if backend not in ("native", "cudf"):
            raise ValueError(f"backend must be 'native' or 'cudf', got {backend!r}")
        if backend == "cudf" and device == "cpu":
            raise ValueError("backend='cudf' runs on the GPU: use device='cuda'")
        self.device = resolve_device(device)
        self.target = target_of(self.device)
        self.xp: ModuleType = get_xp(self.device)
        self.lowercase = lowercase
        ids: dict[str, int] = {}
        for i, tok in enumerate(vocab):
            ids[tok] = i  # a repeated token keeps its last id, as HF's vocab reader does
        missing = [t for t in REQUIRED_TOKENS if t not in ids]
        if missing:
            raise ValueError(f"vocabulary lacks the required special token(s) {', '.join(missing)}")
        self.vocab = ids
        self.vocab_size = len(vocab)
        self.unk_id, self.cls_id = ids["[UNK]"], ids["[CLS]"]
        self.sep_id, self.pad_id = ids["[SEP]"], ids["[PAD]"]
        self.specials = [t for t in SPECIAL_TOKENS if t in ids]
        self.special_bytes = [t.encode() for t in self.specials]
        self.table = ByteTable(ids)
        self._slots, self._pool = self.table.on(self.target, self.xp)
        t = self.table
        consts = [t.mask, t.max_probe, t.max_len, self.unk_id, self.cls_id, self.sep_id, self.pad_id]
        self._vocab = K.to_device(np.asarray(consts + [ids[s] for s in self.specials], dtype=np.int64),
                                  self.target, self.xp)
        self.normalizer = Normalizer.get(lowercase, self.device)
        self.backend = backend
        if backend == "cudf":
            from triton_textops.ops.cudf_backend import CudfWordPiece

            self._cudf = CudfWordPiece(vocab, self.specials, lowercase)

    @classmethod
    def from_vocab(
        cls, path: str | os.PathLike, *, lowercase: bool = True, device: str = "cpu", backend: str = "native"
    ) -> BertTokenizer:
        """Load a WordPiece ``vocab.txt`` (one token per line, id = line number).

        ``backend="cudf"`` takes the word pieces from cuDF >= 25.10 (GPU only; see
        :mod:`triton_textops.ops.cudf_backend` for how it differs from HF); packing stays ours."""
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            raise FileNotFoundError(f"vocabulary file not found: {path}") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"vocabulary {path} is not valid UTF-8: {e}") from None
        if lines and lines[-1] == "":
            lines.pop()
        return cls([ln.rstrip() for ln in lines], lowercase=lowercase, device=device, backend=backend)

    # ----------------------------------------------------------------------------------- stages

    def pretokenize(self, texts: Any) -> PreTokens:
        """Stage (a): texts → normalized bytes + pre-token spans (raw special tokens marked). Bad rows are
        reported in ``PreTokens.status`` (the encoders raise :class:`InputError` naming the first)."""
        return self.normalizer.pretokenize(TextBatch.from_texts(texts, self.xp, self.target), self.special_bytes)

    def wordpiece_args(self) -> tuple:
        """The vocabulary the WordPiece kernels read: constants + special ids, slots, string pool."""
        return (self._vocab, self._slots, self._pool)

    def _counts(self, pre: PreTokens) -> np.ndarray:
        """Pieces per text on the host (one copy; invalid rows raise :class:`InputError`)."""
        counts = self.xp.empty(pre.n, dtype=np.int64)
        if pre.n:
            dummy = self.xp.empty((1, 1, 1), dtype=np.int64)
            K.launch(self.target, COUNT_PIECES, pre.n, *pre_args(pre), *self.wordpiece_args(), dummy, counts)
        host = K.to_host(counts, self.target)
        raise_bad_rows(np.where(host < 0, -1 - host, 0))
        return host

    def wordpiece(self, pre: PreTokens) -> tuple[Any, Any]:
        """Stage (b): pre-tokens → (piece ids int64, per-text piece offsets (n+1))."""
        counts = self._counts(pre)
        offs = np.zeros(pre.n + 1, dtype=np.int64)
        np.cumsum(counts, out=offs[1:])
        d_offs = K.to_device(offs, self.target, self.xp)
        pieces = self.xp.empty((1, 1, int(offs[-1])), dtype=np.int64)
        if pre.n:
            K.launch(self.target, WRITE_PIECES, pre.n, *pre_args(pre), *self.wordpiece_args(), pieces, d_offs)
        return pieces.reshape(-1), d_offs

    def rows_layout(self, max_length: int, stride: int, overflow: bool, add_special_tokens: bool, dtype: str) -> tuple[int, Any]:
        """(pieces per row, NumPy dtype) of a packing request, or :class:`InputError` for a bad one."""
        n_special = 2 if add_special_tokens else 0
        content = max_length - n_special
        if content < 1:
            raise InputError(f"max_length={max_length} leaves no room for content ({n_special} special tokens)")
        if stride < 0:
            raise InputError(f"stride must be >= 0, got {stride}")
        if overflow and stride >= content:
            raise InputError(
                f"stride={stride} must be smaller than the content length per window "
                f"(max_length - special tokens = {content})"
            )
        if dtype not in ("int64", "int32"):
            raise InputError(f"dtype must be 'int64' or 'int32', got {dtype!r}")
        return content, np.int64 if dtype == "int64" else np.int32

    def new_rows(self, nrows: int, max_length: int, dt: Any) -> tuple[Any, Any]:
        """One buffer for ids, mask and token types (``rows[0..2]``) and the row->text mapping."""
        return self.xp.empty((3, nrows, max_length), dtype=dt), self.xp.empty(nrows, dtype=dt)

    def pack(
        self,
        pieces: Any,
        piece_offsets: Any,
        *,
        max_length: int = 128,
        stride: int = 0,
        return_overflowing_tokens: bool = False,
        add_special_tokens: bool = True,
        dtype: str = "int64",
    ) -> Encoding:
        """Stage (c): BERT packing of each text's pieces into fixed-length rows (HF semantics)."""
        content, dt = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        offs_h = np.asarray(K.to_host(piece_offsets, self.target), dtype=np.int64)
        n = offs_h.shape[0] - 1
        n_pieces = int(np.asarray(pieces.shape).prod())
        if offs_h.ndim != 1 or n < 0 or offs_h[0] != 0 or offs_h[-1] > n_pieces or (np.diff(offs_h) < 0).any():
            raise InputError("piece offsets must start at 0, be non-decreasing and end within the pieces")
        plan = window_plan(np.diff(offs_h), content, content - stride, return_overflowing_tokens)
        rows, mapping = self.new_rows(int(plan[-1]), max_length, dt)
        if n:
            K.launch(self.target, PACK_PIECES, n, self.xp.asarray(pieces).reshape(-1).astype(np.int64, copy=False),
                     K.to_device(offs_h, self.target, self.xp), self._vocab, rows, mapping,
                     K.to_device(plan, self.target, self.xp), content, content - stride, add_special_tokens)
        return Encoding(rows[0], rows[1], rows[2], mapping)

    # ------------------------------------------------------------------------------------ public

    def encode(
        self,
        texts: Any,
        *,
        max_length: int = 128,
        stride: int = 0,
        return_overflowing_tokens: bool = False,
        add_special_tokens: bool = True,
        dtype: str = "int64",
    ) -> Encoding:
        """Tokenize a batch. ``texts``: list of str/bytes, NumPy object array of bytes ([n] or [n, 1]),
        a :class:`TextBatch`, or a ``(uint8 buffer, offsets)`` pair on the device."""
        if self.backend == "cudf":
            pieces, offsets = self._cudf(TextBatch.from_texts(texts, self.xp, self.target))
            return self.pack(pieces, offsets, max_length=max_length, stride=stride,
                             return_overflowing_tokens=return_overflowing_tokens,
                             add_special_tokens=add_special_tokens, dtype=dtype)
        if not return_overflowing_tokens:
            return self._encode_fused(TextBatch.from_texts(texts, self.xp, self.target), max_length,
                                      add_special_tokens, dtype)
        return self.encode_pretokens(self.pretokenize(texts), max_length=max_length, stride=stride,
                                     return_overflowing_tokens=return_overflowing_tokens,
                                     add_special_tokens=add_special_tokens, dtype=dtype)

    def encode_pretokens(
        self,
        pre: PreTokens,
        *,
        max_length: int = 128,
        stride: int = 0,
        return_overflowing_tokens: bool = False,
        add_special_tokens: bool = True,
        dtype: str = "int64",
        check: bool = True,
    ) -> Encoding:
        """Stages (b)+(c) on stage (a)'s output: WordPiece written straight into the rows. Fixed-length
        rows: one launch; with overflow windows: a counting launch, one copy of the counts, one launch.
        ``check=False`` leaves the UTF-8 status of ``pre`` to the caller (:meth:`PreTokens.check`)."""
        content, dt = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        n = pre.n
        if return_overflowing_tokens:
            plan = window_plan(self._counts(pre), content, content - stride, True)  # raises for bad rows
            rows, mapping = self.new_rows(int(plan[-1]), max_length, dt)
            if n:
                K.launch(self.target, ENCODE_WINDOWS, n, *pre_args(pre), *self.wordpiece_args(), rows, mapping,
                         K.to_device(plan, self.target, self.xp), content, content - stride, add_special_tokens)
            return Encoding(rows[0], rows[1], rows[2], mapping)
        rows, mapping = self.new_rows(n, max_length, dt)
        if n:
            K.launch(self.target, ENCODE_ROWS, n, *pre_args(pre), *self.wordpiece_args(), rows, mapping, content,
                     add_special_tokens)
        if check:
            pre.check()
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def _encode_fused(self, batch: TextBatch, max_length: int, add_special_tokens: bool, dtype: str) -> Encoding:
        """Fixed-length rows in ONE launch: stage (a) into scratch arrays, then WordPiece and packing of the
        same text by the same thread (the tokenize model's and ``encode``'s usual case)."""
        content, dt = self.rows_layout(max_length, 0, False, add_special_tokens, dtype)
        norm, xp = self.normalizer, self.xp
        n, nb = batch.n, int(batch.data.shape[0])
        rows, mapping = self.new_rows(n, max_length, dt)
        txt = xp.empty((3, n), dtype=np.int64)
        if n:
            K.launch(self.target, ENCODE_FUSED, n, *norm.args(batch, self.special_bytes),
                     xp.empty(norm.expand * nb, dtype=np.uint8), norm.expand, xp.empty((N_TOK_ROWS, nb), dtype=np.int32),
                     txt, *self.wordpiece_args(), rows, mapping, content, add_special_tokens)
        raise_bad_rows(K.to_host(txt[STATUS], self.target))
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of one text as strings (debugging aid)."""
        inv = {v: k for k, v in self.vocab.items()}
        pieces, _ = self.wordpiece(self.pretokenize([text]))
        return [inv[int(i)] for i in K.to_host(pieces, self.target)]
