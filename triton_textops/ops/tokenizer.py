"""BERT WordPiece tokenization, identical to HuggingFace's ``BertWordPieceTokenizer``, on NumPy or CuPy.

Stages: (a) normalization + pre-tokenization (:mod:`triton_textops.ops.text`, shared with the
readability features), (b) WordPiece (greedy longest-match-first, vectorized over every word of the
batch at once), (c) BERT packing (``[CLS] … [SEP]``, truncation, overflow windows with stride, padding,
masks, row→text mapping). One algorithm for both array modules, so CPU and GPU give identical tensors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.text import (
    HASH_BASE,
    ByteTable,
    Normalizer,
    PreTokens,
    TextBatch,
    hash_bytes,
    span_hash,
)
from triton_textops.ops.xp import bincount, get_xp, resolve_device, to_numpy

SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")  # HF registers those present in the vocab
REQUIRED_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]")
MAX_INPUT_CHARS_PER_WORD = 100  # HF WordPiece: a longer word becomes one [UNK]
CONTINUATION = b"##"
_DENSE_LIMIT = 1 << 15  # candidate (word, length) pairs below which a round tries all lengths at once
# Candidate (byte, length) pairs up to which the remaining words are finished in one all-positions pass
# and a walk instead of more rounds. On NumPy (best of 5, one 2-core machine): after round 0 it saves
# 10-15% at batches of 1-4 texts (0.37 -> 0.33 ms, 0.70 -> 0.60 ms) and nothing at 32+, and done from the
# start it was slower from 4 texts on; on a GPU the one pass avoids the rounds' per-length host syncs
# (a few hundred MB of temporaries at most). Same pieces either way (tested).
_WALK_LIMIT = 1 << 14
_WALK_LIMIT_GPU = 1 << 24


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
        self._special_bytes = [t.encode() for t in self.specials]
        self._special_ids = self.xp.asarray(np.asarray([ids[t] for t in self.specials], dtype=np.int64))
        toks = [t.encode("utf-8") for t in ids]
        self.table = ByteTable(toks, self.xp, values=list(ids.values()), prefix=CONTINUATION)
        self.max_piece = max((len(t) - (2 if t.startswith(CONTINUATION) else 0) for t in toks), default=0)
        self.normalizer = Normalizer.get(lowercase, self.xp)
        self.backend = backend
        if backend == "cudf":
            from triton_textops.ops.cudf_backend import CudfWordPiece

            self._cudf = CudfWordPiece(vocab, self.specials, lowercase)
        # hash("##") * B^l mod 2**64 for every piece length l: the "##" part of a continuation key
        seed = hash_bytes(CONTINUATION)
        self._seed_pows = self.xp.asarray(
            np.array([seed * pow(HASH_BASE, k, 1 << 64) % (1 << 64) for k in range(self.max_piece + 1)], dtype=np.uint64)
        )

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
        """Stage (a): texts → normalized bytes + pre-token spans (with raw special tokens marked)."""
        batch = texts if isinstance(texts, TextBatch) else TextBatch.from_texts(texts, self.xp)
        return self.normalizer.pretokenize(batch, self._special_bytes)

    def wordpiece(self, pre: PreTokens) -> tuple[Any, Any]:
        """Stage (b): pre-tokens → (piece ids, per-text piece offsets (n+1))."""
        xp = self.xp
        ntok = pre.start.shape[0]
        special = pre.special
        unk = pre.nchars > MAX_INPUT_CHARS_PER_WORD  # such a word is one [UNK]
        if special is None:  # no special token in the batch: every token is a word
            candidates = (~unk).nonzero()[0]
        else:
            is_word = special == -1
            is_special = special >= 0
            unk &= is_word
            candidates = (is_word & ~unk).nonzero()[0]
        ids, owner, rank, failed = self._match_rounds(pre, candidates)
        if failed.shape[0]:
            unk[failed] = True
            keep = (~unk[owner]).nonzero()[0]
            ids, owner, rank = ids[keep], owner[keep], rank[keep]
        # pieces per token: the word's pieces, one [UNK], one special id, or none (absorbed by a special)
        count = bincount(xp, owner, ntok) + unk
        if special is not None:
            count += is_special
        ends = xp.cumsum(count)
        tok_off = ends - count
        pieces = xp.empty(int(ends[-1]) if ntok else 0, dtype=xp.int64)
        pieces[tok_off[owner] + rank] = ids
        pieces[tok_off[unk]] = self.unk_id
        if special is not None:
            sp = is_special.nonzero()[0]
            pieces[tok_off[sp]] = self._special_ids[special[sp]]
        return pieces, xp.concatenate([xp.zeros(1, dtype=xp.int64), ends])[pre.tok_offsets]

    def _match_rounds(self, pre: PreTokens, words: Any) -> tuple[Any, Any, Any, Any]:
        """WordPiece over every word at once: (piece id, word, piece rank) of every piece found, and the
        words that cannot be split (their pieces, if any, are to be dropped for one ``[UNK]``).

        Most words are one vocabulary piece: one lookup per word settles them. The rest go round by
        round (round r finds piece r of each word) until what is left is small enough to find every
        byte's longest piece in one pass and walk it (:meth:`_walk_positions`; on a GPU almost always
        at once: no per-length host syncs)."""
        xp = self.xp
        limit = _WALK_LIMIT if xp is np else _WALK_LIMIT_GPU
        pos, end = pre.start[words], pre.end[words]
        whole = self.table.find(span_hash(pre, pos, end), pre.data, pos, end - pos, b8=pre.bytes8())
        hit = whole >= 0
        ids, owner, ranks, failed = [whole[hit]], [words[hit]], [0], []
        rest = (~hit).nonzero()[0]
        words, pos, end = words[rest], pos[rest], end[rest]
        r = 0
        while words.shape[0]:
            if int((end - pos).sum()) * self.max_piece <= limit:
                i, o, k, f = self._walk_positions(pre, words, pos, end, r > 0)
                ids.append(i)
                owner.append(o)
                ranks.append(k + r)
                failed.append(f)
                break
            best, blen = self._longest_match(pre, pos, end, r > 0)
            ids.append(best)
            owner.append(words)
            ranks.append(r)
            miss = best < 0
            failed.append(words[miss])
            pos = pos + blen
            go = (~miss & (pos < end)).nonzero()[0]
            words, pos, end = words[go], pos[go], end[go]
            r += 1
        rank = xp.concatenate([xp.full(a.shape[0], k) if isinstance(k, int) else k for a, k in zip(ids, ranks)])
        flat_failed = xp.concatenate(failed) if failed else xp.zeros(0, dtype=xp.int64)
        return xp.concatenate(ids), xp.concatenate(owner), rank, flat_failed

    def _walk_positions(self, pre: PreTokens, words: Any, wstart: Any, wend: Any, all_cont: bool) -> tuple[Any, Any, Any, Any]:
        """The longest piece at EVERY byte of the spans ``[wstart, wend)`` in one pass (``##``-prefixed
        except at a span's start unless ``all_cont``), then a greedy walk of all spans at once with a few
        cheap array operations per step. Same pieces as the rounds, far fewer array calls. Returns
        (piece id, word, rank within the walk, failed words); a failed word's ids are meaningless."""
        xp = self.xp
        nw = words.shape[0]
        wbytes = wend - wstart
        ends = xp.cumsum(wbytes)
        base = ends - wbytes
        total = int(ends[-1])
        at = xp.arange(total)  # the words' bytes, laid end to end
        seg = xp.searchsorted(ends, at, side="right")
        pos = at + (wstart - base)[seg]  # where in the text
        rem = xp.minimum(ends[seg] - at, self.max_piece)
        cont = xp.ones(total, dtype=bool) if all_cont else at != base[seg]
        top = int(rem.max())
        q = ((xp.arange(1, top + 1)[None, :] <= rem[:, None]).ravel()).nonzero()[0]
        qat, qlen = q // top, q % top + 1
        s = pos[qat]
        with_prefix = cont[qat]
        key = span_hash(pre, s, s + qlen) + xp.where(with_prefix, self._seed_pows[qlen], np.uint64(0))
        found = self.table.find(key, pre.data, s, qlen, True if all_cont else with_prefix, b8=pre.bytes8())
        score = xp.zeros(total * top, dtype=xp.int64)
        score[q] = xp.where(found >= 0, qlen, 0)
        best_len = score.reshape(total, top).max(axis=1)
        fid = xp.zeros(total * top, dtype=xp.int64)
        fid[q] = found
        best_id = fid[at * top + xp.maximum(best_len, 1) - 1]
        nxt = xp.where(best_len > 0, at + best_len, total)  # a byte with no piece ends its word's walk
        cur, lim, act = base, ends, xp.arange(nw)
        visits, owners = [], []
        while cur.shape[0]:
            visits.append(cur)
            owners.append(act)
            cur = nxt[cur]
            go = (cur < lim).nonzero()[0]
            cur, lim, act = cur[go], lim[go], act[go]
        sizes = [v.shape[0] for v in visits]
        at_piece = xp.concatenate(visits)
        who = words[xp.concatenate(owners)]
        step = xp.repeat(xp.arange(len(sizes)), sizes)
        return best_id[at_piece], who, step, who[best_len[at_piece] == 0]

    def _longest_match(self, pre: PreTokens, pos: Any, end: Any, cont: bool) -> tuple[Any, Any]:
        """For each word remainder ``data[pos:end]``, the id and byte length of the longest vocab piece
        it starts with (``##``-prefixed when ``cont``), or -1.

        Small sets try every candidate length at once (few array calls: what a batch of one needs);
        large sets try lengths longest first and drop a word at its first verified hit (least work).
        Both return the longest verified match, so the choice never changes a result."""
        xp = self.xp
        n = pos.shape[0]
        rem = xp.minimum(end - pos, self.max_piece)
        top = int(rem.max()) if n else 0
        with_prefix = True if cont else None  # continuation pieces: the table compares them after "##"
        if n * top <= _DENSE_LIMIT:
            ln = xp.arange(1, top + 1, dtype=xp.int64)
            q = ((ln[None, :] <= rem[:, None]).ravel()).nonzero()[0]
            word, qlen = q // top, q % top + 1
            s = pos[word]
            key = span_hash(pre, s, s + qlen)
            if cont:
                key = key + self._seed_pows[qlen]
            found = self.table.find(key, pre.data, s, qlen, with_prefix, b8=pre.bytes8())
            score = xp.full(n * top, -1, dtype=xp.int64)
            score[q] = xp.where(found >= 0, qlen, -1)
            blen = score.reshape(n, top).max(axis=1) if n else xp.zeros(0, dtype=xp.int64)
            tid = xp.full(n * top, -1, dtype=xp.int64)
            tid[q] = found
            pick = xp.arange(n) * top + xp.maximum(blen, 1) - 1
            hit = blen > 0
            best = xp.where(hit, tid[pick], -1)
            return best, xp.where(hit, blen, 0)
        best = xp.full(n, -1, dtype=xp.int64)
        blen = xp.zeros(n, dtype=xp.int64)
        order = xp.argsort(-rem.astype(xp.int16))  # any order of equal lengths gives the same result
        rem_sorted = rem[order]
        # number of words with rem >= l, for each l: words are sorted by rem descending
        counts = xp.searchsorted(-rem_sorted, -xp.arange(top + 1), side="right")
        counts_h = to_numpy(counts)
        for ln in range(top, 0, -1):
            cand = order[: int(counts_h[ln])]
            cand = cand[best[cand] < 0]
            if cand.shape[0] == 0:
                continue
            s = pos[cand]
            key = span_hash(pre, s, s + ln)
            if cont:  # hash("##" + s) = hash("##") * B^len(s) + hash(s)
                key = key + self._seed_pows[ln]
            found = self.table.find(key, pre.data, s, ln, with_prefix, b8=pre.bytes8())
            hit = found >= 0
            best[cand[hit]] = found[hit]
            blen[cand[hit]] = ln
        return best, blen

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
        xp = self.xp
        n_special = 2 if add_special_tokens else 0
        content = max_length - n_special
        if content < 1:
            raise InputError(f"max_length={max_length} leaves no room for content ({n_special} special tokens)")
        if stride < 0:
            raise InputError(f"stride must be >= 0, got {stride}")
        if return_overflowing_tokens and stride >= content:
            raise InputError(
                f"stride={stride} must be smaller than the content length per window "
                f"(max_length - special tokens = {content})"
            )
        if dtype not in ("int64", "int32"):
            raise InputError(f"dtype must be 'int64' or 'int32', got {dtype!r}")
        ntext = piece_offsets.shape[0] - 1
        lens = piece_offsets[1:] - piece_offsets[:-1]
        if return_overflowing_tokens:  # window k of a text starts at piece k * step
            step = content - stride
            windows = xp.where(lens <= content, 1, 1 + (lens - content + step - 1) // step)
            row_ends = xp.cumsum(windows)
            nrows = int(row_ends[-1]) if ntext else 0
            row_text = xp.searchsorted(row_ends, xp.arange(nrows), side="right")
            start = (xp.arange(nrows) - (row_ends - windows)[row_text]) * step
            first = piece_offsets[row_text] + start
            length = xp.minimum(content, lens[row_text] - start)
        else:  # one row per text: its first pieces
            nrows = ntext
            row_text = xp.arange(ntext)
            first = piece_offsets[:-1]
            length = xp.minimum(content, lens)
        j = xp.arange(content, dtype=xp.int64)
        inside = j[None, :] < length[:, None]
        src = xp.where(inside, first[:, None] + j[None, :], 0)
        body = xp.where(inside, pieces[src] if pieces.shape[0] else 0, self.pad_id)
        ids = xp.full((nrows, max_length), self.pad_id, dtype=xp.int64)
        rows = xp.arange(nrows)
        if add_special_tokens:
            ids[:, 0] = self.cls_id
            ids[:, 1 : 1 + content] = body
            ids[rows, length + 1] = self.sep_id
            used = length + 2
        else:
            ids[:, :content] = body
            used = length
        out_dtype = xp.int64 if dtype == "int64" else xp.int32
        mask = (xp.arange(max_length)[None, :] < used[:, None]).astype(out_dtype)
        return Encoding(
            input_ids=ids.astype(out_dtype, copy=False),
            attention_mask=mask,
            token_type_ids=xp.zeros((nrows, max_length), dtype=out_dtype),
            overflow_to_sample_mapping=row_text.astype(out_dtype),
        )

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
            batch = texts if isinstance(texts, TextBatch) else TextBatch.from_texts(texts, self.xp)
            pieces, offsets = self._cudf(batch)
        else:
            pieces, offsets = self.wordpiece(self.pretokenize(texts))
        return self.pack(
            pieces,
            offsets,
            max_length=max_length,
            stride=stride,
            return_overflowing_tokens=return_overflowing_tokens,
            add_special_tokens=add_special_tokens,
            dtype=dtype,
        )

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of one text as strings (debugging aid)."""
        inv = {v: k for k, v in self.vocab.items()}
        pieces, _ = self.wordpiece(self.pretokenize([text]))
        host = to_numpy(pieces)
        return [inv[int(i)] for i in host]
