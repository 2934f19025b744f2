"""The one typed parser of ``config.pbtxt`` parameters for our models.

Each model declares its parameters as :class:`Param` entries; :func:`parse_parameters` converts the
``string_value`` strings Triton hands over, resolves paths against the model directory (plain relative
paths and ``$$TRITON_MODEL_DIRECTORY/...``) and fails model load with a :class:`ConfigError` that names
the parameter for anything unknown or invalid.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from triton_textops.errors import ConfigError

# Parameters that belong to Triton's Python backend itself, not to our models.
TRITON_PARAMETERS = frozenset({"FORCE_CPU_ONLY_INPUT_TENSORS", "EXECUTION_ENV_PATH"})
MODEL_DIR_VAR = "$$TRITON_MODEL_DIRECTORY"
_REQUIRED = object()
# TensorRT-LLM's model.py files also take t / y / f / n: a config written for them loads here unchanged
_TRUE = {"true", "1", "yes", "on", "t", "y"}
_FALSE = {"false", "0", "no", "off", "f", "n"}


@dataclass(frozen=True)
class Param:
    """One model parameter: ``kind`` is str, int, float, bool, path, choice or names (``a=B,c=D``)."""

    name: str
    kind: str = "str"
    default: Any = _REQUIRED
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    help: str = ""
    check: Callable[[Any], str | None] | None = None  # returns an error text, or None when valid

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


def resolve_path(value: str, model_dir: str) -> str:
    """``$$TRITON_MODEL_DIRECTORY/x`` and relative paths are taken from the model directory."""
    if value.startswith(MODEL_DIR_VAR):
        value = model_dir + value[len(MODEL_DIR_VAR) :]
    return value if os.path.isabs(value) else os.path.join(model_dir, value)


def _convert(p: Param, raw: str, model_dir: str, check_paths: bool = True) -> Any:
    text = raw.strip()
    if p.kind == "str":
        return raw
    if p.kind == "bool":
        low = text.lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError("expected true or false")
    if p.kind == "int":
        value: Any = int(text)
    elif p.kind == "float":
        value = float(text)
    elif p.kind == "choice":
        if text not in p.choices:
            raise ValueError(f"expected one of {', '.join(p.choices)}")
        return text
    elif p.kind == "path":
        path = resolve_path(text, model_dir)
        if check_paths and not os.path.exists(path):
            raise ValueError(f"file not found: {path}")
        return path
    elif p.kind == "names":
        pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
        if any(len(kv) != 2 or not kv[0].strip() or not kv[1].strip() for kv in pairs):
            raise ValueError("expected role=NAME pairs separated by commas")
        return {k.strip(): v.strip() for k, v in pairs}
    else:
        raise ValueError(f"unknown parameter kind {p.kind!r}")
    if p.minimum is not None and value < p.minimum:
        raise ValueError(f"must be >= {p.minimum:g}")
    return value


def parse_parameters(
    model_config: Mapping[str, Any], specs: list[Param], model_dir: str, *, check_paths: bool = True
) -> dict[str, Any]:
    """Typed values of every declared parameter (defaults filled); raise :class:`ConfigError` naming
    the first unknown, missing or invalid one. ``check_paths=False`` skips file existence checks
    (auto-complete runs before the files matter)."""
    name = model_config.get("name", "?")
    raw: dict[str, str] = {}
    for key, val in (model_config.get("parameters") or {}).items():
        raw[key] = val.get("string_value", "") if isinstance(val, Mapping) else str(val)
    known = {p.name: p for p in specs}
    for key in raw:
        if key not in known and key not in TRITON_PARAMETERS:
            raise ConfigError(
                f"model '{name}': unknown parameter '{key}' (known: {', '.join(sorted(known)) or 'none'})"
            )
    out: dict[str, Any] = {}
    for p in specs:
        if p.name not in raw:
            if p.required:
                raise ConfigError(f"model '{name}': missing required parameter '{p.name}' ({p.help})")
            if p.kind != "path":
                out[p.name] = p.default
                continue
        text = raw.get(p.name, p.default)
        try:
            value = _convert(p, text, model_dir, check_paths)
            problem = p.check(value) if p.check else None
            if problem:
                raise ValueError(problem)
        except ValueError as e:
            raise ConfigError(f"model '{name}': invalid value {text!r} for parameter '{p.name}': {e}") from None
        out[p.name] = value
    return out
