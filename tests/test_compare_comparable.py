"""`kb compare` and `kb trend` rank only what is comparable: launch times (a run that could not wait for its device)
against nothing, a run that failed (crashed, killed, interrupted, numerics failed) never as the baseline and with no
ratio, each said in the board's words."""

from __future__ import annotations

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

ONCE = "inconclusive (n=1 vs 1, floor 2%; too few runs: 3 on each side give an interval)"  # one run a side

SYNCED = "torch_xla.sync+xm.wait_device_ops"
LAUNCHED = "none: this backend offers kb no way to wait for the device: launch times"


def run(kb: KnowledgeBase, n: int, rate: float, sync: str = SYNCED, torch: str = "2.9.0", **fields) -> str:
    entry_id = f"2026-11-{n:02d}-lm-xla-{n:06d}"
    fields.setdefault("status", "completed")
    fields.setdefault("backend", "xla")
    fields.setdefault("metrics", {"tokens_per_s": {"value": rate, "unit": "tokens/s", "better": "higher"},
                                  "loss": {"value": 0.5}})  # fmt: skip
    write_entry(
        kb, entry_id, recorded=f"2026-11-{n:02d}T00:00:00Z", workload={"name": "lm"}, mode="eager",
        versions={"torch": torch}, settings={"batch": 8},
        timings={"wall_s": 10.0 + n, "step_s": {"median": 1 / rate, "count": 20}, "device_sync": sync},
        **fields,
    )  # fmt: skip
    return entry_id


def compared(*ids: str) -> dict:
    result = run_kb("compare", *ids, "--json")
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def rows(comparison: dict) -> dict[str, dict]:
    return {row["name"]: row for row in comparison["rows"]}


def test_launch_times_rank_against_no_device_time(kb: KnowledgeBase) -> None:
    launched = run(kb, 1, 1000.0, sync=LAUNCHED)  # 0.74 ms queued where the step ran 524 ms
    timed = run(kb, 2, 2.0)
    other = run(kb, 3, 900.0, sync=LAUNCHED)
    # Given first, the launch-time run is still no baseline: the device-timed one is.
    comparison = compared(launched, timed, other)
    assert [e["id"] for e in comparison["entries"]] == [timed, launched, other]
    found = rows(comparison)
    for name in ("step_s", "tokens_per_s"):
        assert found[name]["ratios"][1:] == [None, None]
        assert found[name]["verdicts"][1:] == ["launch times: not ranked"] * 2
    # The process's wall time is no launch time: it still compares.
    assert found["wall_s"]["ratios"] == [1.0, 0.9167, 1.0833]
    assert f"{launched}: its figures are launch times, not device times ({LAUNCHED})" in comparison["notes"][0]
    # Two launch-time runs are not ranked against each other either.
    both = rows(compared(launched, other))
    assert both["tokens_per_s"]["ratios"] == [1.0, None] and both["tokens_per_s"]["verdicts"][1] == (
        "launch times: not ranked"
    )
    text = run_kb("compare", launched, timed)
    assert "launch times: not ranked" in text.stdout and "×500" not in text.stdout and "×0.002" not in text.stdout
    assert "its figures are launch times, not device times" in text.stderr


def test_a_failed_run_is_never_the_baseline_and_gets_no_ratio(kb: KnowledgeBase) -> None:
    crashed = run(kb, 1, 5000.0, status="failed", failure={"class": "crash", "message": "RuntimeError: boom\nat x"})
    done = run(kb, 2, 2000.0)
    comparison = compared(crashed, done)
    assert [e["id"] for e in comparison["entries"]] == [done, crashed]
    found = rows(comparison)
    for name in ("step_s", "wall_s", "tokens_per_s", "loss"):
        assert found[name]["ratios"][1] is None and found[name]["verdicts"][1] == "failed: not ranked"
    assert comparison["notes"] == [
        f"{crashed} failed (crash: RuntimeError: boom): never the baseline; its figures are not ranked",
        f"nothing is ranked against the baseline {done}: no other entry completed with sound figures",
    ]
    text = run_kb("compare", crashed, done)
    assert text.returncode == 0 and "×2.5" not in text.stdout and "×0.4" not in text.stdout
    assert f"kb: {crashed} failed (crash: RuntimeError: boom)" in text.stderr


