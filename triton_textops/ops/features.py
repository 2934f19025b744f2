"""Readability features for the tree model (the seed's 207 features), on NumPy or CuPy.

Built on the tokenizer's normalization and pre-tokenization (:mod:`triton_textops.ops.text`), so one
pass over the text serves both the BERT inputs and these features. The specification is
``features.md`` (copied into the docstrings below where it matters):

* tokens: BERT-normalized text, BERT pre-tokens; a one-character punctuation token is
  *punctuation*, every other token is a *word*;
* features, in order: ``n_words``, ``n_distinct_words``, ``n_punctuation``, ``n_sentences``,
  ``words_per_sentence``, ``n_stopwords``, ``stopwords_per_sentence``, then the count of each of
  the N most frequent corpus words (``common:<w>``) and of the N least frequent (``rare:<w>``);
* normalization ``(x - mean) / std`` in float32, with mean/std (population) fitted on the corpus.

Everything on the serving path is vectorized over the whole batch through ``pre.xp``: integer
counts, then float32 arithmetic in a fixed form, so NumPy and CuPy give bit-identical values.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.text import ByteTable, Normalizer, PreTokens, TextBatch, bytes8, load8
from triton_textops.ops.xp import bincount, device_constant, get_xp

__all__ = [
    "ARTIFACT_FORMAT",
    "ARTIFACT_VERSION",
    "BASE_FEATURES",
    "BUILTIN_STOPWORDS",
    "ReadabilityFeatures",
    "load_stopwords",
]

ARTIFACT_FORMAT = "triton-textops/readability-features"
ARTIFACT_VERSION = 1
BASE_FEATURES = (
    "n_words",
    "n_distinct_words",
    "n_punctuation",
    "n_sentences",
    "words_per_sentence",
    "n_stopwords",
    "stopwords_per_sentence",
)
BUILTIN_STOPWORDS = ("nltk-179", "nltk-198")
TERMINATORS = (".", "!", "?", "\u2026")
CLOSERS = ('"', "'", ")", "]", "\u201d", "\u2019", "\u00bb")
ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "mt", "capt", "col", "gen", "lt", "sgt", "rev")
_FIT_CHUNK = 1024  # texts normalized at once while fitting

ProgressFn = Callable[[str, int, int], None]  # (phase, texts done so far, total)


# ------------------------------------------------------------------------------------ stop words


def load_stopwords(spec: str | os.PathLike[str] | Iterable[str]) -> tuple[str, list[str]]:
    """Resolve a stop-word selection to ``(name, words)``.

    ``"nltk-179"`` (default, NLTK's English list before 2025) and ``"nltk-198"`` are package data;
    ``"nltk"`` reads the installed NLTK ``stopwords`` corpus; a path reads a file with one word a
    line; an iterable of strings is used as is.
    """
    if isinstance(spec, str) and spec in BUILTIN_STOPWORDS:
        text = (resources.files("triton_textops") / "data" / "stopwords" / f"{spec}.txt").read_text("utf-8")
        return spec, _words_of(text)
    if isinstance(spec, str) and spec == "nltk":
        try:
            from nltk.corpus import stopwords as nltk_sw  # noqa: PLC0415
        except ImportError as e:
            raise ValueError(
                "stopwords='nltk' needs the nltk package (pip install nltk) and its stopwords corpus "
                "(python -m nltk.downloader stopwords); or use the bundled 'nltk-179' / 'nltk-198'"
            ) from e
        try:
            words = list(nltk_sw.words("english"))
        except LookupError as e:
            raise ValueError(
                "stopwords='nltk': the NLTK stopwords corpus is not installed "
                "(python -m nltk.downloader stopwords); or use the bundled 'nltk-179' / 'nltk-198'"
            ) from e
        return f"nltk-installed-{len(words)}", _dedupe(words)
    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        if not path.is_file():
            raise ValueError(
                f"unknown stop-word list {str(spec)!r}: expected one of {', '.join(BUILTIN_STOPWORDS)}, "
                "'nltk', or the path of a file with one word a line"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"stop-word file {str(path)!r} is not valid UTF-8: {e}") from e
        return f"file:{path.name}", _words_of(text)
    words = list(spec)
    if not all(isinstance(w, str) for w in words):
        raise ValueError("a stop-word list given as a sequence must hold strings")
    return "custom", _dedupe(w for w in words if w)


def _words_of(text: str) -> list[str]:
    return _dedupe(line.strip() for line in text.splitlines() if line.strip())


def _dedupe(words: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(words))


# ------------------------------------------------------------------------------------ array helpers


def _shift_next(xp: ModuleType, a: Any, fill: Any) -> Any:
    """``out[i] = a[i + 1]``, ``fill`` at the end."""
    out = xp.empty_like(a)
    out[:-1] = a[1:]
    out[-1:] = fill
    return out


def _packed_const(s: str) -> int:
    """A string of at most 4 UTF-8 bytes as its bytes read little-endian (exact: text has no NUL byte)."""
    b = s.encode("utf-8")
    assert 0 < len(b) <= 4
    return int.from_bytes(b, "little")


_TERM_KEYS = tuple(_packed_const(s) for s in TERMINATORS)
_CLOSE_KEYS = tuple(_packed_const(s) for s in CLOSERS)
_ABBR_KEYS = tuple(_packed_const(s) for s in ABBREVIATIONS)


def _same_tail(xp: ModuleType, data: Any, a_start: Any, b_data: Any, b_start: Any, length: Any) -> Any:
    """Bytes 8..length of span a (in ``data``) equal those of span b (in ``b_data``), per pair."""
    if a_start.shape[0] == 0:
        return xp.ones(0, dtype=bool)
    j = xp.arange(8, int(length.max()), dtype=np.int64)
    inside = j[None, :] < length[:, None]
    a = data[xp.where(inside, a_start[:, None] + j[None, :], 0)]
    b = b_data[xp.where(inside, b_start[:, None] + j[None, :], 0)]
    return ((a == b) | ~inside).all(axis=1)


def _is_any(xp: ModuleType, key: Any, keys: tuple[int, ...]) -> Any:
    """``key`` (uint64) is one of the constant ``keys``: one binary search, not a compare per key."""
    table = device_constant(xp, ("is_any", keys), lambda: np.array(sorted(set(keys)), dtype=np.uint64))
    return table[xp.minimum(xp.searchsorted(table, key), table.shape[0] - 1)] == key


def _span_keys(xp: ModuleType, b8: Any, start: Any, length: Any, head: Any) -> Any:
    """64-bit key of each span from its length, first 8 and last 8 bytes.

    Cheap (no pass over the text) and a good hash for slotting; not an identity for spans longer
    than 16 bytes, so every user verifies candidates on the bytes.
    """
    tail = head.copy()
    li = xp.flatnonzero(length > 8)
    if li.shape[0]:
        tail[li] = load8(xp, b8, start[li] + length[li] - 8, xp.full(li.shape[0], 8, dtype=np.int64))
    k = (head * np.uint64(_K1)) ^ (tail * np.uint64(_K2)) ^ (length.astype(np.uint64) * np.uint64(_K3))
    k ^= k >> np.uint64(32)
    k *= np.uint64(_SLOT_MIX)
    k ^= k >> np.uint64(29)
    return k


class _WordTable:
    """Exact lookup of the feature words (stop words + corpus words) by pre-token span.

    Open addressing on :func:`_span_keys` finds a candidate; every candidate is then verified on the
    word's bytes (length, first 8 bytes packed, the rest byte by byte for the few longer words), so a
    key collision can never give a wrong answer. Should two table words share a key (same length,
    first and last 8 bytes), the tokenizer's byte-verified :class:`ByteTable` is used instead.
    """

    def __init__(self, words: Sequence[str], xp: ModuleType) -> None:
        enc = [w.encode("utf-8") for w in words]
        self.xp = xp
        self.size = len(enc)
        lens = np.array([len(b) for b in enc] + [0], dtype=np.int64)
        starts = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        pool = np.frombuffer(b"".join(enc) + b"\0", dtype=np.uint8)
        # the same functions as serving, on the table's own bytes
        w8 = bytes8(np, pool)
        head = load8(np, w8, starts[:-1], lens[:-1])
        karr = _span_keys(np, w8, starts[:-1], lens[:-1], head)
        self.fallback = None
        if len(set(karr.tolist())) != len(enc):
            self.fallback = ByteTable(enc, xp)
        bits = max(4, (max(len(enc), 1) * 16 - 1).bit_length())  # sparse: ~1 probe
        size = 1 << bits
        slot_key = np.zeros(size, dtype=np.uint64)
        slot_idx = np.full(size, -1, dtype=np.int64)
        home = (karr >> np.uint64(64 - bits)).astype(np.int64)
        max_probe = 0
        for i in range(len(enc)):
            slot, d = int(home[i]), 0
            while slot_idx[slot] >= 0:
                slot, d = (slot + 1) & (size - 1), d + 1
            slot_key[slot], slot_idx[slot] = karr[i], i
            max_probe = max(max_probe, d)
        self.bits, self.max_probe = bits, max_probe
        self.slot_key = xp.asarray(slot_key)
        self.slot_idx = xp.asarray(slot_idx)
        self.len = xp.asarray(lens)
        self.head = xp.asarray(np.concatenate([head, np.zeros(1, np.uint64)]))
        self.start = xp.asarray(starts)
        self.pool = xp.asarray(pool)

    def lookup(self, pre: PreTokens, start: Any, length: Any, key: Any, head: Any) -> Any:
        """Index of each span's word in the table, or -1 (int64); ``key``/``head`` of the spans."""
        xp = self.xp
        if self.fallback is not None:
            return self.fallback.lookup(pre, start, start + length)
        res = xp.full(start.shape[0], -1, dtype=np.int64)
        if start.shape[0] == 0 or self.size == 0:
            return res
        mask = (1 << self.bits) - 1
        slot = (key >> np.uint64(64 - self.bits)).astype(np.int64)
        for _ in range(self.max_probe + 1):
            cand = self.slot_idx[slot]
            res = xp.where((res < 0) & (self.slot_key[slot] == key), cand, res)
            slot = (slot + 1) & mask
        # verify every candidate against the word's bytes: exact whatever the key does
        idx = xp.maximum(res, 0)
        ok = (res >= 0) & (self.len[idx] == length) & (self.head[idx] == head)
        long_ = xp.flatnonzero(ok & (length > 8))
        if long_.shape[0]:
            ok[long_] = _same_tail(xp, pre.data, start[long_], self.pool, self.start[idx[long_]], length[long_])
        return xp.where(ok, res, -1)


def _count_distinct(xp: ModuleType, data: Any, start: Any, length: Any, text: Any, skey: Any, head: Any, n: int) -> Any:
    """Distinct words per text, exactly.

    Vectorized hash grouping: every pending word writes its index into its slot, reads the winner back
    and joins the winner's group when the winner is the same word of the same text (checked on the
    bytes: length, first 8 bytes, and the rest byte by byte for longer words); the others probe the
    next slot. Members of a group always move together, so each group gets exactly one leader,
    whichever writer wins a slot (the count is the same on NumPy and CuPy).
    """
    m = int(start.shape[0])
    if m == 0:
        return xp.zeros(n, dtype=np.int64)
    bits = max(4, (_DISTINCT_SLOTS * m - 1).bit_length())
    size_mask = np.int64((1 << bits) - 1)
    key = skey ^ (text.astype(np.uint64) * np.uint64(_TEXT_MIX))
    lt = (length.astype(np.uint64) << np.uint64(32)) | text.astype(np.uint64)  # length and text in one key
    slot = ((key * np.uint64(_SLOT_MIX)) >> np.uint64(64 - bits)).astype(np.int64)
    table = xp.empty(1 << bits, dtype=np.int64)
    pending = xp.arange(m, dtype=np.int64)
    leaders = []
    first = True
    while pending.shape[0]:
        s = slot if first else slot[pending]
        table[s] = pending
        w = table[s]
        if first:
            k, h, l_ = key, head, lt
        else:
            k, h, l_ = key[pending], head[pending], lt[pending]
        same = (key[w] == k) & (head[w] == h) & (lt[w] == l_)
        long_ = xp.flatnonzero(same & (w != pending) & ((l_ >> np.uint64(32)) > 8))
        if long_.shape[0]:
            p, q = pending[long_], w[long_]
            same[long_] = _same_tail(xp, data, start[p], data, start[q], length[p])
        leaders.append(pending[w == pending])
        pending = pending[~same]
        slot[pending] = (slot[pending] + 1) & size_mask
        first = False
    return bincount(xp, text[xp.concatenate(leaders)], n)


_SLOT_MIX = 0xD6E8FEB86659FD93  # odd multiplier spreading hashes over the slots
_K1, _K2, _K3 = 0x9FB21C651E98DF25, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9  # odd key multipliers
_TEXT_MIX = 0x9E3779B97F4A7C15  # odd multiplier mixing the text index into a word's hash
_MARK_LIMIT = 1 << 22  # largest (texts x table words) bitmap used to count distinct table words
_DISTINCT_SLOTS = 2  # slots per word in the distinct-word grouping table (rounded up to a power of 2)


# ------------------------------------------------------------------------------------ the features


class ReadabilityFeatures:
    """Fitted readability features: corpus words, stop words and normalization (see module doc)."""

    def __init__(
        self,
        *,
        lowercase: bool,
        stopwords_name: str,
        stopwords: Sequence[str],
        common: Sequence[str],
        rare: Sequence[str],
        mean: Sequence[float],
        std: Sequence[float],
        fitted_on: dict[str, int] | None = None,
    ) -> None:
        self.lowercase = bool(lowercase)
        self.stopwords_name = str(stopwords_name)
        self.stopwords = list(stopwords)
        self.common = list(common)
        self.rare = list(rare)
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1)
        self.fitted_on = dict(fitted_on or {})
        k = self.n_features
        if self.mean.shape != (k,) or self.std.shape != (k,):
            raise ValueError(f"mean/std must have {k} values (7 + {len(self.common)} + {len(self.rare)})")
        if not (np.isfinite(self.mean).all() and np.isfinite(self.std).all() and (self.std > 0).all()):
            raise ValueError("mean must be finite and std finite and > 0")
        if len(set(self.common)) != len(self.common) or len(set(self.rare)) != len(self.rare):
            raise ValueError("the common and rare word lists must not repeat a word")
        self._tables: dict[tuple[int, int], dict[str, Any]] = {}

    # ----------------------------------------------------------------------------- properties

    @property
    def n_common(self) -> int:
        return len(self.common)

    @property
    def n_rare(self) -> int:
        return len(self.rare)

    @property
    def n_features(self) -> int:
        return len(BASE_FEATURES) + len(self.common) + len(self.rare)

    @property
    def feature_names(self) -> list[str]:
        """``n_words`` ... ``stopwords_per_sentence``, ``common:<word>`` ..., ``rare:<word>`` ..."""
        return list(BASE_FEATURES) + [f"common:{w}" for w in self.common] + [f"rare:{w}" for w in self.rare]

    def __repr__(self) -> str:
        casing = "uncased" if self.lowercase else "cased"
        return (
            f"ReadabilityFeatures({casing}, n_common={self.n_common}, n_rare={self.n_rare}, "
            f"stopwords={self.stopwords_name!r} ({len(self.stopwords)} words))"
        )

    # ----------------------------------------------------------------------------- fitting

    @classmethod
    def fit(
        cls,
        texts: Sequence[str | bytes] | Any,
        *,
        n_common: int = 100,
        n_rare: int = 100,
        stopwords: str | os.PathLike[str] | Iterable[str] = "nltk-179",
        lowercase: bool = True,
        progress: ProgressFn | None = None,
    ) -> ReadabilityFeatures:
        """Learn the corpus words and the mean/std of every raw feature from ``texts``.

        Words are counted exactly (host Python over the same pre-tokens that serving uses); the N
        most frequent are sorted by (count desc, UTF-8 bytes asc), the N least frequent by
        (count asc, bytes asc). Raises ValueError when the corpus has fewer than
        ``n_common + n_rare`` distinct words, :class:`InputError` for invalid UTF-8 (naming the row).
        ``texts`` may also be a Dask collection (bag, dataframe column, dask-cudf series): the fit then
        runs as a map-reduce over its partitions and gives the same artifact
        (:mod:`triton_textops.ops.features_dask`).
        """
        if int(n_common) < 0 or int(n_rare) < 0:
            raise ValueError("n_common and n_rare must be >= 0")
        n_common, n_rare = int(n_common), int(n_rare)
        sw_name, sw_words = load_stopwords(stopwords)
        from triton_textops.ops import features_dask  # noqa: PLC0415

        if features_dask.is_dask_collection(texts):  # corpus scale: map-reduce over the partitions
            return features_dask.fit_dask(
                cls, texts, n_common=n_common, n_rare=n_rare, stopwords=(sw_name, sw_words),
                lowercase=lowercase, progress=progress,
            )
        texts = list(texts)
        total = len(texts)
        if total == 0:
            raise ValueError("cannot fit readability features on an empty corpus")
        norm = Normalizer.get(lowercase=lowercase, xp=np)
        counts: Counter[bytes] = Counter()
        chunks: list[PreTokens] = []
        for lo in range(0, total, _FIT_CHUNK):
            chunk = texts[lo : lo + _FIT_CHUNK]
            try:
                batch = TextBatch.from_texts(chunk, np)
            except InputError as e:  # name the row in the whole corpus, not in the chunk
                if lo == 0:
                    raise
                raise _shift_row_error(e, lo) from None
            pre = norm.pretokenize(batch)
            raw = pre.data.tobytes()
            word = ~pre.is_punct
            counts.update(raw[s:e] for s, e in zip(pre.start[word].tolist(), pre.end[word].tolist()))
            chunks.append(pre)
            if progress is not None:
                progress("tokenize", min(lo + _FIT_CHUNK, total), total)
        need = n_common + n_rare
        if len(counts) < need:
            raise ValueError(
                f"the corpus has {len(counts)} distinct words, fewer than n_common + n_rare = {need}: "
                "fit on a larger corpus or ask for fewer words"
            )
        by_bytes = sorted(counts)  # ascending UTF-8 bytes; stable sorts below keep it as tie-break
        common = sorted(by_bytes, key=lambda w: -counts[w])[:n_common]
        rare = sorted(by_bytes, key=lambda w: counts[w])[:n_rare]
        k = len(BASE_FEATURES) + need
        fitted = cls(
            lowercase=lowercase,
            stopwords_name=sw_name,
            stopwords=sw_words,
            common=[w.decode("utf-8") for w in common],
            rare=[w.decode("utf-8") for w in rare],
            mean=np.zeros(k, np.float32),
            std=np.ones(k, np.float32),
            fitted_on={"texts": total, "words": int(sum(counts.values())), "distinct_words": len(counts)},
        )
        raws = []
        done = 0
        for pre in chunks:
            raws.append(fitted.transform_pretokens(pre, normalize=False))
            done += pre.n
            if progress is not None:
                progress("features", done, total)
        x = np.concatenate(raws).astype(np.float64)
        mean = np.empty(k, dtype=np.float64)
        std = np.empty(k, dtype=np.float64)
        for j in range(k):  # exactly rounded sums: the result does not depend on summation order
            col = x[:, j]
            mean[j] = math.fsum(col.tolist()) / total
            std[j] = math.sqrt(math.fsum(((col - mean[j]) ** 2).tolist()) / total)
        fitted.mean = mean.astype(np.float32)
        std32 = std.astype(np.float32)
        fitted.std = np.where(std32 == 0, np.float32(1), std32).astype(np.float32)
        fitted._tables.clear()
        return fitted

    # ----------------------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        """The JSON artifact as a dict (float32 values written as exact decimal floats)."""
        return {
            "format": ARTIFACT_FORMAT,
            "version": ARTIFACT_VERSION,
            "lowercase": self.lowercase,
            "casing": "uncased" if self.lowercase else "cased",
            "n": self.n_common if self.n_common == self.n_rare else None,  # the spec's N
            "n_common": self.n_common,
            "n_rare": self.n_rare,
            "stopwords": {"name": self.stopwords_name, "words": self.stopwords},
            "common": self.common,
            "rare": self.rare,
            "feature_names": self.feature_names,
            "mean": [float(v) for v in self.mean],
            "std": [float(v) for v in self.std],
            "fitted_on": self.fitted_on,
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the JSON artifact (serving never refits)."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, d: Any, *, source: str = "artifact") -> ReadabilityFeatures:
        """Rebuild from :meth:`to_dict` output; any inconsistency is a ValueError naming ``source``."""

        def bad(why: str) -> ValueError:
            return ValueError(f"{source} is not a valid readability-features artifact: {why}")

        if not isinstance(d, dict):
            raise bad("the top level must be a JSON object")
        if d.get("format") != ARTIFACT_FORMAT:
            raise bad(f"format is {d.get('format')!r}, expected {ARTIFACT_FORMAT!r}")
        if d.get("version") != ARTIFACT_VERSION:
            raise bad(f"version {d.get('version')!r} is not supported (this build reads version {ARTIFACT_VERSION})")
        try:
            lowercase = d["lowercase"]
            sw = d["stopwords"]
            common, rare, mean, std = d["common"], d["rare"], d["mean"], d["std"]
            n_common, n_rare = d["n_common"], d["n_rare"]
        except KeyError as e:
            raise bad(f"missing field {e.args[0]!r}") from None
        if not isinstance(lowercase, bool) or d.get("casing", "uncased" if lowercase else "cased") != (
            "uncased" if lowercase else "cased"
        ):
            raise bad("'lowercase' must be true/false and agree with 'casing'")
        if not isinstance(sw, dict) or not isinstance(sw.get("name"), str) or not _str_list(sw.get("words")):
            raise bad("'stopwords' must be {'name': str, 'words': [str, ...]}")
        if not _str_list(common) or not _str_list(rare):
            raise bad("'common' and 'rare' must be lists of strings")
        if n_common != len(common) or n_rare != len(rare):
            raise bad(f"n_common/n_rare ({n_common}/{n_rare}) do not match the word lists ({len(common)}/{len(rare)})")
        if d.get("n") is not None and not (d["n"] == n_common == n_rare):
            raise bad(f"n ({d['n']}) does not match n_common/n_rare ({n_common}/{n_rare})")
        k = len(BASE_FEATURES) + len(common) + len(rare)
        for name, vals in (("mean", mean), ("std", std)):
            if (
                not isinstance(vals, list)
                or len(vals) != k
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
            ):
                raise bad(f"'{name}' must be a list of {k} numbers")
        names = d.get("feature_names")
        try:
            out = cls(
                lowercase=lowercase,
                stopwords_name=sw["name"],
                stopwords=sw["words"],
                common=common,
                rare=rare,
                mean=mean,
                std=std,
                fitted_on=d.get("fitted_on") if isinstance(d.get("fitted_on"), dict) else None,
            )
        except ValueError as e:
            raise bad(str(e)) from None
        if names is not None and names != out.feature_names:
            raise bad("'feature_names' do not match the word lists")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReadabilityFeatures:
        """Read a JSON artifact written by :meth:`save`; a corrupt or wrong-version file is a ValueError."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            d = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{str(path)!r} is not a valid readability-features artifact: {e}") from e
        return cls.from_dict(d, source=repr(str(path)))

    # ----------------------------------------------------------------------------- serving

    def _device_tables(self, xp: ModuleType) -> dict[str, Any]:
        """Lookup tables and mean/std on ``xp`` (built once per array module and CUDA device)."""
        dev = -1 if xp is np else int(xp.cuda.runtime.getDevice())
        key = (id(xp), dev)
        t = self._tables.get(key)
        if t is None:
            # one table for every word the features look up: stop words and corpus words
            vocab = _dedupe(self.stopwords + self.common + self.rare)
            pos = {w: i for i, w in enumerate(vocab)}
            is_stop = np.zeros(len(vocab) + 1, dtype=bool)  # +1: never empty (indexed by max(hit, 0))
            is_stop[[pos[w] for w in self.stopwords]] = True
            col = np.full(len(vocab) + 1, -1, dtype=np.int64)
            for j, w in enumerate(self.common + self.rare):
                col[pos[w]] = j
            t = {
                "table": _WordTable(vocab, xp),
                "is_stop": xp.asarray(is_stop),
                "col": xp.asarray(col),
                "mean": xp.asarray(self.mean),
                "std": xp.asarray(self.std),
            }
            self._tables[key] = t
        return t

    def transform(self, texts: Any, *, normalize: bool = True, device: str = "cpu") -> Any:
        """Features of a batch: float32 array (n, 7 + n_common + n_rare) of the device's array module.

        ``texts``: list of str/bytes, NumPy object array of bytes, or a ``(data, offsets)`` pair.
        Invalid UTF-8 raises :class:`InputError` naming the row.
        """
        xp = get_xp(device)
        batch = TextBatch.from_texts(texts, xp)
        pre = Normalizer.get(lowercase=self.lowercase, xp=xp).pretokenize(batch)
        return self.transform_pretokens(pre, normalize=normalize)

    def transform_pretokens(self, pre: PreTokens, *, normalize: bool = True) -> Any:
        """Features from pre-tokens already computed (the preprocess model's one normalization pass).

        ``pre`` must come from ``Normalizer.get(lowercase=self.lowercase, ...)``.
        """
        if getattr(pre, "lowercase", self.lowercase) != self.lowercase:
            raise ValueError("pre-tokens were normalized with another casing than the features were fitted with")
        xp = pre.xp
        t = self._device_tables(xp)
        x = self._raw(pre, t)
        if normalize:
            x = (x - t["mean"]) / t["std"]
        return x

    def _raw(self, pre: PreTokens, t: dict[str, Any]) -> Any:
        """The raw features (float32), vectorized over all pre-tokens of the batch."""
        xp = pre.xp
        n = pre.n
        n_base = len(BASE_FEATURES)
        k_words = self.n_common + self.n_rare
        out = xp.zeros((n, n_base + k_words), dtype=np.float32)
        n_tok = int(pre.start.shape[0])
        if n == 0 or n_tok == 0:
            return out
        offs = pre.tok_offsets
        word = ~pre.is_punct
        wcs = xp.zeros(n_tok + 1, dtype=np.int64)  # running count of words
        wcs[1:] = xp.cumsum(word, dtype=np.int64)
        n_words = wcs[offs[1:]] - wcs[offs[:-1]]
        n_punct = (offs[1:] - offs[:-1]) - n_words

        # --- words: one exact table lookup serves stop words and corpus words
        b8 = pre.bytes8()
        widx = xp.flatnonzero(word)
        wtext = pre.text[widx]
        ws, we = pre.start[widx], pre.end[widx]
        wl = we - ws
        head = load8(xp, b8, ws, wl)
        skey = _span_keys(xp, b8, ws, wl, head)
        table: _WordTable = t["table"]
        hit = table.lookup(pre, ws, wl, skey, head)
        fidx = xp.flatnonzero(hit >= 0)
        ftext, fhit = wtext[fidx], hit[fidx]
        # one bincount lays out n_stopwords (column 5) and the word counts (columns 7...) per text
        width = n_base + k_words
        stop_of = xp.flatnonzero(t["is_stop"][fhit])
        col = t["col"][fhit]
        has_col = xp.flatnonzero(col >= 0)
        flat = xp.concatenate([ftext[stop_of] * width + 5, ftext[has_col] * width + n_base + col[has_col]])
        out = bincount(xp, flat, n * width).reshape(n, width).astype(np.float32)
        # distinct words: table words exactly by (text, table index), the others by byte-checked grouping
        size = table.size
        if n * size <= _MARK_LIMIT:
            mark = xp.zeros(n * size, dtype=bool)
            mark[ftext * size + fhit] = True
            rest = xp.flatnonzero(hit < 0)
            n_distinct = mark.reshape(n, size).sum(axis=1, dtype=np.int64) + _count_distinct(
                xp, pre.data, ws[rest], wl[rest], wtext[rest], skey[rest], head[rest], n
            )
        else:
            n_distinct = _count_distinct(xp, pre.data, ws, wl, wtext, skey, head, n)
        n_sent = self._sentences(pre, wcs, b8)

        nw = n_words.astype(np.float32)
        ns = n_sent.astype(np.float32)
        nst = out[:, 5]  # exact: counts below 2**24
        has = n_sent > 0
        den = xp.where(has, ns, np.float32(1))
        out[:, 0] = nw
        out[:, 1] = n_distinct.astype(np.float32)
        out[:, 2] = n_punct.astype(np.float32)
        out[:, 3] = ns
        out[:, 4] = xp.where(has, nw / den, np.float32(0))
        out[:, 6] = xp.where(has, nst / den, np.float32(0))
        return out

    @staticmethod
    def _sentences(pre: PreTokens, wcs: Any, b8: Any) -> Any:
        """``n_sentences`` per text (int64), by the spec's terminator-run rule.

        Works on the punctuation tokens only (terminators and closing tokens are one-character
        punctuation tokens); ``wcs`` is the running count of words over all tokens (length T+1).
        """
        xp = pre.xp
        n_tok = int(pre.start.shape[0])
        offs = pre.tok_offsets
        p = xp.flatnonzero(pre.is_punct)
        n_p = int(p.shape[0])
        tail_from = offs[:-1]  # words are counted from here on when a text has no sentence end
        if n_p:
            text_p, st_p, en_p = pre.text[p], pre.start[p], pre.end[p]
            pk = load8(xp, b8, st_p, en_p - st_p)
            term = _is_any(xp, pk, _TERM_KEYS)
            closer = _is_any(xp, pk, _CLOSE_KEYS)
            # the next token (of any kind) is in the same text and starts where this one ends
            nxt = xp.minimum(p + 1, n_tok - 1)
            adj = (p + 1 < n_tok) & (pre.start[nxt] == en_p) & (pre.text[nxt] == text_p)
            # ... and it is the next punctuation token, a terminator / a closing token
            adj_p = xp.zeros(n_p, dtype=bool)
            adj_p[:-1] = adj[:-1] & (p[1:] == p[:-1] + 1)
            run_end = term & ~(adj_p & _shift_next(xp, term, False))
            # (a) after the run and any adjacent closing tokens comes whitespace or the end of the
            # text: follow "adjacent closer" links to the first token without one; it needs a gap.
            stop = ~(adj_p & _shift_next(xp, closer, False))
            stop_pos = xp.flatnonzero(stop)  # never empty: the last one has no next punctuation token
            first_stop = xp.cumsum(stop, dtype=np.int64) - stop
            ends = run_end & ~adj[stop_pos[first_stop]]
            # (b) not a single '.' glued to a one-character word or an abbreviation (the word is not
            # a terminator, so such a '.' is a run of one)
            prv = xp.maximum(p - 1, 0)
            glued = (p > 0) & (pre.end[prv] == st_p) & (pre.text[prv] == text_p) & ~pre.is_punct[prv]
            cand = xp.flatnonzero(ends & glued & (pk == _TERM_KEYS[0]))
            if cand.shape[0]:
                prev = p[cand] - 1
                pl = pre.end[prev] - pre.start[prev]
                # a word of at most 8 bytes is identified by its packed bytes (abbreviations have 2-4)
                pkey = xp.where(pl <= 4, load8(xp, b8, pre.start[prev], pl), np.uint64(0))
                ends[cand] = ~((pre.nchars[prev] == 1) | _is_any(xp, pkey, _ABBR_KEYS))
            e_tok, e_text = p[ends], text_p[ends]
            n_ends = bincount(xp, e_text, pre.n)
            if e_tok.shape[0]:
                last = xp.ones(e_tok.shape[0], dtype=bool)
                last[:-1] = e_text[1:] != e_text[:-1]
                tail_from = tail_from.copy()
                tail_from[e_text[last]] = e_tok[last] + 1
        else:
            n_ends = xp.zeros(pre.n, dtype=np.int64)
        # +1 when a word comes after the last sentence end of its text
        return n_ends + ((wcs[offs[1:]] - wcs[tail_from]) > 0)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(w, str) for w in v)


def _shift_row_error(e: InputError, offset: int) -> InputError:
    """Re-number the rows of an InputError raised for a chunk of the corpus that starts at ``offset``."""
    rows = getattr(e, "rows", None)
    if rows is None:
        return InputError(f"{e} (in the chunk of texts starting at row {offset})")
    rows = np.asarray(rows, dtype=np.int64) + offset
    msg = str(e)
    prefix = f"row {int(rows[0]) - offset}"
    if msg.startswith(prefix):
        msg = f"row {int(rows[0])}" + msg[len(prefix):]
    return InputError(msg, rows=rows)
