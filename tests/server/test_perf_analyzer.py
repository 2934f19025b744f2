"""perf_analyzer (set up from the tritonclient 2.51.0 wheel, :mod:`triton_textops.tools.perf`) against the
session server's ``add_sub``, with real text inputs: the tool chain ``benchmarks/perf.py`` stands on cannot rot
silently. A few seconds: one concurrency level, 0.5 s windows, a loose stability bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from triton_textops.bundled import austen_paragraphs
from triton_textops.tools.perf import (
    CSV_LATENCIES,
    CSV_THROUGHPUT,
    find_perf_analyzer,
    read_csv,
    run_perf_analyzer,
    write_input_data,
)
from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server


@pytest.mark.parametrize("shm", ["none", "system"])
def test_perf_analyzer_csv(server: TritonServer, tmp_path: Path, shm: str) -> None:
    pa = find_perf_analyzer()
    assert pa.version().startswith("Perf Analyzer Version")
    texts = austen_paragraphs()[:16]
    data = write_input_data(tmp_path / "input.json", [
        {"INPUT0": np.arange(3, dtype=np.float32) + i, "INPUT1": np.ones(3, np.int32), "TEXT": [t]}
        for i, t in enumerate(texts)])
    csv_path = tmp_path / "pa.csv"
    rows = run_perf_analyzer(pa, "add_sub", server.grpc_url, csv_path, concurrency=2, input_data=data,
                             shared_memory=shm, measurement_interval_ms=500, stability_percentage=100,
                             max_trials=10, timeout=120)
    header = csv_path.read_text().splitlines()[0].split(",")
    assert {"Concurrency", CSV_THROUGHPUT, *CSV_LATENCIES, "Server Queue", "Server Compute Infer"} <= set(header)
    assert len(rows) == 1 and rows == read_csv(csv_path)
    row = rows[0]
    assert row.mode == "concurrency" and row.load == 2
    assert row.throughput > 0
    assert 0 < row.p50_ms <= row.p90_ms <= row.p95_ms <= row.p99_ms


def test_input_data_json(tmp_path: Path) -> None:
    """Texts become one-element BYTES contents, arrays keep their shapes (perf_analyzer's variable dims)."""
    import json

    path = write_input_data(tmp_path / "in.json", [{"TEXT": "é ok", "X": np.zeros((2, 3), np.int64)}])
    assert json.loads(path.read_text(encoding="utf-8")) == {"data": [{
        "TEXT": {"content": ["é ok"], "shape": [1]}, "X": {"content": [0] * 6, "shape": [2, 3]}}]}


def test_cli_prints_where_perf_analyzer_is(capsys: pytest.CaptureFixture[str]) -> None:
    from triton_textops.cli import main

    assert main(["perf-analyzer"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Perf Analyzer Version") and str(find_perf_analyzer().executable) in out
