"""`triton-textops fit-features CORPUS -o features.json`: fit the readability features on a corpus.

CORPUS is a ``.jsonl`` file (one JSON object a line with a ``text`` field) or any other text file
(one text a line; blank lines skipped). Shows a progress bar (tqdm when installed) and prints a
summary of what was learned.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO


def read_corpus(path: str | Path) -> list[str]:
    """Texts of a ``.jsonl`` (``text`` field) or plain-text (one a line) corpus; errors name the line."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"corpus {str(path)!r} does not exist")
    texts: list[str] = []
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid UTF-8 ({e.reason})") from None
            if not line.strip():
                continue
            if not jsonl:
                texts.append(line.rstrip("\r\n"))
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise ValueError(f"{path}:{lineno}: expected an object with a string 'text' field")
            texts.append(obj["text"])
    if not texts:
        raise ValueError(f"corpus {str(path)!r} holds no texts")
    return texts


class _SimpleBar:
    """Minimal progress bar on stderr for when tqdm is not installed."""

    def __init__(self, total: int, desc: str, stream: TextIO) -> None:
        self.total, self.desc, self.stream, self.n = total, desc, stream, 0

    def update(self, k: int) -> None:
        self.n += k
        width = 30
        filled = width * self.n // max(self.total, 1)
        self.stream.write(f"\r{self.desc}: [{'#' * filled}{'.' * (width - filled)}] {self.n}/{self.total}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _make_bar(total: int, desc: str, stream: TextIO, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm  # noqa: PLC0415

        return tqdm(total=total, desc=desc, unit="text", file=stream)
    except ImportError:
        return _SimpleBar(total, desc, stream)


def _progress(stream: TextIO, enabled: bool) -> tuple[Callable[[str, int, int], None], Callable[[], None]]:
    """A ``progress(phase, done, total)`` callback drawing one bar per phase, and a closer."""
    state: dict[str, Any] = {"phase": None, "bar": None, "done": 0}
    labels = {"tokenize": "normalizing + counting words", "features": "raw features for mean/std"}

    def close() -> None:
        if state["bar"] is not None:
            state["bar"].close()
        state["bar"] = None

    def progress(phase: str, done: int, total: int) -> None:
        if phase != state["phase"]:
            close()
            state.update(phase=phase, bar=_make_bar(total, labels.get(phase, phase), stream, enabled), done=0)
        if state["bar"] is not None:
            state["bar"].update(done - state["done"])
        state["done"] = done

    return progress, close


def summary(feats: Any, out: Path) -> str:
    """Human-readable summary of a fitted :class:`ReadabilityFeatures`."""
    fo = feats.fitted_on
    casing = "uncased (lowercase + strip accents)" if feats.lowercase else "cased"
    lines = [
        f"wrote {out}",
        f"  corpus: {fo.get('texts', '?')} texts, {fo.get('words', '?')} words, "
        f"{fo.get('distinct_words', '?')} distinct words; casing {casing}",
        f"  stop words: {feats.stopwords_name} ({len(feats.stopwords)} entries)",
        f"  features: {feats.n_features} = 7 + {feats.n_common} common + {feats.n_rare} rare",
        f"  most frequent: {', '.join(feats.common[:12])}{' ...' if feats.n_common > 12 else ''}",
        f"  least frequent: {', '.join(feats.rare[:12])}{' ...' if feats.n_rare > 12 else ''}",
        "  mean / std of the base features:",
    ]
    for j, name in enumerate(feats.feature_names[:7]):
        lines.append(f"    {name:<24} {float(feats.mean[j]):10.3f} {float(feats.std[j]):10.3f}")
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit-features",
        help="fit the readability features (corpus words, mean/std) and write the JSON artifact",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("corpus", help=".jsonl with a 'text' field, or a text file with one text a line")
    p.add_argument("-o", "--output", required=True, help="artifact to write (JSON)")
    p.add_argument("--n-common", type=int, default=100, help="most frequent corpus words kept (default 100)")
    p.add_argument("--n-rare", type=int, default=100, help="least frequent corpus words kept (default 100)")
    p.add_argument(
        "--stopwords",
        default="nltk-179",
        help="nltk-179 (default), nltk-198, nltk (installed NLTK corpus) or a file with one word a line",
    )
    p.add_argument("--cased", action="store_true", help="cased vocabulary: no lowercasing, accents kept")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from triton_textops.ops.features import ReadabilityFeatures  # noqa: PLC0415

    try:
        texts = read_corpus(args.corpus)
        progress, close = _progress(sys.stderr, not args.no_progress)
        try:
            feats = ReadabilityFeatures.fit(
                texts,
                n_common=args.n_common,
                n_rare=args.n_rare,
                stopwords=args.stopwords,
                lowercase=not args.cased,
                progress=progress,
            )
        finally:
            close()
    except ValueError as e:
        print(f"fit-features: error: {e}", file=sys.stderr)
        return 2
    out = Path(args.output)
    feats.save(out)
    print(summary(feats, out))
    return 0
