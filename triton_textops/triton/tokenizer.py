"""The tokenizer of a served model (the ``tokenize`` and ``preprocess`` models): its parameters, loading it from
them, and encoding a batch as they say; any family the loader returns (the protocol's ``encode_rows``)."""

from __future__ import annotations

from typing import Any

from triton_textops.errors import ConfigError
from triton_textops.ops.tokenizer import Tokenizer
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer
from triton_textops.triton.base import COMMON_PARAMS, IDS_DTYPE_PARAM, TextOpsModel
from triton_textops.triton.params import Param, parse_parameters

TOKENIZER_PARAMS = [
    Param("vocab", "path", default="vocab.txt", help="WordPiece vocab.txt (not with tokenizer)"),
    Param("tokenizer", "path", default=None, help="in place of vocab: a tokenizer.json directory or file, any family "
          "(WordPiece, byte-level BPE), its casing and specials as the file says"),
    Param("lowercase", "bool", default=None, help="vocab only (not with tokenizer): uncased normalization "
          "(lowercase, strip accents) as HF's; default true"),
    Param("max_length", "int", default=None, minimum=3,
          help="tokens per row (default: the config's output dims, else 128)"),
    Param("stride", "int", default=0, minimum=0, help="tokens shared by consecutive overflow windows (HF's stride)"),
    Param("return_overflowing_tokens", "bool", default=False,
          help="long texts give several rows (windows); needs max_batch_size: 0"),
    IDS_DTYPE_PARAM,
]


def tokenizer_params(cls: Any, cfg: dict, model_dir: str = "", check_paths: bool = False,
                     warn: Any = None) -> dict[str, Any]:
    """The parameters, with ``vocab`` or ``tokenizer`` (the other None): vocab.txt is the default without tokenizer."""
    given, model = cfg.get("parameters") or {}, cfg.get("name", "?")
    if "tokenizer" in given and ("vocab" in given or "lowercase" in given):
        other = "vocab" if "vocab" in given else "lowercase"
        raise ConfigError(f"model '{model}': parameters 'tokenizer' and '{other}' are both given: 'tokenizer' (a "
                          "tokenizer.json, its casing as the file says) or 'vocab' (a vocab.txt) with 'lowercase'")
    unused = "vocab" if "tokenizer" in given else "tokenizer"
    specs = [p for p in COMMON_PARAMS + cls.PARAMS if p.name != unused]
    return {**parse_parameters(cfg, specs, model_dir, check_paths=check_paths, warn=warn), unused: None}


def load_tokenizer(model: TextOpsModel) -> Any:
    """The tokenizer a model's parameters describe, on the model instance's device."""
    p = model.params
    if p["return_overflowing_tokens"] and model.batched:
        raise ConfigError("return_overflowing_tokens needs max_batch_size: 0 (a text may give several rows)")
    param = "vocab" if p["tokenizer"] is None else "tokenizer"
    try:
        if p["tokenizer"] is None:
            return BertTokenizer.from_vocab(p["vocab"], lowercase=p["lowercase"] is not False, device=model.device)
        return Tokenizer.from_pretrained(p["tokenizer"], device=model.device)
    except (ValueError, FileNotFoundError) as e:  # (ConfigError is a ValueError)
        raise ConfigError(f"model '{model.model_config.get('name', '?')}': parameter '{param}': {e}") from None


def encode_rows(model: TextOpsModel, batch: Any, add_special_tokens: bool = True) -> Any:
    """The :class:`~triton_textops.ops.core.output.Rows` of a batch as the model's parameters say."""
    p = model.params  # (any family: the protocol's encode_rows)
    return model.tokenizer.encode_rows(
        batch, max_length=p["max_length"], stride=p["stride"], return_overflowing_tokens=p["return_overflowing_tokens"],
        add_special_tokens=add_special_tokens, dtype=model.ids_dtype(), gpu_min_batch=p["gpu_min_batch"])
