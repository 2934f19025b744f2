"""Parameters read as TensorRT-LLM's preprocessing / postprocessing model.py read them.

Its config templates (trtllm_ref/) filled as its tools/fill_template.py fills them (``string.Template.
safe_substitute``: a key it is not given stays ``${key}``) with every subset of their string keys, loaded by our
models and by its model.py (transformers 4.47, in a subprocess): the same outputs, and our one warning line per
parameter left unset where its model.py prints one. Boolean spellings are its own; what it cannot read as a boolean
fails our load naming the parameter.
"""

from __future__ import annotations

import itertools
import logging

import llm_dirs as L
import numpy as np
import pytest
from llm_reference import i32, obj, run_batches, run_reference
from llm_reference import same_outputs as _same

from triton_textops.errors import ConfigError
from triton_textops.testing import load_model
from triton_textops.testing.harness import ModelLoadError
from triton_textops.triton.llm import TRTLLM_MULTIMODAL_PARAMS
from triton_textops.triton.params import Param, parse_parameters

# the keys fill_template.py is given in TensorRT-LLM's docs: batch size, instance count, queue (the config's numbers)
NUMBERS = {"triton_max_batch_size": "8", "max_queue_delay_microseconds": "0", "max_queue_size": "0",
           "preprocessing_instance_count": "1", "postprocessing_instance_count": "1"}
# the string keys of each template (tokenizer_dir is always given) and a value for each when it is given
PRE_KEYS = {"add_special_tokens": None, "multimodal_model_path": "", "engine_dir": "/no/engine", "max_num_images": "1"}
POST_KEYS = {"skip_special_tokens": None}
SPELLINGS = ["False", "true", "NO", "y", "0", "T", "yes", "f", "1", "N", "TRUE", "No", "t", "FALSE", "Y", "n"]
TEXTS = ["Hello world, <|begin_of_text|>naïve 中文 😀", "", "<|eot_id|> two  spaces\n"]


def _subsets(keys: dict) -> list[tuple[str, ...]]:
    return [c for n in range(len(keys) + 1) for c in itertools.combinations(keys, n)]


def _fill(keys: dict, given: tuple[str, ...], i: int) -> dict[str, str]:
    return {k: (SPELLINGS[i % len(SPELLINGS)] if keys[k] is None else keys[k]) for k in given}


def _unset_warnings(kind: str, given: dict[str, str]) -> set[str]:
    """The parameters TensorRT-LLM's model.py prints a warning for on this fill (its initialize, read as written)."""
    if kind == "preprocessing":
        return {"add_special_tokens"} - set(given) | ({"max_num_images"} if not given.get("max_num_images") else set())
    return {"skip_special_tokens"} - set(given)


def _requests(kind: str) -> list[list[dict]]:
    if kind == "preprocessing":
        return [[{"QUERY": obj([[t]]), "REQUEST_OUTPUT_LEN": i32([4])} for t in TEXTS]]
    ids = [[100256, 9906, 1917, 100260, 11, 220], [100260], [15339, 100256, 100261]]  # BOS, eot_id, <|plain|>
    return [[{"TOKENS_BATCH": np.array([[s]], np.int32), "SEQUENCE_LENGTH": np.array([[len(s)]], np.int32)}
             for s in ids]]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Per (kind, subset): our responses, the reference's, and the parameters our load warned about."""
    root = tmp_path_factory.mktemp("trtllm_params")
    tok_dir = L.write_tokenizer_dir(root, "llama3")
    jobs, keys = [], []
    for kind, kinds_keys in (("preprocessing", PRE_KEYS), ("postprocessing", POST_KEYS)):
        module = "llm_preprocess" if kind == "preprocessing" else "llm_postprocess"
        for i, given in enumerate(_subsets(kinds_keys)):
            values = {"tokenizer_dir": str(tok_dir), **_fill(kinds_keys, given, i + (kind == "postprocessing"))}
            name = f"{kind}_{i}"
            ours = L.trtllm_config(kind, name, fill=NUMBERS, **values)
            ref = L.trtllm_config(kind, name, fill=NUMBERS, drop_outputs=False, **values)
            o = L.write_config_dir(root / "ours", name, ours, L.one_line(module))
            r = L.write_config_dir(root / "ref", name, ref, (L.REF / kind / "1" / "model.py").read_text())
            jobs.append((o, r, _requests(kind)))
            keys.append((kind, values))

    def ours_side() -> list:
        out = []
        log = logging.getLogger("triton_python_backend_utils")
        for o, _, batches in jobs:
            records: list[logging.LogRecord] = []
            handler = logging.Handler(logging.WARNING)
            handler.emit = records.append  # type: ignore[method-assign]
            log.addHandler(handler)
            try:
                out.append((run_batches(o, batches), [r.getMessage() for r in records]))
            finally:
                log.removeHandler(handler)
        return out

    ref, ours = run_reference([(str(r), b) for _, r, b in jobs], root, ours_side)
    return {(kind, tuple(sorted(values))): (values, o, w, rr) for (kind, values), (o, w), rr in zip(keys, ours, ref)}


