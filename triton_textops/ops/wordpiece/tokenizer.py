"""WordPiece tokenization identical to HuggingFace ``tokenizers`` (a BERT ``vocab.txt`` as ``BertWordPieceTokenizer``
builds it, or a WordPiece ``tokenizer.json``), on the CPU or the GPU: :class:`BertTokenizer`.

Stages by role, each device code compiled from one source for both targets (:mod:`triton_textops.ops.core.kernels`):
normalization + pre-tokenization with the UTF-8 check (:mod:`~triton_textops.ops.wordpiece.pretokenize`, shared
with the readability features), the WordPiece model (:mod:`~triton_textops.ops.wordpiece.model`), post-processing
(:mod:`~triton_textops.ops.wordpiece.postprocess`): the template's special tokens and types, truncation, overflow
windows with stride, padding, masks, row->text mapping; and decoding (:mod:`~triton_textops.ops.wordpiece.decode`).
The files are read by :mod:`~triton_textops.ops.wordpiece.formats`.

``encode`` gives ragged ids (three launches, one device-to-host copy: the piece counts and statuses), with the
file's truncation and padding as HF's ``encode_batch`` applies them; ``encode_rows`` fixed-length rows (right
truncation: one launch and one copy, the statuses; left truncation: a count first; overflow windows: three launches,
one copy, and with left truncation framed on the host from the ragged pieces).
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any, NamedTuple

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.bpe.limits import plan_limits
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import allocate, check_bool, check_ids_dtype, check_int
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.decode import decode_batch
from triton_textops.ops.core.hashtable import ByteTable
from triton_textops.ops.core.output import Encoding, Ragged, Rows
from triton_textops.ops.core.placement import Placed
from triton_textops.ops.core.rows import window_plan, window_rows
from triton_textops.ops.core.status import raise_bad_counts, raise_bad_rows
from triton_textops.ops.wordpiece.decode import DECODE_COUNT, DECODE_WRITE, decode_forms
from triton_textops.ops.wordpiece.formats import (
    WHITE_SPACE,
    WordPieceSpec,
    read_pretrained,
    read_vocab,
    spec_from_vocab,
)
from triton_textops.ops.wordpiece.model import MAX_INPUT_CHARS_PER_WORD, vocab_consts
from triton_textops.ops.wordpiece.normalize import SP_SINGLE_WORD, Specials
from triton_textops.ops.wordpiece.postprocess import (
    COUNT_PIECES,
    ENCODE_FUSED,
    ENCODE_LEFT_ROWS,
    ENCODE_ROWS,
    ENCODE_WINDOWS,
    F_LEFT_PAD,
    F_SPECIALS,
    PACK_PIECES,
    WRITE_PIECES,
    WRITE_RAGGED,
)
from triton_textops.ops.wordpiece.pretokenize import STATUS, Normalizer, PreTokens

SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")  # HF registers those present in the vocab
REQUIRED_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]")  # (a vocabulary given as a list, or from_vocab)
MAX_ROW_LENGTH = (1 << 31) - 1  # tokens per row (max_length)
__all__ = ["MAX_INPUT_CHARS_PER_WORD", "WHITE_SPACE", "BertTokenizer", "Encoding", "read_vocab"]
_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>"})()  # encode's former row keywords, not given
_LEGACY = ("max_length", "stride", "return_overflowing_tokens", "dtype")
_SIDES = ("left", "right")  # padding_side / truncation_side


@functools.lru_cache(maxsize=64, typed=True)  # typed: 8.0 and True are not taken for 8 and 1
def _layout(max_length: Any, stride: Any, overflow: Any, add_special_tokens: Any, dtype: Any,
            n_template: int = 2) -> Layout:
    max_length = check_int("max_length", max_length, 1, MAX_ROW_LENGTH)
    stride = check_int("stride", stride, 0)
    overflow = check_bool("return_overflowing_tokens", overflow)
    specials = check_bool("add_special_tokens", add_special_tokens)
    n_special = n_template if specials else 0
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


class Layout(NamedTuple):
    """A checked packing request: tokens per row, pieces per row (``content``) and between window starts
    (``step``), overflow windows or not, the template or not, and the ids' NumPy type."""

    max_length: int
    content: int
    step: int
    overflow: bool
    specials: bool
    dtype: Any


