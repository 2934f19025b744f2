"""Readability features for the tree model (the seed's 207 features), on NumPy or CuPy.

Built on the tokenizer's normalization and pre-tokenization (:mod:`triton_textops.ops.wordpiece.pretokenize`), so one
pass over the text serves both the BERT inputs and these features. The specification is
``features.md`` (copied into the docstrings below where it matters):

* tokens: BERT-normalized text, BERT pre-tokens; a one-character punctuation token is
  *punctuation*, every other token is a *word*;
* features, in order: ``n_words``, ``n_distinct_words``, ``n_punctuation``, ``n_sentences``,
  ``words_per_sentence``, ``n_stopwords``, ``stopwords_per_sentence``, then the count of each of
  the N most frequent corpus words (``common:<w>``) and of the N least frequent (``rare:<w>``);
* normalization ``(x - mean) / std`` in float32, with mean/std (population) fitted on the corpus.

Serving is one kernel (one thread per text, compiled from one source for the CPU and the GPU) over the
pre-tokens: integer counts, then float32 arithmetic in a fixed form, so both targets give
bit-identical values. Word lists are one exact hash table built once per device.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops import features_dask
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import allocate, check_bool, check_int
from triton_textops.ops.core.batch import TextBatch, runs_on_cpu
from triton_textops.ops.core.hashtable import ByteTable, find_bytes
from triton_textops.ops.core.status import SIZE_BOUND, raise_bad_rows
from triton_textops.ops.core.xp import get_xp, resolve_device, target_of
from triton_textops.ops.corpus import FIT_CHUNK, pretokenized_chunks
from triton_textops.ops.wordpiece.pretokenize import (
    END,
    FULL,
    HASH,
    KIND,
    NCHARS,
    NTOK,
    START,
    STATUS,
    Normalizer,
    PreTokens,
    fail_text,
    pos_at,
    pretok_text,
    pretokens_ok,
)

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

WIDE_TEXT = 1 << 24  # bytes from which a text's corpus-word counts are kept as int32 (a float32 count stops at 2**24)
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


# ------------------------------------------------------------------------------------ device code


@K.device(inline=True)
def same_bytes(a, a0, b, b0, ln):
    """``a[a0:a0+ln] == b[b0:b0+ln]``."""
    for j in range(ln):
        if a[a0 + j] != b[b0 + j]:
            return False
    return True


@K.device(inline=True)
def punct_code(data, s, e):
    """1 for the terminator ``.``, 2 for the other terminators (``! ? …``), 3 for a closing token
    (``" ' ) ] ” ’ »``), 0 for any other one-character punctuation token ``data[s:e]``."""
    b0 = int(data[s])
    ln = e - s
    if ln == 1:
        if b0 == 46:
            return 1
        if b0 == 33 or b0 == 63:
            return 2
        if b0 == 34 or b0 == 39 or b0 == 41 or b0 == 93:
            return 3
        return 0
    if ln == 2:
        return 3 if b0 == 0xC2 and int(data[s + 1]) == 0xBB else 0  # »
    if ln == 3 and b0 == 0xE2 and int(data[s + 1]) == 0x80:
        b2 = int(data[s + 2])
        if b2 == 0xA6:  # …
            return 2
        if b2 == 0x9D or b2 == 0x99:  # ” ’
            return 3
    return 0


@K.device
def is_abbreviation(data, s, e, abbr, abbr_off, n_abbr):
    """The word ``data[s:e]`` is one of the abbreviations (``abbr``: their bytes, ``abbr_off``: offsets)."""
    ln = e - s
    for a in range(n_abbr):
        lo = abbr_off[a]
        if abbr_off[a + 1] - lo == ln and same_bytes(data, s, abbr, lo, ln):
            return True
    return False


@K.device(inline=True)
def adjacent(tok, k, j):
    """Token ``j`` starts where token ``k`` ends (no whitespace between them)."""
    return tok[START, j] == tok[END, k]


@K.device
def sentence_end(data, base, tok, k, k0, k_end, abbr, abbr_off, n_abbr):
    """True when the terminator token ``k`` (the last of its run) ends a sentence (features.md): (a) after
    it and any adjacent closing tokens comes whitespace or the end of the text (tokens ``k0 .. k_end - 1``
    are the text's, ``base`` where its region of ``data`` starts), and (b) it is not a single ``.`` glued to a
    one-character word or an abbreviation."""
    j = k
    while j + 1 < k_end and adjacent(tok, j, j + 1) and tok[KIND, j + 1] == 1 \
            and punct_code(data, base + pos_at(tok, START, j + 1), base + pos_at(tok, END, j + 1)) == 3:
        j += 1
    if j + 1 < k_end and adjacent(tok, j, j + 1):
        return False
    if punct_code(data, base + pos_at(tok, START, k), base + pos_at(tok, END, k)) == 1 and k > k0 \
            and tok[KIND, k - 1] == 0 \
            and adjacent(tok, k - 1, k):
        if tok[NCHARS, k - 1] == 1 or is_abbreviation(data, base + pos_at(tok, START, k - 1), base + pos_at(tok, END, k - 1),
                                                      abbr, abbr_off, n_abbr):
            return False
    return True


@K.device
def features_text(t, data, expand, offs, tok, txt, slots, pool, mask, max_probe,
                  is_stop, col, abbr, abbr_off, n_abbr, seen, cnt, x, mean, std, normalize):
    """The features of text ``t`` into row ``x[t]``: counts by one pass over its tokens, distinct words
    through a per-text hash set in ``seen`` (the text's region of 4 slots per input byte, holding token
    numbers within the text). Each value is the exact count, or ratio of counts, rounded once to float32:
    the corpus words are counted in ``x[t]`` itself (float32 counts are exact below 2**24), or in ``cnt[t]``
    (int32) for a text of WIDE_TEXT bytes or more, which could hold 2**24 words (``cnt`` has rows only when
    the batch has such a text)."""
    width = x.shape[1]
    wide = offs[t + 1] - offs[t] >= WIDE_TEXT and txt[STATUS, t] == 0
    for j in range(7, width):
        if wide:
            cnt[t, j] = 0
        else:
            x[t, j] = 0
    k0 = offs[t]
    k_end = k0 + txt[NTOK, t]
    if txt[STATUS, t] != 0:
        k_end = k0
    # per-text set of distinct words: a power of two >= 2 * tokens slots, < 4 * tokens <= 4 * input bytes:
    # inside the text's region of ``seen``, never a neighbour's
    nt = k_end - k0
    if nt > 0x7FFFFFFF:  # ``seen`` holds int32 token numbers: never overflow them (2**31 tokens in one text)
        fail_text(txt, t, SIZE_BOUND)
        k_end = k0
        nt = 0
    size = 0 if nt == 0 else 1
    while size < 2 * nt:
        size *= 2
    base = k0 * expand if nt > 0 else 0  # (a text with tokens has a checked span: no product can overflow)
    set_base = 4 * k0 if nt > 0 else 0
    for j in range(size):
        seen[set_base + j] = -1
    n_words = 0
    n_punct = 0
    n_distinct = 0
    n_stop = 0
    n_ends = 0
    since_end = 0
    for k in range(k0, k_end):
        s = base + pos_at(tok, START, k)
        e = base + pos_at(tok, END, k)
        if tok[KIND, k] == 1:
            n_punct += 1
            code = punct_code(data, s, e)
            if code == 1 or code == 2:
                last_of_run = True
                if k + 1 < k_end and adjacent(tok, k, k + 1) and tok[KIND, k + 1] == 1:
                    nxt = punct_code(data, base + pos_at(tok, START, k + 1), base + pos_at(tok, END, k + 1))
                    last_of_run = not (nxt == 1 or nxt == 2)
                if last_of_run and sentence_end(data, base, tok, k, k0, k_end, abbr, abbr_off, n_abbr):
                    n_ends += 1
                    since_end = 0
            continue
        n_words += 1
        since_end += 1
        h = int(tok[HASH, k]) & 0xFFFFFFFF  # the pre-tokenizer's FNV-1a of the word, as the word table's keys
        w = find_bytes(h, data, s, e - s, 0, slots, pool, mask, max_probe)
        if w >= 0:
            if is_stop[w] != 0:
                n_stop += 1
            c = col[w]
            if c >= 0:
                if wide:
                    cnt[t, 7 + c] += 1
                else:
                    x[t, 7 + c] += 1
        slot = (h ^ (h >> 15)) & (size - 1)
        while True:
            other = seen[set_base + slot]
            if other < 0:
                seen[set_base + slot] = k - k0
                n_distinct += 1
                break
            other += k0
            if tok[HASH, other] == tok[HASH, k] and pos_at(tok, END, other) - pos_at(tok, START, other) == e - s \
                    and same_bytes(data, base + pos_at(tok, START, other), data, s, e - s):
                break
            slot = (slot + 1) & (size - 1)
    n_sent = n_ends + (1 if since_end > 0 else 0)
    x[t, 0] = n_words
    x[t, 1] = n_distinct
    x[t, 2] = n_punct
    x[t, 3] = n_sent
    x[t, 5] = n_stop
    x[t, 4] = 0
    x[t, 6] = 0
    if n_sent > 0:  # float64 quotients of the exact counts (as the spec), rounded once to float32
        x[t, 4] = n_words / n_sent
        x[t, 6] = n_stop / n_sent
    if wide:
        for j in range(7, width):
            x[t, j] = cnt[t, j]
    if normalize:
        for j in range(width):
            x[t, j] = (x[t, j] - mean[j]) / std[j]


@K.device(inline="ir")
def features_item(t, pre, ftab, fout):
    """The features of text ``t`` from checked pre-tokens: groups PRE, FTAB and FOUT (:meth:`ReadabilityFeatures.kernel_args`)."""
    data, expand, offs, tok, txt = pre
    slots, pool, mask, max_probe, is_stop, col, abbr, abbr_off, n_abbr = ftab
    seen, cnt, x, mean, std, normalize = fout
    pretokens_ok(t, data, expand, offs, tok, txt)
    features_text(t, data, expand, offs, tok, txt, slots, pool, mask, max_probe,
                  is_stop, col, abbr, abbr_off, n_abbr, seen, cnt, x, mean, std, normalize)


FEATURES = K.kernel(features_item)


@K.device(inline="ir")
def features_fused_item(t, text, norm, pre, ftab, fout):
    """Normalization + pre-tokenization and the features of text ``t`` by one thread (TEXT, NORM, PRE, FTAB, FOUT)."""
    data, offs = text
    info, npool, sp_first, sp_bytes, sp_off, n_sp = norm
    out, expand, _, tok, txt = pre
    slots, pool, mask, max_probe, is_stop, col, abbr, abbr_off, n_abbr = ftab
    seen, cnt, x, mean, std, normalize = fout
    pretok_text(t, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)
    features_text(t, out, expand, offs, tok, txt, slots, pool, mask, max_probe,
                  is_stop, col, abbr, abbr_off, n_abbr, seen, cnt, x, mean, std, normalize)


FEATURES_FUSED = K.kernel(features_fused_item)  # normalize + pre-tokenize + the features: one launch


# ------------------------------------------------------------------------------------ the features


class ReadabilityFeatures:
    """Fitted readability features: corpus words, stop words and normalization (see module doc)."""

    N_BASE = len(BASE_FEATURES)

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
        self._tables: dict[str, dict[str, Any]] = {}

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
        n_common, n_rare = check_int("n_common", n_common, 0), check_int("n_rare", n_rare, 0)
        lowercase = check_bool("lowercase", lowercase)
        sw_name, sw_words = load_stopwords(stopwords)
        if features_dask.is_dask_collection(texts):  # corpus scale: map-reduce over the partitions
            return features_dask.fit_dask(
                cls, texts, n_common=n_common, n_rare=n_rare, stopwords=(sw_name, sw_words),
                lowercase=lowercase, progress=progress,
            )
        texts = list(texts)
        total = len(texts)
        if total == 0:
            raise ValueError("cannot fit readability features on an empty corpus")
        counts: Counter[bytes] = Counter()
        chunks: list[PreTokens] = []
        for pre in pretokenized_chunks(texts, lowercase):
            counts.update(pre.word_bytes())
            chunks.append(pre)
            if progress is not None:
                progress("tokenize", min(len(chunks) * FIT_CHUNK, total), total)
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

    def _device_tables(self, device: str) -> dict[str, Any]:
        """Lookup tables and mean/std on ``device`` (built once per device)."""
        t = self._tables.get(device)
        if t is None:
            # one table for every word the features look up: stop words and corpus words
            vocab = _dedupe(self.stopwords + self.common + self.rare)
            pos = {w: i for i, w in enumerate(vocab)}
            is_stop = np.zeros(len(vocab) + 1, dtype=np.uint8)
            is_stop[[pos[w] for w in self.stopwords]] = 1
            col = np.full(len(vocab) + 1, -1, dtype=np.int32)
            for j, w in enumerate(self.common + self.rare):
                col[pos[w]] = j
            abbr = [a.encode() for a in ABBREVIATIONS]
            abbr_off = np.zeros(len(abbr) + 1, dtype=np.int64)
            abbr_off[1:] = np.cumsum([len(a) for a in abbr])
            target, xp = target_of(device), get_xp(device)
            table = ByteTable(pos)
            host = {
                "slots": table.slots, "pool": table.pool, "is_stop": is_stop, "col": col,
                "abbr": np.frombuffer(b"".join(abbr), dtype=np.uint8).copy(), "abbr_off": abbr_off,
                "mean": self.mean.copy(), "std": self.std.copy(),
            }
            t = {k: K.to_device(v, target, xp) for k, v in host.items()}
            t.update(mask=table.mask, max_probe=table.max_probe, n_abbr=len(abbr), xp=xp, target=target)
            self._tables[device] = t
        return t

    def kernel_args(self, device: str, n_bytes: int, x: Any, normalize: bool) -> tuple:
        """What the features kernels read besides the pre-tokens, as two groups: FTAB (word table: slots, pool, mask,
        max_probe; stop-word and column maps, abbreviations: bytes, offsets, count) and FOUT (a scratch set for
        distinct words, 4 slots per input byte; integer counters of the corpus words, one row per text; the
        output; mean, std; whether to normalize)."""
        t = self._device_tables(device)
        seen = allocate(t["xp"], (4 * n_bytes,), np.int32, f"a batch of {n_bytes} bytes: its word sets", filled=False)
        cnt = t["xp"].empty(x.shape if n_bytes >= WIDE_TEXT else (1, 1), dtype=np.int32)
        return ((t["slots"], t["pool"], t["mask"], t["max_probe"], t["is_stop"], t["col"], t["abbr"], t["abbr_off"],
                 t["n_abbr"]), (seen, cnt, x, t["mean"], t["std"], normalize))

    def transform(self, texts: Any, *, normalize: bool = True, device: str = "cpu",
                  gpu_min_batch: int | None = None) -> Any:
        """Features of a batch: float32 array (n, 7 + n_common + n_rare) of the device's array module.

        ``texts``: list of str/bytes, NumPy object array of bytes, or a ``(data, offsets)`` pair.
        Invalid UTF-8 raises :class:`InputError` naming the row. One kernel launch (normalize + pre-tokenize and the
        features of each text by one thread) and one device-to-host copy (the rows' UTF-8 status). On a
        GPU, a batch of fewer than ``gpu_min_batch`` texts runs on the CPU kernels and the features go up
        as one copy (:data:`~triton_textops.ops.core.kernels.GPU_MIN_BATCH`)."""
        normalize = check_bool("normalize", normalize)
        device = resolve_device(device)
        target, xp = target_of(device), get_xp(device)
        if runs_on_cpu(target, texts, gpu_min_batch):
            return K.to_device_many([self.transform(texts, normalize=normalize)], target, xp)[0]
        batch = TextBatch.from_texts(texts, xp, target)
        norm = Normalizer.get(self.lowercase, device)
        n, nb = batch.n, int(batch.data.shape[0])
        x = xp.empty((n, self.n_features), dtype=np.float32)
        txt = xp.empty((3, n), dtype=np.int64)
        if n:
            K.launch(target, FEATURES_FUSED, n, *norm.stage_args(batch, None, txt),
                     *self.kernel_args(device, nb, x, normalize))
        raise_bad_rows(K.to_host(txt[STATUS], target))
        return x

    def transform_pretokens(self, pre: PreTokens, *, normalize: bool = True, check: bool = True) -> Any:
        """Features from the pre-tokenizer's output (the preprocess model's one normalization pass): one launch.

        ``pre`` must come from ``Normalizer.get(lowercase=self.lowercase, ...)``; ``check=False`` leaves
        its UTF-8 status to the caller (:meth:`PreTokens.check`)."""
        if not isinstance(pre, PreTokens):
            raise InputError(f"pre must be PreTokens (from Normalizer.pretokenize), got {type(pre).__name__}")
        normalize, check = check_bool("normalize", normalize), check_bool("check", check)
        if pre.lowercase != self.lowercase:
            raise ValueError("pre-tokens were normalized with another casing than the features were fitted with")
        xp = pre.xp
        x = xp.empty((pre.n, self.n_features), dtype=np.float32)
        if pre.n:
            K.launch(pre.target, FEATURES, pre.n, pre.group,
                     *self.kernel_args(device_of(pre), int(pre.tok.shape[1]), x, normalize))
        if check:
            pre.check()
        return x


def device_of(pre: PreTokens) -> str:
    """The device name of ``pre``'s arrays ("cpu" or "cuda:N")."""
    if pre.target == "cpu":
        return "cpu"
    if pre.xp is np:  # the CUDA simulator
        return "cuda"
    return f"cuda:{pre.data.device.id}"


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(w, str) for w in v)
