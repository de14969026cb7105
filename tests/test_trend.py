"""`kb trend`: values ordered by version, not date or text, with a regression flagged by the documented rule."""

from __future__ import annotations

from conftest import json_data, run_kb

from kb.model.entry import new_entry
from kb.store.knowledge_base import KnowledgeBase

POINTS = [  # (recorded, backend, torch, tokens/s): 2.13.0 was recorded before 2.10.0 on purpose
    *(("2026-01-01", "cuda", "2.9.0", rate) for rate in (10000.0, 10100.0, 9900.0)),
    *(("2026-03-01", "cuda", "2.13.0", rate) for rate in (8000.0, 8050.0, 7950.0)),
    *(("2026-02-01", "cuda", "2.10.0", rate) for rate in (10000.0, 10020.0, 10040.0)),
    ("2026-01-05", "neuron", "2.9.0", 6000.0),
    ("2026-03-05", "neuron", "2.13.0", 9000.0),
]


def fill(kb: KnowledgeBase) -> None:
    for index, (day, backend, torch, rate) in enumerate(POINTS):
        entry_id = f"{day}-llama-{backend}-{index:06d}"
        entry = new_entry(
            entry_id,
            entry_id,
            "run",
            recorded=f"{day}T00:00:00Z",
            status="completed",
            backend=backend,
            workload={"name": "llama3-8b"},
            versions={"torch": torch},
            metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s", "better": "higher"}},
            timings={"compile_s": 100.0 + index},
        )
        (kb.entries_path / f"{entry_id}.md").write_text(entry.serialise())


def test_versions_in_pep440_order_with_a_flagged_regression(kb: KnowledgeBase) -> None:
    fill(kb)
    result = json_data(run_kb("trend", "tokens_per_s", "--workload", "llama3-8b", "--json").stdout)
    cuda, neuron = result["series"]
    assert cuda["group"] == "cuda" and [p["version"] for p in cuda["points"]] == ["2.9.0", "2.10.0", "2.13.0"]
    assert [p["value"] for p in cuda["points"]] == [10000.0, 10020.0, 8000.0]  # the median of each release's runs
    # +0.2% is no change; -20% is located after 2.10.0 (the last good one) and judged on the runs either side.
    assert [p["flag"] for p in cuda["points"]] == ["", "", "regression"]
    assert cuda["points"][1]["note"] == "no change located" and cuda["points"][2]["previous"] == "2.10.0"
    comparison = cuda["points"][2]["comparison"]
    assert cuda["points"][2]["change"] == -0.2008 and (comparison["n"], comparison["n_base"]) == (3, 6)
    # One run a release: +50%, but too few runs for a verdict.
    assert [p["flag"] for p in neuron["points"]] == ["", ""]
    assert neuron["points"][1]["note"] == "too few runs: 3 on each side give an interval"
    text = run_kb("trend", "tokens_per_s", "--workload", "llama3-8b").stdout
    assert "REGRESSION" in text and "▁" in text and "█" in text
    assert "slower ×0.799 (n=3 vs 6, 95% interval" in " ".join(text.split())


def test_timings_are_better_lower_and_unknown_names_get_suggestions(kb: KnowledgeBase) -> None:
    fill(kb)
    result = json_data(run_kb("trend", "compile_s", "--workload", "llama3-8b", "--json").stdout)
    assert result["better"] == "lower"
    # One series per backend, and per cache state for compile times (none recorded here).
    assert [s["group"] for s in result["series"]] == ["cuda · cache unknown", "neuron · cache unknown"]
    # Compiled once per run, once per release on neuron: too few for a flag.
    assert [p["note"] for p in result["series"][1]["points"]] == ["", "too few runs: 3 on each side give an interval"]
    missing = run_kb("trend", "tokens_per_sec", "--workload", "llama3-8b")
    assert missing.returncode == 1
    assert missing.stderr.startswith("kb: error: no run of 'llama3-8b' has 'tokens_per_sec'; did you mean tokens_per_s")
    assert "no runs of workload 'gpt'" in run_kb("trend", "x", "--workload", "gpt").stderr
