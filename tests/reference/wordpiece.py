"""HF ``tokenizers``' WordPiece model (``models/wordpiece/mod.rs``, ``tokenize``) in plain Python: greedy
longest-match-first over one pre-token, no trie, no hashing.

From each start, the longest vocabulary entry that is a prefix of the rest (after the first piece, looked up with
``continuing_subword_prefix`` in front); a word with a position where nothing matches, or longer than
``max_input_chars_per_word`` characters (code points, not bytes), is one ``unk_token``.
"""

from __future__ import annotations

from collections.abc import Iterable


class WordPiece:
    def __init__(self, vocab: dict[str, int], *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                 max_input_chars_per_word: int = 100) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.prefix = continuing_subword_prefix
        self.max_chars = max_input_chars_per_word

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], **kw: object) -> WordPiece:
        """From a vocab.txt's tokens (id = position; a repeated token keeps its last id, as HF's reader)."""
        return cls({t: i for i, t in enumerate(tokens)}, **kw)

    def tokenize(self, word: str) -> list[str]:
        """The pieces of one pre-token (non-empty), as strings."""
        if len(word) > self.max_chars:
            return [self.unk_token]
        pieces = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):  # longest first
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
            else:  # no prefix of word[start:] is in the vocabulary: the whole word is unknown
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces

    def ids(self, words: Iterable[str]) -> list[int]:
        """The ids of a text's pre-tokens, piece after piece."""
        return [self.vocab[p] for w in words for p in self.tokenize(w)]
