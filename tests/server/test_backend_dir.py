"""Our model as a Triton *Python-based backend*: one `backends/<name>/model.py` serves any model that
says `backend: "<name>"` (the README's second way of installing it), checked in the real server."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from textops_repo import text_tensor
from triton_helpers import Runtime, server_infer

from triton_textops import BertTokenizer, ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path
from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server
BACKEND = "textops_preprocess_test"

CONFIG = f"""name: "scorer_prep"
backend: "{BACKEND}"
max_batch_size: 4
input [{{ name: "INPUT0" data_type: TYPE_STRING dims: [1] }}]
output [{{ name: "BERT_IDS" data_type: TYPE_INT64 dims: [32] }},
        {{ name: "BERT_AM" data_type: TYPE_INT64 dims: [32] }},
        {{ name: "TREE_FEATS" data_type: TYPE_FP32 dims: [207] }}]
parameters: {{ key: "max_length" value: {{ string_value: "32" }} }}
parameters: {{ key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: {{ string_value: "no" }} }}
"""


@pytest.fixture(scope="module")
def backend_server(triton_runtime: Runtime, textops_features: Path, tmp_path_factory) -> Iterator[TritonServer]:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    backends = triton_runtime.install.backend_directory(version)
    backend = backends / BACKEND
    backend.mkdir(exist_ok=True)
    (backend / "model.py").write_text("from triton_textops.models.preprocess import TritonPythonModel  # noqa: F401\n")
    repo = tmp_path_factory.mktemp("backend_repo")
    model = repo / "scorer_prep"
    (model / "1").mkdir(parents=True)  # no model.py: the backend's is used
    (model / "config.pbtxt").write_text(CONFIG)
    shutil.copy(vocab_path(), model / "vocab.txt")
    shutil.copy(textops_features, model / "features.json")
    server = TritonServer(repo, install=triton_runtime.install, python_env=triton_runtime.python_env)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(backend, ignore_errors=True)


def test_python_based_backend_serves_preprocess(backend_server: TritonServer, textops_features: Path) -> None:
    texts = [t.encode() for t in austen()[40:43]]
    out, err = server_infer(backend_server.http_url, "scorer_prep", {"INPUT0": text_tensor(texts)})
    assert err is None, err
    np.testing.assert_array_equal(out["BERT_IDS"], BertTokenizer.from_vocab(vocab_path()).encode_rows(texts, max_length=32).input_ids)
    np.testing.assert_array_equal(out["TREE_FEATS"], ReadabilityFeatures.load(textops_features).transform(texts))
