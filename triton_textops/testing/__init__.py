"""Test Triton Python-backend models without a server.

* :func:`install_pb_utils` registers the faithful mock :mod:`triton_textops.testing.pb_utils` as
  ``triton_python_backend_utils`` so ``import triton_python_backend_utils as pb_utils`` works.
* :func:`load_model` runs a model directory in-process like the server (config, auto-complete,
  ``args``, input validation, execute contract).
* :func:`run_ensemble` executes an ensemble's steps through its input/output maps.
* The pytest plugin (entry point ``pytest11``) provides the fixtures ``pb_utils`` and ``triton_model``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

__all__ = ["install_pb_utils", "load_model", "run_ensemble", "InferError", "ModelLoadError"]

_MODULE_NAMES = ("triton_python_backend_utils", "c_python_backend_utils")


def install_pb_utils() -> ModuleType:
    """Register the mock as ``triton_python_backend_utils`` in ``sys.modules`` (idempotent); return it."""
    from triton_textops.testing import pb_utils  # noqa: PLC0415

    for name in _MODULE_NAMES:
        if sys.modules.get(name) is not pb_utils:
            sys.modules[name] = pb_utils
    return pb_utils


def __getattr__(name: str) -> Any:
    # Lazy so that `import triton_textops.testing` stays cheap and free of import cycles.
    if name in ("load_model", "InferError", "ModelLoadError"):
        from triton_textops.testing import harness  # noqa: PLC0415

        return getattr(harness, name)
    if name == "run_ensemble":
        from triton_textops.testing.ensemble import run_ensemble  # noqa: PLC0415

        return run_ensemble
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
