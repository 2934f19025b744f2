"""LLM pre/post-processing (TensorRT-LLM's ``preprocessing`` / ``postprocessing`` ensemble steps) on any tokenizer.

:class:`LLMTokenizer` loads a tokenizer directory (``tokenizer.json`` [+ ``tokenizer_config.json``], GPT-2's
``vocab.json`` + ``merges.txt`` or ``encoder.json`` + ``vocab.bpe``, a ``.tiktoken`` file with its encoding name, or
any family the loader reads: a WordPiece tokenizer.json or vocab.txt) and reproduces what TensorRT-LLM's model.py
computes with ``transformers.AutoTokenizer`` (4.47) on it:

- :meth:`LLMTokenizer.preprocess`: every text of every request (queries, decoder queries, bad / stop words, bias
  words) tokenized by one ``encode`` per ``add_special_tokens`` value (one launch when the tokenizer adds no
  template tokens); ids right-padded with the tokenizer's pad id; word lists flattened into ``[2, n]`` ids + end
  offsets padded with 0 / -1; the embedding bias summed per token id in the weights' order.
- :meth:`LLMTokenizer.postprocess`: every sequence of every request decoded by one ``decode``; whole sequences as HF
  decodes them (U+FFFD for invalid UTF-8, ``clean_up_tokenization_spaces`` as tokenizer_config.json sets it), or
  with ``streaming`` (byte-level BPE) each delta's bytes through :class:`StreamText`: every piece valid UTF-8.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.bpe import formats as F
from triton_textops.ops.bpe.rankfiles import read_encoding
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.files import HEAD, sniff
from triton_textops.ops.core.hf_json import read_config
from triton_textops.ops.tokenizer import Tokenizer, is_sentencepiece

Texts = tuple[np.ndarray, np.ndarray]  # host (uint8 bytes, int64 offsets n+1)
# transformers' clean_up_tokenization, in its order (PreTrainedTokenizerBase.clean_up_tokenization, 4.47)
CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
# a text without a match of any pattern is left as it is (a replacement happens only where one matches, so none
# makes a new one): one scan in place of ten, as most decoded texts have none (" n" alone is the start of a word)
_CLEAN_UP_ANY = re.compile(r" [.?!,']| n't")
WARM_UP = "Warm up: caf\u00e9 \u201cna\u00efve\u201d 123 \U0001f600 <|endoftext|>"


@dataclass
class Words:
    """A request's word lists: ``rows`` x ``per_row`` texts (row-major), e.g. BAD_WORDS_DICT [batch, words]."""

    texts: Texts
    rows: int
    per_row: int


@dataclass
class PreRequest:
    """One preprocessing request, checked (:func:`check_pre_request`): ``rows`` queries and their optional inputs."""

    query: Texts
    output_len: np.ndarray
    decoder: Texts | None = None
    bad: Words | None = None
    stop: Words | None = None
    bias_words: Words | None = None
    bias_weights: np.ndarray | None = None
    end_id: np.ndarray | None = None
    pad_id: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return int(self.query[1].shape[0]) - 1


def clean_up_tokenization(text: str) -> str:
    """transformers' ``clean_up_tokenization``: spaces before punctuation and English contractions removed."""
    if _CLEAN_UP_ANY.search(text) is None:  # no pattern occurs: nothing to replace
        return text
    for a, b in CLEAN_UP:
        text = text.replace(a, b)
    return text


