"""The package's one input-error type.

Ops raise :class:`InputError` (a ``ValueError``) for anything wrong with what a caller sent;
the Triton glue maps it to ``pb_utils.TritonError(..., TritonError.INVALID_ARG)`` for that request only.
"""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """Bad input from a caller (invalid UTF-8, weight out of range, mismatched lengths, ...).

    ``rows`` optionally lists the offending row indices (host int array), so a batched caller can
    reject just the requests those rows came from.
    """

    def __init__(self, message: str, *, rows: Any = None) -> None:
        super().__init__(message)
        self.rows = rows


class ConfigError(ValueError):
    """A model's configuration (``config.pbtxt`` parameters, artifacts) is invalid: model load fails fast."""
