"""The LLM example repository: TensorRT-LLM's ensemble with our pre/post-processing and a stand-in generator.

``triton-textops example llm DIR --tokenizer PATH`` writes the layout of TensorRT-LLM's
``inflight_batcher_llm`` repository, with its model and tensor names, so a client of that ensemble works
unchanged:

* ``preprocessing``: our ``llm_preprocess`` (one-line model.py) with the tensors of TensorRT-LLM's
  ``preprocessing/config.pbtxt`` (without the encoder-decoder and multimodal ones);
* ``generator``: the stand-in for ``tensorrt_llm`` (:mod:`triton_textops.tools.example.llm_generator`, copied as
  its model.py): decoupled, the same tensors as ``tensorrt_llm``, streams the prompt's own tokens back in chunks
  of random sizes (seeded), so the text a client must get is known without a model;
* ``postprocessing``: our ``llm_postprocess`` with ``streaming: true``: each chunk's output is valid UTF-8 (a
  character split across chunks held back until it is whole), so a stream's outputs (sent with a request id)
  concatenate to the exact text;
* ``ensemble``: TensorRT-LLM's ensemble (``text_input``, ``decoder_text_input``, ``max_tokens``, ``bad_words``,
  ``stop_words``,
  ``end_id``, ``pad_id``, ``embedding_bias_words``, ``embedding_bias_weights``, ``stream`` → ``text_output``).
  Streaming needs gRPC's streaming API (``stream=True``); Triton runs the postprocessing step once per chunk.

To serve a real model, put TensorRT-LLM's ``tensorrt_llm`` directory into the repository and change the
ensemble step's ``model_name`` from ``generator`` to ``tensorrt_llm``: the tensors are the same. Every config is
a ``model_config_pb2.ModelConfig`` written with :func:`triton_textops.triton.config.write_config`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triton_textops.tools.repo.generate import (
    DEFAULT_QUEUE_DELAY_US,
    RepositoryError,
    RepositoryPlan,
    _io,
    _one_line_model,
    _param,
    _pb,
    _positive,
    add_client_names,
    write_plan,
)

ENSEMBLE, PREPROCESS, GENERATOR, POSTPROCESS = "ensemble", "preprocessing", "generator", "postprocessing"
MODELS = (PREPROCESS, GENERATOR, POSTPROCESS, ENSEMBLE)
GENERATOR_SOURCE = Path(__file__).with_name("llm_generator.py")
TOKENIZER_DIR = "tokenizer"  # the tokenizer files, copied into each of the two models' directories
# the files of a tokenizer directory that llm_preprocess / llm_postprocess read: one of the vocabulary sets, and
# tokenizer_config.json / special_tokens_map.json when present
VOCAB_FILES = (("tokenizer.json",), ("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))
TOKENIZER_FILES = (*{n for names in VOCAB_FILES for n in names}, "tokenizer_config.json", "special_tokens_map.json")

S, I32, F32, BOOL = "TYPE_STRING", "TYPE_INT32", "TYPE_FP32", "TYPE_BOOL"
# (name, data type, dims, optional): TensorRT-LLM's preprocessing/config.pbtxt, without the multimodal tensors
PRE_INPUTS = [("QUERY", S, [1], False), ("DECODER_QUERY", S, [1], True), ("REQUEST_OUTPUT_LEN", I32, [1], False),
              ("BAD_WORDS_DICT", S, [-1], True),
              ("STOP_WORDS_DICT", S, [-1], True), ("EMBEDDING_BIAS_WORDS", S, [-1], True),
              ("EMBEDDING_BIAS_WEIGHTS", F32, [-1], True), ("END_ID", I32, [1], True), ("PAD_ID", I32, [1], True)]
PRE_OUTPUTS = [("INPUT_ID", I32, [-1]), ("REQUEST_INPUT_LEN", I32, [1]), ("DECODER_INPUT_ID", I32, [-1]),
               ("REQUEST_DECODER_INPUT_LEN", I32, [1]), ("BAD_WORDS_IDS", I32, [2, -1]),
               ("STOP_WORDS_IDS", I32, [2, -1]), ("EMBEDDING_BIAS", F32, [-1]), ("REQUEST_OUTPUT_LEN", I32, [-1]),
               ("OUT_END_ID", I32, [1]), ("OUT_PAD_ID", I32, [1])]
# tensorrt_llm's tensors that the pipeline feeds (its config.pbtxt): name, type, dims, optional
GEN_INPUTS = [("input_ids", I32, [-1], False), ("input_lengths", I32, [1], False),
              ("request_output_len", I32, [1], False), ("decoder_input_ids", I32, [-1], True),
              ("decoder_input_lengths", I32, [1], True), ("end_id", I32, [1], True), ("pad_id", I32, [1], True),
              ("stop_words_list", I32, [2, -1], True), ("bad_words_list", I32, [2, -1], True),
              ("embedding_bias", F32, [-1], True), ("streaming", BOOL, [1], True)]
GEN_OUTPUTS = [("output_ids", I32, [-1, -1]), ("sequence_length", I32, [-1])]
POST_INPUTS = [("TOKENS_BATCH", I32, [-1, -1], False), ("SEQUENCE_LENGTH", I32, [-1], False)]
POST_OUTPUTS = [("OUTPUT", S, [-1])]
# TensorRT-LLM's ensemble tensors (those of the pieces above): name, type, dims, optional
ENSEMBLE_INPUTS = [("text_input", S, [1], False), ("decoder_text_input", S, [1], True),
                   ("max_tokens", I32, [1], False), ("bad_words", S, [-1], True),
                   ("stop_words", S, [-1], True), ("end_id", I32, [1], True), ("pad_id", I32, [1], True),
                   ("embedding_bias_words", S, [-1], True), ("embedding_bias_weights", F32, [-1], True),
                   ("stream", BOOL, [1], True)]
STEPS = [
    (PREPROCESS,
     {"QUERY": "text_input", "DECODER_QUERY": "decoder_text_input", "REQUEST_OUTPUT_LEN": "max_tokens",
      "BAD_WORDS_DICT": "bad_words",
      "STOP_WORDS_DICT": "stop_words", "EMBEDDING_BIAS_WORDS": "embedding_bias_words",
      "EMBEDDING_BIAS_WEIGHTS": "embedding_bias_weights", "END_ID": "end_id", "PAD_ID": "pad_id"},
     {"INPUT_ID": "_INPUT_ID", "REQUEST_INPUT_LEN": "_REQUEST_INPUT_LEN", "DECODER_INPUT_ID": "_DECODER_INPUT_ID",
      "REQUEST_DECODER_INPUT_LEN": "_REQUEST_DECODER_INPUT_LEN", "BAD_WORDS_IDS": "_BAD_WORDS_IDS",
      "STOP_WORDS_IDS": "_STOP_WORDS_IDS", "EMBEDDING_BIAS": "_EMBEDDING_BIAS",
      "REQUEST_OUTPUT_LEN": "_REQUEST_OUTPUT_LEN", "OUT_END_ID": "_PREPROCESSOR_END_ID",
      "OUT_PAD_ID": "_PREPROCESSOR_PAD_ID"}),
    (GENERATOR,
     {"input_ids": "_INPUT_ID", "input_lengths": "_REQUEST_INPUT_LEN", "request_output_len": "_REQUEST_OUTPUT_LEN",
      "decoder_input_ids": "_DECODER_INPUT_ID", "decoder_input_lengths": "_REQUEST_DECODER_INPUT_LEN",
      "end_id": "_PREPROCESSOR_END_ID", "pad_id": "_PREPROCESSOR_PAD_ID", "stop_words_list": "_STOP_WORDS_IDS",
      "bad_words_list": "_BAD_WORDS_IDS", "embedding_bias": "_EMBEDDING_BIAS", "streaming": "stream"},
     {"output_ids": "_TOKENS_BATCH", "sequence_length": "_SEQUENCE_LENGTH"}),
    (POSTPROCESS, {"TOKENS_BATCH": "_TOKENS_BATCH", "SEQUENCE_LENGTH": "_SEQUENCE_LENGTH"},
     {"OUTPUT": "text_output"}),
]


def _config(name: str, max_batch_size: int, inputs: list[tuple[str, str, list[int], bool]],
            outputs: list[tuple[str, str, list[int]]], *, backend: str | None = "python", instances: int = 1,
            delay_us: int | None = None, ragged: bool = False) -> Any:
    pb2 = _pb()
    cfg = pb2.ModelConfig(name=name, max_batch_size=max_batch_size)
    if backend:
        cfg.backend = backend
        group = cfg.instance_group.add()
        group.count, group.kind = instances, pb2.ModelInstanceGroup.Kind.Value("KIND_CPU")
        cfg.dynamic_batching.max_queue_delay_microseconds = delay_us or 0
    else:
        cfg.platform = "ensemble"
    for name_, dtype, dims, optional in inputs:
        entry = cfg.input.add()
        _io(entry, name_, dtype, dims)
        entry.optional = optional
        entry.allow_ragged_batch = ragged and -1 in dims
    for spec in outputs:
        _io(cfg.output.add(), *spec)
    return cfg


def preprocessing_config(name: str, tokenizer_dir: str, *, max_batch_size: int, instances: int = 1,
                         delay_us: int = DEFAULT_QUEUE_DELAY_US, params: Mapping[str, str] | None = None) -> Any:
    """``llm_preprocess``'s config with the tensors of TensorRT-LLM's ``preprocessing`` (KIND_CPU, dynamic
    batching); TensorRT-LLM's own model.py loads it too once its multimodal outputs are added."""
    cfg = _config(name, max_batch_size, PRE_INPUTS, PRE_OUTPUTS, instances=instances, delay_us=delay_us)
    for key, value in {"tokenizer_dir": tokenizer_dir, **(params or {})}.items():
        _param(cfg, key, str(value))
    return cfg


