"""Run batches of requests through model directories in the in-process harness and keep every response.

Used on both sides of the LLM models' equivalence tests: in the test process for our models, and as a script
(``python llm_reference.py JOB OUT``) in a subprocess whose ``PYTHONPATH`` puts transformers 4.47 first (the version
TensorRT-LLM's requirements pin; our dev extra pins a newer tokenizers), for TensorRT-LLM's own model.py.
:func:`ensure_reference_site` installs that side from PyPI once into ``.cache/trtllm-ref``.
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
# transformers' version in TensorRT-LLM's requirements.txt at tensorrtllm_backend a315d2df, with the tokenizers and
# huggingface-hub it accepts; the rest (numpy, regex, requests, pyyaml, tqdm, pillow, ...) comes from our venv
REFERENCE_PACKAGES = ("transformers==4.47.0", "tokenizers==0.21.4", "huggingface-hub==0.36.2", "safetensors==0.8.0")
SITE = ROOT / ".cache" / "trtllm-ref"


def ensure_reference_site(site: Path = SITE) -> Path:
    """``site`` with :data:`REFERENCE_PACKAGES` (pip --target, no deps), installed once (a stamp names them)."""
    stamp = site / ".installed"
    want = "\n".join(REFERENCE_PACKAGES)
    if stamp.is_file() and stamp.read_text() == want:
        return site
    tmp = site.with_name(site.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
           "--target", str(tmp), *REFERENCE_PACKAGES]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"installing the reference's packages failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    (tmp / ".installed").write_text(want)
    shutil.rmtree(site, ignore_errors=True)
    tmp.rename(site)
    return site


def run_batches(model_dir: str | os.PathLike, batches: list[list[dict[str, Any]]]) -> list[list[Any]]:
    """Each batch's requests in one ``execute``: per request, {output name: array} or the error's message."""
    from triton_textops.testing import load_model
    from triton_textops.testing import pb_utils as pb

    out = []
    with load_model(model_dir) as m:
        for batch in batches:
            responses = m.execute([m.make_request(inputs) for inputs in batch])
            out.append([f"error: {r.error().message()}" if r.has_error()
                        else {t.name(): pb.tensor_to_array(t) for t in r.output_tensors()} for r in responses])
    return out


def run_reference(jobs: list[tuple[str, list[list[dict[str, Any]]]]], work: Path,
                  meanwhile: Callable[[], T]) -> tuple[list[list[list[Any]]], T]:
    """:func:`run_batches` of each (model dir, batches) job in a subprocess on transformers 4.47, while this
    process runs ``meanwhile`` (our side); both results."""
    site = ensure_reference_site()
    job, result = work / "reference-job.pkl", work / "reference-out.pkl"
    job.write_bytes(pickle.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "tests"), str(ROOT)])}
    with subprocess.Popen([sys.executable, __file__, str(job), str(result)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        try:
            ours = meanwhile()
        finally:
            log, _ = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the reference run failed:\n{log[-5000:]}")
    return pickle.loads(result.read_bytes()), ours


def main(job: str, result: str) -> None:
    import transformers

    assert transformers.__version__ == "4.47.0", transformers.__version__
    jobs = pickle.loads(Path(job).read_bytes())
    Path(result).write_bytes(pickle.dumps([run_batches(d, batches) for d, batches in jobs]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])


# ------------------------------------------------------------------ requests and comparison shared by the LLM tests


def obj(rows: list[list[str]]) -> np.ndarray:
    """A [batch, k] BYTES tensor of strings."""
    return np.array([[s.encode() for s in r] for r in rows], dtype=object).reshape(len(rows), -1)


def i32(values: list[int]) -> np.ndarray:
    """A [batch, 1] INT32 tensor."""
    return np.array(values, dtype=np.int32).reshape(-1, 1)


def post_requests(rng: random.Random, enc: list[list[int]], specials: list[int], n_ids: int) -> list[list[dict]]:
    """Postprocessing requests of [batch, beams, tokens] sequences: each of ``enc`` whole, then encoded texts with
    ``specials`` inserted, random ids below ``n_ids``, cuts at random tokens, padding past SEQUENCE_LENGTH, lengths
    past the end and 0."""

    def seq() -> list[int]:
        kind = rng.random()
        if kind < 0.3:
            return [rng.randrange(n_ids) for _ in range(rng.randint(0, 40))]
        ids = list(rng.choice(enc))
        for _ in range(rng.randint(0, 3)):
            ids.insert(rng.randint(0, len(ids)), rng.choice(specials))
        return ids[rng.randint(0, 2):rng.randint(1, len(ids) + 1)] if kind < 0.6 else ids

    def request(batch: int, beams: int) -> dict:
        seqs = [[seq() for _ in range(beams)] for _ in range(batch)]
        width = max(len(s) for b in seqs for s in b) + rng.randint(0, 3)
        tokens = np.array([[s + [rng.randrange(n_ids) for _ in range(width - len(s))] for s in b] for b in seqs],
                          dtype=np.int32)
        lengths = np.array([[len(s) + (rng.randint(1, 5) if rng.random() < 0.1 else 0) for s in b] for b in seqs],
                           dtype=np.int32)
        return {"TOKENS_BATCH": tokens, "SEQUENCE_LENGTH": lengths}

    whole = [{"TOKENS_BATCH": np.array([[e]], dtype=np.int32), "SEQUENCE_LENGTH": np.array([[len(e)]], np.int32)}
             for e in enc]
    return [whole, [request(rng.randint(1, 3), rng.randint(1, 2)) for _ in range(12)], [request(1, 1)]]


def same_outputs(ours: object, ref: object, where: str) -> None:
    """Our model's outputs equal the reference's bit for bit (a str: that side's error)."""
    if isinstance(ref, str) or isinstance(ours, str):
        raise AssertionError(f"{where}: ours {str(ours)[:300]!r}, reference {str(ref)[:300]!r}")
    assert set(ours) == set(ref), f"{where}: outputs {sorted(ours)} != {sorted(ref)}"
    for name in ref:
        a, b = ours[name], ref[name]
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where} {name}: {a.dtype} {a.shape} != {b.dtype} {b.shape}"
        if a.dtype == np.object_:
            assert a.tolist() == b.tolist(), f"{where} {name}: {a.tolist()[:3]} != {b.tolist()[:3]}"
        else:
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{where} {name}: {a} != {b}"
