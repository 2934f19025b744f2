"""ONE device-placement base for every tokenizer: its device, kernel target and array module, its tables on that
device, and a CPU twin for the small batches that a GPU tokenizer runs on the CPU kernels."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.ops.core.batch import runs_on_cpu
from triton_textops.ops.core.xp import get_xp, resolve_device, target_of


class Placed:
    """A tokenizer on one device. A subclass puts its tables on ``self.target`` in :meth:`_place` (called by
    :meth:`_set_device` and for the CPU twin) and may adjust the twin in :meth:`_as_cpu_twin`."""

    device: str
    target: str
    xp: ModuleType

    def _set_device(self, device: str) -> None:
        """Resolve ``device`` ("cpu", "cuda", "cuda:N", "auto") and place the tables there."""
        self.device = resolve_device(device)
        self.target = target_of(self.device)
        self.xp = get_xp(self.device)
        self._cpu: Any = None
        self._place()

    def _place(self) -> None:  # pragma: no cover - every tokenizer defines it
        raise NotImplementedError

    def _as_cpu_twin(self) -> None:
        """Hook: what else changes in a CPU twin (a GPU-only backend, say)."""

    def on_cpu(self) -> Any:
        """This tokenizer on the CPU: itself, or a twin sharing the host tables, made once (never a reference to
        itself: a cycle would keep a dropped tokenizer alive until the garbage collector's next pass)."""
        if self.target == "cpu":
            return self
        if self._cpu is None:
            twin = copy.copy(self)
            twin.device, twin.target, twin.xp, twin._cpu = "cpu", "cpu", np, None
            twin._as_cpu_twin()
            twin._place()
            self._cpu = twin
        return self._cpu

    def runs_on_cpu(self, texts: Any, gpu_min_batch: Any) -> bool:
        """Whether a batch runs on the CPU kernels although the tokenizer is on a GPU: fewer than
        ``gpu_min_batch`` texts (:func:`~triton_textops.ops.core.batch.runs_on_cpu`)."""
        return runs_on_cpu(self.target, texts, gpu_min_batch)