def postprocessing_config(name: str, tokenizer_dir: str, *, max_batch_size: int, instances: int = 1,
                          delay_us: int = DEFAULT_QUEUE_DELAY_US, params: Mapping[str, str] | None = None) -> Any:
    """``llm_postprocess``'s config with the tensors of TensorRT-LLM's ``postprocessing``."""
    cfg = _config(name, max_batch_size, POST_INPUTS, POST_OUTPUTS, instances=instances, delay_us=delay_us)
    for key, value in {"tokenizer_dir": tokenizer_dir, **(params or {})}.items():
        _param(cfg, key, str(value))
    return cfg


def _tokenizer_copies(tokenizer: Path) -> tuple[dict[str, Path], str]:
    """Files to copy into a model directory, and the ``tokenizer_dir`` value that names them there."""
    if tokenizer.is_file():
        if tokenizer.suffix != ".tiktoken":
            raise RepositoryError(f"tokenizer: expected a directory or a .tiktoken file, got {tokenizer}")
        return {f"{TOKENIZER_DIR}/{tokenizer.name}": tokenizer}, f"{TOKENIZER_DIR}/{tokenizer.name}"
    if not tokenizer.is_dir():
        raise RepositoryError(f"tokenizer: not found: {tokenizer}")
    files = {f"{TOKENIZER_DIR}/{n}": tokenizer / n for n in sorted(TOKENIZER_FILES) if (tokenizer / n).is_file()}
    if not any(all((tokenizer / n).is_file() for n in names) for names in VOCAB_FILES):
        raise RepositoryError(f"tokenizer: {tokenizer} has no tokenizer.json (nor GPT-2's vocab.json + merges.txt or "
                              "encoder.json + vocab.bpe)")
    return files, TOKENIZER_DIR


