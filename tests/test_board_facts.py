"""What the board reads of each run, report and coverage entry is kept in its board row (kb/index/rows.py), so that
`kb board` parses no entry's front matter: the answers are the same whether the index was made with the facts,
or made before them and built again, and a dtype given only as `precision.dtype` is a shape setting there too.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import json_data, run_kb, write_entry

from kb.index import db, stored_json
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase

RATE = "tokens_per_s"


def run(kb: KnowledgeBase, n: int, backend: str, rate: float | None, **fields) -> str:
    entry_id = f"2026-11-{n:02d}-lm-{backend}-{n:06d}"
    fields.setdefault("status", "completed")
    fields.setdefault("mode", "eager")
    fields.setdefault("workload", {"name": "lm"})
    fields.setdefault("settings", {"batch": 8})
    if rate is not None:
        fields.setdefault("metrics", {RATE: {"value": rate, "unit": "tokens/s"}})
    write_entry(kb, entry_id, recorded=f"2026-11-{n:02d}T00:00:00Z", backend=backend, **fields)
    return entry_id


def board_json(*args: str) -> dict:
    result = run_kb("board", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def cell(data: dict, label: str) -> dict:
    (found,) = [c for w in data["workloads"] for c in w["cells"] if c["label"] == label]
    return found


def board_rows(kb: KnowledgeBase) -> list[tuple]:
    conn = sqlite3.connect(db.index_path(kb.cache_path))
    try:
        # each row but its entry's number, which is the index's own (an edited entry gets a new one)
        return [row[1:] for row in conn.execute("SELECT * FROM board_rows ORDER BY entry_id")]
    finally:
        conn.close()


@pytest.fixture
def varied(kb: KnowledgeBase) -> KnowledgeBase:
    """Every section the board reads: verdicts, compile caches, devices, adaptations, coverage, a report, a failure."""
    run(kb, 1, "cpu", 1000.0, precision={"dtype": "fp32"}, adaptations=[], versions={"torch": "2.10.0"})
    run(kb, 2, "cuda", 64000.0, mode="compiled", precision={"dtype": "fp32"}, numerics={"verdict": "pass"},
        fallbacks={"stayed_on_device": True},
        hardware={"accelerators": [{"name": "h100", "count": 8, "memory_gb": 80, "driver": "570.1"}]},
        timings={"compile_s": 41.0, "step_s": {"median": 0.01, "count": 20}}, compile={"cache": "fresh"},
        adaptations=[{"what": "pad the vocabulary", "kind": "code"}, {"what": "flag", "kind": "config"}])  # fmt: skip
    run(kb, 3, "cuda", 70000.0, mode="compiled", tags=["warm"], fallbacks={"stayed_on_device": False},
        timings={"compile_s": 3.0}, precision={"dtype": "fp32"})  # fmt: skip
    run(kb, 4, "cuda", None, mode="compiled", status="failed", failure={"class": "oom", "message": "out of memory"})
    run(kb, 5, "neuron", 90000.0, kind="report", status=None,
        provenance={"source": "reported", "publisher": "Vendor blog", "date": "2026-10-01"})  # fmt: skip
    run(kb, 6, "cuda", None, kind="coverage", status=None, coverage={"total": 10, "passed": 7, "skipped": 2})
    return kb


def test_an_index_made_before_the_facts_gets_them_and_the_same_answers(varied: KnowledgeBase) -> None:
    sync(varied)
    expected = board_json(), board_json("--missing"), board_rows(varied)
    conn = sqlite3.connect(db.index_path(varied.cache_path))
    conn.create_function("front_matter_text", 1, stored_json.unpacked_text)  # the front matter is packed
    with conn:  # the index as a kb from before the facts made it: built again, not migrated
        conn.execute("ALTER TABLE board_rows DROP COLUMN facts")
        conn.execute("DROP TABLE index_format")
    conn.close()
    assert (board_json(), board_json("--missing"), board_rows(varied)) == expected
    # A sync keeps the rows as a new index makes them: an entry added, one edited.
    run(varied, 7, "cpu", 1100.0, precision={"dtype": "bf16"})
    run(varied, 1, "cpu", 1200.0, precision={"dtype": "fp32"}, numerics={"verdict": "fail"})
    sync(varied)
    kept = board_rows(varied)
    assert len(kept) == len(expected[2]) + 1 and kept != expected[2]
    sync(varied, rebuild=True)
    assert board_rows(varied) == kept


def facts_of(kb: KnowledgeBase, entry_id: str) -> dict | None:
    conn = sqlite3.connect(db.index_path(kb.cache_path))
    try:
        (text,) = conn.execute("SELECT facts FROM board_rows WHERE entry_id = ?", [entry_id]).fetchone()
    finally:
        conn.close()
    return json.loads(text) if text else None


def test_the_facts_hold_only_what_the_board_reads(varied: KnowledgeBase) -> None:
    sync(varied)
    run_2 = "2026-11-02-lm-cuda-000002"
    found = {key: value for key, value in facts_of(varied, run_2).items() if value is not None}
    assert found == {
        "id": run_2, "title": run_2, "recorded": "2026-11-02T00:00:00Z", "settings": {"batch": 8},
        "timings": {"compile_s": 41.0, "step_s": {"median": 0.01}},  # not the steps' count
        "metrics": {RATE: {"value": 64000.0, "unit": "tokens/s"}}, "precision": {"dtype": "fp32"}, "adaptations": 2,
        "hardware": {"accelerators": [{"name": "h100", "count": 8}]},  # which machine, not its memory or driver
        "compile": {"cache": "fresh"}, "numerics": {"verdict": "pass"}, "fallbacks": {"stayed_on_device": True},
    }  # fmt: skip
    assert facts_of(varied, "2026-11-04-lm-cuda-000004") is None  # a failed run is counted, never judged


def test_an_index_with_the_facts_of_before_gets_the_leaner_ones(varied: KnowledgeBase) -> None:
    sync(varied)
    expected = board_json(), board_rows(varied)
    conn = sqlite3.connect(db.index_path(varied.cache_path))
    conn.create_function("front_matter_text", 1, stored_json.unpacked_text)  # the front matter is packed
    with conn:  # facts holding more of each section (here the whole front matter)
        conn.execute("UPDATE board_rows SET facts = (SELECT front_matter_text(front_matter) FROM entries "
                     "WHERE id = entry_id) "
                     "WHERE facts IS NOT NULL")  # fmt: skip
        conn.execute("UPDATE index_format SET format = 'older'")
    conn.close()
    assert (board_json(), board_rows(varied)) == expected


def test_the_facts_answer_every_column(varied: KnowledgeBase) -> None:
    found = board_json()
    cuda = cell(found, "cuda · compiled")
    assert (cuda["figure"]["value"], cuda["figure"]["devices"], cuda["numerics"], cuda["stayed"]) == (
        70000.0, 1, "unchecked", "no"
    )  # fmt: skip
    assert cuda["cold_compile"]["seconds"] == 41.0 and cuda["warm_compile"]["seconds"] == 3.0
    assert (cuda["failure"]["class"], cuda["failure"]["message"]) == ("oom", "out of memory")
    (report,) = found["workloads"][0]["reported"]
    assert (report["publisher"], report["date"], report["figure"]["value"]) == ("Vendor blog", "2026-10-01", 90000.0)
    checks = {check["question"]: check["detail"] for check in cuda["checklist"]}
    assert checks["test coverage disclosed"] == "7 passed, 2 skipped of 10 (70% pass)"
    assert checks["adaptations recorded"].startswith("say what had to change")  # the picked run (3) names none
    cpu = {check["question"]: check for check in cell(found, "cpu · eager")["checklist"]}
    assert (cpu["adaptations recorded"]["ok"], cpu["adaptations recorded"]["detail"]) == (True, "0 adaptations")


def test_a_dtype_kept_only_in_the_precision_section_is_a_shape_on_the_board(kb: KnowledgeBase) -> None:
    # The newest cuda run is bf16 where the baseline ran fp32: the older fp32 run is the comparable one.
    run(kb, 1, "cpu", 1000.0, precision={"dtype": "fp32"})
    fp32 = run(kb, 2, "cuda", 4000.0, precision={"dtype": "fp32"})
    run(kb, 3, "cuda", 9000.0, precision={"dtype": "bf16"})
    cuda = cell(board_json("--incumbent", "cpu"), "cuda · eager")
    assert (cuda["figure"]["entry"], cuda["ratio"], cuda["differences"]) == (fp32, 4.0, [])


def test_a_coverage_section_with_only_some_totals_says_what_it_lacks(kb: KnowledgeBase) -> None:
    run(kb, 1, "cpu", 1000.0)
    run(kb, 2, "cpu", None, kind="coverage", status=None, coverage={"passed": 7})
    checks = {check["question"]: check["detail"] for check in cell(board_json(), "cpu · eager")["checklist"]}
    assert checks["test coverage disclosed"] == "7 passed, ? skipped of ?"


@pytest.fixture
def traps(kb: KnowledgeBase) -> KnowledgeBase:
    """Runs holding every member of a section the board's verdicts read, each one changing an answer: a numerics
    check with NaN counts, a wall time that became NaN, a NaN metric written as text and one marked beside a null,
    the same CPU with other thread counts (other machines), a busy machine, device peaks per phase, the process's
    peak memory on the CPU, a peak-memory metric, versions read after the fact, a check's reference and tolerances,
    launch times, and a report giving only a compile wait."""
    same = {"hardware": {"cpu": "Xeon 8480", "cpu_threads": 64, "accelerators": [{"name": "h100", "count": 1}]}}
    for n, rate in enumerate((1000.0, 1010.0, 990.0), start=1):
        run(kb, n, "cuda", rate, versions={"torch": "2.10.0"}, numerics={"verdict": "pass"}, **same)
    run(
        kb,
        4,
        "cuda",
        1500.0,
        mode="compiled",
        versions={"torch": "2.10.0"},
        hardware={"cpu": "Xeon 8480", "cpu_threads": 32, "accelerators": [{"name": "h100", "count": 1}]},
        numerics={"verdict": "pass", "compared": "loss curve", "reference": "eager-loss.txt", "rtol": 0.05},
    )
    for n, rate in ((5, 1480.0), (6, 1520.0)):
        run(
            kb,
            n,
            "cuda",
            rate,
            mode="compiled",
            versions={"torch": "2.10.0"},
            numerics={"verdict": "pass"},
            memory={"device_peak_gb_step": 30.0 + n, "device_peak_gb_load": 2.0},
            **same,
        )
    run(
        kb,
        7,
        "cuda",
        9000.0,
        mode="compiled",
        versions={"torch": "2.10.0"},
        numerics={"verdict": "pass"},
        hardware={**same["hardware"], "load": {"busy": True, "load_1m": 9.5}},
    )
    run(kb, 8, "rocm", 1300.0, versions={"torch": "2.10.0"}, numerics={"verdict": "pass", "nan": 2}, **same)
    run(
        kb,
        9,
        "xla",
        1400.0,
        versions={"torch-xla": "2.9.0"},
        numerics={"verdict": "pass"},
        timings={"wall_s": float("nan"), "step_s": {"median": 0.1}},
        **same,
    )
    run(
        kb,
        10,
        "tpu",
        1200.0,
        versions={"torch-tpu": "0.2.0"},
        metrics={"tokens_per_s": {"value": 1200.0, "unit": "tokens/s"}, "loss": {"value": float("nan"), "step": 7}},
    )
    run(
        kb,
        11,
        "mps",
        800.0,
        versions={"torch": "2.10.0"},
        metrics={"tokens_per_s": {"value": 800.0}, "loss": {"value": None, "nonfinite": "inf", "step": 3}},
    )
    run(
        kb,
        12,
        "cpu",
        300.0,
        versions={"torch": "2.10.0"},
        memory={"host_peak_rss_gb": 4.5},
        provenance={"source": "imported", "environment": "record_time"},
        numerics={"verdict": "pass"},
    )
    run(
        kb,
        13,
        "neuron",
        1100.0,
        versions={"torch-neuronx": "2.27.1"},
        numerics={"verdict": "pass"},
        metrics={"tokens_per_s": {"value": 1100.0}, "peak_memory_gb": {"value": 14.0, "unit": "GB"}},
        timings={"device_sync": "none: launch times", "step_s": {"median": 0.2}},
    )
    run(
        kb,
        14,
        "neuron",
        None,
        kind="report",
        status=None,
        metrics={"compile_s": {"value": 1620.0}},
        provenance={"source": "reported", "publisher": "Vendor blog", "date": "2026-10-01"},
    )
    return kb


def test_the_board_answers_from_its_facts_as_from_the_whole_front_matter(traps: KnowledgeBase) -> None:
    """What the facts keep is what the verdicts read: with every board row's facts replaced by the entry's whole
    front matter, every answer is the same (a member a verdict reads but the facts drop would change one)."""
    sync(traps)
    asked = ("board", "--json"), ("board", "--missing", "--json"), ("board", "--summary", "--json")
    from_facts = [json_data(run_kb(*args).stdout) for args in asked]
    conn = sqlite3.connect(db.index_path(traps.cache_path))
    conn.create_function("front_matter_text", 1, stored_json.unpacked_text)  # the front matter is packed
    with conn:
        conn.execute("UPDATE board_rows SET facts = (SELECT front_matter_text(front_matter) FROM entries "
                     "WHERE id = entry_id) "
                     "WHERE facts IS NOT NULL")  # fmt: skip
    conn.close()
    assert [json_data(run_kb(*args).stdout) for args in asked] == from_facts
    found = from_facts[0]
    assert cell(found, "rocm · eager")["numerics"] == "failed"  # its check counted NaN
    assert cell(found, "xla · eager")["numerics"] == "failed"  # its wall time became NaN
    assert cell(found, "tpu · eager")["numerics"] == "failed" and cell(found, "mps · eager")["numerics"] == "failed"
    compiled = cell(found, "cuda · compiled")
    assert (compiled["n"], compiled["busy"], compiled["peak_memory_gb"]) == (2, 1, 36.0)  # 32 threads: another machine
    assert cell(found, "cpu · eager")["peak_memory_gb"] == 4.5
    assert cell(found, "neuron · eager")["peak_memory_gb"] == 14.0 and cell(found, "neuron · eager")["launch_times"]
    (report,) = found["workloads"][0]["reported"]
    assert report["figure"]["value"] == 1620.0
