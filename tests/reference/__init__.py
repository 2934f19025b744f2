"""Plain-Python references of the fast kernels: BERT normalization + pre-tokenization (:mod:`.bert`), WordPiece
greedy longest match (:mod:`.wordpiece`) and rank-based byte-level BPE (:mod:`.bpe`).

Each is written from the definition (HF ``tokenizers``' Rust sources, tiktoken's ``_educational.py``), short and
slow on purpose: what the kernels must compute, with none of their tables, hashing or eight-byte tricks, so a
difference between a kernel and its reference is a bug in one of the two, not a shared one.
"""