def test_every_fill_loads_and_matches_tensorrt_llm(filled: dict) -> None:
    assert len(filled) == 2**len(PRE_KEYS) + 2**len(POST_KEYS)
    for (kind, _), (values, ours, warnings, ref) in filled.items():
        where = f"{kind} filled with {values}"
        for b, (o_batch, r_batch) in enumerate(zip(ours, ref)):
            for i, (o, r) in enumerate(zip(o_batch, r_batch)):
                assert not isinstance(o, str), f"{where}: {o}"
                _same(o, r, f"{where}: batch {b} request {i}")
        named = [w for w in warnings if "parameter '" in w]
        warned = {w.split("parameter '", 1)[1].split("'", 1)[0] for w in named}
        assert warned == _unset_warnings(kind, values), (where, warnings)
        assert len(named) == len(warned), f"{where}: one line per parameter: {warnings}"


def test_fills_differ_where_the_flag_does(filled: dict) -> None:
    """The comparison is not vacuous: add_special_tokens=false drops Llama-3's BOS, skip_special_tokens=false keeps
    the special tokens' text."""
    pre = {v.get("add_special_tokens", "unset").lower(): o[0][0]["INPUT_ID"].tolist()
           for (k, _), (v, o, _, _) in filled.items() if k == "preprocessing"}
    assert pre["false"] != pre["unset"] == pre["true"]
    post = {v.get("skip_special_tokens", "unset"): o[0][0]["OUTPUT"].tolist()
            for (k, _), (v, o, _, _) in filled.items() if k == "postprocessing"}
    assert len(set(map(str, post.values()))) == 2


# ----------------------------------------------------------------------------------------- the parser


def _parse(value: str | None, spec: Param, warn: list[str] | None = None) -> object:
    cfg = {"name": "m", "parameters": {} if value is None else {spec.name: {"string_value": value}}}
    return parse_parameters(cfg, [spec], "/", warn=None if warn is None else warn.append)[spec.name]


FLAG = Param("flag", "bool", default=True, warn_absent=True)


@pytest.mark.parametrize("spelling", ["true", "false", "1", "0", "t", "f", "y", "n", "yes", "no"])
def test_boolean_spellings_any_case(spelling: str) -> None:
    for text in (spelling, spelling.upper(), spelling.capitalize()):
        assert _parse(text, FLAG) is (spelling in ("true", "1", "t", "y", "yes"))


@pytest.mark.parametrize("text", ["on", "off", " true", "false ", "maybe", "flase", "2", "-1", "truee"])
def test_boolean_it_cannot_read_fails_naming_the_parameter(text: str) -> None:
    with pytest.raises(ConfigError, match=r"parameter 'flag': expected true or false"):
        _parse(text, FLAG)


@pytest.mark.parametrize("text", [None, "", "${flag}", " ${flag} ", "${other_key}"])
def test_unset_takes_the_default_with_one_warning(text: str | None) -> None:
    warned: list[str] = []
    assert _parse(text, FLAG, warned) is True
    assert len(warned) == 1 and "parameter 'flag'" in warned[0] and "default true" in warned[0]
    quiet = Param("flag", "bool", default=False)  # no warn_absent: only an unset value warns
    warned.clear()
    assert _parse(text, quiet, warned) is False
    assert len(warned) == (0 if text is None else 1)


def test_unset_required_parameter_fails_load(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"parameter 'tokenizer_dir' is not set \(value '\$\{tokenizer_dir\}'\)"):
        _parse("${tokenizer_dir}", Param("tokenizer_dir", "path"))
    cfg = L.trtllm_config("postprocessing", "postprocessing", fill=NUMBERS)  # fill_template given no tokenizer_dir
    d = L.write_config_dir(tmp_path, "postprocessing", cfg, L.one_line("llm_postprocess"))
    with pytest.raises(ModelLoadError, match="parameter 'tokenizer_dir' is not set"):
        load_model(d)


def test_not_a_placeholder_is_a_value() -> None:
    for text in ("${a}${b}", "$flag", "{flag}"):
        with pytest.raises(ConfigError, match="parameter 'flag'"):
            _parse(text, FLAG)
    assert parse_parameters({"parameters": {"s": {"string_value": "a${b}"}}}, [Param("s", "str", default="d")],
                            "/")["s"] == "a${b}"


def test_max_num_images_is_read_as_tensorrt_llm_reads_it() -> None:
    spec = next(p for p in TRTLLM_MULTIMODAL_PARAMS if p.name == "max_num_images")
    assert _parse("3", spec) == 3
    for text in (None, "", "${max_num_images}"):
        warned: list[str] = []
        assert _parse(text, spec, warned) is None and len(warned) == 1
    with pytest.raises(ConfigError, match="parameter 'max_num_images'"):
        _parse("many", spec)
