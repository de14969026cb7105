"""Where a series changed across releases (E-Divisive means with a t-test, then the one verdict rule): series built
from hand-written entries holding a step change, noise, an outlier, a change below the floor, launch times."""

from __future__ import annotations

import html
import re

from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

RELEASES = ("2.8.0", "2.9.0", "2.10.0+cu126", "2.11.0", "2.12.0")  # PEP 440: 2.10 after 2.9


def runs(kb: KnowledgeBase, medians: dict[str, list[float]], *, start: int = 1, **fields) -> int:
    """One completed run of lm on neuron per value, release by release; recorded in turn, a day apart."""
    n, timings = start, fields.pop("timings", {})
    for release, values in medians.items():
        for value in values:
            write_entry(kb, f"2026-10-{n:02d}-lm-neuron-{n:06d}", recorded=f"2026-10-{n:02d}T00:00:00Z",
                        backend="neuron", mode="eager", workload={"name": "lm"}, status="completed",
                        versions={"torch": "2.10.0", "torch-neuronx": release},
                        timings={"step_s": {"median": value, "count": 20}, **timings},
                        **fields)  # fmt: skip
            n += 1
    return n


def slowdowns() -> list[dict]:
    return json_data(run_kb("board", "--regressions", "--json").stdout)["slowdowns"]


def test_a_step_change_two_releases_back_is_located(kb: KnowledgeBase) -> None:
    noise = (0.0, 0.002, -0.0015)
    medians = {r: [round(0.100 + d, 4) for d in noise] for r in RELEASES[:2]}
    medians |= {r: [round(0.150 + d, 4) for d in noise] for r in RELEASES[2:]}
    runs(kb, medians)
    (slow,) = slowdowns()
    assert (slow["last_good"], slow["first_bad"], slow["verdict"]) == ("2.9.0", "2.10.0", "slower")
    # The size is judged between the stretches either side of the change: 6 runs before, 9 after.
    comparison = slow["comparison"]
    assert (comparison["n_base"], comparison["n"]) == (6, 9)
    assert 0.64 < comparison["low"] <= comparison["ratio"] <= comparison["high"] < 0.98
    assert 0.49 < slow["change"] < 0.51 and slow["pvalue"] < 0.001
    assert slow["before"][0] == "2026-10-01-lm-neuron-000001" and len(slow["after"]) == 9
    text = run_kb("board", "--regressions").stdout
    words = " ".join(text.split())
    assert "lm step_s on neuron · eager: torch-neuronx 2.9.0 -> 2.10.0 +50.0%" in words
    assert "slower ×0.667 (n=9 vs 6" in words and max(len(line) for line in text.splitlines()) <= 80


def test_noise_an_outlier_and_a_change_below_the_floor_are_no_change(kb: KnowledgeBase) -> None:
    noisy = {"2.8.0": [0.100, 0.108, 0.093], "2.9.0": [0.097, 0.104, 0.110], "2.10.0": [0.092, 0.101, 0.106],
             "2.11.0": [0.109, 0.095, 0.099], "2.12.0": [0.103, 0.091, 0.107]}  # fmt: skip
    n = runs(kb, noisy)
    assert slowdowns() == []
    for path in kb.entries_path.glob("*.md"):
        path.unlink()
    steady = {r: [0.100, 0.1002, 0.0999] for r in RELEASES}
    steady["2.10.0+cu126"] = [0.100, 0.300, 0.0999]  # one run three times slower
    runs(kb, steady, start=n)
    assert slowdowns() == []
    for path in kb.entries_path.glob("*.md"):
        path.unlink()
    small = {r: [0.1000, 0.1001, 0.0999] for r in RELEASES[:3]} | {r: [0.1010, 0.1011, 0.1009] for r in RELEASES[3:]}
    runs(kb, small, start=n)  # 1% slower, plain to the t-test but within the 2% floor
    assert slowdowns() == []
    config = kb.root / "kb.toml"
    config.write_text(config.read_text().replace("floor = 0.02", "floor = 0.005"))
    (slow,) = slowdowns()  # beyond a floor of 0.5%, the same change counts
    assert (slow["last_good"], slow["first_bad"]) == ("2.10.0", "2.11.0")


