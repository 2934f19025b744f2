"""Rank-based byte-level BPE in plain Python, as tiktoken's ``_educational.py`` (and its Rust
``_byte_pair_merge``): no linked list, heap, hash table or merge cache.

A piece's bytes start as single bytes; the adjacent pair whose concatenation has the lowest rank is merged
(the leftmost such pair on a tie), until no adjacent pair is a token. A text is split by the family's regular
expression (the ``regex`` module: possessive quantifiers and ``\\p{..}`` as tiktoken's fancy-regex), and a
pre-token that is a token itself is that token (tiktoken's shortcut, which the merge need not reach).

``regex`` takes its classes from a newer Unicode than tiktoken's Rust regex: code points assigned since (e.g.
U+0558, a letter to ``regex``, nothing to tiktoken) split differently, so the tests leave out every code point
unassigned in Python's Unicode (``test_reference.py``: ``assigned``).
"""

from __future__ import annotations

import regex


def merge(ranks: dict[bytes, int], piece: bytes) -> list[bytes]:
    """The tokens (as bytes) of one pre-token by repeated lowest-rank pair merges."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):  # strict: the leftmost of equal ranks
                best, at = r, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return parts


class Encoder:
    """A rank dict and a pre-tokenizer pattern -> ids, ``encode_ordinary``'s contract (no special tokens)."""

    def __init__(self, ranks: dict[bytes, int], pattern: str) -> None:
        self.ranks = ranks
        self.pattern = regex.compile(pattern)

    def pieces(self, text: str) -> list[str]:
        return self.pattern.findall(text)

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self.pieces(text):
            b = piece.encode("utf-8")
            whole = self.ranks.get(b)
            out.extend([whole] if whole is not None else (self.ranks[t] for t in merge(self.ranks, b)))
        return out
