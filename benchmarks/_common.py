"""Shared helpers for the benchmark scripts: bundled corpus, timing, machine description."""

from __future__ import annotations

import os
import platform
import time

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
