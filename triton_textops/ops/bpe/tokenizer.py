""":class:`BPETokenizer`: byte-level BPE exact to tiktoken (rank files) and HF tokenizers (tokenizer.json), on the
CPU or the GPU, from one source.

``encode`` gives ragged ids (two launches, one device-to-host copy: the counts and statuses), ``encode_rows``
padded rows + mask (one launch, one copy: the statuses), ``decode`` the bytes of each text's tokens.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.bpe import formats as F
from triton_textops.ops.bpe.decode import DECODE_COUNT, DECODE_WRITE
from triton_textops.ops.bpe.encode import (
    COMPACT,
    F_DISALLOWED,
    F_LSTRIP,
    F_MATCH,
    F_NORMALIZED,
    F_RSTRIP,
    F_SINGLE_WORD,
    added_arrays,
    encode_kernels,
)
from triton_textops.ops.bpe.limits import limits_array, plan_limits
from triton_textops.ops.bpe.merge import CACHE_HEAD, CACHE_SHAPE, N_WORK_ROWS, Vocab
from triton_textops.ops.bpe.pretok import class_tables
from triton_textops.ops.bpe.rankfiles import read_encoding, read_js_tiktoken, read_rank_file, read_tekken
from triton_textops.ops.bpe.regex import RegexSplitter
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import allocate, check_bool, check_ids_dtype, check_int
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.decode import decode_batch
from triton_textops.ops.core.output import Ragged, Rows
from triton_textops.ops.core.placement import Placed
from triton_textops.ops.core.rows import window_rows
from triton_textops.ops.core.status import raise_bad_counts
from triton_textops.ops.core.unorm import FORMS, form_expansion, form_tables, nfc_normalize
from triton_textops.ops.sentencepiece.normalize import OP_FORM, normalize_texts

Specials = Literal["all"] | Collection[str] | None
_NO_ROWS = np.empty((2, 0, 0), dtype=np.int64)  # the encode kernel's rows argument for ragged output
_ONE_DATA = 5  # the text buffer's index in a one-text call's arguments: (slot, slots, chunk, chunks, n, data, ...)
_ONE_OFFSETS = np.zeros(2, dtype=np.int64)  # a one-text result's offsets, copied (faster than np.array)
_NO_TEXT = np.frombuffer(b"", dtype=np.uint8)  # the data slot of a one-text plan between calls
_frombuffer = np.frombuffer  # (a global, not an attribute lookup, in the one-text path)
_COUNTS = K.COUNTS
_INT64 = np.int64
SCRATCH_KEEP = 1 << 22  # scratch entries (~29 bytes each) a CPU thread keeps between calls
_POOL = threading.local()  # those arrays (nbuf, ids, work), shared by every tokenizer the thread runs: the kernels
# write a text's ids there and copy them out before the call returns, so no result refers to them


def _one_span(texts: Any) -> tuple[np.ndarray, int, int] | None:
    """(data, start, end) of a NumPy ``(data, offsets)`` pair of one text, the data as the CPU kernels take it
    (read-only uint8), for :meth:`BPETokenizer.encode`'s one-text path (a list of one str / bytes is taken there);
    None for anything else."""
    if type(texts) is tuple and len(texts) == 2 and all(type(a) is np.ndarray for a in texts) \
            and texts[1].shape == (2,):
        batch = TextBatch.from_texts(texts, np, "cpu")  # (checked; the kernel checks the span)
        return batch.data, int(batch.offsets[0]), int(batch.offsets[1])
    return None


@dataclass
class _OnePlan:
    """The one-text path's kernel call for one set of options on one thread (:meth:`BPETokenizer._encode_one`):
    the compiled entry, its arguments (the text's buffer at :data:`_ONE_DATA`, set per call: one list, not a tuple
    built per call) and the largest text end its scratch holds."""

    entry: Any
    args: list
    offsets: np.ndarray  # (2,) int64: the text's (start, end), written per call
    counts: np.ndarray  # (1,) int64
    ids: np.ndarray  # the ids scratch (text ids at mult * start)
    max_end: int


class BPETokenizer(Placed):
    """Byte-level BPE (GPT-2, r50k/p50k, cl100k / Llama-3, Qwen2, o200k) from a tiktoken rank file, an HF
    ``tokenizer.json`` or GPT-2's ``encoder.json`` + ``vocab.bpe``; ``device`` "cpu", "cuda" or "auto". Implements
    the :class:`~triton_textops.ops.tokenizer.Tokenizer` protocol."""

    family = "bpe"

    def __init__(self, spec: F.BPESpec, *, device: str = "cpu") -> None:
        self.spec = spec
        self.tables = Vocab(spec)
        self.n_ids = self.tables.n_ids
        self.added = {a.content.decode("utf-8", "surrogateescape"): a for a in spec.added}
        self.special_ids = sorted({a.id for a in spec.added if a.special})
        self._match_all = spec.match_added
        toks: list[bytes] = [b""] * self.n_ids
        for tok, i in spec.vocab.items():
            toks[i] = tok
        for a in spec.added:
            toks[a.id] = spec.decode_bytes.get(a.id, toks[a.id] or a.content)
        dec_off = np.zeros(self.n_ids + 1, dtype=np.int64)
        np.cumsum([len(t) for t in toks], out=dec_off[1:])
        skip = np.zeros(self.n_ids, dtype=np.uint8)
        skip[self.special_ids] = 1
        self._dec_host = (np.frombuffer(b"".join(toks), dtype=np.uint8), dec_off, skip)
        # the normalizer: one Unicode form (NFC, or a program of that form alone) by the form's own stage, any other
        # program by the program stage (two areas of a * n + b bytes, ping-pong; b: in the extra entries)
        prog = spec.normalizer
        self._form = "nfc" if spec.nfc else FORMS[prog.ops[0][3]] if prog is not None and len(prog.ops) == 1 \
            and prog.ops[0][0] == OP_FORM else ""
        self._prog = prog if prog is not None and not self._form else None
        na, nb = self._prog.bound() if self._prog else (form_expansion(self._form) if self._form else 1, 0)
        self._norm_extra = 2 * nb + 2 if self._prog else 0
        # scratch per input byte: the normalized output (<= na bytes per byte; a program: two areas) and, with a
        # prefix space, a copy of each piece after a space (pieces are disjoint: <= the normalized bytes + one space
        # per input byte)
        self.mult = 2 * na if self._prog else na
        self.mult += na + 1 if spec.add_prefix_space else 0
        self.splitter = RegexSplitter(spec.splits, spec.flavor) if spec.family == F.REGEX else None
        self._encode = encode_kernels(spec.family, "program" if self._prog else bool(self._form), spec.merges is None,
                                      self.splitter is not None and self.splitter.dfa_only)
        self._rx_extra = self.splitter.columns if self.splitter else 0  # its state: merge work columns per text
        self._limits = (spec.truncation, spec.padding) if spec.truncation or spec.padding else None
        self._cfg_host = np.array([int(spec.add_prefix_space), self.mult,
                                   1 + self._rx_extra + self._norm_extra + len(spec.prefix) + len(spec.suffix),
                                   len(spec.prefix),
                                   len(spec.suffix)]
                                  + spec.prefix + spec.suffix, dtype=np.int64)
        self._set_device(device)
        if self.target == "cpu":  # the default options' tables, and the loading thread's merge cache and one-text
            # plan, made now rather than in the first call (which would then take longer than the next ones)
            self._one_plan(_NO_TEXT, 0, 0, True, None, ())

    def _place(self) -> None:
        t, xp = self.target, self.xp
        self._voc = self.tables.on(t, xp)
        self._ctab = class_tables(t, xp)
        if self.splitter is not None:
            self._ctab += tuple(K.to_device(a, t, xp) for a in self.splitter.tables())
        self._ntab = _up(self._prog.tables(), t, xp) if self._prog else form_tables(self._form or "nfc", t, xp)
        self._dec = tuple(K.to_device(a, t, xp) for a in self._dec_host)
        self._cfg = K.to_device(self._cfg_host, t, xp)
        self._lim = K.to_device(limits_array(self.spec.truncation, self.spec.padding), t, xp)
        self._no_drop = K.to_device(np.zeros(1, dtype=np.int64), t, xp)  # (COMPACT: nothing cut; not 0-size,
        # whose CuPy pointer is null)
        self._adds: dict[Any, tuple] = {}
        self._options: dict[Any, tuple] = {}
        self._tls = threading.local()
        self._one_cpu = t == "cpu" and self._limits is None  # encode's one-text path applies (_encode_one)

    # ------------------------------------------------------------------------------------- loading

    @classmethod
    def from_tiktoken(cls, path: str | os.PathLike, *, encoding: str | None = None, pattern: str | None = None,
                      special_tokens: dict[str, int] | None = None, device: str = "cpu") -> BPETokenizer:
        """A tiktoken ``.tiktoken`` rank file: with a named encoding's pattern and specials (``gpt2``,
        ``r50k_base``, ``p50k_base``, ``cl100k_base``, ``o200k_base``, ``qwen2``; the file must have exactly that
        encoding's ranks; or a family whose specials follow the ranks: ``llama3`` / ``llama4``, Meta's
        ``tokenizer.model`` as llama-models builds it, ``whisper`` / ``whisper-multilingual`` /
        ``whisper-large-v3``, Whisper's ``gpt2.tiktoken`` / ``multilingual.tiktoken`` as ``whisper.tokenizer.
        get_encoding`` builds it, 99 or 100 languages), or with its own ``pattern`` (fancy-regex, as tiktoken reads
        it) and ``special_tokens`` (name -> id), as ``tiktoken.Encoding(pat_str=..., special_tokens=...)``.
        Exact to tiktoken's ``Encoding`` so built (not to llama-models' ``encode``, which also cuts texts of over
        25 000 characters without a space into pieces)."""
        if pattern is not None:
            if encoding is not None:
                raise ConfigError("from_tiktoken: pass encoding= or pattern= (with special_tokens=), not both")
            return cls(read_rank_file(path, pattern=pattern, special_tokens=special_tokens), device=device)
        if encoding is None:
            raise ConfigError("from_tiktoken: pass encoding= (a tiktoken encoding name) or pattern=")
        if special_tokens is not None:
            raise ConfigError("from_tiktoken: special_tokens= goes with pattern= (a named encoding has its own)")
        return cls(read_encoding(path, encoding), device=device)

    @classmethod
    def from_tekken(cls, path: str | os.PathLike, *, device: str = "cpu") -> BPETokenizer:
        """A Mistral Tekken ``.json`` file, as mistral-common's ``Tekkenizer`` encodes (no BOS / EOS: the
        specials are ids 0 .. n - 1, never matched in text unless allowed)."""
        return cls(read_tekken(path), device=device)

    @classmethod
    def from_js_tiktoken(cls, path: str | os.PathLike, *, device: str = "cpu") -> BPETokenizer:
        """A JS-tiktoken rank JSON (``{"pat_str", "special_tokens", "bpe_ranks"}``, e.g. the ``claude.json`` of
        ``@anthropic-ai/tokenizer``), applied as that package does: NFKC, then every special token matched. The NFKC is
        HF's tables (ops.core.unorm): the JS engine's is newer Unicode, so code points assigned since 12.1 can differ."""
        return cls(read_js_tiktoken(path), device=device)

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, *, device: str = "cpu") -> BPETokenizer:
        """An HF tokenizer directory (``tokenizer.json``, + ``tokenizer_config.json`` when present), or GPT-2's
        ``encoder.json`` + ``vocab.bpe`` in it."""
        d = os.fspath(directory)
        if os.path.isdir(d) and not os.path.exists(os.path.join(d, "tokenizer.json")) \
                and os.path.exists(os.path.join(d, "vocab.bpe")):
            return cls(F.read_gpt2_files(os.path.join(d, "encoder.json"), os.path.join(d, "vocab.bpe")),
                       device=device)
        return cls(F.read_tokenizer_json(d), device=device)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, device: str = "cpu", encoding: str | None = None,
                  pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> BPETokenizer:
        """One file known by its content: a byte-level BPE ``tokenizer.json``, or a ``.tiktoken`` rank file
        (``encoding`` its name, or ``pattern`` + ``special_tokens`` its own, else known by its file name or number
        of ranks), as :meth:`triton_textops.Tokenizer.from_file`, which this must be."""
        from triton_textops.ops.tokenizer import load_file  # noqa: PLC0415 (the loader imports this module)

        tok = load_file(path, device=device, encoding=encoding, pattern=pattern, special_tokens=special_tokens)
        if not isinstance(tok, cls):
            raise ConfigError(f"{os.fspath(path)}: a {tok.family} tokenizer, not a byte-level BPE one")
        return tok

    @classmethod
    def from_gpt2_files(cls, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, *,
                        device: str = "cpu") -> BPETokenizer:
        """GPT-2's original ``encoder.json`` + ``vocab.bpe`` (``<|endoftext|>`` a special, as tiktoken's gpt2)."""
        return cls(F.read_gpt2_files(encoder_json, vocab_bpe), device=device)

    # ------------------------------------------------------------------------------------- encoding

    def _normalized(self, content: bytes) -> bytes:
        """What a normalized added token matches: its content normalized, as HF builds its pattern (by this
        package's kernels and tables, not Python's ``unicodedata``, whose Unicode version differs; a form's kernel
        runs only for a content that is not ASCII, which every form leaves as it is)."""
        if self._prog is not None:
            return normalize_texts(self._prog, [content])[0]
        if not self._form or content.isascii():
            return content
        got = nfc_normalize([content], form=self._form)[0]
        return content if got is None else got

    def _added_tables(self, allowed: Specials, disallowed: Specials) -> tuple:
        """The added tokens a kernel matches (sorted by first byte), for this allowed / disallowed choice."""
        key = (_key(allowed), _key(disallowed))
        got = self._adds.get(key)
        if got is not None:
            return got
        names = set(self.added)
        if allowed is None:
            allow = names if self._match_all else set()
        elif allowed == "all":
            allow = names
        else:
            allow = _names("allowed_special", allowed, names)
        refuse = (names - allow) if disallowed == "all" else _names("disallowed_special", disallowed or (), names)
        items = []
        for a in self.spec.added:  # (every entry, in the format's order: a content can be listed twice, with other
            name = a.content.decode("utf-8", "surrogateescape")  # flags, e.g. matched raw and normalized)
            f = (F_MATCH if name in allow else 0) | (F_DISALLOWED if name in refuse and name not in allow else 0)
            if f and a.content:
                f |= (F_NORMALIZED if a.normalized and self._match_all else 0) | (F_LSTRIP if a.lstrip else 0) \
                    | (F_RSTRIP if a.rstrip else 0) | (F_SINGLE_WORD if a.single_word else 0)
                items.append((self._normalized(a.content) if f & F_NORMALIZED else a.content, a.id, f))
        got = tuple(K.to_device(a, self.target, self.xp) for a in added_arrays(items))
        if len(self._adds) < 16:
            self._adds[key] = got
        return got

    def _opts(self, add_special_tokens: Any, allowed: Specials, disallowed: Specials) -> tuple:
        """(config, added-token tables, scratch entries per text beyond the bytes) of these options: checked and
        built once per (hashable) set of options, the usual case being the same options again."""
        key = _options_key(add_special_tokens, allowed, disallowed)
        try:
            return self._options[key]
        except (KeyError, TypeError):
            opts = self._options_for(add_special_tokens, allowed, disallowed)
            if len(self._options) < 16:
                try:
                    self._options[key] = opts
                except TypeError:  # an unhashable collection of names
                    pass
            return opts

    def _launch_args(self, batch: TextBatch, add_special_tokens: Any, allowed: Specials, disallowed: Specials) -> tuple:
        """The encode kernels' arguments for ``batch``: tables, config and the scratch sized from its bytes."""
        cfg, adds, extra = self._opts(add_special_tokens, allowed, disallowed)
        size = self.mult * int(batch.data.shape[0]) + extra * batch.n + 1
        if self.target == "cpu":  # merge work: a region per kernel share, as long as the longest text's
            off = batch.offsets
            longest = int(batch.data.shape[0]) if batch.n <= 1 else int((off[1:] - off[:-1]).max())
            wsize = K.get_num_threads() * (self.mult * max(longest, 0) + extra) + 1
        else:  # one thread per text, all at once: a region per text
            wsize = size
        nbuf, work, ids = self._scratch(size, wsize)
        nread = nbuf
        if isinstance(batch.data, np.ndarray) and not batch.data.flags.writeable:  # the CPU's text buffers
            nread = nbuf.view()
            nread.flags.writeable = False
        return (batch.data, batch.offsets, self._voc, self._ctab, adds, self._ntab, cfg,
                (nbuf, work, ids, nread, self._merge_cache()))

    def _merge_cache(self) -> tuple:
        """The merge cache of the encode kernel (:data:`~triton_textops.ops.bpe.merge.CACHE_SHAPE`): on the CPU
        the calling thread's, a row per kernel share, kept across calls (a piece's ids depend on the vocabulary
        alone; :func:`_thread_cache`); on the GPU none (0 rows: one thread per text has little to reuse)."""
        got = getattr(self._tls, "cache", None)
        shares = K.get_num_threads() if self.target == "cpu" else 0
        if got is None or got[0].shape[0] < shares:
            got = _thread_cache(self, shares) if shares else \
                (allocate(self.xp, (0, 1), np.int64, "the merge cache"),
                 allocate(self.xp, (0, CACHE_SHAPE[2]), np.uint8, "the merge cache"))
            self._tls.cache = got
            self._tls.plans = {}  # (the one-text plans hold the arrays replaced)
        return got

    def _options_for(self, add_special_tokens: Any, allowed: Specials, disallowed: Specials) -> tuple:
        """(config, added-token tables, scratch entries per text beyond the bytes) of these options, checked."""
        specials = check_bool("add_special_tokens", add_special_tokens)
        cfg = self._cfg
        if not specials and (self.spec.prefix or self.spec.suffix):
            cfg = K.to_device(np.concatenate([self._cfg_host[:2], [1 + self._rx_extra + self._norm_extra, 0, 0]]),
                              self.target, self.xp)
        extra = 1 + self._rx_extra + self._norm_extra + (len(self.spec.prefix) + len(self.spec.suffix) if specials
                                                         else 0)
        return cfg, self._added_tables(allowed, disallowed), extra

    def _scratch(self, size: int, wsize: int) -> tuple[Any, Any, Any]:
        """Normalized bytes and ids for ``size`` scratch entries, merge work rows of ``wsize`` columns. On the CPU,
        arrays of up to :data:`SCRATCH_KEEP` entries are kept by their thread (:data:`_POOL`, for every tokenizer
        it runs) and reused: a kernel only needs them large enough. Small batches spent more time allocating than
        tokenizing, and a large batch's first touch of fresh pages took as long as its tokenizing; kept per
        tokenizer, each new tokenizer's first large batch paid those page faults again (figures:
        benchmarks/RESULTS.md, Design measurements, ops/bpe/tokenizer.py: _scratch)."""
        xp = self.xp
        pool = _POOL if self.target == "cpu" else None
        nsize = size if self.mult > 1 or self._form else 1  # (no normalized copy: a placeholder)
        got = []
        for name, need, least, rows, dtype, what in (
                ("nbuf", nsize, 1 << 16, (), np.uint8, "the normalized text"),
                ("ids", size, 1 << 16, (), np.int32, "the ids scratch"),
                ("work", wsize, 1 << 12, (N_WORK_ROWS,), np.int32, "the merge scratch")):
            arr = getattr(pool, name, None)
            if arr is None or arr.shape[-1] < need:
                keep = pool is not None and need <= SCRATCH_KEEP
                arr = allocate(xp, (*rows, max(need, least) if keep and need > 1 else need), dtype, what)
                if keep:
                    setattr(pool, name, arr)
                    self._tls.plans = {}  # (this tokenizer's one-text plans hold the arrays replaced)
            got.append(arr)
        nbuf, ids, work = got
        return nbuf, work, ids

    def encode(self, texts: Any, *, add_special_tokens: bool = True, allowed_special: Specials = None,
               disallowed_special: Specials = (), gpu_min_batch: int | None = None) -> Ragged:
        """Token ids of each text: exactly tiktoken's ``encode`` (rank files) or HF's ``Tokenizer.encode``
        (tokenizer.json). ``allowed_special``: the added tokens matched in the text (None: the format's default,
        every added token for tokenizer.json, none for rank files, i.e. ``encode_ordinary``; "all"; or names);
        ``disallowed_special`` ("all" or names): a text containing one is an :class:`InputError` (tiktoken's
        ``encode`` check). ``add_special_tokens``: the template's BOS/EOS (tokenizer.json). A tokenizer.json's
        ``truncation`` / ``padding`` apply as in HF's ``encode_batch`` (:meth:`encode_rows` takes its own)."""
        if self._one_cpu:  # one text on the CPU: the direct kernel call (_encode_one)
            if type(texts) is list and len(texts) == 1:
                text = texts[0]
                if type(text) is str:
                    try:
                        raw = text.encode("utf-8")
                    except UnicodeEncodeError as e:
                        raise InputError(f"row 0: text is not valid UTF-8 ({e.reason})",
                                         rows=np.zeros(1, np.int64)) from None
                    return self._encode_one(_frombuffer(raw, np.uint8), 0, len(raw), add_special_tokens,
                                            allowed_special, disallowed_special)
                if type(text) is bytes:  # (read-only: the type the kernel was compiled for)
                    return self._encode_one(_frombuffer(text, np.uint8), 0, len(text), add_special_tokens,
                                            allowed_special, disallowed_special)
            else:
                one = _one_span(texts)
                if one is not None:
                    return self._encode_one(*one, add_special_tokens, allowed_special, disallowed_special)
        return self._encode_batch(texts, add_special_tokens, allowed_special, disallowed_special, gpu_min_batch,
                                  self._limits)

    def _encode_batch(self, texts: Any, add_special_tokens: Any, allowed_special: Specials,
                      disallowed_special: Specials, gpu_min_batch: Any, limits: Any) -> Ragged:
        """:meth:`encode` of a batch, the file's truncation / padding applied when ``limits`` (None: all ids)."""
        if self.runs_on_cpu(texts, gpu_min_batch):
            r = self.on_cpu()._encode_batch(texts, add_special_tokens, allowed_special, disallowed_special, None,
                                            limits)
            ids, off = K.to_device_many([r.ids, r.offsets], self.target, self.xp)
            return Ragged(ids, off)
        batch = TextBatch.from_texts(texts, self.xp, self.target)
        args = self._launch_args(batch, add_special_tokens, allowed_special, disallowed_special)
        n = batch.n
        xp = self.xp
        cnt = xp.empty(n, dtype=np.int64)
        if n:
            K.launch(self.target, self._encode, n, *args, cnt, (xp.empty((2, 0, 0), dtype=np.int64), 0, False, False))
        host = K.to_host(cnt, self.target)
        raise_bad_counts(host)
        drop, cut = self._no_drop, None
        if limits is not None:  # the file's truncation / padding: planned here, applied by COMPACT
            specials = check_bool("add_special_tokens", add_special_tokens)  # (checked by _launch_args)
            npre, nsuf = (len(self.spec.prefix), len(self.spec.suffix)) if specials else (0, 0)
            host, cut = plan_limits(host, npre, nsuf, *limits)
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(host, out=off[1:])
        if cut is not None and cut.shape[0]:  # (one upload)
            d_off, drop = K.to_device_many([off, cut], self.target, xp)
        else:
            d_off = K.to_device(off, self.target, xp)
        out = xp.empty(int(off[-1]), dtype=np.int64)
        if n:
            K.launch(self.target, COMPACT, n, batch.offsets, args[6], args[7][2], cnt, drop, self._lim, d_off, out)
        return Ragged(out, d_off)

    def _encode_one(self, data: np.ndarray, lo: int, hi: int, add_special_tokens: Any, allowed: Specials,
                    disallowed: Specials) -> Ragged:
        """:meth:`encode` of text ``data[lo:hi]`` on the CPU, the shortest way (the serving case of one request):
        the kernel's compiled entry called directly with arguments made once per thread and options
        (:class:`_OnePlan`), its ids read from the start of the text's scratch region (no compaction kernel)."""
        try:  # (the key of _options_key, built here: a call less)
            plan = self._tls.plans[type(add_special_tokens), add_special_tokens, allowed, disallowed]
        except (AttributeError, KeyError, TypeError):
            plan = None
        if plan is None or hi > plan.max_end or lo < 0 or hi < lo:
            plan = self._one_plan(data, lo, hi, add_special_tokens, allowed, disallowed)
        off = plan.offsets
        off[0] = lo
        off[1] = hi
        args = plan.args
        args[_ONE_DATA] = data
        _COUNTS["launch"] += 1  # (K.launch_entry's counts, here: its call was a visible part of a one-text call)
        _COUNTS["launch_cpu"] += 1
        plan.entry(*args)
        args[_ONE_DATA] = _NO_TEXT  # (the plan outlives the call: it keeps no caller's buffer alive)
        n = plan.counts.item()
        if n < 0:
            raise_bad_counts(plan.counts)
        base = self.mult * lo  # the text's scratch region (encode.bpe_text)
        out_off = _ONE_OFFSETS.copy()
        out_off[1] = n
        return Ragged(plan.ids[base:base + n].astype(_INT64), out_off)

    def _one_plan(self, data: np.ndarray, lo: int, hi: int, add_special_tokens: Any, allowed: Specials,
                  disallowed: Specials) -> _OnePlan:
        """The :class:`_OnePlan` of these options for a text ending at ``hi`` (its scratch made large enough), kept
        for the next calls on this thread when the options are hashable and the scratch is the thread's. A bad span
        gets a plan for the data's length (the kernel then reports the span)."""
        end = hi if 0 <= lo <= hi <= data.shape[0] else data.shape[0]
        args = self._launch_args(TextBatch._made(data, np.array([0, end], dtype=np.int64), np), add_special_tokens,
                                 allowed, disallowed)
        counts = np.empty(1, dtype=np.int64)
        offsets = np.zeros(2, dtype=np.int64)
        call = [0, 1, 0, 1, 1, data, offsets, *args[2:], counts, (_NO_ROWS, 0, False, False)]
        work, ids = args[7][1:3]
        extra = self._opts(add_special_tokens, allowed, disallowed)[2]
        room = min(ids.shape[0] - 1, work.shape[1])  # a text's region: mult * end + extra entries of both
        plan = _OnePlan(K.cpu_entry(self._encode, *call), call, offsets, counts, ids,
                        max((room - extra) // self.mult, 0))
        kept = getattr(_POOL, "ids", None) is ids and getattr(_POOL, "work", None) is work
        plans = self._tls.__dict__.setdefault("plans", {})
        if kept and len(plans) < 16:
            try:
                plans[_options_key(add_special_tokens, allowed, disallowed)] = plan
            except TypeError:  # an unhashable collection of names
                pass
        return plan

    def encode_rows(self, texts: Any, *, max_length: int | None = None, padding_side: str = "right",
                    truncation_side: str = "right", stride: int = 0, return_overflowing_tokens: bool = False,
                    add_special_tokens: bool = True, allowed_special: Specials = None,
                    disallowed_special: Specials = (), pad_id: int | None = None, dtype: str = "int64",
                    gpu_min_batch: int | None = None) -> Rows:
        """Padded rows + attention mask (HF's ``padding``/``truncation``: the template's specials are kept, the
        content is cut on ``truncation_side``). ``max_length`` None: the longest text's length (a counting
        pass first). ``pad_id``: default the tokenizer's pad token (tokenizer_config.json), else 0.
        ``return_overflowing_tokens``: every text's content in windows of ``max_length`` less the template,
        ``stride`` ids overlapping, each a row (HF's overflowing encodings, in its order), with
        ``overflow_to_sample_mapping``; the windows are framed on the host from the ragged ids."""
        for name, v in (("padding_side", padding_side), ("truncation_side", truncation_side)):
            if v not in ("left", "right"):
                raise InputError(f"{name} must be 'left' or 'right', got {v!r}")
        dt = check_ids_dtype(dtype)
        pad = self.pad_id if pad_id is None else check_int("pad_id", pad_id, -(1 << 31), (1 << 31) - 1)
        pad = 0 if pad is None else pad
        specials = check_bool("add_special_tokens", add_special_tokens)
        n_fixed = len(self.spec.prefix) + len(self.spec.suffix) if specials else 0
        stride = check_int("stride", stride, 0)
        if check_bool("return_overflowing_tokens", return_overflowing_tokens):
            if max_length is None:
                raise InputError("return_overflowing_tokens needs max_length (the windows' length)")
            width = check_int("max_length", max_length, n_fixed + 1, (1 << 31) - 1)
            if stride >= width - n_fixed:
                raise InputError(f"stride={stride} must be smaller than the content length per window "
                                 f"(max_length - special tokens = {width - n_fixed})")
            r = self._encode_batch(texts, False, allowed_special, disallowed_special, None, None)
            ids, mask, mapping = window_rows(
                K.to_host(r.ids, self.target), K.to_host(r.offsets, self.target), width=width, stride=stride,
                prefix=self.spec.prefix if specials else [], suffix=self.spec.suffix if specials else [],
                pad_id=pad, left_pad=padding_side == "left", left_trunc=truncation_side == "left", dtype=dt.type)
            return Rows(*K.to_device_many([ids, mask, np.zeros_like(ids), mapping], self.target, self.xp))
        if max_length is None:
            r = self.encode(texts, add_special_tokens=specials, allowed_special=allowed_special,
                            disallowed_special=disallowed_special, gpu_min_batch=gpu_min_batch)
            lens = np.diff(K.to_host(r.offsets, self.target))
            max_length = max(int(lens.max()) if lens.size else 0, n_fixed, 1)
        width = check_int("max_length", max_length, max(n_fixed, 1), (1 << 31) - 1)
        if self.runs_on_cpu(texts, gpu_min_batch):
            r = self.on_cpu().encode_rows(texts, max_length=width, padding_side=padding_side,
                                          truncation_side=truncation_side, add_special_tokens=specials,
                                          allowed_special=allowed_special, disallowed_special=disallowed_special,
                                          pad_id=pad, dtype=dtype)
            return Rows(*K.to_device_many([r.input_ids, r.attention_mask], self.target, self.xp))
        batch = TextBatch.from_texts(texts, self.xp, self.target)
        args = self._launch_args(batch, specials, allowed_special, disallowed_special)
        n = batch.n
        rows = allocate(self.xp, (2, n, width), dt.type, f"max_length={width}: {n} rows of ids and mask")
        cnt = self.xp.zeros(n, dtype=np.int64)
        if n:
            K.launch(self.target, self._encode, n, *args, cnt, (rows, pad, padding_side == "left",
                     truncation_side == "left"))
        raise_bad_counts(K.to_host(cnt, self.target))
        return Rows(rows[0], rows[1])

    def _config_id(self, key: str) -> int | None:
        """The id of the token tokenizer_config.json names under ``key`` (a string or an AddedToken dict)."""
        tok = self.spec.config.get(key)
        if isinstance(tok, dict):
            tok = tok.get("content")
        return self.token_to_id(tok) if isinstance(tok, str) else None

    @property
    def pad_id(self) -> int | None:
        """The pad token's id from tokenizer_config.json (``pad_token``), else None (rows pad with 0)."""
        return self._config_id("pad_token")

    @property
    def bos_id(self) -> int | None:
        """The BOS token's id from tokenizer_config.json (``bos_token``), else None."""
        return self._config_id("bos_token")

    @property
    def eos_id(self) -> int | None:
        """The EOS token's id from tokenizer_config.json (``eos_token``), else ``<|endoftext|>``'s when the file
        has it (GPT-2's and tiktoken's end of text), else None."""
        got = self._config_id("eos_token")
        return got if got is not None else self.token_to_id("<|endoftext|>")

    @property
    def unk_id(self) -> int | None:
        """None: byte-level BPE has no unknown token (every byte is a token)."""
        return self._config_id("unk_token")

    @property
    def vocab_size(self) -> int:
        """How many distinct ids the tokenizer has, added tokens and a rank file's empty token included (HF's
        ``get_vocab_size(True)``, tiktoken's ``n_vocab``)."""
        return len(set(self.spec.vocab.values()) | {a.id for a in self.spec.added} | set(self.spec.decode_bytes))

    def token_to_id(self, token: str | bytes) -> int | None:
        """The id of ``token``: an added token's content, a vocabulary string in the byte-level alphabet (HF's
        form: ``"Ġhello"``), or the token's raw bytes; None when there is none."""
        if isinstance(token, bytes):
            a = self.added.get(token.decode("utf-8", "surrogateescape"))
            return a.id if a is not None else self.spec.vocab.get(token)
        if not isinstance(token, str):
            raise InputError(f"token must be str or bytes, got {type(token).__name__}")
        a = self.added.get(token)
        if a is not None:
            return a.id
        raw = F._unmap(token)
        return self.spec.vocab.get(raw) if raw is not None else None

    def id_to_token(self, i: int) -> str | None:
        """The token of id ``i`` as HF names it: an added token's content, else its bytes in the byte-level
        alphabet; None for an id the tokenizer does not have."""
        i = check_int("id", i)
        names = self.__dict__.get("_names")
        if names is None:
            names = {v: "".join(F.BYTE_CHAR[b] for b in k) for k, v in self.spec.vocab.items()}
            names.update({a.id: a.content.decode("utf-8", "surrogateescape") for a in self.spec.added})
            self._names = names
        return names.get(i)

    # ------------------------------------------------------------------------------------- decoding

    def decode(self, ids: Any, offsets: Any, *, skip_special_tokens: bool = False,
               errors: str | None = "strict") -> list[bytes] | list[str]:
        """Each text of ``ids`` (flat, ``offsets`` n+1, host or device) as str: ``errors="strict"`` (an
        :class:`InputError` naming the row when its tokens' bytes are not UTF-8), ``"replace"`` (U+FFFD for invalid
        UTF-8, as HF's ByteLevel decoder), or ``None``: each text's token bytes. An id outside the vocabulary is an
        :class:`InputError` naming the row, the position and the id."""
        return decode_batch(self, (DECODE_COUNT, DECODE_WRITE), self._dec, ids, offsets, skip_special_tokens,
                            errors, f"size {self.n_ids}")

    def token_bytes(self, i: int) -> bytes:
        """The bytes token ``i`` decodes to."""
        pool, off, _ = self._dec_host
        return pool[off[i]:off[i + 1]].tobytes()


CACHES_FREE = 2  # merge caches (~3.1 MB a kernel share) a thread keeps for tokenizers to come once theirs are gone


def _thread_cache(owner: BPETokenizer, shares: int) -> tuple[np.ndarray, np.ndarray]:
    """A merge cache of ``shares`` rows for ``owner`` on the calling thread, emptied: the last one that a gone
    tokenizer left on this thread, else a new one. So a tokenizer made to replace another (a reload, a cold
    instance) writes no fresh pages: emptying a kept cache costs a fraction of making a new one (its 256 KB of
    slots a share set; figures: benchmarks/RESULTS.md, Design measurements, ops/bpe/tokenizer.py: _thread_cache).
    When ``owner`` goes, its cache is kept for the next (:data:`CACHES_FREE` at most a
    thread, the rest freed). A gone tokenizer's entries are never read: the head and the slots are reset."""
    spares = _POOL.__dict__.setdefault("spare_caches", [])
    slots, ents, nbytes, nids = CACHE_SHAPE
    width = CACHE_HEAD + slots + ents + nids
    got = None
    for i in range(len(spares) - 1, -1, -1):
        meta, pool = spares[i]
        if meta.shape[0] >= shares and meta.shape[1] == width and pool.shape[1] == nbytes:
            got = spares.pop(i)
            break
    if got is None:  # (np.empty: only the head and the slots need values; an entry or id is read only through a
        # slot that points to it, so the rest stays untouched until used)
        got = (np.empty((shares, width), dtype=np.int64), allocate(np, (shares, nbytes), np.uint8, "the merge cache"))
    got[0][:, :CACHE_HEAD] = [0, 0, 0, slots, ents]
    got[0][:, CACHE_HEAD:CACHE_HEAD + slots] = -1
    weakref.finalize(owner, _spare_cache, spares, got).atexit = False
    return got


def _spare_cache(spares: list, cache: tuple) -> None:
    """Keep a gone tokenizer's merge cache for its thread's next one (:func:`_thread_cache`), if there is room."""
    if len(spares) < CACHES_FREE:
        spares.append(cache)


def _up(x: Any, target: str, xp: Any) -> Any:
    """A nested tuple of host arrays on ``target``'s device."""
    return tuple(_up(a, target, xp) for a in x) if isinstance(x, tuple) else K.to_device(x, target, xp)


def _options_key(add_special_tokens: Any, allowed: Specials, disallowed: Specials) -> tuple:
    """The key of a set of encode options (hashing fails, TypeError, for an unhashable collection of names)."""
    return type(add_special_tokens), add_special_tokens, allowed, disallowed


def _key(x: Specials) -> Any:
    if x is None or isinstance(x, str):
        return x
    try:
        return frozenset(x)
    except TypeError:
        return id(x)


def _names(what: str, given: Any, names: set[str]) -> set[str]:
    if isinstance(given, str):
        raise InputError(f"{what} must be 'all' or a collection of token strings, got {given!r}")
    got = set(given)
    unknown = sorted(got - names)
    if unknown:
        raise InputError(f"{what}: {unknown[:3]} are not added tokens of this tokenizer")
    return got
