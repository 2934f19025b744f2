"""Shared helpers for the benchmark scripts: bundled corpus, timing, machine description."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable

from triton_textops.bundled import austen_paragraphs


def austen() -> list[str]:
    return austen_paragraphs()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = ""
    try:
        import cupy

        gpu = ", GPU " + cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}{gpu}, {time.strftime('%Y-%m-%d')}"


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def ids_of(result: object) -> list[list[int]]:
    """A batch result of any engine (ours' Ragged, HF / fastokens encodings, plain lists) as lists of ids."""
    if hasattr(result, "tolist") and hasattr(result, "offsets"):
        return result.tolist()
    return [list(getattr(r, "ids", r)) for r in result]


Engine = tuple[Callable[[], object], Callable, Callable]  # (make an instance, encode a batch, encode one text)


def time_turns(engines: dict[str, Engine], texts: list[str], repeats: int, warm: bool = False,
               clock: Callable[[], float] = time.perf_counter) -> tuple[dict[tuple[str, str], list[float]], dict[str, int]]:
    """Engines taking turns, ``repeats`` rounds, each batch on a fresh (cold) instance: seconds per call for
    ``(engine, "32" | "512" | "all")``, seconds per text for ``(engine, "1")`` (the first 200 texts one at a
    time), and with ``warm`` the whole corpus re-encoded on one instance ``(engine, "warm")``; plus the UTF-8
    bytes of each batch size. One loop for every peer benchmark, so their columns mean the same. ``clock``: wall
    time by default; ``time.process_time`` counts this process's CPU time only (a loaded machine)."""
    nbytes = {k: sum(len(t.encode()) for t in v) for k, v in (("32", texts[:32]), ("512", texts[:512]),
                                                              ("all", texts))}
    times: dict[tuple[str, str], list[float]] = {}
    one = texts[: min(200, len(texts))]
    for _ in range(repeats):
        for e, (make, enc, enc1) in engines.items():
            for size in ("32", "512", "all"):
                inst = make()
                batch = texts[: int(size)] if size != "all" else texts
                t0 = clock()
                enc(inst, batch)
                times.setdefault((e, size), []).append(clock() - t0)
            inst = make()
            t0 = clock()
            for x in one:
                enc1(inst, x)
            times.setdefault((e, "1"), []).append((clock() - t0) / len(one))
            if warm:
                inst = make()
                enc(inst, texts)
                t0 = clock()
                enc(inst, texts)
                times.setdefault((e, "warm"), []).append(clock() - t0)
    return times, nbytes


def hf_file_peers(path: object) -> dict[str, Engine]:
    """HF tokenizers, fastokens and gigatoken on one tokenizer.json (those installed), special tokens not added."""
    out: dict[str, Engine] = {}
    try:
        from tokenizers import Tokenizer  # noqa: PLC0415

        out["hf-tokenizers"] = (lambda: Tokenizer.from_file(str(path)),
                                lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                                lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import fastokens  # noqa: PLC0415

        out["fastokens"] = (lambda: fastokens.Tokenizer.from_file(str(path)),
                            lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                            lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import gigatoken  # noqa: PLC0415

        out["gigatoken"] = (lambda: gigatoken.Tokenizer(str(path)), lambda t, xs: t.encode_batch(xs),
                            lambda t, x: t.encode(x))
    except ImportError:
        pass
    return out