def test_launch_times_busy_runs_and_other_shapes_are_never_one_series(kb: KnowledgeBase) -> None:
    steady = {"2.8.0": [0.100, 0.1002, 0.0999], "2.9.0": [0.1001, 0.1003, 0.0998]}
    n = runs(kb, steady)
    # Newer runs timed only how long the work took to queue: another series, not a change.
    n = runs(kb, {"2.10.0": [0.30, 0.31, 0.29]}, start=n, timings={"device_sync": "none: launch times"})
    n = runs(kb, {"2.11.0": [0.30, 0.31, 0.29]}, start=n, hardware={"load": {"busy": True}})
    n = runs(kb, {"2.11.0": [0.30, 0.31, 0.29]}, start=n, settings={"batch": 64})
    assert slowdowns() == []
    runs(kb, {"2.11.0": [0.30, 0.31, 0.29]}, start=n)
    (slow,) = slowdowns()
    assert (slow["series"], slow["last_good"], slow["first_bad"]) == ("neuron · eager", "2.9.0", "2.11.0")
    assert slow["comparison"]["n"] == 3 and slow["comparison"]["n_base"] == 6


def test_locate_finds_each_change_and_only_between_releases() -> None:
    from kb.answers.changepoints import locate

    wobble = (0.0, 0.05, -0.04, 0.02, -0.03)
    values = [10 + w for w in wobble] + [13 + w for w in wobble] + [10 + w for w in wobble]
    assert locate(values, list(range(1, len(values)))) == [5, 10]  # up, then back down
    three = [10 + w for w in wobble[:3] * 2] + [13 + w for w in wobble[:3]] + [10 + w for w in wobble[:3] * 2]
    assert locate(three, [3, 6, 9, 12]) == [6, 9]  # one release of three runs slower, the next one undid it
    assert set(locate(values, [3, 6, 9, 12])) <= {3, 6, 9, 12}  # releases that mix both levels: no change inside one
    assert locate(values, []) == []  # one release: repeats, never a change
    assert locate([10 + w for w in wobble * 3], list(range(1, 15))) == []


def test_a_release_the_next_one_undid_is_located_with_its_own_runs(kb: KnowledgeBase) -> None:
    steady = (0.100, 0.1004, 0.0997)
    runs(kb, {"2.8.0": list(steady), "2.9.0": [v * 1.5 for v in steady], "2.10.0": list(steady)})
    (slow,) = slowdowns()
    assert (slow["last_good"], slow["first_bad"]) == ("2.8.0", "2.9.0")
    assert (slow["comparison"]["n_base"], slow["comparison"]["n"]) == (3, 3) and len(slow["after"]) == 3


def test_launch_times_are_never_judged_even_against_launch_times(kb: KnowledgeBase) -> None:
    # How long work took to queue says nothing of how long it ran: kb trend never ranks it, nor does the board.
    launch = {"timings": {"device_sync": "none: launch times"}}
    runs(kb, {"2.8.0": [0.100, 0.1002, 0.0999], "2.9.0": [0.100, 0.1001, 0.0998],
              "2.10.0": [0.300, 0.301, 0.299], "2.11.0": [0.300, 0.302, 0.299]}, **launch)  # fmt: skip
    assert slowdowns() == []
    trend = json_data(run_kb("trend", "step_s", "--workload", "lm", "--package", "torch-neuronx", "--json").stdout)
    points = [point for series in trend["series"] for point in series["points"]]
    assert len(points) == 4 and not any(point.get("flag") for point in points)


