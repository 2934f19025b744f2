#!/usr/bin/env python3
"""Write ``docs/models.md``: each model's tensors (roles, default names, data types, dims) and parameters.

Why: users wiring a config need the tensors and parameters of every model, and a hand-written table drifts from
the code. This one is generated from the model classes themselves (``INPUTS``/``OUTPUTS`` tensor specs and
``PARAMS``, plus the parameters every model takes); ``tests/tools/test_model_docs.py`` fails when the committed
file differs from what this script writes. Usage: ``python scripts/gen_model_docs.py [--check]``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "docs" / "models.md"
MODELS = ("tokenize", "features", "preprocess", "postprocess", "onnx_regressor", "forest", "llm_preprocess",
          "llm_postprocess")
ROLE_OF = {"tokenize": "text -> BERT rows", "features": "text -> readability features",
           "preprocess": "text -> BERT rows + features in one kernel (the seed's)",
           "postprocess": "blend of two scores (the seed's)", "onnx_regressor": "an ONNX regressor (the example's "
           "bert-large stand-in; needs onnxruntime)", "forest": "a Treelite forest (the example's cuml stand-in; "
           "needs treelite)", "llm_preprocess": "prompts -> token ids, word lists, embedding bias: a drop-in for "
           "TensorRT-LLM's `preprocessing`", "llm_postprocess": "token ids -> text (UTF-8 pieces under streaming): a drop-in "
           "for TensorRT-LLM's `postprocessing`"}

_LLM_STREAM = (
    "With `streaming: true` (byte-level BPE and SentencePiece; with a WordPiece tokenizer, whose decoder puts spaces "
    "between tokens, `streaming` fails to load) each response is a valid UTF-8 piece, no clean-up of spaces "
    "(`ops.llm.StreamText`). What the step gets: TensorRT-LLM's ensemble hands it each `tensorrt_llm` response's new "
    "tokens only (no earlier tokens, no end flag), and Triton copies the client's request id and correlation id onto "
    "every step's request. The bytes of a character cut between two responses (at most 3) are held back in the "
    "instance, keyed by (request id, correlation id, row), and sent with that stream's next piece: a stream's pieces "
    "concatenate to the bytes of all its tokens, an invalid byte U+FFFD as in the whole decode. An entry lives while "
    "its stream holds bytes (SentencePiece: while the stream lives, its first piece decoded as a text's start, its "
    "leading space stripped, the later ones as the inside, their `▁` spaces kept); at most 65536 per instance, the "
    "least recently used dropped first. A stream that ends or is cancelled inside a character is never told to the "
    "step: its unfinished bytes are never sent, as HF's `DecodeStream` ends it (`decode`, and TensorRT-LLM's BLS "
    "`accumulate_tokens` path, whose every response is the whole decode as `streaming: false` gives it, end it with "
    "U+FFFD). Requests without an id (the default of TensorRT-LLM's `end_to_end_grpc_client.py` and of Triton's "
    "OpenAI frontend; the BLS passes none) cannot be told apart: each piece is made valid alone (cut bytes U+FFFD, "
    "as TensorRT-LLM's per-delta decode; SentencePiece pieces keep their `▁` space). Request ids must be unique "
    "among the streams in flight; the state is per instance, so `streaming` with more than one instance fails to "
    "load. SentencePiece: an invalid run of byte pieces gets Python's U+FFFD count, where HF's ByteFallback writes "
    "one per byte.")

_LLM_SAME = ("Equal to TensorRT-LLM's own model.py (tensorrtllm_backend a315d2df, transformers 4.47.0) on the same "
             "config and requests, quirks included (tests/models/test_llm.py runs both), for byte-level BPE tokenizers "
             "(GPT-2, Llama-3, Qwen2, tiktoken encodings; not SentencePiece/T5). Another family the loader reads (a "
             "WordPiece tokenizer.json or vocab.txt) is served through the tokenizer protocol: the end id is "
             "tokenizer_config.json's `eos_token` (else the tokenizer's own eos id; none is a load error naming "
             "`tokenizer_dir`), the pad id its `pad_token` (else the tokenizer's pad id, else the end id), the bias "
             "length the vocabulary's size, texts decoded by the family's decoder then the config's "
             "`clean_up_tokenization_spaces` (tests/models/test_any_family.py: equal to TensorRT-LLM's model.py on "
             "HF tokenizers' encode / decode of the same file). Where theirs fails the whole "
             "`execute` or passes bad values on, ours answers that request alone with INVALID_ARG naming the tensor; "
             "a config with TensorRT-LLM's multimodal tensors, or a non-empty `multimodal_model_path`, fails to "
             "load (multimodal preprocessing is out of scope). Parameters are read as theirs reads them: an unfilled "
             "`${...}` placeholder (what fill_template.py leaves of a key it is not given), an empty value, or a "
             "missing `add_special_tokens` / `skip_special_tokens` / `max_num_images` takes the default with one "
             "warning line naming it (tests/models/test_trtllm_params.py: every subset of the templates' keys); a "
             "boolean takes their spellings (true/false/t/f/y/n/1/0/yes/no, any case), any other value fails to "
             "load naming the parameter (theirs warns and takes true).")
_TOKENIZER = ("The tokenizer is `vocab` (a WordPiece vocab.txt, `lowercase` as given, default true) or `tokenizer` (a "
              "tokenizer.json directory or file of any family the loader reads: WordPiece or byte-level BPE, casing "
              "and special tokens as the file says, rows as HF tokenizers' truncated and padded encodings; a BPE pads "
              "with tokenizer_config.json's `pad_token` where the file has it, else 0). Both, or `tokenizer` with "
              "`lowercase`, fail to load naming both.")
NOTES = {
    "tokenize": _TOKENIZER,
    "preprocess": _TOKENIZER + " A WordPiece tokenizer must have the features artifact's casing; one that normalizes "
    "as the features do (a vocab.txt, a BertNormalizer with default options) makes the rows and the features in one "
    "pass over each text, another tokenizer (a BPE, a WordPiece keeping accents, ...) in two: its rows, then the "
    "features.",
    "llm_preprocess": _LLM_SAME + " Every text of every request (queries, decoder queries, bad/stop words, bias "
    "words) is tokenized by one launch, two when bias words meet a tokenizer whose template adds a BOS (bias words "
    "are encoded with it, queries as `add_special_tokens` says). Rejected: invalid UTF-8, a negative "
    "`REQUEST_OUTPUT_LEN` (theirs passes it on), bias weights not one per bias word.",
    "llm_postprocess": _LLM_SAME + " All sequences of all requests are decoded by one launch. `OUTPUT` is 1-D "
    "(batch x beams texts), as theirs. " + _LLM_STREAM + " Rejected: token ids outside the vocabulary (theirs drops ids "
    "past its end and fails the `execute` on negative ones), a negative `SEQUENCE_LENGTH` (theirs slices from the end).",
}


def _default(p: Any) -> str:
    from triton_textops.triton.params import _REQUIRED  # noqa: PLC0415

    d = p.default
    if d is _REQUIRED:
        return "required"
    if d is None or d == {}:
        return "—"
    if isinstance(d, bool):
        return "true" if d else "false"
    return str(d)


def _dims(spec: Any) -> str:
    return "[" + ", ".join(str(d) for d in spec.dims) + "]"


def _dtype(spec: Any) -> str:
    return f"{spec.data_type} (or TYPE_INT32: `ids_dtype`)" if spec.ids else spec.data_type


def _param_rows(params: list[Any]) -> list[str]:
    rows = ["| parameter | kind | default | what |", "|---|---|---|---|"]
    for p in params:
        kind = p.kind + (f" ({' / '.join(p.choices)})" if p.choices else "")
        rows.append(f"| `{p.name}` | {kind} | {_default(p)} | {p.help.replace('|', '/')} |")
    return rows


def render() -> str:
    """The text of docs/models.md."""
    from triton_textops.triton.base import COMMON_PARAMS  # noqa: PLC0415

    lines = [
        "# The models' tensors and parameters",
        "",
        "<!-- Generated by `python scripts/gen_model_docs.py` from the model classes; do not edit by hand:",
        "     tests/tools/test_model_docs.py fails when this file differs from what the script writes. -->",
        "",
        "Each model directory needs a `config.pbtxt` and a one-line `1/model.py` importing the model class. The",
        "tensor names are the defaults: the `tensor_names` parameter maps roles to your config's names",
        "(`text=excerpt,input_ids=ids`). Dims are per row, as a config with `max_batch_size > 0` writes them",
        "(without `max_batch_size` the batch dimension `-1` comes first): `L` is the token count (`max_length`, or",
        "the config's output dims), `-1` any width (the features artifact's width for features). Optional tensors",
        "may be left out of the config (outputs) or of a request (inputs).",
        "",
        "## Parameters every model takes",
        "",
        *_param_rows(COMMON_PARAMS),
    ]
    for name in MODELS:
        cls = importlib.import_module(f"triton_textops.models.{name}").TritonPythonModel
        lines += ["", f"## `{name}`: {ROLE_OF[name]}", "",
                  f"`1/model.py`: `from triton_textops.models.{name} import TritonPythonModel  # noqa: F401`", "",
                  "| | role | tensor | data type | dims | |", "|---|---|---|---|---|---|"]
        for way, specs in (("input", cls.INPUTS), ("output", cls.OUTPUTS)):
            for role, spec in specs.items():
                lines.append(f"| {way} | `{role}` | `{spec.name}` | {_dtype(spec)} | {_dims(spec)} | "
                             f"{'optional' if spec.optional else ''} |")
        lines += [""] + (_param_rows(cls.PARAMS) if cls.PARAMS else ["No parameters of its own."])
        if name in NOTES:
            lines += ["", NOTES[name]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/models.md is not what this writes")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python scripts/gen_model_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
