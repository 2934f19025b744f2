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
from triton_textops.ops.text import ByteTable, Normalizer, PreTokens, TextBatch, span_hashes
from triton_textops.ops.xp import get_xp

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


def _seg_sum(xp: ModuleType, mask: Any, offsets: Any) -> Any:
    """Per-segment count of True in ``mask`` (segments given by ``offsets``, n+1): int64."""
    cs = xp.zeros(mask.shape[0] + 1, dtype=np.int64)
    if mask.shape[0]:
        xp.cumsum(mask, dtype=np.int64, out=cs[1:])
    return cs[offsets[1:]] - cs[offsets[:-1]]


def _bincount(xp: ModuleType, x: Any, size: int) -> Any:
    """``bincount(x, minlength=size)`` that accepts an empty ``x`` on CuPy too."""
    if x.shape[0] == 0:
        return xp.zeros(size, dtype=np.int64)
    return xp.bincount(x, minlength=size)


def _shift_next(xp: ModuleType, a: Any, fill: Any) -> Any:
    """``out[i] = a[i + 1]``, ``fill`` at the end."""
    out = xp.empty_like(a)
    out[:-1] = a[1:]
    out[-1:] = fill
    return out


def _shift_prev(xp: ModuleType, a: Any, fill: Any) -> Any:
    """``out[i] = a[i - 1]``, ``fill`` at the start."""
    out = xp.empty_like(a)
    out[1:] = a[:-1]
    out[:1] = fill
    return out


def _short_key(s: str) -> int:
    """Key of a string of at most 4 UTF-8 bytes: bytes little-endian, length in bits 32+."""
    b = s.encode("utf-8")
    assert len(b) <= 4
    return int.from_bytes(b, "little") | (len(b) << 32)


_TERM_KEYS = tuple(_short_key(s) for s in TERMINATORS)
_CLOSE_KEYS = tuple(_short_key(s) for s in CLOSERS)
_ABBR_KEYS = tuple(_short_key(s) for s in ABBREVIATIONS)


def _short_keys(pre: PreTokens) -> Any:
    """Per token: :func:`_short_key` of its bytes when it has at most 4 bytes, else -1 (int64)."""
    xp = pre.xp
    data, start = pre.data, pre.start
    length = pre.end - start
    last = data.shape[0] - 1
    key = data[start].astype(np.int64)
    for k in range(1, 4):
        b = data[xp.minimum(start + k, last)].astype(np.int64)
        key += xp.where(length > k, b << (8 * k), 0)
    return xp.where(length <= 4, key | (length << 32), -1)