def test_killed_interrupted_and_numerics_failed_runs_stand_beside_the_sound_ones(kb: KnowledgeBase) -> None:
    killed = run(kb, 1, 5000.0, status="killed")
    loss = {"value": None, "nonfinite": "nan", "step": 5}
    nan = run(kb, 2, 9000.0, metrics={"tokens_per_s": {"value": 9000.0, "better": "higher"}, "loss": loss})
    done = run(kb, 3, 2000.0)
    faster = run(kb, 4, 2500.0)
    comparison = compared(killed, nan, done, faster)
    assert [e["id"] for e in comparison["entries"]] == [done, killed, nan, faster]
    tokens = rows(comparison)["tokens_per_s"]
    assert tokens["ratios"] == [1.0, None, None, 1.25]
    assert tokens["verdicts"][1:] == ["killed: not ranked", "numerics failed: not ranked", ONCE]
    assert comparison["notes"] == [
        f"{killed} killed: never the baseline; its figures are not ranked",
        f"{nan} numerics failed (loss became NaN at step 5): never the baseline; its figures are not ranked",
        f"compared with the baseline {done}: {faster}",
    ]
    # Nothing completed soundly: nothing is ranked at all.
    alone = compared(killed, nan)
    assert rows(alone)["tokens_per_s"]["ratios"] == [1.0, None]
    assert alone["notes"][-1] == "nothing is ranked: no entry completed with sound figures"


def test_a_trend_of_launch_times_is_its_own_series_and_never_judged(kb: KnowledgeBase) -> None:
    for n, (torch, rate) in enumerate([("2.8.0", 2.0), ("2.8.0", 2.0), ("2.8.0", 2.0)], 1):
        run(kb, n, rate, torch=torch)
    for n, rate in enumerate([1000.0, 1010.0, 990.0, 400.0, 410.0, 405.0], 4):
        run(kb, n, rate, sync=LAUNCHED, torch="2.8.0" if n < 7 else "2.9.0")
    result = run_kb("trend", "tokens_per_s", "--workload", "lm", "--json")
    assert result.returncode == 0, result.stderr
    series = {s["group"]: s["points"] for s in json_data(result.stdout)["series"]}
    assert sorted(series) == ["xla · eager", "xla · eager · launch times"]
    launched = series["xla · eager · launch times"]
    assert [(p["version"], p["flag"], p["change"], p["note"]) for p in launched] == [
        ("2.8.0", "", None, "launch times: not ranked"),
        ("2.9.0", "", None, "launch times: not ranked"),
    ]
    assert [p["value"] for p in series["xla · eager"]] == [2.0]
    text = run_kb("trend", "tokens_per_s", "--workload", "lm").stdout
    assert "REGRESSION" not in text and "(launch times: not ranked)" in text
    # The wall time of the process is no launch time: those runs stay in one series.
    walls = json_data(run_kb("trend", "wall_s", "--workload", "lm", "--json").stdout)
    assert [s["group"] for s in walls["series"]] == ["xla · eager"]


def test_the_site_comparison_starts_from_a_sound_run_as_compare_does(kb: KnowledgeBase) -> None:
    from kb.answers.compare import compare, newest_usable
    from kb.index.db import connect, index_path

    failed = run(kb, 1, 3000.0, numerics={"verdict": "fail"})
    sound = run(kb, 2, 2000.0, backend="cuda")
    assert run_kb("index").returncode == 0
    db = connect(index_path(kb.cache_path))
    try:
        entries, _ = newest_usable(kb, db, "lm", incumbent="xla")
    finally:
        db.close()
    assert [e.id for e in entries] == [sound, failed]
    assert [e.id for e in compare(entries).entries] == [sound, failed]