def test_series_that_differ_only_in_hardware_are_told_apart_as_kb_trend_labels_them(kb: KnowledgeBase) -> None:
    medians = {"2.10.0": [0.100, 0.1002, 0.0999], "2.11.0": [0.130, 0.1302, 0.1299]}
    n = runs(kb, medians, hardware={"cpu": "EPYC A", "cpu_threads": 2})
    runs(kb, {r: [v * 2 for v in values] for r, values in medians.items()}, start=n,
         hardware={"cpu": "EPYC B", "cpu_threads": 2})  # fmt: skip
    found = slowdowns()
    assert [(s["series"], s["hardware"]) for s in found] == [
        ("neuron · eager", "on EPYC A (2 threads)"), ("neuron · eager", "on EPYC B (2 threads)")
    ]  # fmt: skip
    trend = json_data(run_kb("trend", "step_s", "--workload", "lm", "--package", "torch-neuronx", "--json").stdout)
    labels = [series["group"] for series in trend["series"]]
    assert labels == ["neuron · eager · on EPYC A (2 threads)", "neuron · eager · on EPYC B (2 threads)"]
    words = " ".join(run_kb("board", "--regressions").stdout.split())
    for label in labels:
        assert f"lm step_s on {label}: torch-neuronx 2.10.0 -> 2.11.0 +30.0%" in words
    out = kb.root / "site"
    assert run_kb("site", "build", "--out", str(out)).returncode == 0
    said = " ".join(re.sub(r"<[^>]+>", " ", html.unescape((out / "regressions.html").read_text())).split())
    for label in labels:
        assert f"lm step_s on {label}: torch-neuronx 2.10.0 → 2.11.0 +30.0%" in said


def test_series_on_one_hardware_name_none(kb: KnowledgeBase) -> None:
    runs(kb, {"2.10.0": [0.100, 0.1002, 0.0999], "2.11.0": [0.130, 0.1302, 0.1299]}, hardware={"cpu": "EPYC A"})
    (slow,) = slowdowns()
    assert (slow["series"], slow["hardware"]) == ("neuron · eager", "")


def test_a_long_series_is_located_in_memory_that_does_not_grow_with_its_square() -> None:
    import random
    import tracemalloc

    from kb.answers.changepoints import locate

    noise = random.Random(1)
    values = [(0.100 if i < 2000 else 0.130) * (1 + noise.gauss(0, 0.02)) for i in range(3000)]
    tracemalloc.start()
    try:
        found = locate(values, list(range(20, 3000, 20)), floor=0.02)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [2000]
    assert peak < 20e6  # a matrix of the distances between 3,000 runs alone is 72 MB


def test_the_split_chosen_is_the_energy_statistics_maximum_worked_pair_by_pair() -> None:
    import random

    import numpy as np

    from kb.answers import changepoints

    def q(values: list[float], start: int, tau: int, kappa: int) -> float:  # Matteson and James, from the pairs
        left, right = values[start:tau], values[tau:kappa]
        n, m = len(left), len(right)
        between = sum(abs(a - b) for a in left for b in right)
        within_left = sum(abs(a - b) for i, a in enumerate(left) for b in left[i + 1 :])
        within_right = sum(abs(a - b) for i, a in enumerate(right) for b in right[i + 1 :])
        return (2 * between / (m + n) - (2 * m * within_left / ((m + n) * (n - 1)) if n > 1 else 0.0)
                - (2 * n * within_right / ((m + n) * (m - 1)) if m > 1 else 0.0))  # fmt: skip

    noise = random.Random(3)
    for _ in range(30):
        values = [noise.choice([1.0, 1.3]) * (1 + noise.gauss(0, 0.05)) for _ in range(noise.randint(4, 25))]
        start, stop = sorted(noise.sample(range(len(values) + 1), 2))
        allowed = np.arange(1, len(values))
        found = changepoints._candidate(changepoints._Sums(np.asarray(values)), start, stop, allowed)
        pairs = [(tau, kappa) for tau in range(start + 1, stop) for kappa in range(tau + 1, stop + 1)]
        if not pairs:
            assert found is None
            continue
        best = max(pairs, key=lambda pair: q(values, start, *pair))
        assert found[:2] == best and abs(found[2] - q(values, start, *best)) < 1e-9
