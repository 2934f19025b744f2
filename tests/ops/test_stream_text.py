"""ops.llm.StreamText: streamed bytes made valid UTF-8 pieces, the bytes of a cut character held back per stream.

Thousands of streams interleaved through one StreamText, cut at every kind of place (inside 2-4 byte characters,
between them, among invalid bytes): every piece decodes strictly, each stream's pieces (and its finished tail)
decode to what the whole stream's bytes decode to with U+FFFD (Python's and Rust's rule, HF's ByteLevel decode),
and no state is left once the streams end on whole characters."""

from __future__ import annotations

import random

import pytest

from triton_textops.ops.llm import StreamText, incomplete_tail, valid_utf8

CHARS = "aé中😀\u0301ß한🇯🇵👩‍👩‍👧‍👦\U0010fffd\u07ff\u0800\uffff\U00010000"
BAD = [
    b"\xff",
    b"\xc0\x80",
    b"\xe0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\x80",
    b"\xe6\x97",
    b"\xf0\x9f",
]


def stream_bytes(rng: random.Random, invalid: bool) -> bytes:
    parts = [rng.choice(CHARS).encode() for _ in range(rng.randint(0, 40))]
    if invalid:
        for _ in range(rng.randint(1, 3)):
            parts.insert(rng.randint(0, len(parts)), rng.choice(BAD))
    return b"".join(parts)


def cut(rng: random.Random, b: bytes) -> list[bytes]:
    pos = sorted(rng.sample(range(1, len(b)), min(len(b) - 1, rng.randint(0, 12)))) if len(b) > 1 else []
    return [b[x:y] for x, y in zip([0, *pos], [*pos, len(b)])] or [b""]


def test_incomplete_tail_is_the_unfinished_character() -> None:
    for ch in CHARS:
        enc = ch.encode()
        for k in range(1, len(enc)):
            assert incomplete_tail(b"x" + enc[:k]) == 1, (ch, k)
        assert incomplete_tail(b"x" + enc) == len(enc) + 1
    for bad in (b"\xe0\x80", b"\xed\xa0", b"\xf0\x80", b"\xf4\x90", b"\xc1", b"\xf5", b"\x80\x80"):
        assert incomplete_tail(bad) == len(bad), bad  # no character can start so: nothing to wait for


@pytest.mark.parametrize("invalid", [False, True])
def test_interleaved_streams(invalid: bool) -> None:
    rng = random.Random(int(invalid))
    st = StreamText()
    streams = [stream_bytes(rng, invalid) for _ in range(2000)]
    queues = [cut(rng, b) for b in streams]
    got: list[list[bytes]] = [[] for _ in streams]
    live = list(range(len(streams)))
    while live:  # the next piece of a random live stream
        k = live[rng.randrange(len(live))]
        got[k].append(st.piece(st.key(("id", k), 0), queues[k].pop(0)))
        got[k][-1].decode("utf-8")  # strict
        if not queues[k]:
            live.remove(k)
    for k, b in enumerate(streams):
        tail = st.finish(st.key(("id", k), 0))
        assert (b"".join(got[k]) + tail).decode("utf-8") == b.decode("utf-8", "replace"), k
        assert tail == valid_utf8(b[incomplete_tail(b) :])
    assert not st.held and st.evicted == 0


def test_bounded_and_keyless() -> None:
    rng = random.Random(7)
    st = StreamText(limit=16)
    for k in range(1000):  # a thousand streams cut inside a character, never finished (cancelled, max_tokens)
        assert st.piece(st.key(k, 0), b"ok" + "😀".encode()[: rng.randint(1, 3)]) == b"ok"
    assert len(st.held) == 16 and st.evicted == 1000 - 16
    assert (
        st.piece(st.key(0, 0), "😀".encode()[2:]) == "\ufffd\ufffd".encode()
    )  # evicted: its rest cannot complete
    st.release(st.key(999, 0))
    assert len(st.held) == 15
    assert st.piece(None, "é😀".encode()[:4]) == "é\ufffd".encode()  # no id: valid alone
    assert st.piece(None, "😀".encode()[1:]) == "\ufffd\ufffd\ufffd".encode()
    assert len(st.held) == 15
