"""Output for people: whole lines within 80 columns, figures humanised with units, one verdict per question,
bad input an error that names what exists."""

from __future__ import annotations

import re
import sys

from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

WIDTH = 80


def _run(kb: KnowledgeBase, day: int, backend: str, torch: str, rate: float, month: str = "2026-05") -> str:
    entry_id = f"{month}-{day:02d}-toy-{backend}-{day:06d}"
    write_entry(kb, entry_id, recorded=f"{month}-{day:02d}T10:00:00Z", status="completed", backend=backend,
                mode="compiled", workload={"name": "toy"}, settings={"batch": 8}, versions={"torch": torch},
                numerics={"verdict": "pass"}, metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}},
                timings={"compile_s": 1.021})  # fmt: skip
    return entry_id


def fill(kb: KnowledgeBase) -> None:
    """cuda on three releases (702 tokens/s, then 1,002 and 1,114); cpu on the same three, unchanged."""
    day = 1
    for backend, releases in (
        (
            "cuda",
            {"2.11.0": (701.0, 702.0, 703.0), "2.12.0": (1001.0, 1002.0, 1003.0), "2.13.0": (1113.0, 1114.0, 1115.0)},
        ),
        ("cpu", dict.fromkeys(("2.11.0", "2.12.0", "2.13.0"), (500.0, 510.0, 505.0))),
    ):
        for torch, rates in releases.items():
            for rate in rates:
                _run(kb, day, backend, torch, rate)
                day += 1


def lines_of(result) -> list[str]:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout.splitlines()


def test_board_of_an_unknown_workload_is_an_error_naming_the_near_one(kb: KnowledgeBase) -> None:
    fill(kb)
    for extra in ((), ("--regressions",), ("--summary",), ("--json",)):
        result = run_kb("board", "--workload", "toyy", *extra)
        assert result.returncode == 1, (extra, result.stdout)
        assert "no runs of workload 'toyy'; did you mean toy?" in result.stderr
        assert result.stdout == ""
    assert "did you mean toy?" in run_kb("trend", "tokens_per_s", "--workload", "toyy").stderr
    assert "toy" in run_kb("board", "--workload", "toy").stdout


def test_trend_says_no_change_once_per_series_with_figures_right_aligned(kb: KnowledgeBase) -> None:
    fill(kb)
    lines = lines_of(run_kb("trend", "tokens_per_s", "--workload", "toy"))
    assert all(len(line) <= WIDTH for line in lines), lines
    quiet = lines[lines.index(next(line for line in lines if line.startswith("cpu"))) :]
    assert sum("no change located" in line for line in lines) == 1, lines
    assert "no change located" in "\n".join(quiet[: quiet.index("")] if "" in quiet else quiet)
    ends = {line.index(" tokens/s") for line in lines if line.startswith("  2.1") and " tokens/s" in line}
    assert len(ends) == 1, lines  # 505, 702 and 1,002 tokens/s end in one column


def test_expect_humanises_the_evidence_and_keeps_the_bounds_as_written(kb: KnowledgeBase) -> None:
    fill(kb)
    (kb.root / "expectations.toml").write_text(
        '[[expect]]\nworkload = "toy"\nbackend = "cuda"\nmode = "compiled"\nfigure = "tokens_per_s"\nmin = 1000.5\n\n'
        '[[expect]]\nworkload = "toy"\nbackend = "cuda"\nmode = "compiled"\nfigure = "compile_s"\nmax = 2\n'
    )
    words = " ".join("\n".join(lines_of(run_kb("expect"))).split())
    assert "tokens_per_s >= 1000.5 tokens/s, now 1,114 tokens/s" in words
    assert "compile_s <= 2 s, now 1.02 s" in words


def test_revisit_humanises_where_a_condition_stands(kb: KnowledgeBase, clock) -> None:
    fill(kb)
    decided = run_kb("decide", "--title", "toy moves to cuda", "--question", "Where?", "--choice", "cuda",
                     "--evidence", "2026-05-01-toy-cuda-000001",
                     "--trigger", "when: tokens_per_s > 1500 for workload=toy backend=cuda")  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    decision = decided.stderr.split("decision ")[1].split()[0]
    clock.tick()
    for n, rate in ((1, 2000.0), (2, 2001.0), (3, 2002.0)):
        _run(kb, n, "cuda", "2.13.0", rate, month="2099-01")
    words = " ".join("\n".join(lines_of(run_kb("show", decision))).split())
    assert "tokens_per_s = 2,001 tokens/s, the median of 3 runs since" in words, words
    assert "2,002 tokens/s" in words and "2002" not in words.replace(decision, "")


EMIT = (
    "import json, os\n"
    "with open(os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl'), 'a') as out:\n"
    "    out.write(json.dumps({'event': 'metric', 'name': 'tokens_per_s', 'value': 1000.0, 'unit': 'tokens/s'}))\n"
)


def test_rerun_gives_one_verdict_on_the_pooled_sides(kb: KnowledgeBase) -> None:
    for _ in range(2):  # the original and a repeat of it
        recorded = run_kb("record", "--workload", "lm", "--backend", "cpu", "--", sys.executable, "-c", EMIT)
        assert recorded.returncode == 0, recorded.stderr
    original = min(kb.iter_entries(), key=lambda entry: entry.id).id
    for _ in range(2):
        result = run_kb("rerun", "--yes", original)
        assert result.returncode == 0, result.stderr
    said = re.findall(r"n=\d+ vs \d+", " ".join(result.stdout.split()))
    assert len(said) >= 2 and len(set(said)) == 1, result.stdout
    assert all(len(line) <= WIDTH for line in result.stdout.splitlines()), result.stdout


def test_board_summary_names_the_current_release_and_the_boards_compile(kb: KnowledgeBase) -> None:
    fill(kb)
    lines = lines_of(run_kb("board", "--summary"))
    assert all(len(line) <= WIDTH for line in lines), lines
    cuda = lines.index(next(line for line in lines if line.startswith("cuda")))
    assert lines[cuda].endswith("1.02 s (unknown)"), lines  # as the board: "compile: 1.02 s, cache unknown"
    assert lines[cuda + 1] == "    1 workload; figures on the current release torch 2.13.0"
    assert [line.split()[:2] for line in lines[cuda + 3 : cuda + 6]] == [
        ["torch", v] for v in ("2.11.0", "2.12.0", "2.13.0")
    ]
    assert "compile: 1.02 s, cache unknown" in run_kb("board").stdout


def test_compare_fits_80_columns_with_the_boards_footing_on_the_medians(kb: KnowledgeBase) -> None:
    fill(kb)
    piped = lines_of(run_kb("compare", "--workload", "toy", "--by", "backend"))
    terminal = run_kb("compare", "--workload", "toy", "--by", "backend", env={"TTY_COMPATIBLE": "1", "COLUMNS": "80"})
    shown = re.sub(r"\x1b\[[0-9;]*m", "", terminal.stdout).splitlines()
    for lines in (piped, shown):
        assert all(len(line) <= WIDTH for line in lines), lines
        text = "\n".join(lines)
        assert "tokens_per_s  505 tokens/s    1,114 tokens/s  ×2.21" in text  # the medians, not the newest 1,115
        words = " ".join(text.split())
        assert "tokens_per_s, cuda · compiled: ×2.21 faster (n=3 vs 3, 95% interval ×2.1" in words
        assert "floor 2%)" in words and "median of its runs" in words
        assert any(line.startswith("Noise: ") for line in lines)
        assert all("(n=3" not in line or "vs 3" in line for line in lines)  # a footing never cut inside
