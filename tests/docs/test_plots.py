"""The plots the docs show (issue 47): each exists, is linked where its numbers are quoted, and is drawn from the
committed CSV of the run the README's table quotes, with its legends outside the data.

``benchmarks/perf.py`` draws every plot from a CSV and writes ``<csv name> sha256:<digest>`` into the PNG's
``Source`` text chunk (the digest of the CSV's text, line ends normalised); these tests read that chunk back with
the standard library and recompute the digest, so a PNG left over from another run (or another script) fails.
"""

from __future__ import annotations

import csv
import hashlib
import re
import statistics
import struct
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
DOCS = ["README.md", "benchmarks/RESULTS.md"]


def png_text(path: Path) -> dict[str, str]:
    """The tEXt / zTXt / iTXt chunks of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    out, pos = {}, 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(value[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _tkey, _, value = rest.partition(b"\0")
            out[key.decode("latin-1")] = (zlib.decompress(value) if compressed else value).decode("utf-8")
        elif kind == b"IEND":
            break
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_text(encoding="utf-8").replace("\r\n", "\n").encode("utf-8")).hexdigest()


def image_links(doc: str) -> list[str]:
    """Targets of the doc's links and images that end in .png (relative to the doc)."""
    text = (REPO / doc).read_text(encoding="utf-8")
    return [t for t in re.findall(r"\]\(([^)\s]+\.png)\)", text) if not t.startswith(("http://", "https://"))]


@pytest.mark.parametrize("doc", DOCS)
def test_every_plot_a_doc_shows_exists(doc: str) -> None:
    base = (REPO / doc).parent
    missing = [t for t in image_links(doc) if not (base / t).is_file()]
    assert image_links(doc) and not missing, f"{doc} shows plots that are not in the repository: {missing}"


def test_every_committed_plot_is_drawn_from_its_csv() -> None:
    pngs = sorted(BENCH.glob("*.png"))
    assert pngs
    bad = []
    for png in pngs:
        src = BENCH / f"{png.stem}.csv"
        if not src.is_file():
            bad.append(f"{png.name}: no {src.name} next to it (a plot must come from a committed CSV)")
            continue
        want = f"{src.name} sha256:{digest(src)}"
        got = png_text(png).get("Source")
        if got != want:
            bad.append(
                f"{png.name}: Source {got!r}, {src.name} is {want!r} (redraw: benchmarks/perf.py "
                f"{png.stem.removeprefix('perf-')} --replot --machine '<the run's machine line>')"
            )
    assert not bad, "\n".join(bad)


def test_every_committed_plot_is_shown_by_a_doc() -> None:
    shown = {((REPO / doc).parent / t).resolve() for doc in DOCS for t in image_links(doc)}
    orphans = [p.name for p in sorted(BENCH.glob("*.png")) if p.resolve() not in shown]
    assert not orphans, f"plots no doc shows: {orphans}"


def _readme_rows() -> dict[str, str]:
    """README table rows whose script cell names ``perf.py QUESTION``, by question."""
    rows = {}
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.search(r"\| `perf\.py (\w+)`[^|]*\|\s*$", line)
        if m:
            rows[m.group(1)] = line
    return rows


def test_the_readme_links_the_plot_of_each_perf_row() -> None:
    rows = _readme_rows()
    assert set(rows) == {"models", "modes", "tune", "llm"}, sorted(rows)
    unlinked = [q for q, line in rows.items() if f"](benchmarks/perf-{q}.png)" not in line]
    assert not unlinked, f"README rows quoting perf.py without linking the plot: {unlinked}"


def _ratio(rows: list[dict[str, str]], model: str, base: str, load: str) -> str:
    """Median over runs of ``model``'s throughput over ``base``'s at concurrency ``load``, as the tables give it."""
    tput = {
        (r["run"], r["model"], r["shm"]): float(r["throughput"])
        for r in rows
        if r["mode"] == "concurrency" and r["load"] == load and r["throughput"]
    }
    runs = sorted({r for r, _, _ in tput})
    ratios = [
        tput[r, model, "none"] / tput[r, base, "none"]
        for r in runs
        if (r, model, "none") in tput and (r, base, "none") in tput
    ]
    assert ratios, (model, base, load)
    return f"{statistics.median(ratios):.2f}x"


# the ratios each README row quotes: (model, baseline, concurrency), in the order the row gives them
QUOTED = {
    "models": [
        ("preprocess", "hf_preprocess", "1"),
        ("preprocess", "hf_preprocess", "8"),
        ("preprocess", "hf_preprocess", "64"),
        ("tokenize", "hf_tokenize", "1"),
        ("tokenize", "hf_tokenize", "8"),
        ("tokenize", "hf_tokenize", "64"),
    ],
    "tune": [
        ("preprocess_i1_d0", "preprocess_i1_d100", "1"),
        ("preprocess_i1_d0", "preprocess_i1_d100", "8"),
        ("preprocess_i1_d0", "preprocess_i1_d100", "64"),
    ],
    "modes": [
        ("served_models", "ensemble_all", "1"),
        ("served_models", "ensemble_all", "4"),
        ("served_models", "ensemble_all", "16"),
    ],
    "llm": [
        ("llm_preprocess", "trtllm_preprocessing", "1"),
        ("llm_preprocess", "trtllm_preprocessing", "64"),
        ("llm_postprocess", "trtllm_postprocessing", "1"),
        ("llm_postprocess", "trtllm_postprocessing", "64"),
    ],
}


@pytest.mark.parametrize("question", sorted(QUOTED))
def test_the_csv_behind_each_plot_is_the_run_the_readme_quotes(question: str) -> None:
    with (BENCH / f"perf-{question}.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    want = [_ratio(rows, *q) for q in QUOTED[question]]
    quoted = re.findall(r"\d+\.\d\dx", _readme_rows()[question].split("|")[2])
    pos = 0
    for ratio in want:  # in order, as a subsequence of the row's ratios
        assert ratio in quoted[pos:], f"perf-{question}.csv gives {want}; the README row quotes {quoted}"
        pos = quoted.index(ratio, pos) + 1


def test_the_plots_legends_sit_outside_the_data() -> None:
    pytest.importorskip("matplotlib")
    sys.path.insert(0, str(BENCH))
    try:
        import perf
    finally:
        sys.path.remove(str(BENCH))
    points, cases = perf.read_points(BENCH / "perf-tune.csv")  # the most lines of any question
    fig = perf.figure(points, cases, "test")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)), (
            ax.get_ylabel()
        )
