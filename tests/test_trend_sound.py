"""`kb trend` keeps different programs apart and gives one verdict per difference.

The traps: eager and compiled runs of one backend (whose first steps differ a hundredfold), 1 vs 64
devices, bf16 vs fp32, `+cu126`/`+cu128` builds of one release, a failed run, cold beside warm compiles,
tokens/s computed from step times that lie within the noise, a load time measured once.
"""

from __future__ import annotations

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase


def run(kb: KnowledgeBase, n: int, torch: str, mode: str = "eager", **fields) -> None:
    fields.setdefault("status", "completed")
    fields.setdefault("settings", {"dtype": "fp32"})
    write_entry(kb, f"2026-11-{n:02d}-tiny-{n:06d}", recorded=f"2026-11-{n:02d}T00:00:00Z", backend="cpu", mode=mode,
                workload={"name": "tiny-lm"}, versions={"torch": torch}, **fields)  # fmt: skip


@pytest.fixture
def history(kb: KnowledgeBase) -> KnowledgeBase:
    run(kb, 1, "2.10.0+cu126", timings={"first_step_s": 0.05, "load_s": 1.0})
    run(kb, 2, "2.10.0+cu128", mode="compiled", timings={"first_step_s": 7.53, "compile_s": 27.0}, tags=["cold"])
    run(kb, 3, "2.10.0+cu128", mode="compiled", timings={"first_step_s": 1.2, "compile_s": 2.0}, tags=["warm"])
    run(kb, 4, "2.11.0", timings={"first_step_s": 0.051, "load_s": 0.5})
    run(kb, 5, "2.11.0", status="failed", timings={"first_step_s": 99.0})
    run(kb, 6, "2.11.0", hardware={"accelerators": [{"name": "x", "count": 64}]}, timings={"first_step_s": 3.0})
    run(kb, 7, "2.11.0", settings={"dtype": "bf16"}, timings={"first_step_s": 0.02})
    return kb


def trend(metric: str) -> dict:
    result = run_kb("trend", metric, "--workload", "tiny-lm", "--json")
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def test_each_program_is_its_own_series(history: KnowledgeBase) -> None:
    found = trend("first_step_s")
    series = {s["group"]: s["points"] for s in found["series"]}
    assert sorted(series) == [
        "cpu · compiled · dtype=fp32",
        "cpu · eager · 64 devices · dtype=fp32",
        "cpu · eager · dtype=bf16",
        "cpu · eager · dtype=fp32",
    ]
    eager = series["cpu · eager · dtype=fp32"]
    # Never the midpoint of an eager and a compiled first step; +cu126 and 2.11.0 apart, the failed run left out.
    assert [(p["version"], p["value"]) for p in eager] == [("2.10.0", 0.05), ("2.11.0", 0.051)]
    assert eager[0]["labels"] == ["2.10.0+cu126"] and found["unfinished"] == 1
    compiled = series["cpu · compiled · dtype=fp32"]
    (point,) = compiled
    assert point["labels"] == ["2.10.0+cu128"] and point["count"] == 2
    text = run_kb("trend", "first_step_s", "--workload", "tiny-lm").stdout
    assert "builds: 2.10.0+cu126" in text and "(1 run that did not complete left out)" in text


def test_compile_times_cold_with_cold(history: KnowledgeBase) -> None:
    series = {s["group"]: s["points"] for s in trend("compile_s")["series"]}
    assert {group: [p["value"] for p in points] for group, points in series.items()} == {
        "cpu · compiled · cold": [27.0],
        "cpu · compiled · warm": [2.0],  # dtype differs only among runs without compile_s
    }


def test_a_one_off_phase_measured_once_is_not_a_regression(history: KnowledgeBase) -> None:
    (series,) = trend("load_s")["series"]
    eager = series["points"]
    assert (
        series["group"] == "cpu · eager"
        and eager[1]["change"] == -0.5
        and eager[1]["flag"] == ""
        and eager[1]["note"] == "too few runs: 3 on each side give an interval"
    )


def test_the_flag_and_the_change_come_from_the_same_figure(kb: KnowledgeBase) -> None:
    # Tokens/s rose 40% while the step times grew 3%: each figure is judged by its own runs, never the other's.
    for n, (torch, step, rate) in enumerate([("2.10.0", 0.100, 10000.0)] * 3 + [("2.11.0", 0.103, 14000.0)] * 3):
        rate, step = rate + n, step + n / 10000
        run(kb, n + 1, torch, timings={"step_s": {"median": step, "p10": step, "p90": step, "count": 20}},
            metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    (series,) = trend("tokens_per_s")["series"]
    assert series["points"][1]["change"] > 0.39 and series["points"][1]["flag"] == "improvement"
    (steps,) = trend("step_s")["series"]
    assert steps["points"][1]["change"] > 0.02 and steps["points"][1]["flag"] == "regression"


def test_steps_seed_and_warmup_do_not_split_a_series(kb: KnowledgeBase) -> None:
    # Re-runs with other step counts and seeds are the same program: they pool, and the slowdown is flagged.
    releases = [("2.10.0", 20, 0, 10000.0)] * 3 + [("2.11.0", 50, 1, 8000.0)] * 3
    for n, (torch, steps, seed, rate) in enumerate(releases, start=1):
        settings = {"dtype": "fp32", "steps": steps + n, "seed": seed + n, "warmup": n, "mode": "compiled",
                    "world_size": 1}  # fmt: skip
        run(kb, n, torch, mode="compiled", settings=settings,
            metrics={"tokens_per_s": {"value": rate + n, "unit": "tokens/s"}})  # fmt: skip
    run(kb, 9, "2.11.0", mode="compiled", settings={"dtype": "bf16", "steps": 20, "mode": "compiled"},
        metrics={"tokens_per_s": {"value": 20000.0, "unit": "tokens/s"}})  # fmt: skip
    series = {s["group"]: s["points"] for s in trend("tokens_per_s")["series"]}
    # Split on the shape setting only; the mode is said once.
    assert sorted(series) == ["cpu · compiled · dtype=bf16", "cpu · compiled · dtype=fp32"]
    assert [p["flag"] for p in series["cpu · compiled · dtype=fp32"]] == ["", "regression"]
    text = run_kb("trend", "tokens_per_s", "--workload", "tiny-lm").stdout
    assert "REGRESSION" in text and max(len(line) for line in text.splitlines()) <= 80


def test_a_dtype_kept_only_in_the_precision_section_splits_a_series(kb: KnowledgeBase) -> None:
    # bf16 then fp32 written as precision.dtype alone: other programs, as the board and compare see them, so the
    # slower fp32 run is its own series and not a regression of the bf16 one.
    for n, (torch, dtype, rate) in enumerate((("2.10.0", "bf16", 20000.0), ("2.11.0", "fp32", 9000.0)), start=1):
        run(kb, n, torch, settings={"batch": 8}, precision={"dtype": dtype},
            metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    series = {s["group"]: s["points"] for s in trend("tokens_per_s")["series"]}
    assert {group: [p["flag"] for p in points] for group, points in series.items()} == {
        "cpu · eager · dtype=bf16": [""],
        "cpu · eager · dtype=fp32": [""],
    }
