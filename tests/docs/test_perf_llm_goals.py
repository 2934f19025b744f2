"""``benchmarks/perf.py llm`` reads issue 46's goals against the floors: each prompt size's cases, the ratios taken
within a run, and a goal called met only when every run meets it (no server: made-up perf_analyzer rows)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _perf():
    sys.path.insert(0, str(BENCH))
    try:
        import perf
    finally:
        sys.path.remove(str(BENCH))
    return perf


def test_goal_lines_read_each_run_against_its_floor() -> None:
    perf = _perf()
    from triton_textops.tools.perf import PerfRow

    cases = perf.cases_for("llm")
    assert {c.data for c in cases} == {"llm_pre", "llm_pre_32k", "llm_post"}
    assert len({c.label for c in cases}) == len(cases)  # (the CSV keys points by label)
    ours, floor = (next(c for c in cases if c.model == m and c.data == "llm_pre_32k")
                   for m in ("llm_preprocess", "floor_preprocessing"))
    # run 1: ours 95% of the floor, p99 1.1x; run 2: 88%, p99 1.25x; at 64 both runs 1.0x and p99 1.0x
    rows = {(1, 1): (950, 1000, 1.1, 1.0), (2, 1): (440, 500, 2.5, 2.0), (1, 64): (800, 800, 9.0, 9.0),
            (2, 64): (700, 700, 9.0, 9.0)}
    points = []
    for (run, load), (t_ours, t_floor, p_ours, p_floor) in rows.items():
        for case, tput, p99 in ((ours, t_ours, p_ours), (floor, t_floor, p_floor)):
            row = PerfRow("concurrency", load, float(tput), 1.0, 1.0, 1.0, p99)
            points.append(perf.Point("llm", run, case, "concurrency", load, row, stability=25.0))
    lines = perf.goal_lines(points, ours, floor, "32 KB", 2)
    assert len(lines) == 2
    assert "concurrency 1: 0.92x the floor's infer/s (runs 0.88–0.95x)" in lines[0]
    assert "goal >= 0.9x: met by the median, not by every run" in lines[0]
    assert "p99 1.18x the floor's (runs 1.10–1.25x), goal <= 1.2x: met by the median" in lines[0]
    assert "concurrency 64: 1.00x" in lines[1] and lines[1].count(": met") == 2
    table = perf.llm_table(points, [ours, floor], floor, floor, 25.0)
    assert "| 1 | llm_preprocess (ours), ~32 KB | 695 (440–950) |" in table