def plan_llm_repository(
    tokenizer: str | os.PathLike[str],
    *,
    tokenizer_params: Mapping[str, str] | None = None,
    max_batch_size: int = 64,
    instances: int = 1,
    max_queue_delay_us: int = DEFAULT_QUEUE_DELAY_US,
    seed: int = 0,
    max_chunk_tokens: int = 4,
    step_delay_ms: float = 0.0,
) -> RepositoryPlan:
    """Every config and file of the LLM example (nothing written). ``tokenizer``: a directory with
    ``tokenizer.json`` (and ``tokenizer_config.json``) or a ``.tiktoken`` file, copied into both models;
    ``tokenizer_params``: further parameters of both models (e.g. the encoding of a ``.tiktoken`` file);
    ``seed``, ``max_chunk_tokens``, ``step_delay_ms``: the stand-in generator's chunking and pace."""
    _positive(max_batch_size, "max_batch_size")
    _positive(instances, "instances")
    _positive(max_queue_delay_us, "max_queue_delay_us", 0)
    _positive(max_chunk_tokens, "max_chunk_tokens")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RepositoryError(f"seed: expected an integer, got {seed!r}")
    if not step_delay_ms >= 0:
        raise RepositoryError(f"step_delay_ms: expected a number >= 0, got {step_delay_ms!r}")
    copies, tok_value = _tokenizer_copies(Path(tokenizer))
    plan = RepositoryPlan(configs={}, python_models=[PREPROCESS, GENERATOR, POSTPROCESS])
    common = {"instances": instances, "delay_us": max_queue_delay_us}

    tok_dir = f"$$TRITON_MODEL_DIRECTORY/{tok_value}"
    pre = preprocessing_config(PREPROCESS, tok_dir, max_batch_size=max_batch_size, params=tokenizer_params, **common)
    post = postprocessing_config(POSTPROCESS, tok_dir, max_batch_size=max_batch_size, **common, params={
        **(tokenizer_params or {}), "skip_special_tokens": "true", "streaming": "true"})
    for cfg, module in ((pre, "llm_preprocess"), (post, "llm_postprocess")):
        plan.files[f"{cfg.name}/1/model.py"] = _one_line_model(f"triton_textops.models.{module}")
        plan.copies.update({f"{cfg.name}/{rel}": src for rel, src in copies.items()})

    gen = _config(GENERATOR, max_batch_size, GEN_INPUTS, GEN_OUTPUTS, ragged=True, **common)
    gen.model_transaction_policy.decoupled = True
    _param(gen, "seed", str(seed))
    _param(gen, "max_chunk_tokens", str(max_chunk_tokens))
    _param(gen, "step_delay_ms", f"{step_delay_ms:g}")
    plan.copies[f"{GENERATOR}/1/model.py"] = GENERATOR_SOURCE

    ens = _config(ENSEMBLE, max_batch_size, ENSEMBLE_INPUTS, [("text_output", S, [-1])], backend=None)
    for model, input_map, output_map in STEPS:
        step = ens.ensemble_scheduling.step.add(model_name=model, model_version=-1)
        step.input_map.update(input_map)
        step.output_map.update(output_map)
    plan.configs = {PREPROCESS: pre, GENERATOR: gen, POSTPROCESS: post, ENSEMBLE: ens}
    return add_client_names(plan)


def build_repository(directory: str | os.PathLike[str], tokenizer: str | os.PathLike[str], *,
                     overwrite: bool = False, **options: Any) -> Path:
    """Write the LLM example into ``directory`` (its four model directories; ``overwrite`` replaces them)."""
    plan = plan_llm_repository(tokenizer, **options)
    return write_plan(plan, directory, overwrite=overwrite)

