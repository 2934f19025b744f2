"""triton-textops: GPU text pre/post-processing models for Triton's Python backend."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "BertTokenizer": "triton_textops.ops.wordpiece.tokenizer",
    "BPETokenizer": "triton_textops.ops.bpe.tokenizer",
    "Encoding": "triton_textops.ops.core.output",
    "ReadabilityFeatures": "triton_textops.ops.features",
    "blend_scores": "triton_textops.ops.blend",
    "InputError": "triton_textops.errors",
    "Tokenizer": "triton_textops.ops.tokenizer",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:  # lazy so `import triton_textops` stays cheap
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'triton_textops' has no attribute {name!r}")
