"""SentencePiece tokenizers: BPE with byte fallback and Unigram."""
