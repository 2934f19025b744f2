""":class:`SentencePieceTokenizer`: SentencePiece BPE with byte fallback (and, through the model slot, Unigram) from
an HF ``tokenizer.json`` or a sentencepiece ``.model``, exact to HF tokenizers / sentencepiece, on the CPU or the
GPU from one source.

``encode`` gives ragged ids (two launches: the encode kernel, the compaction; one device-to-host copy: the counts),
``encode_rows`` padded rows + mask (one launch, one copy: the statuses), ``decode`` each text.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.bpe.encode import (
    COMPACT,
    F_DISALLOWED,
    F_LSTRIP,
    F_MATCH,
    F_NORMALIZED,
    F_RSTRIP,
    F_SINGLE_WORD,
    added_arrays,
)
from triton_textops.ops.bpe.limits import limits_array, plan_limits
from triton_textops.ops.bpe.merge import CACHE_SHAPE, N_WORK_ROWS
from triton_textops.ops.bpe.pretok import class_tables
from triton_textops.ops.bpe.tokenizer import _key, _names, _thread_cache
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import allocate, check_bool, check_ids_dtype, check_int
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.decode import decode_batch
from triton_textops.ops.core.output import Ragged, Rows
from triton_textops.ops.core.placement import Placed
from triton_textops.ops.core.rows import window_rows
from triton_textops.ops.core.status import SIZE_BOUND
from triton_textops.ops.sentencepiece import decode as D
from triton_textops.ops.sentencepiece import formats as F
from triton_textops.ops.sentencepiece.encode import encode_kernels
from triton_textops.ops.sentencepiece.normalize import normalize_texts
from triton_textops.ops.sentencepiece.pretokenize import P_WORDS
from triton_textops.ops.sentencepiece.unigram import raise_bad

TIGHT_GROWTH = 3  # the tight layout's normalized bytes per input byte (a text beyond it runs again, worst-case);
# 3: a space replaced by U+2581 (Llama, Gemma) stays within it, only rare characters (nmt_nfkc's ligatures) grow more


def _layout(na: int, nb: int, ga: int, gb: int, shortest: int, tight: bool = False) -> tuple:
    """(lay, ids per byte, ids per text) of the encode kernel's scratch (the ``lay`` of
    :mod:`~triton_textops.ops.sentencepiece.encode`) for normalized segments of at most ``na * n + nb`` bytes,
    pre-tokens growing to ``ga * n + gb`` and the shortest added token's bytes ``shortest`` (0: none). ``tight``:
    ids at most one per normalized byte (the model stage checks room for that much per pre-token), not the bound
    with added tokens cutting the text into segments: the ids scratch is touched sparsely, text by text, and a
    large sparse one costs its (huge) pages' zeroing on the first touch."""
    lay = (2 * na + ga * na, 2 * (nb + 1) + ga * (nb + 1) + gb + 1, na, nb + 1, ga * na, ga * (nb + 1) + gb + 1)
    per = 2 * na + (1 + (2 * nb + shortest - 1) // shortest if shortest else 0) + 1
    if tight:
        per = min(per, na + 1)
    return np.array(lay, dtype=np.int64), per, 2 * nb + 2


def na_same(layouts: dict) -> bool:
    """Whether the tight layout is the worst-case one (the normalizer's bound is within TIGHT_GROWTH)."""
    return bool((layouts[True][0] == layouts[False][0]).all()) and layouts[True][1:] == layouts[False][1:]


def words_are_independent(spec: F.SPSpec) -> bool:
    """Whether BPE over a pre-token gives the same ids as BPE over its words, cut before each U+2581 that follows
    another character (what Gemma-style and Llama-2 legacy files, with no pre-tokenizer split, gain: short words,
    merged once each by the merge cache). So when no merge can join across a cut: no pair whose right symbol
    starts with U+2581 has a left one that does not end with it; no frozen piece holds U+2581 after another
    character; U+2581 is a piece (a run of unknown characters ends there) and ``ignore_merges`` is off (it looks
    the whole pre-token up). The merges of independent words are then those of the whole, whatever their order
    (ranks are integers: no sums)."""
    space = F.SPACE.encode()
    if spec.ignore_merges or space not in spec.vocab:
        return False
    starts = np.zeros(spec.n_ids, dtype=bool)  # each id's surface starts / ends with U+2581 (byte pieces: no)
    ends = np.zeros(spec.n_ids, dtype=bool)
    for tok, i in spec.vocab.items():
        if 0 <= i < spec.n_ids:
            starts[i] = tok.startswith(space)
            ends[i] = tok.endswith(space)
    byte_ids = spec.byte_ids[spec.byte_ids >= 0]
    starts[byte_ids] = ends[byte_ids] = False
    left, right = spec.pairs[0], spec.pairs[1]
    if (starts[right] & ~ends[left]).any():
        return False
    for p, _ in spec.frozen:
        k = p.find(space, 1)
        while k > 0:
            if p[k - 3:k] != space:
                return False
            k = p.find(space, k + 1)
    return True


def model_tables(spec: F.SPSpec) -> tuple:
    """The model stage's host tables of ``spec``: the one place the model slot (BPE or Unigram) is chosen, with
    :func:`~triton_textops.ops.sentencepiece.encode.encode_kernels` (the kernel variant) and :meth:`_cache`."""
    if spec.model == "unigram":  # (its host tables: ops.sentencepiece.unigram, sentencepiece's or HF's rules)
        return spec.unigram.host
    from triton_textops.ops.sentencepiece.bpe import vocab_tables  # noqa: PLC0415

    return vocab_tables(spec)


class SentencePieceTokenizer(Placed):
    """SentencePiece BPE with byte fallback (Llama-2, Mistral, Gemma, Phi-3 style files) and Unigram (T5, XLM-R
    style files), from tokenizer.json or sentencepiece ``.model`` files; ``device`` "cpu", "cuda" or "auto". Implements the :class:`~triton_textops.ops.tokenizer.Tokenizer`
    protocol."""

    family = "sentencepiece"

    def __init__(self, spec: F.SPSpec, *, device: str = "cpu") -> None:
        self.spec = spec
        self.n_ids = spec.n_ids
        self._model_host = model_tables(spec)
        self._encode = encode_kernels(spec.model)
        self.added = {a.content.decode("utf-8", "surrogateescape"): a for a in spec.added}
        self._norm_host = spec.normalizer.tables()
        self._pre_host = spec.pretokenizer.tables()
        self._pre_host[0][P_WORDS] = int(spec.model == "bpe" and words_are_independent(spec))
        na, nb = spec.normalizer.bound()
        ga, gb = spec.pretokenizer.growth()
        shortest = min((len(a.content) for a in spec.added if a.content), default=0)
        # (lay, ids per byte, ids per text) of the tight layout (TIGHT_GROWTH) and of the worst-case one (False)
        self._layouts = {tight: _layout(min(na, TIGHT_GROWTH) if tight else na, nb, ga, gb, shortest, tight)
                         for tight in (True, False)}
        self._normalized_added = self._normalize_added()
        pieces = list(spec.pieces) + [None] * (self.n_ids - len(spec.pieces))
        if spec.decoder.spm:  # sentencepiece's surfaces: control pieces empty, the unknown piece " \u2047 "
            types = spec.types + [0] * len(pieces)
            pieces = ["" if t == F.CONTROL else p for p, t in zip(pieces, types)]
            if 0 <= spec.unk_id < len(pieces):
                pieces[spec.unk_id] = " \u2047 "
        special = np.zeros(self.n_ids, dtype=np.uint8)
        special[[a.id for a in spec.added if a.special]] = 1
        dec = spec.decoder
        self._dec_host, self._is_byte = D.tables(pieces, special, dec.replace, dec.byte_fallback, dec.first_drop,
                                                 dec.strip_left, F.SPACE if dec.spm_lead else None, dec.spm_lead)
        self._limits = (spec.truncation, spec.padding) if spec.truncation or spec.padding else None
        self._set_device(device)

    def _place(self) -> None:
        t, xp = self.target, self.xp

        def up(x: Any) -> Any:
            return tuple(up(a) for a in x) if isinstance(x, tuple) else K.to_device(x, t, xp)

        self._mdl = up(self._model_host)
        self._ntab = up(self._norm_host)
        self._ptab = up(self._pre_host)
        self._ctab = class_tables(t, xp)
        self._lay = {k: K.to_device(v[0], t, xp) for k, v in self._layouts.items()}
        self._tights = (True, False) if t == "cpu" and not na_same(self._layouts) else (False,)  # (see _run)
        self._dec = up(self._dec_host)
        self._lim = K.to_device(limits_array(self.spec.truncation, self.spec.padding), t, xp)
        self._no_drop = K.to_device(np.zeros(1, dtype=np.int64), t, xp)
        self._opts: dict[Any, tuple] = {}
        self._tls = threading.local()

    # ------------------------------------------------------------------------------------- loading

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, *, device: str = "cpu") -> SentencePieceTokenizer:
        """A directory's ``tokenizer.json``, else its ``tokenizer.model`` (+ ``tokenizer_config.json``: its
        ``add_bos_token`` / ``add_eos_token``, as transformers' slow tokenizer adds them)."""
        d = Path(directory)
        if d.is_file():
            return cls.from_file(d, device=device)
        if (d / "tokenizer.json").is_file():
            return cls.from_file(d / "tokenizer.json", device=device)
        models = sorted(d.glob("*.model"))
        if len(models) != 1:
            raise ConfigError(f"{d}: no tokenizer.json and not exactly one .model file")
        spec = F.read_model_file(models[0])
        cfg = spec.config
        if cfg.get("add_bos_token", False) and isinstance(cfg.get("bos_token"), str):
            spec.prefix = [spec.pieces.index(cfg["bos_token"])]
        if cfg.get("add_eos_token", False) and isinstance(cfg.get("eos_token"), str):
            spec.suffix = [spec.pieces.index(cfg["eos_token"])]
        return cls(spec, device=device)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, device: str = "cpu") -> SentencePieceTokenizer:
        """A SentencePiece ``tokenizer.json`` or a sentencepiece ``.model`` file (exact to
        ``SentencePieceProcessor.encode``: no BOS / EOS)."""
        import json  # noqa: PLC0415

        p = Path(path)
        raw = p.read_bytes()
        if raw[:1] == b"{":
            return cls(F.read_tokenizer_json(p, json.loads(raw), p.parent), device=device)
        return cls(F.read_model_file(p), device=device)

    # ------------------------------------------------------------------------------------- encoding

    def _normalize_added(self) -> dict[int, bytes]:
        """The normalized form of each ``normalized`` added token (HF matches those after normalizing)."""
        todo = [a for a in self.spec.added if a.normalized and a.content]
        if not todo:
            return {}
        got = normalize_texts(self.spec.normalizer, [a.content for a in todo])
        return {id(a): g for a, g in zip(todo, got)}

    def _options(self, add_special_tokens: Any, allowed: Any, disallowed: Any, tight: bool = False) -> tuple:
        """(cfg, added-token tables, host cfg) of these options for the ``tight`` or the worst-case layout,
        built once per hashable set."""
        key = (type(add_special_tokens), add_special_tokens, _key(allowed), _key(disallowed), tight)
        got = self._opts.get(key)
        if got is not None:
            return got
        specials = check_bool("add_special_tokens", add_special_tokens)
        names = set(self.added)
        allow = names if allowed is None or allowed == "all" else _names("allowed_special", allowed, names)
        refuse = (names - allow) if disallowed == "all" else _names("disallowed_special", disallowed or (), names)
        items = []
        for a in self.spec.added:
            name = a.content.decode("utf-8", "surrogateescape")
            f = (F_MATCH if name in allow else 0) | (F_DISALLOWED if name in refuse and name not in allow else 0)
            content = self._normalized_added.get(id(a), a.content)
            if f and content:
                f |= (F_NORMALIZED if a.normalized else 0) | (F_LSTRIP if a.lstrip else 0) \
                    | (F_RSTRIP if a.rstrip else 0) | (F_SINGLE_WORD if a.single_word else 0)
                items.append((content, a.id, f))
        pre, suf = (self.spec.prefix, self.spec.suffix) if specials else ([], [])
        _, per, extra = self._layouts[tight]
        cfg = np.array([0, per, extra + len(pre) + len(suf), len(pre), len(suf), *pre, *suf], dtype=np.int64)
        got = (K.to_device(cfg, self.target, self.xp),
               tuple(K.to_device(a, self.target, self.xp) for a in added_arrays(items)), cfg)
        if len(self._opts) < 32:
            self._opts[key] = got
        return got

    def _args(self, batch: TextBatch, add_special_tokens: Any, allowed: Any, disallowed: Any,
              tight: bool = True) -> tuple:
        """The encode kernel's arguments for ``batch``, the scratch sized from its bytes by the ``tight`` layout
        (normalized text at most TIGHT_GROWTH times its input: real text) or by the worst-case one."""
        cfg, adds, cfg_host = self._options(add_special_tokens, allowed, disallowed, tight)
        lay = self._layouts[tight][0]
        nbytes = int(batch.data.shape[0])
        n = batch.n
        xp = self.xp
        bsize = int(lay[0]) * nbytes + int(lay[1]) * n + 1
        isize = int(cfg_host[1]) * nbytes + int(cfg_host[2]) * n + 1
        if self.target == "cpu":  # (a share of the byte and work scratch per kernel thread, for its longest text)
            off = batch.offsets
            longest = max(nbytes if n <= 1 else int((off[1:] - off[:-1]).max()), 0)
            wsize = K.get_num_threads() * (int(lay[4]) * longest + int(lay[5])) + 1
            bsize = K.get_num_threads() * (int(lay[0]) * longest + int(lay[1])) + 1
        else:
            wsize = bsize
        nbuf = allocate(xp, (bsize,), np.uint8, "the normalized text", filled=False)
        ids = allocate(xp, (isize,), np.int32, "the ids scratch", filled=False)
        if self.spec.model == "unigram":  # its work rows (best score, back link) where BPE has its merge cache
            work = allocate(xp, (1, wsize), np.int32, "the work columns", filled=False)
            cache = tuple(allocate(xp, (wsize + 1,), dt, "the Unigram work rows", filled=False)
                          for dt in (np.float64, np.int64))
        else:
            work = allocate(xp, (N_WORK_ROWS, wsize), np.int32, "the merge scratch", filled=False)
            cache = self._cache()
        return (batch.data, batch.offsets, self._mdl, self._ctab, adds, self._ntab, self._ptab, cfg,
                (nbuf, work, ids, self._lay[tight], cache))

    def _cache(self) -> tuple:
        """The calling thread's merge cache (CPU: a row per kernel share; GPU: none)."""
        got = getattr(self._tls, "cache", None)
        shares = K.get_num_threads() if self.target == "cpu" else 0
        if got is None or got[0].shape[0] < shares:
            got = _thread_cache(self, shares) if shares else \
                (allocate(self.xp, (0, 1), np.int64, "the merge cache"),
                 allocate(self.xp, (0, CACHE_SHAPE[2]), np.uint8, "the merge cache"))
            self._tls.cache = got
        return got

    def encode(self, texts: Any, *, add_special_tokens: bool = True, allowed_special: Any = None,
               disallowed_special: Any = (), gpu_min_batch: int | None = None) -> Ragged:
        """Token ids of each text: exactly HF's ``Tokenizer.encode_batch`` (tokenizer.json; the file's truncation
        and padding applied) or ``SentencePieceProcessor.encode`` (.model). ``allowed_special``: the added tokens
        matched in the text (None: all, as HF); ``disallowed_special``: a text with one is an InputError."""
        return self._encode_batch(texts, add_special_tokens, allowed_special, disallowed_special, gpu_min_batch,
                                  self._limits)

    def _encode_batch(self, texts: Any, add_special_tokens: Any, allowed: Any, disallowed: Any,
                      gpu_min_batch: Any, limits: Any) -> Ragged:
        if self.runs_on_cpu(texts, gpu_min_batch):
            r = self.on_cpu()._encode_batch(texts, add_special_tokens, allowed, disallowed, None, limits)
            return Ragged(*K.to_device_many([r.ids, r.offsets], self.target, self.xp))
        batch = TextBatch.from_texts(texts, self.xp, self.target)
        n = batch.n
        xp = self.xp
        args, cnt, host = self._run(batch, (add_special_tokens, allowed, disallowed),
                                    (xp.empty((2, 0, 0), dtype=np.int64), 0, False, False))
        raise_bad(host)
        drop, cut = self._no_drop, None
        if limits is not None:
            npre, nsuf = (len(self.spec.prefix), len(self.spec.suffix)) if add_special_tokens else (0, 0)
            host, cut = plan_limits(host, npre, nsuf, *limits)
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(host, out=off[1:])
        if cut is not None and cut.shape[0]:
            d_off, drop = K.to_device_many([off, cut], self.target, xp)
        else:
            d_off = K.to_device(off, self.target, xp)
        out = xp.empty(int(off[-1]), dtype=np.int64)
        if n:
            K.launch(self.target, COMPACT, n, batch.offsets, args[7], args[8][2], cnt, drop, self._lim, d_off, out)
        return Ragged(out, d_off)

    def encode_rows(self, texts: Any, *, max_length: int | None = None, padding_side: str = "right",
                    truncation_side: str = "right", stride: int = 0, return_overflowing_tokens: bool = False,
                    add_special_tokens: bool = True, allowed_special: Any = None, disallowed_special: Any = (),
                    pad_id: int | None = None, dtype: str = "int64", gpu_min_batch: int | None = None) -> Rows:
        """Padded rows + attention mask, as :meth:`BPETokenizer.encode_rows
        <triton_textops.ops.bpe.tokenizer.BPETokenizer.encode_rows>` (the template's specials kept, the content
        cut on ``truncation_side``; overflowing windows framed on the host)."""
        for name, v in (("padding_side", padding_side), ("truncation_side", truncation_side)):
            if v not in ("left", "right"):
                raise InputError(f"{name} must be 'left' or 'right', got {v!r}")
        dt = check_ids_dtype(dtype)
        pad = self.pad_id if pad_id is None else check_int("pad_id", pad_id, -(1 << 31), (1 << 31) - 1)
        pad = 0 if pad is None else pad
        specials = check_bool("add_special_tokens", add_special_tokens)
        pre, suf = (self.spec.prefix, self.spec.suffix) if specials else ([], [])
        stride = check_int("stride", stride, 0)
        if check_bool("return_overflowing_tokens", return_overflowing_tokens):
            if max_length is None:
                raise InputError("return_overflowing_tokens needs max_length (the windows' length)")
            width = check_int("max_length", max_length, len(pre) + len(suf) + 1, (1 << 31) - 1)
            if stride >= width - len(pre) - len(suf):
                raise InputError(f"stride={stride} must be smaller than the content length per window "
                                 f"(max_length - special tokens = {width - len(pre) - len(suf)})")
            r = self._encode_batch(texts, False, allowed_special, disallowed_special, None, None)
            ids, mask, mapping = window_rows(
                K.to_host(r.ids, self.target), K.to_host(r.offsets, self.target), width=width, stride=stride,
                prefix=pre, suffix=suf, pad_id=pad, left_pad=padding_side == "left",
                left_trunc=truncation_side == "left", dtype=dt.type)
            return Rows(*K.to_device_many([ids, mask, np.zeros_like(ids), mapping], self.target, self.xp))
        if max_length is None:
            r = self._encode_batch(texts, specials, allowed_special, disallowed_special, gpu_min_batch, None)
            lens = np.diff(K.to_host(r.offsets, self.target))
            max_length = max(int(lens.max()) if lens.size else 0, len(pre) + len(suf), 1)
        width = check_int("max_length", max_length, max(len(pre) + len(suf), 1), (1 << 31) - 1)
        if self.runs_on_cpu(texts, gpu_min_batch):
            r = self.on_cpu().encode_rows(texts, max_length=width, padding_side=padding_side,
                                          truncation_side=truncation_side, add_special_tokens=specials,
                                          allowed_special=allowed_special, disallowed_special=disallowed_special,
                                          pad_id=pad, dtype=dtype)
            return Rows(*K.to_device_many([r.input_ids, r.attention_mask], self.target, self.xp))
        batch = TextBatch.from_texts(texts, self.xp, self.target)
        n = batch.n
        rows = allocate(self.xp, (2, n, width), dt.type, f"max_length={width}: {n} rows of ids and mask")
        host = self._run(batch, (specials, allowed_special, disallowed_special),
                         (rows, pad, padding_side == "left", truncation_side == "left"))[2]
        raise_bad(host)
        return Rows(rows[0], rows[1])

    def _run(self, batch: TextBatch, options: tuple, out: tuple) -> tuple:
        """The encode kernel over ``batch`` (``options``: add_special_tokens, allowed, disallowed; ``out``: its
        OUT tuple): (its arguments, the counts, the counts on the host). On the CPU the scratch is first sized by
        the tight layout; when a text's normalized form outgrew it (SIZE_BOUND: every write is checked), the batch
        runs again with the worst-case one, so memory and time (page faults of scratch never touched) follow the
        real text and results are the same. The GPU takes the worst-case one at once: one launch, one copy."""
        n = batch.n
        for tight in self._tights:
            args = self._args(batch, *options, tight=tight)
            cnt = self.xp.zeros(n, dtype=np.int64)
            if n:
                K.launch(self.target, self._encode, n, *args, cnt, out)
            host = K.to_host(cnt, self.target)
            if len(self._tights) == 1 or not (host == -1 - SIZE_BOUND).any():
                break
        return args, cnt, host

    # ------------------------------------------------------------------------------------- vocabulary

    def _config_id(self, key: str) -> int | None:
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
        """tokenizer_config.json's ``bos_token``, else the template's first token, else ``<s>``'s."""
        got = self._config_id("bos_token")
        if got is None and self.spec.prefix:
            got = self.spec.prefix[0]
        return got if got is not None else self.token_to_id("<s>")

    @property
    def eos_id(self) -> int | None:
        """tokenizer_config.json's ``eos_token``, else ``</s>``'s."""
        got = self._config_id("eos_token")
        return got if got is not None else self.token_to_id("</s>")

    @property
    def unk_id(self) -> int | None:
        """The model's unknown id (None: it has none)."""
        return self.spec.unk_id if self.spec.unk_id >= 0 else None

    @property
    def vocab_size(self) -> int:
        """Distinct ids, added tokens included (HF's ``get_vocab_size(True)``)."""
        return len({i for i, p in enumerate(self.spec.pieces) if p is not None} | {a.id for a in self.spec.added})

    def token_to_id(self, token: str | bytes) -> int | None:
        """The id of a piece or an added token's content (str or UTF-8 bytes); None when there is none."""
        if isinstance(token, bytes):
            token = token.decode("utf-8", "surrogateescape")
        if not isinstance(token, str):
            raise InputError(f"token must be str or bytes, got {type(token).__name__}")
        a = self.added.get(token)
        if a is not None:
            return a.id
        got = self.spec.vocab.get(token.encode("utf-8", "surrogateescape"))
        if got is None and token in self.spec.pieces:
            got = self.spec.pieces.index(token)
        return got

    def id_to_token(self, i: int) -> str | None:
        """The piece (or added token) of id ``i``; None for an id the tokenizer does not have."""
        i = check_int("id", i)
        return self.spec.pieces[i] if 0 <= i < len(self.spec.pieces) else None

    # ------------------------------------------------------------------------------------- decoding

    def decode(self, ids: Any, offsets: Any, *, skip_special_tokens: bool = False,
               errors: str | None = "strict") -> list[bytes] | list[str]:
        """Each text of ``ids`` (flat, ``offsets`` n+1): ``errors="strict"`` (an InputError for a row whose bytes
        are not UTF-8), ``"replace"`` (U+FFFD as the reference's decoder writes them: HF's ByteFallback, or
        sentencepiece's for a .model), or None: the raw bytes."""
        got = decode_batch(self, SP_DECODE, self._dec, ids, offsets, skip_special_tokens,
                           "strict" if errors == "strict" else None, f"0 .. {self.n_ids - 1}")
        if errors != "replace":
            return got
        out = []
        for r, b in enumerate(got):
            try:
                out.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(self._replace_row(ids, offsets, r, skip_special_tokens))
        return out

    def _context_id(self) -> int:
        """An ordinary id whose bytes are the same in both tables, not empty, not a space, not a byte piece: what
        :meth:`decode_continuing` puts before each text (found once)."""
        got = getattr(self, "_ctx", None)
        if got is None:
            pool, off, special, fpool, foff, _ = self._dec_host
            for i in range(len(off) - 1):
                b = pool[off[i]:off[i + 1]].tobytes()
                if b and b[:1] != b" " and not special[i] and not self._is_byte[i] \
                        and b == fpool[foff[i]:foff[i + 1]].tobytes():
                    try:
                        b.decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                    got = self._ctx = (i, len(b))
                    break
            else:
                raise ConfigError("the tokenizer has no piece that decodes alike at a text's start and inside it: "
                                  "a stream's pieces cannot be decoded")
        return got

    def decode_continuing(self, ids: Any, offsets: Any, *, skip_special_tokens: bool = False) -> list[bytes]:
        """The raw bytes of each text of ``ids`` as a piece of a longer text after a non-empty start (a stream's
        delta): without the start's rules (the first token's table, the leading spaces stripped), so a text's
        decode is its first piece's decode followed by its other pieces' (byte-fallback bytes raw: a character's
        bytes may be cut between pieces). Each text is decoded behind a context piece whose bytes are cut off."""
        ctx, n_ctx = self._context_id()
        host_ids = np.asarray(K.to_host(self.xp.asarray(ids).reshape(-1), self.target), dtype=np.int64)
        host_off = np.asarray(K.to_host(self.xp.asarray(offsets).reshape(-1), self.target), dtype=np.int64)
        if host_off.shape[0] < 1 or host_off[0] != 0 or (np.diff(host_off) < 0).any() \
                or host_off[-1] != host_ids.shape[0]:
            raise InputError("offsets must be n+1 non-decreasing entries from 0 to the number of ids")
        n = host_off.shape[0] - 1
        framed = np.insert(host_ids, host_off[:-1], ctx)
        got = decode_batch(self, SP_DECODE, self._dec, framed, host_off + np.arange(n + 1), skip_special_tokens,
                           None, f"0 .. {self.n_ids - 1}")
        return [b[n_ctx:] for b in got]

    def _replace_row(self, ids: Any, offsets: Any, r: int, skip: bool) -> str:
        """Row ``r`` decoded with the reference's U+FFFD rule (a row that is not UTF-8: rare, on the host)."""
        host_ids = np.asarray(K.to_host(self.xp.asarray(ids).reshape(-1), self.target), dtype=np.int64)
        host_off = np.asarray(K.to_host(self.xp.asarray(offsets).reshape(-1), self.target), dtype=np.int64)
        pool, off, special, fpool, foff, strip = self._dec_host
        pieces, from_byte = [], []
        strip_left, mode, took = int(strip[0]), int(strip[1]), False
        for i in host_ids[host_off[r]:host_off[r + 1]]:
            if skip and special[i]:
                continue
            use = not pieces if mode == 0 else not any(pieces) and not took
            src, o = (fpool, foff) if use else (pool, off)
            took = took or use and mode == 2 and foff[i + 1] - foff[i] != off[i + 1] - off[i]
            b = src[o[i]:o[i + 1]].tobytes()
            while strip_left and not any(pieces) and b[:1] == b" ":
                b, strip_left = b[1:], strip_left - 1
            pieces.append(b)
            from_byte.append(self._is_byte[i])
        return D.replace_invalid(pieces, from_byte, self.spec.decoder.spm)


SP_DECODE = (D.SP_DECODE_COUNT, D.SP_DECODE_WRITE)
