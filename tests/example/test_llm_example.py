"""``triton-textops example llm``: the repository it writes, and its stand-in generator in the in-process harness.

The real server streams it end to end in ``tests/server/test_llm_stream.py``; here: the configs parse with
Triton's schema and are wired as TensorRT-LLM's ensemble (every step tensor exists on both sides, with the same
type), and the generator streams exactly the tokens it is given, in seeded chunks, with per-request errors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from triton_textops.cli import main
from triton_textops.testing import load_model

BPE = Path(__file__).resolve().parents[1] / "data" / "bpe"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("llm") / "repo"
    rc = main(["example", "llm", str(root), "--tokenizer", str(BPE / "cl100k_base.tiktoken"),
               "--param", "encoding=cl100k_base", "--seed", "7", "--max-chunk-tokens", "3"])
    assert rc == 0
    return root


def _tensors(cfg) -> dict[str, tuple[int, list[int], bool]]:
    return {t.name: (t.data_type, list(t.dims), getattr(t, "optional", False)) for t in cfg}


def test_repository_is_tensorrt_llms_ensemble_wired_through_the_generator(repo: Path) -> None:
    from triton_textops.tools.example import llm
    from triton_textops.triton.config import load_config

    cfgs = {m: load_config(repo / m / "config.pbtxt") for m in llm.MODELS}
    assert sorted(p.name for p in repo.iterdir()) == sorted(llm.MODELS)
    ens = cfgs[llm.ENSEMBLE]
    assert ens.platform == "ensemble" and [i.name for i in ens.input][:3] == ["text_input", "decoder_text_input", "max_tokens"]
    assert [o.name for o in ens.output] == ["text_output"]
    assert cfgs[llm.GENERATOR].model_transaction_policy.decoupled
    assert (repo / "generator" / "1" / "model.py").read_text() == llm.GENERATOR_SOURCE.read_text()
    for m in (llm.PREPROCESS, llm.POSTPROCESS):
        assert cfgs[m].parameters["tokenizer_dir"].string_value == \
            "$$TRITON_MODEL_DIRECTORY/tokenizer/cl100k_base.tiktoken"
        assert (repo / m / "tokenizer" / "cl100k_base.tiktoken").read_bytes() == \
            (BPE / "cl100k_base.tiktoken").read_bytes()
        assert cfgs[m].parameters["encoding"].string_value == "cl100k_base"
    assert cfgs[llm.POSTPROCESS].parameters["streaming"].string_value == "true"
    # every tensor a step reads is an ensemble input or an earlier step's output of the same type; every ensemble
    # output is produced
    kinds = {i.name: i.data_type for i in ens.input}
    for step in ens.ensemble_scheduling.step:
        member = cfgs[step.model_name]
        ins, outs = _tensors(member.input), _tensors(member.output)
        for key, src in step.input_map.items():
            assert key in ins, (step.model_name, key)
            assert kinds[src] == ins[key][0], (step.model_name, key, src)
        assert not [n for n, (_, _, opt) in ins.items() if not opt and n not in step.input_map]
        for key, dst in step.output_map.items():
            kinds[dst] = outs[key][0]
    assert all(o.name in kinds and kinds[o.name] == o.data_type for o in ens.output)


def test_cli_refuses_what_it_cannot_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["example", "llm", str(tmp_path / "a"), "--tokenizer", str(tmp_path)]) == 2
    assert "has no tokenizer.json" in capsys.readouterr().err
    assert main(["example", "llm", str(tmp_path / "a"), "--tokenizer", str(BPE / "vocab.bpe")]) == 2
    assert "expected a directory or a .tiktoken file" in capsys.readouterr().err
    assert main(["example", "llm", str(tmp_path / "a"), "--tokenizer", str(BPE / "qwen.tiktoken"),
                 "--param", "encoding"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err
    assert main(["example", "llm", str(tmp_path / "a"), "--tokenizer", str(BPE / "qwen.tiktoken"),
                 "--max-chunk-tokens", "0"]) == 2
    assert "max_chunk_tokens" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    # a directory with GPT-2's files: those two are copied, nothing else of it
    assert main(["example", "llm", str(tmp_path / "b"), "--tokenizer", str(BPE)]) == 0
    assert sorted(p.name for p in (tmp_path / "b" / "preprocessing" / "tokenizer").iterdir()) == \
        ["encoder.json", "vocab.bpe"]


def _request(ids: list[int], out_len: int, streaming: bool | None = True) -> dict[str, np.ndarray]:
    inputs = {"input_ids": np.array([ids], np.int32), "input_lengths": np.array([[len(ids)]], np.int32),
              "request_output_len": np.array([[out_len]], np.int32)}
    if streaming is not None:
        inputs["streaming"] = np.array([[streaming]])
    return inputs


def test_generator_streams_the_prompt_back_in_seeded_chunks(repo: Path) -> None:
    ids = list(range(1000, 1050))
    with load_model(repo / "generator") as gen:
        chunks = gen.infer_stream(_request(ids, 100))
        again = gen.infer_stream(_request(ids, 100))
        capped = gen.infer_stream(_request(ids, 17))
        whole = gen.infer_stream(_request(ids, 100, streaming=False))
        default = gen.infer_stream(_request(ids, 100, streaming=None))
        empty = gen.infer_stream(_request(ids, 0))
    sizes = [c["output_ids"].shape[2] for c in chunks]
    assert all(c["output_ids"].shape[:2] == (1, 1) and c["output_ids"].dtype == np.int32 for c in chunks)
    assert [int(c["sequence_length"][0, 0]) for c in chunks] == sizes
    assert np.concatenate([c["output_ids"][0, 0] for c in chunks]).tolist() == ids
    assert len(chunks) > 10 and set(sizes) == {1, 2, 3}  # --max-chunk-tokens 3
    assert [c["output_ids"].tolist() for c in again] == [c["output_ids"].tolist() for c in chunks]
    assert np.concatenate([c["output_ids"][0, 0] for c in capped]).tolist() == ids[:17]
    for one in (whole, default):  # not streaming (TensorRT-LLM's default): one response with every token
        assert len(one) == 1 and one[0]["output_ids"][0, 0].tolist() == ids
    assert len(empty) == 1 and empty[0]["output_ids"].shape == (1, 1, 0)


def test_generator_batch_interleaves_and_rejects_bad_requests_alone(repo: Path) -> None:
    from triton_textops.testing.harness import InferError

    prompts = [list(range(10 * k, 10 * k + 5 + 7 * k)) for k in range(3)]
    with load_model(repo / "generator") as gen:
        bad_len = gen.make_request(_request([1, 2, 3], -5))
        bad_ids = gen.make_request({**_request([1, 2, 3], 5), "input_lengths": np.array([[9]], np.int32)})
        good = [gen.make_request(_request(p, 100)) for p in prompts]
        results = gen.execute([good[0], bad_len, good[1], bad_ids, good[2]])
        with pytest.raises(InferError, match="input 'request_output_len': must be >= 0, got -5"):
            gen.infer_stream(_request([1, 2, 3], -5))
    assert len(results[1]) == 1 and "request_output_len" in results[1][0].error().message()
    assert len(results[3]) == 1 and "input_lengths" in results[3][0].error().message()
    for k, got in zip((0, 2, 4), prompts):
        resp = results[k]
        assert not any(r.has_error() for r in resp)
        ids = np.concatenate([r.output_tensors()[0].as_numpy()[0, 0] for r in resp])
        assert ids.tolist() == got


def test_errors_name_the_ensemble_input_the_client_sent(repo: Path) -> None:
    """Issue 47: the ensemble feeds max_tokens / text_input into preprocessing's REQUEST_OUTPUT_LEN / QUERY; the
    generator writes that mapping as preprocessing's client_names parameter, so its errors (which a real server
    returns after "in ensemble 'ensemble', ") name what the client sent first."""
    from triton_textops.testing.harness import InferError
    from triton_textops.triton.config import load_config

    cfg = load_config(repo / "preprocessing")
    names = dict(kv.split("=") for kv in cfg.parameters["client_names"].string_value.split(","))
    assert names["REQUEST_OUTPUT_LEN"] == "max_tokens" and names["QUERY"] == "text_input"
    assert "client_names" not in load_config(repo / "generator").parameters  # the stand-in is not ours
    with load_model(repo / "preprocessing") as m:
        with pytest.raises(InferError) as exc:
            m.infer({"QUERY": np.array([[b"hello"]], dtype=object),
                     "REQUEST_OUTPUT_LEN": np.array([[-1]], np.int32)})
    assert "input 'max_tokens' (REQUEST_OUTPUT_LEN in model 'preprocessing') row 0 is negative (-1)" in str(exc.value)