class _RaggedRows(Ragged):
    """:class:`Ragged` ids, which for one release also answer ``input_ids``, ``attention_mask``, ``token_type_ids`` and
    ``overflow_to_sample_mapping`` as the former ``encode(texts)`` did (rows of 128, with a DeprecationWarning)."""

    def __init__(self, ids: Any, offsets: Any, rows: Any = None) -> None:
        super().__init__(ids, offsets)
        self._rows = rows

    def _legacy(self, name: str) -> Any:
        if self._rows is None:
            raise AttributeError(name)
        warnings.warn("BertTokenizer.encode now returns ragged ids (Ragged: ids, offsets); the padded rows of "
                      f".{name} come from encode_rows(texts, max_length=...)", DeprecationWarning, stacklevel=3)
        if not isinstance(self._rows, Rows):
            self._rows = self._rows()
        return getattr(self._rows, name)

    def __getitem__(self, key: str) -> Any:
        if key not in ("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"):
            raise KeyError(key)
        return self._legacy(key)

    input_ids = property(lambda self: self._legacy("input_ids"))
    attention_mask = property(lambda self: self._legacy("attention_mask"))
    token_type_ids = property(lambda self: self._legacy("token_type_ids"))
    overflow_to_sample_mapping = property(lambda self: self._legacy("overflow_to_sample_mapping"))


