"""Plain-Python reference for the readability features, written straight from the specification.

Independent of the package on purpose (it never imports ``triton_textops``): normalization and
pre-tokenization come from the HuggingFace ``tokenizers`` oracle (``BertNormalizer`` and
``BertPreTokenizer``, the pinned 0.22.2), everything else is a direct, slow, per-text reading of the
spec (tokens, sentence rule, stop words, corpus words, mean/std, ``(x - mean) / std`` in float32).
Tests compare the vectorized implementation against it; the benchmark uses it as a baseline.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer

TERMINATORS = {".", "!", "?", "\u2026"}
CLOSERS = {'"', "'", ")", "]", "\u201d", "\u2019", "\u00bb"}
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "mt", "capt", "col", "gen", "lt", "sgt", "rev",
}
BASE_NAMES = [
    "n_words",
    "n_distinct_words",
    "n_punctuation",
    "n_sentences",
    "words_per_sentence",
    "n_stopwords",
    "stopwords_per_sentence",
]

_PRE = BertPreTokenizer()


@functools.lru_cache(maxsize=2)
def _normalizer(lowercase: bool) -> BertNormalizer:
    # Exactly what BertWordPieceTokenizer(vocab, lowercase=...) builds: strip_accents follows lowercase.
    return BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase)


@functools.cache
def is_punctuation_char(ch: str) -> bool:
    """BERT's own answer: the pre-tokenizer isolates ``ch`` between two letters iff it is punctuation."""
    return len(_PRE.pre_tokenize_str("a" + ch + "a")) == 3


@dataclass
class Token:
    text: str
    start: int  # code-point offsets in the normalized text
    end: int
    is_punct: bool


def tokens(text: str | bytes, lowercase: bool = True) -> tuple[str, list[Token]]:
    """Normalized text and its pre-tokens (spec, 'Tokens' 1-3)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    s = _normalizer(lowercase).normalize_str(text)
    out = []
    for tok, (a, b) in _PRE.pre_tokenize_str(s):
        out.append(Token(tok, a, b, len(tok) == 1 and is_punctuation_char(tok)))
    return s, out


def sentence_ends(s: str, toks: list[Token]) -> list[int]:
    """Indices (into ``toks``) of the last terminator of every run that ends a sentence."""
    ends = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if not (t.is_punct and t.text in TERMINATORS):
            i += 1
            continue
        j = i  # maximal run of adjacent terminators
        while (
            j + 1 < n
            and toks[j + 1].is_punct
            and toks[j + 1].text in TERMINATORS
            and toks[j + 1].start == toks[j].end
        ):
            j += 1
        # (a) followed by whitespace or end of text, optionally after adjacent closing tokens
        k = j
        while k + 1 < n and toks[k + 1].is_punct and toks[k + 1].text in CLOSERS and toks[k + 1].start == toks[k].end:
            k += 1
        pos = toks[k].end
        cond_a = pos == len(s) or s[pos].isspace()
        # (b) not a single '.' glued to a one-character word or an abbreviation
        cond_b = True
        if i == j and t.text == "." and i > 0:
            prev = toks[i - 1]
            if not prev.is_punct and prev.end == t.start and (len(prev.text) == 1 or prev.text in ABBREVIATIONS):
                cond_b = False
        if cond_a and cond_b:
            ends.append(j)
        i = j + 1
    return ends


def raw_features(
    text: str | bytes,
    stopwords: set[str],
    common: Sequence[str],
    rare: Sequence[str],
    lowercase: bool = True,
) -> list[float]:
    """The 7 + len(common) + len(rare) raw features of one text, each rounded to float32."""
    s, toks = tokens(text, lowercase)
    words = [t.text for t in toks if not t.is_punct]
    n_words = len(words)
    n_distinct = len(set(words))
    n_punct = sum(1 for t in toks if t.is_punct)
    ends = sentence_ends(s, toks)
    last_end = ends[-1] if ends else -1
    tail = any(not t.is_punct for t in toks[last_end + 1 :])
    n_sent = len(ends) + (1 if tail else 0)
    n_stop = sum(1 for w in words if w in stopwords)
    wps = n_words / n_sent if n_sent else 0.0
    sps = n_stop / n_sent if n_sent else 0.0
    counts = Counter(words)
    vals = [n_words, n_distinct, n_punct, n_sent, wps, n_stop, sps]
    vals += [counts[w] for w in common] + [counts[w] for w in rare]
    return [float(np.float32(v)) for v in vals]


@dataclass
class ReferenceFeatures:
    """Fitted state of the reference (mirrors the spec's artifact fields)."""

    lowercase: bool
    stopwords: list[str]
    common: list[str]
    rare: list[str]
    mean: list[float] = field(default_factory=list)  # float32 values
    std: list[float] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return BASE_NAMES + [f"common:{w}" for w in self.common] + [f"rare:{w}" for w in self.rare]

    def raw(self, texts: Iterable[str | bytes]) -> np.ndarray:
        sw = set(self.stopwords)
        rows = [raw_features(t, sw, self.common, self.rare, self.lowercase) for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(rows), 7 + len(self.common) + len(self.rare))

    def transform(self, texts: Iterable[str | bytes], normalize: bool = True) -> np.ndarray:
        x = self.raw(texts)
        if not normalize:
            return x
        mean = np.array(self.mean, dtype=np.float32)
        std = np.array(self.std, dtype=np.float32)
        return ((x - mean) / std).astype(np.float32)


def fit(
    texts: Sequence[str | bytes],
    stopwords: Sequence[str],
    n_common: int = 100,
    n_rare: int = 100,
    lowercase: bool = True,
) -> ReferenceFeatures:
    """Fit the corpus words and the mean/std, straight from the spec."""
    counts: Counter[str] = Counter()
    for t in texts:
        _, toks = tokens(t, lowercase)
        counts.update(tok.text for tok in toks if not tok.is_punct)
    if len(counts) < n_common + n_rare:
        raise ValueError(f"corpus has {len(counts)} distinct words, fewer than {n_common + n_rare}")
    common = sorted(counts, key=lambda w: (-counts[w], w.encode("utf-8")))[:n_common]
    rare = sorted(counts, key=lambda w: (counts[w], w.encode("utf-8")))[:n_rare]
    ref = ReferenceFeatures(lowercase, list(stopwords), common, rare)
    x = ref.raw(texts)
    n = x.shape[0]
    for j in range(x.shape[1]):
        col = [float(v) for v in x[:, j]]
        mean = sum(col) / n
        var = sum((v - mean) ** 2 for v in col) / n
        std = math.sqrt(var)
        ref.mean.append(float(np.float32(mean)))
        ref.std.append(float(np.float32(std)) if std != 0 else 1.0)
    return ref


def load_stopwords(path: str | Path) -> list[str]:
    """One word a line; blank lines and surrounding whitespace ignored."""
    return [w.strip() for w in Path(path).read_text(encoding="utf-8").splitlines() if w.strip()]


def from_artifact(path: str | Path) -> ReferenceFeatures:
    """Read the JSON artifact's fields the spec names (used to cross-check saved files)."""
    d = json.loads(Path(path).read_text(encoding="utf-8"))
    return ReferenceFeatures(
        bool(d["lowercase"]), list(d["stopwords"]["words"]), list(d["common"]), list(d["rare"]),
        [float(v) for v in d["mean"]], [float(v) for v in d["std"]],
    )
