"""BERT WordPiece tokenization, identical to HuggingFace's ``BertWordPieceTokenizer``, on the CPU or the GPU.

Stages, each a kernel compiled from one source for both targets (:mod:`triton_textops.ops.kernels`):
(a) UTF-8 check + normalization + pre-tokenization (:mod:`triton_textops.ops.text`, shared with the
readability features), (b) WordPiece and (c) BERT packing (:mod:`triton_textops.ops.wordpiece`): ``[CLS] …
[SEP]``, truncation, overflow windows with stride, padding, masks, row→text mapping. Fixed-length rows
take two kernel launches and one device-to-host copy (the rows' UTF-8 status); overflow windows take three
launches and still one copy (piece counts and status together).
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops import kernels as K
from triton_textops.ops.args import allocate, check_bool, check_ids_dtype, check_int
from triton_textops.ops.hashtable import ByteTable
from triton_textops.ops.text import STATUS, Normalizer, PreTokens, TextBatch, raise_bad_rows, runs_on_cpu
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
MAX_ROW_LENGTH = (1 << 31) - 1  # tokens per row (max_length)
# what Rust's str::trim_end strips (char::is_whitespace: the Unicode White_Space property); Python's
# str.rstrip() strips U+001C..U+001F too
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
              "\u2028\u2029\u202f\u205f\u3000"
__all__ = ["MAX_INPUT_CHARS_PER_WORD", "BertTokenizer", "Encoding", "read_vocab"]


@functools.lru_cache(maxsize=64, typed=True)  # typed: 8.0 and True are not taken for 8 and 1
def _layout(max_length: Any, stride: Any, overflow: Any, add_special_tokens: Any, dtype: Any) -> Layout:
    max_length = check_int("max_length", max_length, 1, MAX_ROW_LENGTH)
    stride = check_int("stride", stride, 0)
    overflow = check_bool("return_overflowing_tokens", overflow)
    specials = check_bool("add_special_tokens", add_special_tokens)
    n_special = 2 if specials else 0
    dt = check_ids_dtype(dtype)
    content = max_length - n_special
    if content < 1:
        raise InputError(f"max_length={max_length} leaves no room for content ({n_special} special tokens)")
    if overflow and stride >= content:
        raise InputError(
            f"stride={stride} must be smaller than the content length per window "
            f"(max_length - special tokens = {content})"
        )
    return Layout(max_length, content, content - stride, overflow, specials, dt.type)


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
    except UnicodeDecodeError as e:
        raise ValueError(f"vocabulary {path} is not valid UTF-8: {e}") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line (or an empty file)
        lines.pop()
    return [ln.rstrip(WHITE_SPACE) for ln in lines]


class Layout(NamedTuple):
    """A checked packing request: tokens per row, pieces per row (``content``) and between window starts
    (``step``), overflow windows or not, [CLS]/[SEP] or not, and the ids' NumPy type."""

    max_length: int
    content: int
    step: int
    overflow: bool
    specials: bool
    dtype: Any


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
        if isinstance(vocab, (str, bytes)) or not all(isinstance(t, str) for t in vocab):
            raise ValueError("vocab must be a sequence of str (the tokens, id = position); "
                             "BertTokenizer.from_vocab reads a vocab.txt")
        lowercase = check_bool("lowercase", lowercase)
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
        self._place()
        self.backend = backend
        if backend == "cudf":
            from triton_textops.ops.cudf_backend import CudfWordPiece

            self._cudf = CudfWordPiece(vocab, self.specials, lowercase)

    def _place(self) -> None:
        """The vocabulary tables and the normalizer on this tokenizer's device."""
        self._slots, self._pool = self.table.on(self.target, self.xp)
        t, ids = self.table, self.vocab
        consts = [t.mask, t.max_probe, t.max_len, self.unk_id, self.cls_id, self.sep_id, self.pad_id]
        self._vocab = K.to_device(np.asarray(consts + [ids[s] for s in self.specials], dtype=np.int64),
                                  self.target, self.xp)
        self.normalizer = Normalizer.get(self.lowercase, self.device)
        self._cpu: BertTokenizer | None = self if self.target == "cpu" else None

    def on_cpu(self) -> BertTokenizer:
        """This tokenizer on the CPU (itself, or a twin sharing the vocabulary, made once): where a GPU
        tokenizer runs batches below ``gpu_min_batch``."""
        if self._cpu is None:
            twin = copy.copy(self)
            twin.device, twin.target, twin.xp, twin.backend = "cpu", "cpu", np, "native"
            twin._place()
            self._cpu = twin
        return self._cpu

    def runs_on_cpu(self, texts: Any, gpu_min_batch: Any) -> bool:
        """Whether a batch for this tokenizer runs on the CPU kernels although the tokenizer is on a GPU: fewer
        than ``gpu_min_batch`` texts (:func:`~triton_textops.ops.text.runs_on_cpu`; the cuDF backend never:
        its pieces differ from ours)."""
        return runs_on_cpu(self.target, texts, gpu_min_batch) and self.backend == "native"

    @classmethod
    def from_vocab(
        cls, path: str | os.PathLike, *, lowercase: bool = True, device: str = "cpu", backend: str = "native"
    ) -> BertTokenizer:
        """Load a WordPiece ``vocab.txt`` (one token per line, id = line number; :func:`read_vocab`).

        ``backend="cudf"`` takes the word pieces from cuDF >= 25.10 (GPU only; see
        :mod:`triton_textops.ops.cudf_backend` for how it differs from HF); packing stays ours."""
        return cls(read_vocab(path), lowercase=lowercase, device=device, backend=backend)

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

    def _own(self, pre: Any) -> PreTokens:
        """``pre`` checked to be pre-tokens of this tokenizer's device and casing."""
        if not isinstance(pre, PreTokens):
            raise InputError(f"pre must be PreTokens (from pretokenize), got {type(pre).__name__}")
        if pre.target != self.target:
            raise InputError(f"pre-tokens on {pre.target!r} cannot feed a tokenizer on {self.target!r}")
        if pre.lowercase != self.lowercase:
            raise InputError("pre-tokens were normalized with another casing than this tokenizer's (lowercase)")
        return pre

    def wordpiece(self, pre: PreTokens) -> tuple[Any, Any]:
        """Stage (b): pre-tokens → (piece ids int64, per-text piece offsets (n+1))."""
        pre = self._own(pre)
        counts = self._counts(pre)
        offs = np.zeros(pre.n + 1, dtype=np.int64)
        np.cumsum(counts, out=offs[1:])
        d_offs = K.to_device(offs, self.target, self.xp)
        pieces = self.xp.empty((1, 1, int(offs[-1])), dtype=np.int64)
        if pre.n:
            K.launch(self.target, WRITE_PIECES, pre.n, *pre_args(pre), *self.wordpiece_args(), pieces, d_offs)
        return pieces.reshape(-1), d_offs

    def rows_layout(self, max_length: Any, stride: Any, overflow: Any, add_special_tokens: Any,
                    dtype: Any) -> Layout:
        """The :class:`Layout` of a packing request, or :class:`InputError` naming the parameter that is wrong
        (types included: ``max_length=2.5`` or ``dtype="float32"`` never reach a kernel)."""
        try:  # the same request again (the usual case): checked once
            return _layout(max_length, stride, overflow, add_special_tokens, dtype)
        except TypeError:  # an unhashable argument: not cached, checked all the same
            return _layout.__wrapped__(max_length, stride, overflow, add_special_tokens, dtype)

    def new_rows(self, nrows: int, max_length: int, dt: Any) -> tuple[Any, Any]:
        """One buffer for ids, mask and token types (``rows[0..2]``) and the row->text mapping; an
        :class:`InputError` naming max_length when they cannot be had."""
        rows = allocate(self.xp, (3, nrows, max_length), dt, f"max_length={max_length}: {nrows} rows of ids, mask and "
                        "token types")
        return rows, self.xp.empty(nrows, dtype=dt)

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
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        for name, a in (("pieces", pieces), ("piece_offsets", piece_offsets)):
            if getattr(getattr(a, "dtype", None), "kind", "") not in "iu" or not hasattr(a, "shape"):
                raise InputError(f"{name} must be an integer array")
        offs_h = np.asarray(K.to_host(piece_offsets, self.target)).astype(np.int64)
        n_pieces = int(np.prod(pieces.shape))
        if offs_h.ndim != 1 or offs_h.shape[0] < 1 or offs_h[0] != 0 or offs_h[-1] > n_pieces \
                or (np.diff(offs_h) < 0).any():
            raise InputError("piece_offsets must be 1-D, start at 0, be non-decreasing and end within the pieces")
        n = offs_h.shape[0] - 1
        plan = window_plan(np.diff(offs_h), lay.content, lay.step, lay.overflow)
        rows, mapping = self.new_rows(int(plan[-1]), lay.max_length, lay.dtype)
        if n:
            K.launch(self.target, PACK_PIECES, n, self.xp.asarray(pieces).reshape(-1).astype(np.int64, copy=False),
                     K.to_device(offs_h, self.target, self.xp), self._vocab, rows, mapping,
                     K.to_device(plan, self.target, self.xp), lay.content, lay.step, lay.specials)
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
        gpu_min_batch: int | None = None,
    ) -> Encoding:
        """Tokenize a batch. ``texts``: list of str/bytes, NumPy object array of bytes ([n] or [n, 1]),
        a :class:`TextBatch`, or a ``(uint8 buffer, offsets)`` pair on the host or the device. On a GPU, a
        batch of fewer than ``gpu_min_batch`` texts runs on the CPU kernels and its rows go up as one copy:
        the same arrays, on the device (:data:`~triton_textops.ops.kernels.GPU_MIN_BATCH` says why)."""
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        if self.runs_on_cpu(texts, gpu_min_batch):
            enc = self.on_cpu().encode(texts, max_length=max_length, stride=stride, dtype=dtype,
                                       return_overflowing_tokens=return_overflowing_tokens,
                                       add_special_tokens=add_special_tokens)
            return Encoding(*K.to_device_many([enc.input_ids, enc.attention_mask, enc.token_type_ids,
                                               enc.overflow_to_sample_mapping], self.target, self.xp))
        if self.backend == "cudf":
            pieces, offsets = self._cudf(TextBatch.from_texts(texts, self.xp, self.target))
            return self.pack(pieces, offsets, max_length=max_length, stride=stride,
                             return_overflowing_tokens=return_overflowing_tokens,
                             add_special_tokens=add_special_tokens, dtype=dtype)
        if not lay.overflow:
            return self._encode_fused(TextBatch.from_texts(texts, self.xp, self.target), lay)
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
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        pre = self._own(pre)
        check = check_bool("check", check)
        n = pre.n
        if lay.overflow:
            plan = window_plan(self._counts(pre), lay.content, lay.step, True)  # raises for bad rows
            rows, mapping = self.new_rows(int(plan[-1]), lay.max_length, lay.dtype)
            if n:
                K.launch(self.target, ENCODE_WINDOWS, n, *pre_args(pre), *self.wordpiece_args(), rows, mapping,
                         K.to_device(plan, self.target, self.xp), lay.content, lay.step, lay.specials)
            return Encoding(rows[0], rows[1], rows[2], mapping)
        rows, mapping = self.new_rows(n, lay.max_length, lay.dtype)
        if n:
            K.launch(self.target, ENCODE_ROWS, n, *pre_args(pre), *self.wordpiece_args(), rows, mapping, lay.content,
                     lay.specials)
        if check:
            pre.check()
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def _encode_fused(self, batch: TextBatch, lay: Layout) -> Encoding:
        """Fixed-length rows in ONE launch: stage (a) into scratch arrays, then WordPiece and packing of the
        same text by the same thread (the tokenize model's and ``encode``'s usual case)."""
        norm, xp = self.normalizer, self.xp
        n = batch.n
        rows, mapping = self.new_rows(n, lay.max_length, lay.dtype)
        txt = xp.empty((3, n), dtype=np.int64)
        if n:
            K.launch(self.target, ENCODE_FUSED, n, *norm.stage_args(batch, self.special_bytes, txt),
                     *self.wordpiece_args(), rows, mapping, lay.content, lay.specials)
        raise_bad_rows(K.to_host(txt[STATUS], self.target))
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of one text as strings (debugging aid)."""
        if not isinstance(text, str):
            raise InputError(f"text must be a str, got {type(text).__name__}")
        inv = {v: k for k, v in self.vocab.items()}
        pieces, _ = self.wordpiece(self.pretokenize([text]))
        return [inv[int(i)] for i in K.to_host(pieces, self.target)]