def _token_name(value: Any) -> str | None:
    """A special token of tokenizer_config.json: a string or an AddedToken dict (its ``content``)."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


GPT2_FILES = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))  # (vocabulary, merges) of GPT-2's


def load_spec(tokenizer_dir: str | os.PathLike, encoding: str | None = None) -> F.BPESpec:
    """The BPE of a tokenizer directory (or a tokenizer.json file, or a ``.tiktoken`` file with ``encoding``), with
    its tokenizer_config.json."""
    p = Path(tokenizer_dir)
    if p.is_file() or encoding is not None:
        if encoding is None and _sniff(p) == "json":
            return F.read_tokenizer_json(p, as_transformers=True)
        if encoding is None:
            raise ValueError(f"{p} is a file: a .tiktoken rank file needs the encoding parameter")
        return read_encoding(p, encoding)
    if (p / "tokenizer.json").is_file():
        return F.read_tokenizer_json(p, as_transformers=True)
    for enc, merges in GPT2_FILES:
        if (p / enc).is_file() and (p / merges).is_file():
            spec = F.read_gpt2_files(p / enc, p / merges)
            spec.config = read_config(p)
            return spec
    raise ValueError(f"{p}: no tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe or vocab.txt in it")


def _sniff(path: Path) -> str:
    with open(path, "rb") as f:
        return sniff(f.read(HEAD))


def is_bpe_source(tokenizer_dir: str | os.PathLike, encoding: str | None = None) -> bool:
    """Whether :func:`load_spec` reads ``tokenizer_dir`` (byte-level BPE, read as transformers reads it: the
    reference's tweaks), rather than the loader (:meth:`Tokenizer.from_pretrained`: WordPiece, ...): a tokenizer.json
    whose ``model.type`` is not BPE, or a vocab.txt (a directory's without the BPE files, or a file of one token a
    line), is not."""
    p = Path(tokenizer_dir)
    if encoding is not None or not p.exists():
        return True
    if p.is_file():
        kind = _sniff(p)
        return kind == "tiktoken" or (kind == "json" and _byte_level(p))
    if (p / "tokenizer.json").is_file():
        return _byte_level(p / "tokenizer.json")
    if any((p / a).is_file() and (p / b).is_file() for a, b in GPT2_FILES):
        return True
    return not (p / "vocab.txt").is_file() and not any(p.glob("*.model"))  # (a .model: SentencePiece's slow layout)


def _byte_level(path: Path) -> bool:
    """A BPE tokenizer.json that is byte-level (not SentencePiece BPE: :func:`~triton_textops.ops.tokenizer.
    is_sentencepiece`)."""
    if _model_type(path) != "BPE":
        return False
    try:
        doc = json.loads(path.read_bytes())
    except ValueError:
        return True  # (load_spec says what is wrong with it)
    return not (isinstance(doc, dict) and isinstance(doc.get("model"), dict) and is_sentencepiece(doc))


_MODEL_TYPE = re.compile(rb'"model"\s*:\s*\{\s*"type"\s*:\s*"(\w+)"')  # (HF writes model.type first)


def _model_type(path: Path) -> str | None:
    """A tokenizer.json's ``model.type`` ("BPE" for a file that says none but has merges, as HF's loader reads it;
    "BPE" for a file that is not JSON: :func:`load_spec` then says what is wrong with it)."""
    raw = path.read_bytes()
    found = _MODEL_TYPE.search(raw)  # (a vocabulary's "model" maps to an id, an added token's text is escaped)
    if found is not None:
        return found.group(1).decode()
    try:
        model = json.loads(raw).get("model")
    except (ValueError, AttributeError):
        return "BPE"
    if not isinstance(model, dict):
        return "BPE"
    return model.get("type") or ("BPE" if "merges" in model else None)


SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def add_config_specials(spec: F.BPESpec) -> None:
    """What transformers' PreTrainedTokenizerFast does with the special tokens tokenizer_config.json names
    (``bos_token`` ... ``mask_token``, ``additional_special_tokens``) that are not added tokens of the file: it adds
    them as special tokens, with the vocabulary's id when the vocabulary has the string, else a new id (HF
    tokenizers' rule: after the largest added id, or the vocabulary's size)."""
    cfg = spec.config
    names = [_token_name(cfg.get(k)) for k in SPECIAL_KEYS]
    names += [_token_name(t) for t in cfg.get("additional_special_tokens") or []]
    have = {a.content for a in spec.added}
    for name in names:
        if name is None or name.encode() in have:
            continue
        mapped = F._unmap(name)
        tid = spec.vocab.get(mapped) if mapped is not None else None
        if tid is None:
            top = max((a.id for a in spec.added), default=-1)
            tid = top + 1 if top >= len(spec.vocab) else len(spec.vocab)
            spec.decode_bytes[tid] = mapped if mapped is not None else name.encode()
        spec.added.append(F.AddedToken(name.encode(), tid, special=True))
        have.add(name.encode())


class LLMTokenizer:
    """A tokenizer of any family with what TensorRT-LLM's models read from AutoTokenizer: end and pad ids, the
    vocabulary's length (of the embedding bias), the clean-up rule.

    Byte-level BPE (:func:`is_bpe_source`) is read as transformers reads it (:func:`load_spec` with
    ``as_transformers``, :func:`add_config_specials`; ``bpe`` is its :class:`BPETokenizer`); another family comes
    from the loader (:meth:`~triton_textops.ops.tokenizer.Tokenizer.from_pretrained`) and is served through the
    protocol: the end id is tokenizer_config.json's ``eos_token`` (else the tokenizer's ``eos_id``), the pad id its
    ``pad_token`` (else ``pad_id``, else the end id), the vocabulary's length ``vocab_size``. A ValueError says what
    a tokenizer lacks for the LLM models (an end token)."""

    def __init__(self, tokenizer_dir: str | os.PathLike, *, encoding: str | None = None, device: str = "cpu",
                 gpu_min_batch: int | None = None) -> None:
        self.gpu_min_batch = gpu_min_batch
        self._default_outputs: dict[tuple[int, np.dtype], dict[str, np.ndarray]] = {}
        if is_bpe_source(tokenizer_dir, encoding):
            self._load_bpe(tokenizer_dir, encoding, device)
        else:
            self._load_any(tokenizer_dir, device)
        self.n_ids = int(getattr(self.tok, "n_ids", self.tok.vocab_size))  # ids 0 .. n_ids - 1 decode
        self.family = self.tok.family
        # byte-level BPE: a delta's bytes never depend on its neighbours; SentencePiece: they do on whether the delta
        # starts its stream (the start's rules: StreamText.started); WordPiece puts spaces between words: neither
        self.exact_stream = self.family in ("bpe", "sentencepiece")
        self.stream = StreamText(track_starts=self.family == "sentencepiece")
        self.warm_up()

    def _load_bpe(self, tokenizer_dir: str | os.PathLike, encoding: str | None, device: str) -> None:
        spec = load_spec(tokenizer_dir, encoding)
        add_config_specials(spec)
        self.tok = self.bpe = BPETokenizer(spec, device=device)
        self._encode_kw: dict[str, Any] = {"allowed_special": "all", "gpu_min_batch": self.gpu_min_batch}
        cfg = spec.config
        eos = _token_name(cfg.get("eos_token"))
        if eos is None and (b"<|endoftext|>" in spec.vocab or "<|endoftext|>" in self.bpe.added):
            eos = "<|endoftext|>"  # GPT2Tokenizer's and Qwen2Tokenizer's default eos_token
        if eos is None:
            raise ValueError(f"{tokenizer_dir}: no eos_token in tokenizer_config.json and no <|endoftext|> token: "
                             "the end id is unknown")
        pad = _token_name(cfg.get("pad_token")) or eos  # TensorRT-LLM: pad_token = eos_token when unset
        self.end_id, self.pad_id = (self._first_id(t) for t in (eos, pad))
        self.vocab_len = len(set(spec.vocab.values()) | {a.id for a in spec.added})  # len(tokenizer.vocab)
        self.clean_up = bool(cfg.get("clean_up_tokenization_spaces", False))  # transformers 4.47's default
        self.has_template = bool(spec.prefix or spec.suffix)

    def _load_any(self, tokenizer_dir: str | os.PathLike, device: str) -> None:
        tok = self.tok = Tokenizer.from_pretrained(tokenizer_dir, device=device)
        self.bpe = None
        self._encode_kw = {"gpu_min_batch": self.gpu_min_batch}
        p = Path(tokenizer_dir)
        cfg = read_config(p if p.is_dir() else p.parent)

        def special(key: str, fallback: int | None) -> int | None:
            name = _token_name(cfg.get(key))
            if name is None:
                return fallback
            tid = tok.token_to_id(name)
            if tid is None:
                raise ValueError(f"tokenizer_config.json's {key} {name!r} is not a token of the {tok.family} "
                                 f"tokenizer in {tokenizer_dir}")
            return int(tid)

        end = special("eos_token", tok.eos_id)
        if end is None:
            raise ValueError(f"{tokenizer_dir}: the {tok.family} tokenizer has no end token (no eos_token in "
                             "tokenizer_config.json): the LLM models need it for END_ID")
        self.end_id = end
        pad = special("pad_token", tok.pad_id)  # (a file's padding names it too, as transformers reads it)
        self.pad_id = end if pad is None else pad  # TensorRT-LLM: pad_token = eos_token when unset
        spec = getattr(tok, "spec", None)  # transformers turns the file's truncation / padding off for a call that
        if spec is not None and (spec.truncation or spec.padding):  # asks for neither: so do we
            self.tok = tok = type(tok)(spec=replace(spec, truncation=None, padding=None), device=device)
        self.vocab_len = int(tok.vocab_size)  # len(tokenizer.vocab)
        self.clean_up = bool(cfg.get("clean_up_tokenization_spaces", False))  # transformers 4.47's default
        plain, framed = (tok.encode([""], add_special_tokens=f) for f in (False, True))
        self.has_template = len(K.to_host(framed.ids, tok.target)) != len(K.to_host(plain.ids, tok.target))

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the kernels a request runs, on the CPU and, for a GPU tokenizer
        taking batches of ``gpu_min_batch`` texts, on the GPU: at load, not on the first request."""
        raw = WARM_UP.encode()
        sizes = {1, 2, self.gpu_min_batch or 1} if self.tok.target != "cpu" else {1, 2}  # (one text: its own path)
        for n in sorted(sizes):
            texts = (np.frombuffer(raw * n, np.uint8), np.arange(n + 1, dtype=np.int64) * len(raw))
            self.encode_groups([texts], [True])
        self.decode_sequences(np.zeros(1, np.int64), np.array([0, 1]), skip_special_tokens=True)

    def _first_id(self, token: str) -> int:
        """``tokenizer.encode(token, add_special_tokens=False)[0]``."""
        ids = self.bpe.encode([token], add_special_tokens=False, allowed_special="all").tolist()[0]
        if not ids:
            raise ValueError(f"the special token {token!r} encodes to no ids")
        return int(ids[0])

    # --------------------------------------------------------------------------------------------- encoding

    def encode_groups(self, texts: list[Texts], specials: list[bool]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Host (ids, offsets) of each text group, all groups of one ``add_special_tokens`` value in one encode."""
        if len(texts) == 1:  # (one request's query: its texts as they are, no grouping)
            r = self.tok.encode(texts[0], add_special_tokens=specials[0] and self.has_template, **self._encode_kw)
            off = K.to_host(r.offsets, self.tok.target)
            return [(K.to_host(r.ids, self.tok.target)[:off[-1]], off)]
        out: list[Any] = [None] * len(texts)
        flags = [s and self.has_template for s in specials]  # without a template the flag changes nothing
        for flag in sorted(set(flags)):
            idx = [i for i, f in enumerate(flags) if f == flag]
            if len(idx) == 1:  # (one request's texts: as they are)
                data, offsets = texts[idx[0]]
            else:
                data = np.concatenate([texts[i][0] for i in idx])
                shift = np.cumsum([0] + [texts[i][0].shape[0] for i in idx[:-1]])
                offsets = np.concatenate([[0]] + [texts[i][1][1:] + s for i, s in zip(idx, shift)]).astype(np.int64)
            # every added token is matched in the text, as HF's encode does (tiktoken files: encode(allowed_special="all"))
            r = self.tok.encode((data, offsets), add_special_tokens=flag, **self._encode_kw)
            ids, off = K.to_host(r.ids, self.tok.target), K.to_host(r.offsets, self.tok.target)
            bounds = off.tolist()  # (Python ints: no NumPy scalar per group)
            start = 0
            for i in idx:
                n = texts[i][1].shape[0] - 1
                a, b = bounds[start], bounds[start + n]
                o = np.array([0, b - a], dtype=off.dtype) if n == 1 else off[start:start + n + 1] - a
                out[i] = (ids[a:b], o)
                start += n
        return out

    def preprocess(self, requests: list[PreRequest], add_special_tokens: bool,
                   bias_dtype: Any = np.float32) -> list[dict[str, Any]]:
        """TensorRT-LLM preprocessing outputs (role -> array) of each checked request; an :class:`InputError`
        in place of the outputs of a request whose bias words give ids beyond the vocabulary's length."""
        texts: list[Texts] = []
        specials: list[bool] = []
        slots: list[dict[str, int]] = []
        for r in requests:
            slot = {"query": len(texts)}
            texts.append(r.query)
            specials.append(add_special_tokens)
            if r.decoder is not None or r.bad is not None or r.stop is not None or r.bias_words is not None:
                for key, t, s in (("decoder", r.decoder, add_special_tokens), ("bad", r.bad, False),
                                  ("stop", r.stop, False), ("bias", r.bias_words, True)):
                    if t is not None and not (key == "bias" and r.bias_weights is None):
                        slot[key] = len(texts)
                        texts.append(t.texts if isinstance(t, Words) else t)
                        specials.append(s)
            slots.append(slot)
        enc = self.encode_groups(texts, specials) if texts else []
        out: list[dict[str, Any]] = []
        bias_dtype = np.dtype(bias_dtype)
        for r, slot in zip(requests, slots):
            n = r.rows
            res = dict(self._defaults(n, bias_dtype))  # what a request without the optional inputs gets
            res["input_id"], res["request_input_len"] = pad_rows(*enc[slot["query"]], self.pad_id)
            res["request_output_len"] = r.output_len
            if r.end_id is not None:
                res["out_end_id"] = np.asarray(r.end_id, dtype=np.int32)
            if r.pad_id is not None:
                res["out_pad_id"] = pad = np.asarray(r.pad_id, dtype=np.int32)
                res["decoder_input_id"] = pad.reshape(n, 1)
            if len(slot) == 1:  # (the query alone: the usual request)
                out.append(res)
                continue
            if "decoder" in slot:
                res["decoder_input_id"], res["request_decoder_input_len"] = pad_rows(*enc[slot["decoder"]], self.pad_id)
            for role, key in (("bad_words_ids", "bad"), ("stop_words_ids", "stop")):
                if key in slot:
                    words = getattr(r, key)
                    res[role] = word_list(*enc[slot[key]], words.rows, words.per_row)
            if "bias" in slot:
                try:
                    res["embedding_bias"] = embedding_bias(*enc[slot["bias"]], r.bias_weights, self.vocab_len)
                except InputError as e:
                    out.append(e)  # type: ignore[arg-type]
                    continue
            out.append(res)
        return out

    def _defaults(self, n: int, bias_dtype: np.dtype) -> dict[str, np.ndarray]:
        """The outputs of a request of ``n`` rows that does not send the optional inputs (read-only arrays, made
        once per row count: every request of one prompt shares them)."""
        key = (n, bias_dtype)
        got = self._default_outputs.get(key)
        if got is None:
            pad = np.full((n, 1), self.pad_id, dtype=np.int32)
            got = {"out_end_id": np.full((n, 1), self.end_id, dtype=np.int32), "out_pad_id": pad,
                   "decoder_input_id": pad, "request_decoder_input_len": np.ones((n, 1), dtype=np.int32),
                   "bad_words_ids": np.empty((n, 2, 0), dtype=np.int32),
                   "stop_words_ids": np.empty((n, 2, 0), dtype=np.int32),
                   "embedding_bias": np.empty((n, 0), dtype=bias_dtype)}
            for a in got.values():
                a.flags.writeable = False
            if len(self._default_outputs) < 64:
                self._default_outputs[key] = got
        return got

    # --------------------------------------------------------------------------------------------- decoding

    def decode_sequences(self, ids: np.ndarray, offsets: np.ndarray, *, skip_special_tokens: bool,
                         streaming: bool = False) -> list[bytes]:
        """UTF-8 of each sequence: HF's ``batch_decode`` (U+FFFD for invalid bytes, the clean-up rule), or with
        ``streaming`` the raw bytes of its tokens (made pieces by :class:`StreamText`)."""
        if streaming:
            return self.tok.decode(ids, offsets, skip_special_tokens=skip_special_tokens, errors=None)
        # (the family's own U+FFFD rule: HF's ByteFallback replaces each byte of an invalid run of byte pieces)
        texts = self.tok.decode(ids, offsets, skip_special_tokens=skip_special_tokens, errors="replace")
        if self.clean_up:
            texts = [clean_up_tokenization(t) for t in texts]
        return [t.encode("utf-8") for t in texts]

    def _stream_bytes(self, ids: np.ndarray, offsets: np.ndarray, keys: list[bytes | None],
                      skip_special_tokens: bool) -> list[bytes]:
        """SentencePiece deltas' raw bytes: a stream's inside as a text's inside, its start as a text starts (the
        start's tokens kept while they decode to nothing: the start's rules reach the first token with bytes)."""
        out = self.tok.decode_continuing(ids, offsets, skip_special_tokens=skip_special_tokens)
        st, started = self.stream, set()
        for r, k in enumerate(keys):  # (in order: a stream's two deltas in one execute)
            if k is None or k in started or st.started(k):
                continue
            seq = np.concatenate([st.start_ids.pop(k, np.empty(0, np.int64)), ids[offsets[r]:offsets[r + 1]]])
            out[r] = self.tok.decode(seq, np.array([0, seq.shape[0]]), skip_special_tokens=skip_special_tokens,
                                     errors=None)[0]
            if out[r] or seq.shape[0] > 256:  # (a start of nothing but 256 tokens: taken as started)
                started.add(k)
            else:
                st.keep_start(k, seq)
        return out

    def postprocess(self, requests: list[tuple[np.ndarray, np.ndarray]], *, skip_special_tokens: bool,
                    streaming: bool = False, streams: list[Hashable | None] | None = None) -> list[np.ndarray]:
        """OUTPUT of each request given as its checked sequences (:func:`check_sequences`: flat ids, offsets of the
        batch x beams sequences): a 1-D object array of its texts, every sequence of every request decoded by one
        call. With ``streaming``, each request's stream id (``streams``, None: none) keys :attr:`stream` (one
        :class:`StreamText` per tokenizer: per model instance), in the order the requests come."""
        if len(requests) == 1:
            ids, offsets = requests[0]
        else:
            ids = np.concatenate([r[0] for r in requests])
            shift = np.cumsum([0] + [r[0].shape[0] for r in requests[:-1]])
            offsets = np.concatenate([[0]] + [r[1][1:] + s for r, s in zip(requests, shift)])
        st = self.stream
        keys: list[bytes | None] = []
        if streaming:
            for k, (_, off) in enumerate(requests):
                sid = streams[k] if streams is not None else None
                keys += [None if sid is None else st.key(sid, r) for r in range(off.shape[0] - 1)]
        if streaming and st.track_starts:
            texts = self._stream_bytes(ids, offsets, keys, skip_special_tokens)
        else:
            texts = self.decode_sequences(ids, offsets, skip_special_tokens=skip_special_tokens, streaming=streaming)
        out, start = [], 0
        for _, off in requests:
            c = off.shape[0] - 1
            arr = np.empty(c, dtype=np.object_)
            if streaming:
                arr[:] = [st.piece(keys[start + r], texts[start + r]) for r in range(c)]
            elif c == 1:  # (one sequence: no list to copy from)
                arr[0] = texts[start]
            else:
                arr[:] = texts[start:start + c]
            out.append(arr)
            start += c
        return out


# ------------------------------------------------------------------------------------------- streaming

# the second byte a lead byte allows (RFC 3629's table; any further byte is 80..BF), the bytes it needs in all
_SECOND = {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}


def _need(lead: int) -> int:
    """Bytes of the UTF-8 sequence ``lead`` starts (0: not a lead byte, C0 C1 F5..FF included)."""
    return 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0


def incomplete_tail(b: bytes) -> int:
    """Where ``b``'s unfinished character starts: the start of its last 1-3 bytes when they are a proper prefix of
    a valid UTF-8 sequence (a lead byte and the continuation bytes it allows), else ``len(b)``. Cutting there never
    changes a decode with U+FFFD (the maximal-subpart rule of Python's and Rust's decoders): the bytes before it
    decode alone as they do followed by the rest, since a lead byte ends any sequence before it."""
    n = len(b)
    for i in range(n - 1, max(n - 4, -1), -1):
        c = b[i]
        if c & 0xC0 == 0x80:  # a continuation byte: look further back
            continue
        need = _need(c)
        if not need or n - i >= need:
            return n
        if n - i > 1:
            lo, hi = _SECOND.get(c, (0x80, 0xBF))
            if not lo <= b[i + 1] <= hi:
                return n
        return i  # (every byte after the second is a continuation byte: checked by the loop)
    return n


def valid_utf8(b: bytes) -> bytes:
    """``b`` when it is UTF-8, else its decode with U+FFFD (one per maximal invalid subpart) encoded again."""
    try:
        b.decode("utf-8")
        return b
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace").encode("utf-8")


STREAM_LIMIT = 65536  # streams with bytes held back, per model instance (each a 16-byte key and <= 3 bytes)


class StreamText:
    """Each streamed delta's bytes made a valid UTF-8 piece: the bytes of a character cut between two deltas are
    held back and sent with the piece that completes it, so the pieces of a stream concatenate to its tokens' bytes,
    each piece valid UTF-8 on its own (a client may ``bytes.decode("utf-8")`` each), an invalid byte U+FFFD as in
    the decode of the whole stream.

    Why keyed state. TensorRT-LLM's postprocessing step gets each response's new tokens only (TOKENS_BATCH,
    SEQUENCE_LENGTH; no earlier tokens, no end flag), so the bytes held back must wait in the model for the
    stream's next piece, keyed by what identifies a stream there: the request id and correlation id that
    Triton's ensemble copies onto every step's request (and the row, the beam). A request carrying neither (the
    default of TensorRT-LLM's clients and of Triton's OpenAI frontend) cannot be told from another stream's: its
    piece is made valid alone (an unfinished character at either end U+FFFD, as TensorRT-LLM's per-delta decode).

    Bounded: an entry exists only while a stream holds bytes (<= 3, the start of one character) and goes as soon
    as the next piece completes it; at most ``limit`` entries, the least recently used dropped first (its stream's
    next piece then starts with bytes it cannot complete: U+FFFD). A stream that ends or is cancelled inside a
    character leaves its entry until :meth:`finish` / :meth:`release` or eviction: the postprocessing step is
    told nothing of a stream's end, so such a tail is never sent (HF's ``DecodeStream`` drops it too; a whole
    decode, as TensorRT-LLM's BLS ``accumulate_tokens`` path sends, ends it with U+FFFD: :meth:`finish` does).
    Request ids must be unique among the streams in flight (as TensorRT-LLM's cancellation needs them).

    SentencePiece (``track_starts``): a delta's bytes depend on whether it starts its stream (the first token's
    rule, the leading space HF's Strip / sentencepiece's dummy prefix removes), so each stream with an id keeps an
    entry (maybe empty) until it is evicted, finished or released; a stream's later deltas decode as the inside of
    a text (:meth:`~triton_textops.ops.sentencepiece.tokenizer.SentencePieceTokenizer.decode_continuing`), its
    byte-fallback pieces' bytes held back as byte-level BPE's. An evicted live stream's next piece starts again
    (its leading space dropped). U+FFFD follows Python's rule here (one per maximal invalid subpart), where HF's
    ByteFallback writes one per byte of an invalid run of byte pieces."""

    def __init__(self, limit: int = STREAM_LIMIT, *, track_starts: bool = False) -> None:
        self.limit = limit
        self.held: OrderedDict[bytes, bytes] = OrderedDict()
        self.evicted = 0
        self.track_starts = track_starts  # (SentencePiece: an entry lives as long as its stream, maybe empty)
        self.start_ids: OrderedDict[bytes, np.ndarray] = OrderedDict()  # streams whose tokens decoded to nothing yet

    def keep_start(self, key: bytes, ids: np.ndarray) -> None:
        """The tokens of a stream whose start decoded to nothing yet (SentencePiece), kept for its next piece."""
        self.start_ids[key] = ids
        if len(self.start_ids) > self.limit:
            self.start_ids.popitem(last=False)
            self.evicted += 1

    def started(self, key: bytes | None) -> bool:
        """Whether the stream ``key`` had a piece with bytes (with ``track_starts``; without an id: always, so that
        no piece loses its leading space, although its first piece keeps the space the whole decode strips)."""
        return key is None or key in self.held

    @staticmethod
    def key(stream: Hashable, row: int) -> bytes:
        """The bounded key (16 bytes) of row ``row`` (batch x beams, row-major) of the stream ``stream``."""
        return hashlib.blake2b(repr((stream, row)).encode(), digest_size=16).digest()

    def piece(self, key: bytes | None, raw: bytes) -> bytes:
        """The piece to send for a delta's bytes ``raw`` of the stream ``key`` (None: a stream without an id)."""
        if key is None:
            return valid_utf8(raw)
        had = key in self.held
        data = self.held.pop(key, b"") + raw
        cut = incomplete_tail(data)
        if cut < len(data) or self.track_starts and (had or data):  # (an empty start: StreamText.start_ids)
            self.held[key] = data[cut:]
            if len(self.held) > self.limit:
                self.held.popitem(last=False)
                self.evicted += 1
            data = data[:cut]
        return valid_utf8(data)

    def finish(self, key: bytes) -> bytes:
        """The end of the stream ``key``: its held bytes as a whole decode ends (U+FFFD), released."""
        self.start_ids.pop(key, None)
        return valid_utf8(self.held.pop(key, b""))

    def release(self, key: bytes) -> None:
        """A cancelled stream's held bytes dropped."""
        self.start_ids.pop(key, None)
        self.held.pop(key, None)


# ------------------------------------------------------------------------------------------- pure steps


def pad_rows(ids: np.ndarray, offsets: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Ragged ids as ``[rows, longest]`` int32 right-padded with ``pad_id``, and the lengths ``[rows, 1]``."""
    if offsets.shape[0] == 2:  # (one row: nothing to pad)
        return ids.astype(np.int32).reshape(1, -1), np.array([[offsets[1] - offsets[0]]], dtype=np.int32)
    lens = np.diff(offsets)
    n = lens.shape[0]
    width = int(lens.max()) if n else 0
    out = np.full((n, width), pad_id, dtype=np.int32)
    out[np.arange(width)[None, :] < lens[:, None]] = ids
    return out, lens.astype(np.int32).reshape(n, 1)


def word_list(ids: np.ndarray, offsets: np.ndarray, rows: int, per_row: int) -> np.ndarray:
    """TensorRT-LLM's ``_to_word_list_format``: per row, the ids of its words (those that give ids) one after the
    other and their cumulative end offsets, ``[rows, 2, width]`` int32, ids padded with 0 and offsets with -1;
    width = the longest row's ids, at least 1."""
    lens = np.diff(offsets).reshape(rows, per_row)
    row_len = lens.sum(axis=1)
    width = max(1, int(row_len.max()) if rows else 0)
    out = np.zeros((rows, 2, width), dtype=np.int32)
    out[:, 1, :] = -1
    out[:, 0, :][np.arange(width)[None, :] < row_len[:, None]] = ids
    kept = lens > 0
    pos = np.cumsum(kept, axis=1) - 1
    r, _ = np.nonzero(kept)
    out[r, 1, pos[kept]] = np.cumsum(lens, axis=1)[kept]
    return out


def embedding_bias(ids: np.ndarray, offsets: np.ndarray, weights: np.ndarray, vocab_len: int) -> np.ndarray:
    """TensorRT-LLM's ``_get_embedding_bias``: ``[rows, vocab_len]`` of the weights' dtype, each word's weight added
    once per id of its encoding, in order (words [rows, n] flattened row-major, as ``weights``)."""
    rows = weights.shape[0]
    lens = np.diff(offsets)
    if ids.size and int(ids.max()) >= vocab_len:
        raise InputError(f"a bias word gives token id {int(ids.max())}, beyond the vocabulary's {vocab_len} ids")
    out = np.zeros((rows, vocab_len), dtype=weights.dtype)
    row_of = np.repeat(np.repeat(np.arange(rows), weights.shape[1]), lens)
    np.add.at(out, (row_of, ids), np.repeat(weights.reshape(-1), lens))
    return out


def sequences(tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat ids and offsets of every ``tokens[b, beam, :lengths[b, beam]]`` (lengths past the end clipped)."""
    t = tokens.shape[2]
    lens = np.minimum(lengths.reshape(-1).astype(np.int64), t)
    flat = tokens.reshape(tokens.shape[0] * tokens.shape[1], t)  # (-1 cannot be inferred when t == 0)
    if lens.shape[0] == 1:  # one sequence (a streamed delta, a request of one): no mask
        ids = flat[0, :lens[0]].astype(np.int64)
    else:
        ids = flat[np.arange(t)[None, :] < lens[:, None]].astype(np.int64)
    off = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    return ids, off


def check_pre_request(r: PreRequest, names: dict[str, str]) -> PreRequest:
    """Shapes and values of one request checked (an :class:`InputError` naming the config's tensor)."""
    n = r.rows
    for key, arr in (("output_len", r.output_len), ("end_id", r.end_id), ("pad_id", r.pad_id)):
        if arr is None:
            continue
        if arr.dtype.kind not in "iu" or arr.shape[0] != n or arr.size != n:
            raise InputError(f"input '{names[key]}' must be {n} integer(s), one per query row, got {arr.dtype} "
                             f"{list(arr.shape)}")
    if (r.output_len < 0).any():
        k = int(np.flatnonzero(r.output_len.reshape(-1) < 0)[0])
        raise InputError(f"input '{names['output_len']}' row {k} is negative ({int(r.output_len.reshape(-1)[k])})")
    for key in ("decoder", "bad", "stop", "bias_words"):
        t = getattr(r, key)
        got = t.rows if isinstance(t, Words) else (t[1].shape[0] - 1 if t is not None else n)
        if got != n:
            raise InputError(f"input '{names[key]}' has {got} row(s), '{names['query']}' {n}")
    w = r.bias_weights
    if w is not None:
        if w.dtype.kind != "f" or w.ndim != 2 or w.shape[0] != n:
            raise InputError(f"input '{names['bias_weights']}' must be float [{n}, words], got {w.dtype} {list(w.shape)}")
        if r.bias_words is not None and (r.bias_words.rows, r.bias_words.per_row) != w.shape:
            raise InputError(f"input '{names['bias_weights']}' has shape {list(w.shape)}, '{names['bias_words']}' "
                             f"[{r.bias_words.rows}, {r.bias_words.per_row}]: one weight per word")
    return r


def check_sequences(tokens: np.ndarray, lengths: np.ndarray, n_ids: int,
                    names: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """TOKENS_BATCH [batch, beams, tokens] and SEQUENCE_LENGTH [batch, beams] checked (integer, matching shapes,
    lengths >= 0, the ids used inside the vocabulary): the :func:`sequences` they give."""
    tn, ln = names["tokens"], names["sequence_length"]
    if tokens.dtype.kind not in "iu" or tokens.ndim != 3:
        raise InputError(f"input '{tn}' must be integer [batch, beams, tokens], got {tokens.dtype} {list(tokens.shape)}")
    if lengths.dtype.kind not in "iu" or lengths.shape != tokens.shape[:2]:
        raise InputError(f"input '{ln}' must be integer [batch, beams] = {list(tokens.shape[:2])}, got "
                         f"{lengths.dtype} {list(lengths.shape)}")
    if lengths.size == 1:  # (one sequence: a streamed delta, a request of one; Python ints, no masks)
        n = int(lengths.reshape(-1)[0])
        if n < 0:
            raise InputError(f"input '{ln}': [0, 0] is negative ({n})")
        ids = tokens.reshape(-1)[:min(n, tokens.shape[2])].astype(np.int64)
        offsets = np.array([0, ids.shape[0]], dtype=np.int64)
    else:
        if (lengths < 0).any():
            b, beam = (int(x) for x in np.argwhere(lengths < 0)[0])
            raise InputError(f"input '{ln}': [{b}, {beam}] is negative ({int(lengths[b, beam])})")
        ids, offsets = sequences(tokens, lengths)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n_ids):
        k = int(np.flatnonzero((ids < 0) | (ids >= n_ids))[0])
        r = int(np.searchsorted(offsets, k, side="right")) - 1
        b, beam = divmod(r, tokens.shape[1])
        raise InputError(f"input '{tn}': [{b}, {beam}] position {k - int(offsets[r])}: id {int(ids[k])} is not an "
                         f"id of this vocabulary (size {n_ids})")
    return ids, offsets
