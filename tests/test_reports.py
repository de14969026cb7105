"""`kb add` (reported results), how reported entries are marked, and coverage comparisons case by case."""

from __future__ import annotations

from pathlib import Path

from conftest import json_data, only_entry, run_kb, run_kb_in_terminal, write_entry

from kb.store.knowledge_base import KnowledgeBase

SEMIANALYSIS = (
    "add", "--title", "Qwen3-32B training on 16 Trainium2, eager", "--publisher", "SemiAnalysis",
    "--url", "https://semianalysis.com/trainium", "--date", "2025-10-23", "--measured", "training throughput",
    "--metric", "tokens_per_s=11099 tokens/s", "--workload", "qwen3-32b-train", "--model", "Qwen3-32B",
    "--backend", "neuron", "--mode", "eager", "--hardware", "16x Trainium2", "--version", "torch-neuronx=2.8.0",
    "--caveat", "one configuration, tuned with the vendor", "--tag", "trainium2", "--reported-by", "a.lee",
)  # fmt: skip


def test_add_records_a_reported_result_with_its_source(kb: KnowledgeBase) -> None:
    result = run_kb(*SEMIANALYSIS)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert result.stderr == f"kb: recorded report {entry.id}\n  {entry.path.relative_to(Path.cwd())}\n"
    data = entry.data
    assert (data["kind"], data["backend"], data["mode"]) == ("report", "neuron", "eager")
    assert data["provenance"] == {
        "source": "reported", "tool": "kb add", "publisher": "SemiAnalysis",
        "url": "https://semianalysis.com/trainium", "date": "2025-10-23", "reported_by": "a.lee",
    }  # fmt: skip
    assert data["workload"] == {"name": "qwen3-32b-train", "model": "Qwen3-32B"}
    assert data["hardware"] == {"accelerators": [{"name": "Trainium2", "count": 16}]}
    assert data["metrics"] == {"tokens_per_s": {"value": 11099.0, "unit": "tokens/s"}}
    assert data["versions"] == {"torch-neuronx": "2.8.0"}
    assert data["report"] == {
        "measured": "training throughput",
        "caveats": ["one configuration, tuned with the vendor"],
    }
    assert entry.body == (
        "Reported by [SemiAnalysis](https://semianalysis.com/trainium) on 2025-10-23: training throughput\n\n"
        "## Caveats\n\n- one configuration, tuned with the vendor\n"
    )


def test_add_without_a_terminal_names_what_is_missing(kb: KnowledgeBase) -> None:
    result = run_kb("add", "--title", "x", "--metric", "a=1")
    assert result.returncode == 1
    assert result.stderr == (
        "kb: error: a reported result needs --publisher, --date, --measured: give them as options "
        "(in a terminal, kb asks for them)\n"
    )
    bad = run_kb("add", "--title", "x", "--publisher", "p", "--date", "23/10/2025", "--measured", "m")
    assert bad.stderr == "kb: error: --date '23/10/2025': expected a date like 2025-10-23, or unknown\n"
    assert list(kb.entries_path.glob("*.md")) == []


def test_add_asks_in_a_terminal_for_what_the_options_leave_out(kb: KnowledgeBase) -> None:
    answers = iter([b"Hugging Face\n", b"2025-10-20\n", b"architectures supported\n", b"https://hf.co/blog\n"])
    code, output = run_kb_in_terminal(
        "add", "--title", "Typed in", answer=lambda printed: next(answers) if printed.endswith(b": ") else None
    )
    assert code == 0, output
    assert b"Publisher (who reported it):" in output and b"What was measured:" in output
    provenance = only_entry(kb).data["provenance"]
    assert (provenance["publisher"], provenance["date"], provenance["url"]) == (
        "Hugging Face", "2025-10-20", "https://hf.co/blog"
    )  # fmt: skip


