"""What a tokenizer file is, from its first bytes: the one sniffing the loader and every text reader use, so a
binary file handed to a text reader says what it looks like instead of failing on its "line 2"."""

from __future__ import annotations

import base64
import binascii

HEAD = 1 << 16  # bytes read to recognize a file


def binary_kind(head: bytes) -> str | None:
    """None for text (UTF-8 without NUL), else a phrase saying what the binary file looks like."""
    text = head[:-4] if len(head) >= HEAD else head  # (a UTF-8 sequence cut at the end of a long read)
    if b"\0" not in head:
        try:
            text.decode("utf-8")
            return None
        except UnicodeDecodeError:
            pass
    if head[:1] == b"\x0a":  # field 1 (pieces), length-delimited: sentencepiece's ModelProto
        return "a binary protobuf, as a SentencePiece .model (ModelProto) is"
    return "a binary file"


def sniff(head: bytes) -> str:
    """What the first bytes of a tokenizer file look like: "json", "tiktoken" (``base64 rank`` lines), "vocab"
    (one token per line), "sentencepiece" (a binary protobuf: a ``.model``'s ModelProto), or a sentence saying what
    it is instead."""
    if not head:
        return "the file is empty"
    lead = head.lstrip()
    if lead[:1] == b"{" or (lead[:1] == b"[" and lead[1:].lstrip()[:1] in (b"[", b"{", b'"', b"]")):
        return "json"  # (a vocab.txt may start with "[PAD]")
    binary = binary_kind(head)
    if binary is not None and head[:1] == b"\x0a":
        return "sentencepiece"
    if binary is not None:
        return f"{binary}, not a tokenizer file this package reads yet"
    lines = [ln for ln in head.split(b"\n")[:64] if ln.strip()]
    if lines and all(rank_line(ln) for ln in lines[:-1] or lines):
        return "tiktoken"
    return "vocab"


def rank_line(line: bytes) -> bool:
    """Whether ``line`` is a tiktoken rank line, ``base64(token) rank``."""
    parts = line.split()
    if len(parts) != 2 or not parts[1].isdigit():
        return False
    try:
        base64.b64decode(parts[0], validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def check_text(data: bytes, path: object, what: str) -> None:
    """A ValueError naming ``path`` when ``data`` (a file meant to be text: ``what``) is binary."""
    binary = binary_kind(data[:HEAD])
    if binary is not None:
        raise ValueError(f"{path}: {binary}, not a {what}")