def _is_any(xp: ModuleType, key: Any, keys: Sequence[int]) -> Any:
    out = key == keys[0]
    for k in keys[1:]:
        out |= key == k
    return out


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
        texts: Sequence[str | bytes],
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
        """
        if int(n_common) < 0 or int(n_rare) < 0:
            raise ValueError("n_common and n_rare must be >= 0")
        n_common, n_rare = int(n_common), int(n_rare)
        sw_name, sw_words = load_stopwords(stopwords)
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
                "table": ByteTable([w.encode("utf-8") for w in vocab], xp),
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
        k_words = self.n_common + self.n_rare
        out = xp.zeros((n, len(BASE_FEATURES) + k_words), dtype=np.float32)
        n_tok = int(pre.start.shape[0])
        if n == 0 or n_tok == 0:
            return out
        offs = pre.tok_offsets
        punct = pre.is_punct
        word = ~punct
        text = pre.text

        n_words = _seg_sum(xp, word, offs)
        n_punct = _seg_sum(xp, punct, offs)

        # --- words: distinct (128-bit identity per text), stop words, corpus words
        widx = xp.flatnonzero(word)
        wtext = text[widx]
        h1, h2 = span_hashes(pre, pre.start[widx], pre.end[widx])
        key = h1 ^ (wtext.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        order = xp.argsort(key)
        ks, h2s = key[order], h2[order]
        new = xp.ones(widx.shape[0], dtype=bool)
        new[1:] = (ks[1:] != ks[:-1]) | (h2s[1:] != h2s[:-1])
        n_distinct = _bincount(xp, wtext[order][new], n)

        hit = t["table"].lookup(pre, pre.start[widx], pre.end[widx])
        found = hit >= 0
        hit0 = xp.maximum(hit, 0)
        stop = found & t["is_stop"][hit0]
        n_stop = _bincount(xp, wtext[stop], n)
        if k_words:
            col = xp.where(found, t["col"][hit0], -1)
            sel = col >= 0
            flat = wtext[sel] * k_words + col[sel]
            out[:, len(BASE_FEATURES) :] = _bincount(xp, flat, n * k_words).reshape(n, k_words).astype(np.float32)

        # --- sentences
        n_sent = self._sentences(pre, word)

        nw = n_words.astype(np.float32)
        ns = n_sent.astype(np.float32)
        nst = n_stop.astype(np.float32)
        has = n_sent > 0
        den = xp.where(has, ns, np.float32(1))
        out[:, 0] = nw
        out[:, 1] = n_distinct.astype(np.float32)
        out[:, 2] = n_punct.astype(np.float32)
        out[:, 3] = ns
        out[:, 4] = xp.where(has, nw / den, np.float32(0))
        out[:, 5] = nst
        out[:, 6] = xp.where(has, nst / den, np.float32(0))
        return out

    @staticmethod
    def _sentences(pre: PreTokens, word: Any) -> Any:
        """``n_sentences`` per text (int64), by the spec's terminator-run rule."""
        xp = pre.xp
        punct = pre.is_punct
        offs = pre.tok_offsets
        key = _short_keys(pre)
        term = punct & _is_any(xp, key, _TERM_KEYS)
        closer = punct & _is_any(xp, key, _CLOSE_KEYS)

        # adj[i]: token i+1 is in the same text and starts where token i ends (no gap)
        nxt_start = _shift_next(xp, pre.start, -1)
        nxt_text = _shift_next(xp, pre.text, -1)
        adj = (nxt_text == pre.text) & (nxt_start == pre.end)
        adj_prev = _shift_prev(xp, adj, False)

        term_next = _shift_next(xp, term, False)
        term_prev = _shift_prev(xp, term, False)
        run_end = term & ~(adj & term_next)
        run_start = term & ~(adj_prev & term_prev)

        # (a) after the run and any adjacent closing tokens comes whitespace or the end of the text:
        # follow "adjacent closer" links to the first token that has none; there the gap must exist.
        link = adj & _shift_next(xp, closer, False)
        stop_pos = xp.flatnonzero(~link)  # never empty: the last token has no next token
        first_stop = xp.cumsum(~link, dtype=np.int64) - (~link)
        followed_by_space = ~adj[stop_pos[first_stop]]

        # (b) not a single '.' glued to a one-character word or an abbreviation
        dot = key == _TERM_KEYS[0]
        cand = xp.flatnonzero(run_start & run_end & dot & adj_prev & _shift_prev(xp, word, False))
        excluded = xp.zeros(term.shape[0], dtype=bool)
        if cand.shape[0]:
            prev = cand - 1
            abbr = _is_any(xp, key[prev], _ABBR_KEYS)
            excluded[cand] = (pre.nchars[prev] == 1) | abbr

        ends = run_end & followed_by_space & ~excluded
        n_ends = _seg_sum(xp, ends, offs)
        # +1 when a word comes after the last sentence end of its text
        ecs = xp.zeros(ends.shape[0] + 1, dtype=np.int64)
        xp.cumsum(ends, dtype=np.int64, out=ecs[1:])
        text_end = offs[1:][pre.text]
        tail = word & (ecs[1:] == ecs[text_end])
        return n_ends + (_seg_sum(xp, tail, offs) > 0)


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