def test_reported_entries_are_marked_in_lists_views_and_comparisons(kb: KnowledgeBase) -> None:
    assert run_kb(*SEMIANALYSIS).returncode == 0
    write_entry(
        kb, "2026-11-01-qwen-neuron-aaaaaa", "qwen measured", recorded="2026-11-01T00:00:00Z", status="completed",
        backend="neuron", mode="eager", workload={"name": "qwen3-32b-train"},
        metrics={"tokens_per_s": {"value": 10500.0, "unit": "tokens/s"}},
    )  # fmt: skip
    listed = run_kb("ls").stdout
    assert "report (reported)" in listed and "run (reported)" not in listed
    report = next(kb.entries_path.glob("*trainium2*.md")).stem
    assert run_kb("show", report).stdout.splitlines()[2].startswith("report (reported)  ")
    compared = run_kb("compare", "2026-11-01-qwen-neuron-aaaaaa", report).stdout
    assert "completed (reported)" not in compared and "(reported)" in compared
    rows = json_data(run_kb("ls", "--json").stdout)
    assert {row["id"]: row["source"] for row in rows} == {report: "reported", "2026-11-01-qwen-neuron-aaaaaa": None}


def _coverage(kb: KnowledgeBase, entry_id: str, cases: dict[str, str]) -> None:
    write_entry(kb, entry_id, recorded=f"{entry_id[:10]}T00:00:00Z", kind="coverage", coverage={"cases": "cases.tsv"})
    folder = kb.entries_path / entry_id
    folder.mkdir()
    lines = "".join(f"{case}\t{outcome}\t\n" for case, outcome in sorted(cases.items()))
    (folder / "cases.tsv").write_text("case\toutcome\treason\n" + lines)


def test_comparing_coverage_lists_newly_failing_skipped_and_passing_cases(kb: KnowledgeBase, tmp_path: Path) -> None:
    _coverage(
        kb, "2026-10-01-flex-aaaaaa", {"a": "passed", "b": "passed", "c": "failed", "d": "skipped", "e": "passed"}
    )
    _coverage(kb, "2026-11-01-flex-bbbbbb", {"a": "passed", "b": "error", "c": "passed", "d": "passed", "e": "skipped",
                                             "f": "failed"})  # fmt: skip
    result = run_kb("compare", "2026-10-01-flex-aaaaaa", "2026-11-01-flex-bbbbbb", "--json")
    assert result.returncode == 0, result.stderr
    assert json_data(result.stdout)["cases"] == [
        {"entry": "2026-11-01-flex-bbbbbb", "newly_passing": ["c", "d"], "newly_failing": ["b", "f"],
         "newly_skipped": ["e"], "added": 1, "removed": 0}
    ]  # fmt: skip
    text = run_kb("compare", "2026-10-01-flex-aaaaaa", "2026-11-01-flex-bbbbbb").stdout
    assert "Cases of 2026-11-01-flex-bbbbbb against the baseline\n  2 newly failing:\n    b\n    f\n" in text
    assert "  1 newly skipped:\n    e\n  2 newly passing:\n    c\n    d\n  1 cases added, 0 removed\n" in text


def test_the_shipped_evidence_checks_clean_is_searchable_and_published(kb: KnowledgeBase) -> None:
    import shutil

    from conftest import REPO

    shutil.copytree(REPO / "entries", kb.entries_path, dirs_exist_ok=True)
    checked = run_kb("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found = json_data(run_kb("search", "flex attention compile time limits", "--json").stdout)
    assert any(hit["title"] == "SemiAnalysis: FlexAttention on Trainium3 passes 89 of 96 cases" for hit in found)
    decisions = [kb.load(row["id"]) for row in json_data(run_kb("ls", "--kind", "decision", "--json").stdout)]
    assert len(decisions) == 2 and all(
        d.data["decision"]["triggers"] and d.data["links"]["evidence"] for d in decisions
    )
    assert run_kb("site", "build").returncode == 0
    page = next((kb.root / "site/entries").glob("*semianalysis-qwen3-32b*.html")).read_text()
    assert "reported by others, not measured here" in page and "<h2>Source</h2>" in page
