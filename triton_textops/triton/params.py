"""The one typed parser of ``config.pbtxt`` parameters for our models.

Each model declares its parameters as :class:`Param` entries; :func:`parse_parameters` converts the
``string_value`` strings Triton hands over, resolves paths against the model directory (plain relative
paths and ``$$TRITON_MODEL_DIRECTORY/...``) and fails model load with a :class:`ConfigError` that names
the parameter for anything unknown or invalid.

Unset values are read as TensorRT-LLM's ``preprocessing`` / ``postprocessing`` model.py read them: a parameter
with a default whose value is empty or an unfilled ``${...}`` placeholder (what ``fill_template.py`` leaves of a
key it was not given) takes its default, with one warning line naming it; ``warn_absent`` parameters (those
TensorRT-LLM warns about when their key is missing) also warn when absent. Booleans take TensorRT-LLM's spellings.
Any other value a parameter cannot read fails model load (where TensorRT-LLM would warn and use its default, a
typo such as ``flase`` silently becoming true).
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
# exactly the spellings of TensorRT-LLM's preprocessing / postprocessing model.py (``value.lower()`` in their list,
# no strip): a config written for them reads the same here, and one they would not read (" true", "on") fails load
_TRUE = {"true", "1", "t", "y", "yes"}
_FALSE = {"false", "0", "f", "n", "no"}


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
    warn_absent: bool = False  # a missing key logs the default it takes (TensorRT-LLM's model.py does)
    quiet: bool = False  # an empty / placeholder value takes the default without a warning (as TensorRT-LLM does)

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


def resolve_path(value: str, model_dir: str) -> str:
    """``$$TRITON_MODEL_DIRECTORY/x`` and relative paths are taken from the model directory."""
    if value.startswith(MODEL_DIR_VAR):
        value = model_dir + value[len(MODEL_DIR_VAR) :]
    return value if os.path.isabs(value) else os.path.join(model_dir, value)


def is_placeholder(value: str) -> bool:
    """A ``${name}`` placeholder that ``fill_template.py`` (``string.Template.safe_substitute``) left unfilled."""
    text = value.strip()
    return text.startswith("${") and text.endswith("}") and "}" not in text[2:-1]


def _unset(p: Param, value: str) -> bool:
    """An unfilled placeholder; or empty, for a parameter whose kind has no empty value (str and names have)."""
    return is_placeholder(value) or (not value.strip() and p.kind not in ("str", "names"))


def parse_bool(raw: str) -> bool:
    """A boolean parameter's value, spelled as TensorRT-LLM's model.py spells them; ValueError otherwise."""
    low = raw.lower()
    if low in _TRUE or low in _FALSE:
        return low in _TRUE
    raise ValueError("expected true or false (TensorRT-LLM's spellings, any case: true/false, 1/0, t/f, y/n, yes/no)")


def _convert(p: Param, raw: str, model_dir: str, check_paths: bool = True) -> Any:
    text = raw.strip()
    if p.kind == "str":
        return raw
    if p.kind == "bool":
        return parse_bool(raw)
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
    model_config: Mapping[str, Any],
    specs: list[Param],
    model_dir: str,
    *,
    check_paths: bool = True,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Typed values of every declared parameter (defaults filled); raise :class:`ConfigError` naming
    the first unknown, missing or invalid one. ``check_paths=False`` skips file existence checks
    (auto-complete runs before the files matter). ``warn`` gets one line per parameter that takes its
    default from an unset value (and per absent ``warn_absent`` one)."""
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
        if p.name in raw and _unset(p, raw[p.name]):
            if p.required:
                raise ConfigError(f"model '{name}': parameter '{p.name}' is not set (value {raw[p.name]!r}): "
                                  f"fill it in ({p.help})")
            if warn and not p.quiet:
                warn(f"model '{name}': parameter '{p.name}' is not set (value {raw[p.name]!r}): "
                     f"using its default {_shown(p.default)}")
            del raw[p.name]
        elif p.name not in raw and p.warn_absent and warn:
            warn(f"model '{name}': parameter '{p.name}' is not in the config: using its default {_shown(p.default)}")
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


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)
