"""docs/models.md (the models' tensors and parameters) is what scripts/gen_model_docs.py writes from the model
classes: change a model's tensors or parameters and this fails until the table is generated again."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen() -> dict:
    return runpy.run_path(str(REPO / "scripts" / "gen_model_docs.py"), run_name="gen_model_docs")


def test_committed_table_is_what_the_script_writes(gen: dict) -> None:
    assert (REPO / "docs" / "models.md").read_text(encoding="utf-8") == gen["render"](), (
        "docs/models.md is out of date: run python scripts/gen_model_docs.py")
    assert gen["main"](["--check"]) == 0


def test_table_follows_the_model_classes(gen: dict) -> None:
    from triton_textops.models.postprocess import TritonPythonModel as Post

    text = gen["render"]()
    for role, spec in {**Post.INPUTS, **Post.OUTPUTS}.items():
        assert f"| `{role}` | `{spec.name}` | {spec.data_type} |" in text
    assert "| output | `input_ids` | `BERT_IDS` | TYPE_INT64 (or TYPE_INT32: `ids_dtype`) | [L] |  |" in text
    assert "| `max_text_bytes` | int | 1048576 |" in text
    params = [row.split("|")[1:-1] for row in text.splitlines() if row.startswith("| `")]
    assert params and all(cells[3].strip() for cells in params), [c for c in params if not c[3].strip()]