class BertTokenizer(Placed):
    """HuggingFace-exact WordPiece tokenizer: a BERT ``vocab.txt`` (:meth:`from_vocab`, or a list of tokens), or a
    WordPiece ``tokenizer.json`` / directory (:meth:`from_pretrained`); ``device`` "cpu", "cuda" or "auto".
    Implements the :class:`~triton_textops.ops.tokenizer.Tokenizer` protocol."""

    family = "wordpiece"

    def __init__(self, vocab: list[str] | None = None, *, lowercase: bool = True, device: str = "cpu",
                 backend: str = "native", spec: WordPieceSpec | None = None) -> None:
        if backend not in ("native", "cudf"):
            raise ValueError(f"backend must be 'native' or 'cudf', got {backend!r}")
        if backend == "cudf" and device == "cpu":
            raise ValueError("backend='cudf' runs on the GPU: use device='cuda'")
        if spec is None:
            if vocab is None or isinstance(vocab, (str, bytes)) or not all(isinstance(t, str) for t in vocab):
                raise ValueError("vocab must be a sequence of str (the tokens, id = position); "
                                 "BertTokenizer.from_vocab reads a vocab.txt")
            lowercase = check_bool("lowercase", lowercase)
            vocab = list(vocab)
            present = set(vocab)
            missing = [t for t in REQUIRED_TOKENS if t not in present]
            if missing:
                raise ValueError(f"vocabulary lacks the required special token(s) {', '.join(missing)}")
            spec = spec_from_vocab(vocab, lowercase=lowercase)
        elif not isinstance(spec, WordPieceSpec):
            raise ValueError(f"spec must be a WordPieceSpec, got {type(spec).__name__}")
        if backend == "cudf" and vocab is None:
            raise ValueError("backend='cudf' takes a vocab.txt (BertTokenizer.from_vocab)")
        self._build(spec)
        self.backend = backend
        self._set_device(device)
        if backend == "cudf":
            from triton_textops.ops.cudf_backend import CudfWordPiece

            self._cudf = CudfWordPiece(vocab, self.specials, self.lowercase)

    def _build(self, spec: WordPieceSpec) -> None:
        """The host tables of ``spec``: vocabulary table, added tokens, names, consts, decode forms."""
        self.spec = spec
        self.options = spec.norm
        self.lowercase = spec.norm.lowercase
        self.vocab = spec.vocab
        self.added = {a.content: a for a in spec.added}
        names = {i: t for t, i in spec.vocab.items()}
        names.update({a.id: a.content for a in spec.added})  # (HF: an added token's content first)
        self._names = names
        self.n_ids = max(names) + 1 if names else 0
        self.specials = [a.content for a in spec.added]  # matched in the raw text, numbered in this order
        self.special_bytes = Specials([c.encode("utf-8") for c in self.specials],
                                      [SP_SINGLE_WORD if a.single_word else 0 for a in spec.added])
        self.table = ByteTable(spec.vocab, spec.prefix.encode("utf-8"))
        self._consts_host = self._consts_of([a.id for a in spec.added])
        self._dec_host = decode_forms([names.get(i) for i in range(self.n_ids)],
                                      {a.content for a in spec.added if a.special}, spec.decoder)
        self._limits = (spec.truncation, spec.padding) if spec.truncation or spec.padding else None
        host = Normalizer.get(device="cpu", options=self.options)
        empty = [a.content for a in spec.added if not host.makes_token(a.content)]
        if empty:
            raise ConfigError(f"{spec.source or 'tokenizer'}: added token(s) {empty[:3]} normalize to nothing (no "
                              "pre-token): not supported for WordPiece")

    def _consts_of(self, special_ids: list[int]) -> np.ndarray:
        """The VOCAB consts with these added tokens' ids (:func:`~triton_textops.ops.wordpiece.model.vocab_consts`)."""
        t, s = self.table, self.spec
        pad = self.pad_id
        return vocab_consts(t.mask, t.max_probe, t.max_len, self.unk_id, 0 if pad is None else pad, s.max_chars,
                            s.prefix.encode("utf-8"), special_ids, s.pre, s.suf, s.seq_type)

    def _place(self) -> None:
        """The vocabulary tables, consts, decode tables and the normalizer on this tokenizer's device."""
        t, xp = self.target, self.xp
        self._slots, self._pool = self.table.on(t, xp)
        self._vocab = K.to_device(self._consts_host, t, xp)
        self._subsets: dict[frozenset, tuple] = {}
        self.normalizer = Normalizer.get(device=self.device, options=self.options)
        self._dec = tuple(K.to_device(a, t, xp) for a in self._dec_host)

    def _as_cpu_twin(self) -> None:
        self.backend = "native"

    def runs_on_cpu(self, texts: Any, gpu_min_batch: Any) -> bool:
        """Whether a batch for this tokenizer runs on the CPU kernels although the tokenizer is on a GPU: fewer
        than ``gpu_min_batch`` texts (:func:`~triton_textops.ops.core.batch.runs_on_cpu`; the cuDF backend never:
        its pieces differ from ours)."""
        if gpu_min_batch is None and self.target == "cpu":  # (the usual call: nothing to check, no rule to apply)
            return False
        return super().runs_on_cpu(texts, gpu_min_batch) and self.backend == "native"

    # ------------------------------------------------------------------------------------------- loading

    @classmethod
    def from_vocab(
        cls, path: str | os.PathLike, *, lowercase: bool = True, device: str = "cpu", backend: str = "native"
    ) -> BertTokenizer:
        """Load a WordPiece ``vocab.txt`` (one token per line, id = line number; :func:`read_vocab`) as HF's
        ``BertWordPieceTokenizer(vocab, lowercase=lowercase)``.

        ``backend="cudf"`` takes the word pieces from cuDF >= 25.10 (GPU only; see
        :mod:`triton_textops.ops.cudf_backend` for how it differs from HF); packing stays ours."""
        return cls(read_vocab(path), lowercase=lowercase, device=device, backend=backend)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, device: str = "cpu") -> BertTokenizer:
        """A WordPiece tokenizer from a directory (its ``tokenizer.json``, else its ``vocab.txt`` with
        ``tokenizer_config.json``'s ``do_lower_case``, default true) or one file (a tokenizer.json or a vocab.txt);
        ``tokenizer_config.json`` / ``special_tokens_map.json`` beside it are read when present
        (:func:`~triton_textops.ops.wordpiece.formats.read_pretrained`). What a tokenizer.json may hold, and the
        one-line ConfigError for what it may not: :mod:`~triton_textops.ops.wordpiece.formats`."""
        return cls(spec=read_pretrained(path), device=device)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, device: str = "cpu") -> BertTokenizer:
        """One file, a WordPiece tokenizer.json or a vocab.txt (known by its content): :meth:`from_pretrained`."""
        return cls.from_pretrained(path, device=device)

    # ------------------------------------------------------------------------------------------- names and ids

    @property
    def vocab_size(self) -> int:
        """Distinct tokens, added ones included (HF's ``get_vocab_size(with_added_tokens=True)``)."""
        return len(set(self.vocab) | set(self.added))

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (an added token's first, as HF), or None."""
        if not isinstance(token, str):
            raise InputError(f"token must be a str, got {type(token).__name__}")
        a = self.added.get(token)
        return a.id if a is not None else self.vocab.get(token)

    def id_to_token(self, i: int) -> str | None:
        """The token of id ``i`` (an added token's content first, as HF), or None."""
        return self._names.get(check_int("id", i))

    def _config_id(self, key: str) -> int | None:
        tok = self.spec.config.get(key)
        return self.token_to_id(tok) if isinstance(tok, str) else None

    @property
    def unk_id(self) -> int:
        """The model's unknown token's id (``model.unk_token``; the vocabulary must have it)."""
        return self.vocab[self.spec.unk_token]

    @property
    def pad_id(self) -> int | None:
        """The pad token's id: tokenizer_config.json's ``pad_token``, else the file's ``padding.pad_id``, else
        ``[PAD]``'s; None when there is none (rows are then padded with 0)."""
        got = self._config_id("pad_token")
        if got is None and self.spec.padding is not None:
            got = self.spec.padding.pad_id
        return got if got is not None else self.token_to_id("[PAD]")

    @property
    def cls_id(self) -> int | None:
        """tokenizer_config.json's ``cls_token``, else the one special id the template puts before the text, else
        ``[CLS]``'s (None when there is none)."""
        got = self._config_id("cls_token")
        if got is None and len(self.spec.pre) == 1:
            got = self.spec.pre[0][0]
        return got if got is not None else self.token_to_id("[CLS]")

    @property
    def sep_id(self) -> int | None:
        """tokenizer_config.json's ``sep_token``, else the one special id the template puts after the text, else
        ``[SEP]``'s (None when there is none)."""
        got = self._config_id("sep_token")
        if got is None and len(self.spec.suf) == 1:
            got = self.spec.suf[0][0]
        return got if got is not None else self.token_to_id("[SEP]")

    @property
    def bos_id(self) -> int | None:
        """tokenizer_config.json's ``bos_token``'s id, else None (BERT's [CLS] is not a beginning of sequence)."""
        return self._config_id("bos_token")

    @property
    def eos_id(self) -> int | None:
        """tokenizer_config.json's ``eos_token``'s id, else None (BERT's [SEP] is not an end of sequence)."""
        return self._config_id("eos_token")

    @property
    def n_template(self) -> int:
        """How many ids the template adds around a text (2 for ``[CLS] ... [SEP]``)."""
        return len(self.spec.pre) + len(self.spec.suf)

    # ------------------------------------------------------------------------------------------- stages

    def pretokenize(self, texts: Any) -> PreTokens:
        """Normalize + pre-tokenize: texts → normalized bytes + pre-token spans (raw added tokens marked). Bad rows are
        reported in ``PreTokens.status`` (the encoders raise :class:`InputError` naming the first)."""
        return self.normalizer.pretokenize(TextBatch.from_texts(texts, self.xp, self.target), self.special_bytes)

    def wordpiece_args(self) -> tuple:
        """The VOCAB group the WordPiece kernels read: constants (the template, the added tokens' ids), slots,
        string pool."""
        return (self._vocab, self._slots, self._pool)

    def _matching(self, allowed: Any) -> tuple[Specials, tuple]:
        """(the added tokens matched, the VOCAB group with their ids) for ``allowed_special``: None or "all" (every
        added token, as HF), or a collection of their contents (only those; the others are text)."""
        if allowed is None or (isinstance(allowed, str) and allowed == "all"):
            return self.special_bytes, self.wordpiece_args()
        if isinstance(allowed, (str, bytes)):
            raise InputError(f"allowed_special must be None, 'all' or a collection of added tokens, got {allowed!r}")
        try:
            key = frozenset(allowed)
        except TypeError:
            raise InputError("allowed_special must be None, 'all' or a collection of added tokens' contents") from None
        got = self._subsets.get(key)
        if got is None:
            unknown = sorted(str(x) for x in key - set(self.specials))
            if unknown:
                raise InputError(f"allowed_special: {unknown[:3]} are not added tokens of this tokenizer")
            keep = [i for i, c in enumerate(self.specials) if c in key]
            sp = Specials([self.special_bytes[i] for i in keep], [self.special_bytes.flags[i] for i in keep])
            consts = K.to_device(self._consts_of([self.spec.added[i].id for i in keep]), self.target, self.xp)
            got = (sp, (consts, self._slots, self._pool))
            if len(self._subsets) < 16:
                self._subsets[key] = got
        return got

    def _counts(self, pre: PreTokens, voc: tuple | None = None) -> np.ndarray:
        """Pieces per text on the host (one copy; invalid rows raise :class:`InputError`)."""
        counts = self.xp.empty(pre.n, dtype=np.int64)
        if pre.n:
            dummy = self.xp.empty((1, 1, 1), dtype=np.int64)
            K.launch(self.target, COUNT_PIECES, pre.n, pre.group, voc or self.wordpiece_args(), dummy, counts)
        host = K.to_host(counts, self.target)
        raise_bad_counts(host)
        return host

    def _own(self, pre: Any) -> PreTokens:
        """``pre`` checked to be pre-tokens of this tokenizer's device and normalizer."""
        if not isinstance(pre, PreTokens):
            raise InputError(f"pre must be PreTokens (from pretokenize), got {type(pre).__name__}")
        if pre.target != self.target:
            raise InputError(f"pre-tokens on {pre.target!r} cannot feed a tokenizer on {self.target!r}")
        if pre.lowercase != self.lowercase:
            raise InputError("pre-tokens were normalized with another casing than this tokenizer's (lowercase)")
        if pre.options is not None and pre.options != self.options:
            raise InputError(f"pre-tokens were normalized with other options ({pre.options}) than this tokenizer's "
                             f"({self.options})")
        return pre

    def wordpiece(self, pre: PreTokens) -> tuple[Any, Any]:
        """Stage (b): pre-tokens → (piece ids int64, per-text piece offsets (n+1)), no template."""
        return self._pieces(self._own(pre), self.wordpiece_args())

    def _pieces(self, pre: PreTokens, voc: tuple) -> tuple[Any, Any]:
        counts = self._counts(pre, voc)
        offs = np.zeros(pre.n + 1, dtype=np.int64)
        np.cumsum(counts, out=offs[1:])
        d_offs = K.to_device(offs, self.target, self.xp)
        pieces = self.xp.empty((1, 1, int(offs[-1])), dtype=np.int64)
        if pre.n:
            K.launch(self.target, WRITE_PIECES, pre.n, pre.group, voc, pieces, d_offs)
        return pieces.reshape(-1), d_offs

    def rows_layout(self, max_length: Any, stride: Any, overflow: Any, add_special_tokens: Any,
                    dtype: Any) -> Layout:
        """The :class:`Layout` of a packing request, or :class:`InputError` naming the parameter that is wrong
        (types included: ``max_length=2.5`` or ``dtype="float32"`` never reach a kernel)."""
        n = self.n_template
        try:  # the same request again (the usual case): checked once
            return _layout(max_length, stride, overflow, add_special_tokens, dtype, n)
        except TypeError:  # an unhashable argument: not cached, checked all the same
            return _layout.__wrapped__(max_length, stride, overflow, add_special_tokens, dtype, n)

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
        """Stage (c): HF's post-processing of each text's pieces into fixed-length rows (right truncation and
        padding)."""
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        for name, a in (("pieces", pieces), ("piece_offsets", piece_offsets)):
            if getattr(getattr(a, "dtype", None), "kind", "") not in "iu" or not hasattr(a, "shape"):
                raise InputError(f"{name} must be an integer array")
        offs_h = np.asarray(K.to_host(piece_offsets, self.target)).astype(np.int64)
        n_pieces = int(np.prod(pieces.shape))
        if offs_h.ndim != 1 or offs_h.shape[0] < 1 or offs_h[0] != 0 or offs_h[-1] > n_pieces \
                or (np.diff(offs_h) < 0).any():
            raise InputError("piece_offsets must be 1-D, start at 0, be non-decreasing and end within the pieces")
        return self._pack(pieces, offs_h, lay, F_SPECIALS if lay.specials else 0)

    def _pack(self, pieces: Any, offs_h: np.ndarray, lay: Layout, flags: int) -> Encoding:
        n = offs_h.shape[0] - 1
        plan = window_plan(np.diff(offs_h), lay.content, lay.step, lay.overflow)
        rows, mapping = self.new_rows(int(plan[-1]), lay.max_length, lay.dtype)
        if n:
            K.launch(self.target, PACK_PIECES, n, self.xp.asarray(pieces).reshape(-1).astype(np.int64, copy=False),
                     K.to_device(offs_h, self.target, self.xp), self._vocab, (rows, mapping),
                     K.to_device(plan, self.target, self.xp), lay.content, lay.step, flags)
        return Encoding(rows[0], rows[1], rows[2], mapping)

    # ------------------------------------------------------------------------------------------- encoding

    def encode(self, texts: Any, *, add_special_tokens: bool = True, allowed_special: Any = None,
               max_length: Any = _UNSET, stride: Any = _UNSET, return_overflowing_tokens: Any = _UNSET,
               dtype: Any = _UNSET, gpu_min_batch: int | None = None) -> Ragged:
        """Token ids of each text, exactly HF's ``Tokenizer.encode_batch`` (``ids`` flat int64, ``offsets`` n+1),
        the file's ``truncation`` / ``padding`` applied as HF applies them. ``add_special_tokens``: the template
        (``[CLS] ... [SEP]``); ``allowed_special``: the added tokens matched in the raw text (None / "all": every
        one, as HF; or a collection of their contents). ``texts``: list of str/bytes, a NumPy object array of bytes
        ([n] or [n, 1]), a :class:`TextBatch`, or a ``(uint8 buffer, offsets)`` pair on the host or the device. On a
        GPU, a batch of fewer than ``gpu_min_batch`` texts runs on the CPU kernels (the ids go up as one copy).

        Deprecated, for one release: with any of ``max_length``, ``stride``, ``return_overflowing_tokens``,
        ``dtype``, the padded rows of :meth:`encode_rows` (a DeprecationWarning)."""
        given = {k: v for k, v in zip(_LEGACY, (max_length, stride, return_overflowing_tokens, dtype))
                 if v is not _UNSET}
        if given:
            warnings.warn("BertTokenizer.encode(texts, max_length=...) returning padded rows is deprecated: call "
                          "encode_rows (encode returns ragged ids)", DeprecationWarning, stacklevel=2)
            return self.encode_rows(texts, add_special_tokens=add_special_tokens, allowed_special=allowed_special,
                                    gpu_min_batch=gpu_min_batch, **given)
        specials = check_bool("add_special_tokens", add_special_tokens)
        r = self._ragged(texts, specials, allowed_special, gpu_min_batch, self._limits)

        def rows() -> Rows:  # (what encode(texts) returned before: rows of 128)
            return self.encode_rows(texts, max_length=128, add_special_tokens=specials, allowed_special=allowed_special,
                                    gpu_min_batch=gpu_min_batch)

        return _RaggedRows(r.ids, r.offsets, rows)

    def _ragged(self, texts: Any, specials: bool, allowed: Any, gpu_min_batch: Any, limits: Any) -> Ragged:
        """:meth:`encode` (``limits``: the file's (truncation, padding), or None)."""
        if self.runs_on_cpu(texts, gpu_min_batch):
            r = self.on_cpu()._ragged(texts, specials, allowed, None, limits)
            return Ragged(*K.to_device_many([r.ids, r.offsets], self.target, self.xp))
        if self.backend == "cudf":
            raise InputError("backend='cudf' gives fixed-length rows only (encode_rows)")
        sp, voc = self._matching(allowed)
        pre = self.normalizer.pretokenize(TextBatch.from_texts(texts, self.xp, self.target), sp)
        counts = self._counts(pre, voc)
        n = pre.n
        npre, nsuf = (len(self.spec.pre), len(self.spec.suf)) if specials else (0, 0)
        total = counts + (npre + nsuf)
        skip = np.zeros(n, dtype=np.int64)
        keep = counts
        flags = F_SPECIALS if specials else 0
        if limits is not None:  # the file's truncation / padding, as HF's encode_batch applies them
            trunc, pad = limits
            total, drop = plan_limits(total, npre, nsuf, trunc, pad)
            if drop.shape[0]:
                keep = counts - drop
                if trunc.left:
                    skip = drop
            if pad is not None and pad.left:
                flags |= F_LEFT_PAD
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(total, out=off[1:])
        d_off, d_plan = K.to_device_many([off, np.stack([skip, keep]).astype(np.int64)], self.target, self.xp)
        out = self.xp.empty((1, 1, int(off[-1])), dtype=np.int64)
        if n:
            K.launch(self.target, WRITE_RAGGED, n, pre.group, voc, out, d_off, d_plan, flags)
        return Ragged(out.reshape(-1), d_off)

    def encode_rows(self, texts: Any, *, max_length: int | None = 128, padding_side: str = "right",
                    truncation_side: str = "right", stride: int = 0, return_overflowing_tokens: bool = False,
                    add_special_tokens: bool = True, allowed_special: Any = None, dtype: str = "int64",
                    gpu_min_batch: int | None = None) -> Rows:
        """Fixed-length rows, as HF's ``encode_batch`` with ``enable_truncation(max_length, stride, direction)`` and
        ``enable_padding(length=max_length, direction)``: the template's ids kept, the content cut on
        ``truncation_side``, padding (the pad id) on ``padding_side``; ``input_ids``, ``attention_mask``,
        ``token_type_ids`` (the template's types; as HF, windows after the first give the text type 0) and
        ``overflow_to_sample_mapping``. ``return_overflowing_tokens``: every window of ``max_length`` less the
        template, ``stride`` pieces overlapping, a row each in HF's order (right truncation: from the start; left:
        from the end). ``max_length=None``: the longest text's length (a counting pass first). ``dtype``: int64
        or int32. Fixed rows with right truncation take one launch and one device-to-host copy (the statuses)."""
        if padding_side not in _SIDES or truncation_side not in _SIDES:
            for name, v in (("padding_side", padding_side), ("truncation_side", truncation_side)):
                if v not in _SIDES:
                    raise InputError(f"{name} must be 'left' or 'right', got {v!r}")
        if max_length is None:
            specials = check_bool("add_special_tokens", add_special_tokens)
            r = self._ragged(texts, specials, allowed_special, gpu_min_batch, None)
            lens = np.diff(K.to_host(r.offsets, self.target))
            max_length = max(int(lens.max()) if lens.size else 0, (self.n_template if specials else 0) + 1)
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        if self.runs_on_cpu(texts, gpu_min_batch):
            enc = self.on_cpu().encode_rows(texts, max_length=max_length, padding_side=padding_side,
                                            truncation_side=truncation_side, stride=stride,
                                            return_overflowing_tokens=return_overflowing_tokens,
                                            add_special_tokens=add_special_tokens, allowed_special=allowed_special,
                                            dtype=dtype)
            return Rows(*K.to_device_many([enc.input_ids, enc.attention_mask, enc.token_type_ids,
                                           enc.overflow_to_sample_mapping], self.target, self.xp))
        flags = (F_SPECIALS if lay.specials else 0) | (F_LEFT_PAD if padding_side == "left" else 0)
        if self.backend == "cudf":
            pieces, offsets = self._cudf(TextBatch.from_texts(texts, self.xp, self.target))
            if truncation_side == "left":
                return self._host_rows(pieces, offsets, lay, flags, True)
            return self._pack(pieces, np.asarray(K.to_host(offsets, self.target)).astype(np.int64), lay, flags)
        sp, voc = self._matching(allowed_special)
        batch = TextBatch.from_texts(texts, self.xp, self.target)
        if truncation_side == "right" and not lay.overflow:
            return self._encode_fused(batch, lay, flags, sp, voc)
        pre = self.normalizer.pretokenize(batch, sp)
        if truncation_side == "right":
            return self._windows(pre, lay, flags, voc)
        if lay.overflow:  # left truncation's windows: framed on the host from the pieces
            return self._host_rows(*self._pieces(pre, voc), lay, flags, True)
        skips = np.maximum(self._counts(pre, voc) - lay.content, 0)
        rows, mapping = self.new_rows(pre.n, lay.max_length, lay.dtype)
        if pre.n:
            K.launch(self.target, ENCODE_LEFT_ROWS, pre.n, pre.group, voc, (rows, mapping),
                     K.to_device(skips, self.target, self.xp), lay.content, flags)
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def _host_rows(self, pieces: Any, offsets: Any, lay: Layout, flags: int, left_trunc: bool) -> Rows:
        """Rows framed on the host from ragged pieces (:func:`~triton_textops.ops.core.rows.window_rows`, HF's
        windows on either side) with the template's types, uploaded as one copy."""
        ids = np.asarray(K.to_host(pieces, self.target)).astype(np.int64, copy=False)
        off = np.asarray(K.to_host(offsets, self.target)).astype(np.int64, copy=False)
        if not lay.overflow:  # one window a text: its last (left) or first (right) content pieces
            lens = np.diff(off)
            take = np.minimum(lens, lay.content)
            start = off[:-1] + (lens - take if left_trunc else 0)
            new_off = np.zeros(off.shape[0], dtype=np.int64)
            np.cumsum(take, out=new_off[1:])
            idx = np.repeat(start - new_off[:-1], take) + np.arange(int(new_off[-1]))
            ids, off = ids[idx], new_off
        specials = (flags & F_SPECIALS) != 0
        pre = self.spec.pre if specials else []
        suf = self.spec.suf if specials else []
        pad = self.pad_id
        out, mask, mapping = window_rows(ids, off, width=lay.max_length,
                                         stride=lay.content - lay.step if lay.overflow else 0,
                                         prefix=[i for i, _ in pre], suffix=[i for i, _ in suf],
                                         pad_id=0 if pad is None else pad, left_pad=(flags & F_LEFT_PAD) != 0,
                                         left_trunc=left_trunc, dtype=lay.dtype)
        types = self._host_types(mask, mapping, pre, suf, (flags & F_LEFT_PAD) != 0)
        return Rows(*K.to_device_many([out, mask, types.astype(lay.dtype), mapping], self.target, self.xp))

    def _host_types(self, mask: np.ndarray, mapping: np.ndarray, pre: list, suf: list, left_pad: bool) -> np.ndarray:
        """Token types of host rows: the template's, the text's type in each text's first window (0 in the
        others, as HF), 0 on padding."""
        n_rows, width = mask.shape
        used = mask.sum(axis=1).astype(np.int64)
        at = width - used if left_pad else np.zeros(n_rows, dtype=np.int64)
        q = np.arange(width)[None, :] - at[:, None]  # position within the used part
        npre, nsuf = len(pre), len(suf)
        take = used - npre - nsuf
        first = np.ones(n_rows, dtype=bool)
        first[1:] = mapping[1:] != mapping[:-1]
        pre_t = np.array([y for _, y in pre] + [0], dtype=np.int64)
        suf_t = np.array([y for _, y in suf] + [0], dtype=np.int64)
        types = np.where(first[:, None], self.spec.seq_type, 0) * np.ones((1, width), dtype=np.int64)
        types = np.where(q < npre, pre_t[np.clip(q, 0, npre)], types)
        ts = q - npre - take[:, None]
        types = np.where(ts >= 0, suf_t[np.clip(ts, 0, nsuf)], types)
        return np.where((q < 0) | (q >= used[:, None]), 0, types)

    def _windows(self, pre: PreTokens, lay: Layout, flags: int, voc: tuple) -> Encoding:
        """Overflow windows (right truncation): a counting launch, one copy of the counts, one launch."""
        plan = window_plan(self._counts(pre, voc), lay.content, lay.step, True)  # raises for bad rows
        rows, mapping = self.new_rows(int(plan[-1]), lay.max_length, lay.dtype)
        if pre.n:
            K.launch(self.target, ENCODE_WINDOWS, pre.n, pre.group, voc, (rows, mapping),
                     K.to_device(plan, self.target, self.xp), lay.content, lay.step, flags)
        return Encoding(rows[0], rows[1], rows[2], mapping)

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
        """WordPiece and post-processing on the pre-tokens: WordPiece written straight into the rows (right truncation and
        padding). Fixed-length rows: one launch; with overflow windows: a counting launch, one copy of the counts,
        one launch. ``check=False`` leaves the UTF-8 status of ``pre`` to the caller (:meth:`PreTokens.check`)."""
        lay = self.rows_layout(max_length, stride, return_overflowing_tokens, add_special_tokens, dtype)
        pre = self._own(pre)
        check = check_bool("check", check)
        flags = F_SPECIALS if lay.specials else 0
        if lay.overflow:
            return self._windows(pre, lay, flags, self.wordpiece_args())
        n = pre.n
        rows, mapping = self.new_rows(n, lay.max_length, lay.dtype)
        if n:
            K.launch(self.target, ENCODE_ROWS, n, pre.group, self.wordpiece_args(), (rows, mapping), lay.content,
                     flags)
        if check:
            pre.check()
        return Encoding(rows[0], rows[1], rows[2], mapping)

    def _encode_fused(self, batch: TextBatch, lay: Layout, flags: int, sp: Specials, voc: tuple) -> Encoding:
        """Fixed-length rows in ONE launch: normalize + pre-tokenize into scratch arrays, then WordPiece and packing of the
        same text by the same thread (the tokenize model's and ``encode_rows``' usual case)."""
        norm, xp = self.normalizer, self.xp
        n = batch.n
        rows, mapping = self.new_rows(n, lay.max_length, lay.dtype)
        txt = xp.empty((3, n), dtype=np.int64)
        if n:
            K.launch(self.target, ENCODE_FUSED, n, *norm.stage_args(batch, sp, txt), voc, (rows, mapping),
                     lay.content, flags)
        raise_bad_rows(K.to_host(txt[STATUS], self.target))
        return Encoding(rows[0], rows[1], rows[2], mapping)

    # ------------------------------------------------------------------------------------------- decoding

    def decode(self, ids: Any, offsets: Any, *, skip_special_tokens: bool = False,
               errors: str | None = "strict") -> list[str] | list[bytes]:
        """Each text of ``ids`` (flat, ``offsets`` n+1, host or device) as HF's ``Tokenizer.decode``: its tokens
        (``skip_special_tokens``: without the special added tokens) through the file's decoder (a vocab.txt: HF's
        WordPiece decoder, ``##``, cleanup on). ``errors``: "strict" / "replace" (str; a WordPiece decode is always
        UTF-8) or None (each text's UTF-8 bytes). An id without a token is an :class:`InputError` naming the row, the
        position and the id (HF drops it)."""
        return decode_batch(self, (DECODE_COUNT, DECODE_WRITE), self._dec, ids, offsets, skip_special_tokens,
                            errors, f"size {self.n_ids}: ids 0 .. {self.n_ids - 1} that have a token")

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of one text as strings (debugging aid)."""
        if not isinstance(text, str):
            raise InputError(f"text must be a str, got {type(text).__name__}")
        pieces, _ = self.wordpiece(self.pretokenize([text]))
        return [self._names[int(i)] for i in K.to_host(pieces, self.target)]
