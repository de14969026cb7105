"""Output for people: whole lines within 80 columns, figures humanised with units, one verdict per question,
bad input an error that names what exists."""

from __future__ import annotations

from conftest import run_kb, write_entry

from kb.store import KnowledgeBase

WIDTH = 80


def _run(kb: KnowledgeBase, day: int, backend: str, torch: str, rate: float, compile_s: float = 1.021) -> str:
    entry_id = f"2026-05-{day:02d}-toy-{backend}-{day:06d}"
    write_entry(kb, entry_id, recorded=f"2026-05-{day:02d}T10:00:00Z", status="completed", backend=backend,
                mode="compiled", workload={"name": "toy"}, settings={"batch": 8}, versions={"torch": torch},
                numerics={"verdict": "pass"}, metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}},
                timings={"compile_s": compile_s})  # fmt: skip
    return entry_id


def fill(kb: KnowledgeBase) -> None:
    """cuda on three releases (702 tokens/s, then 1,002 and 1,114), cpu on one."""
    day = 1
    for torch, rates in (("2.11.0", (701.0, 702.0, 703.0)), ("2.12.0", (1001.0, 1002.0, 1003.0)),
                         ("2.13.0", (1113.0, 1114.0, 1115.0))):  # fmt: skip
        for rate in rates:
            _run(kb, day, "cuda", torch, rate)
            day += 1
    for rate in (500.0, 510.0, 505.0):
        _run(kb, day, "cpu", "2.13.0", rate)
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
