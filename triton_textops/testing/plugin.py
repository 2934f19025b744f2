"""pytest plugin (entry point ``pytest11``): fixtures for testing Triton Python-backend models.

* ``pb_utils``: installs the mock as ``triton_python_backend_utils`` and yields it.
* ``triton_model``: a factory ``triton_model(model_dir, **load_model_kwargs) -> ModelHarness``;
  every harness it created is finalized at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture
def pb_utils() -> Iterator[ModuleType]:
    """The ``triton_python_backend_utils`` mock, registered in ``sys.modules``."""
    from triton_textops.testing import install_pb_utils  # noqa: PLC0415

    yield install_pb_utils()


@pytest.fixture
def triton_model(pb_utils: ModuleType) -> Iterator[Callable[..., Any]]:
    """Factory: ``triton_model(model_dir, version=1, placement="cpu", ...)`` -> loaded model harness."""
    from triton_textops.testing.harness import load_model  # noqa: PLC0415

    created: list[Any] = []

    def factory(model_dir: Any, **kwargs: Any) -> Any:
        harness = load_model(model_dir, **kwargs)
        created.append(harness)
        return harness

    yield factory
    errors = []
    for harness in reversed(created):
        try:
            harness.finalize()
        except Exception as exc:  # noqa: BLE001 - report all, fail once
            errors.append(exc)
    if errors:
        raise errors[0]
