"""`kb export --parquet`: the export read back with DuckDB answers as `kb ls` and `kb board` do."""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, json_data, run_kb, write_entry

from bench.generate import generate
from kb.errors import KbError
from kb.index.db import connect, index_path
from kb.index.export import TABLES, total_rows
from kb.index.parquet import export_parquet
from kb.index.prepare import prepare
from kb.store.knowledge_base import KnowledgeBase

duckdb = pytest.importorskip("duckdb", reason="the test extra installs duckdb")
pq = pytest.importorskip("pyarrow.parquet", reason="the export extra installs pyarrow")


def kb_data(root: Path, *args: str) -> Any:
    ran = run_kb("--kb", str(root), *args)
    assert ran.returncode == 0, ran.stderr
    return json_data(ran.stdout)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A generated base of 600 entries with a reviewed decision of our own, and its export."""
    base = generate(tmp_path_factory.mktemp("generated") / "kb", 600, seed=3, workers=1)
    decision = kb_data(
        base.root, "decide", "--json", "--title", "Train on CUDA", "--question", "Where?", "--choice", "CUDA",
        "--alternative", "neuron", "--trigger", "release: torch-neuronx",
    )["id"]  # fmt: skip
    ran = run_kb("--kb", str(base.root), "revisit", "--ack", decision, "--note", "re-checked on 2.27.1")
    assert ran.returncode == 0, ran.stderr
    out = tmp_path_factory.mktemp("export")
    written = kb_data(base.root, "export", "--parquet", str(out), "--json")
    assert [item["table"] for item in written] == [table.name for table in TABLES]
    return base.root, out, decision


def query(out: Path, sql: str, *params: Any) -> list[tuple]:
    with duckdb.connect() as con:
        for table in TABLES:
            con.execute(f"CREATE VIEW {table.name} AS SELECT * FROM read_parquet('{out / table.name}.parquet')")
        return con.execute(sql, list(params)).fetchall()


def test_every_entry_with_its_columns_as_kb_ls_lists_them(exported: tuple[Path, Path, str]) -> None:
    root, out, _ = exported
    listed = kb_data(root, "ls", "--json", "--limit", "0")
    rows = query(out, "SELECT id, kind, status, backend, workload, wall_s, compile_s FROM entries ORDER BY id")
    assert rows == sorted(
        (e["id"], e["kind"], e["status"], e["backend"], e["workload"], e["wall_s"], e["compile_s"]) for e in listed
    )
    assert len(rows) == 601


def test_failed_runs_on_a_backend(exported: tuple[Path, Path, str]) -> None:
    root, out, _ = exported
    listed = kb_data(root, "ls", "--json", "--limit", "0", "--backend", "neuron", "--status", "failed")
    rows = query(out, "SELECT id FROM entries WHERE backend = 'neuron' AND status = 'failed' ORDER BY id")
    assert [row[0] for row in rows] == sorted(e["id"] for e in listed) and rows


def test_runs_of_a_failure_class_through_the_failures_table(exported: tuple[Path, Path, str]) -> None:
    root, out, _ = exported
    listed = kb_data(root, "ls", "--json", "--limit", "0", "--failure", "oom")
    rows = query(out, "SELECT e.id FROM entries e JOIN failures f ON f.entry_id = e.id WHERE f.class = 'oom'")
    assert sorted(row[0] for row in rows) == sorted(e["id"] for e in listed) and rows


def test_runs_with_a_torch_version_through_the_versions_table(exported: tuple[Path, Path, str]) -> None:
    root, out, _ = exported
    listed = kb_data(root, "ls", "--json", "--limit", "0", "--package", "torch==2.8.0", "--kind", "run")
    rows = query(
        out,
        "SELECT e.id FROM entries e JOIN versions v ON v.entry_id = e.id "
        "WHERE e.kind = 'run' AND v.package = 'torch' AND (v.version = '2.8.0' OR v.version LIKE '2.8.0+%')",
    )
    assert sorted(row[0] for row in rows) == sorted(e["id"] for e in listed) and rows


def test_the_boards_tried_completed_and_commonest_failure(exported: tuple[Path, Path, str]) -> None:
    root, out, _ = exported
    cells = [cell for w in kb_data(root, "board", "--json")["workloads"] for cell in w["cells"] if cell["tried"]]
    runs = query(
        out,
        "SELECT e.workload, e.backend, e.mode, e.status, f.class FROM entries e "
        "LEFT JOIN failures f ON f.entry_id = e.id WHERE e.kind = 'run'",
    )
    tried = Counter((w, b, m) for w, b, m, _, _ in runs)
    completed = Counter((w, b, m) for w, b, m, status, _ in runs if status == "completed")
    assert {(c["workload"], c["backend"], c["mode"]): (c["tried"], c["completed"]) for c in cells} == {
        key: (n, completed[key]) for key, n in tried.items()
    }
    for cell in (cell for cell in cells if cell["failure"]):
        key = (cell["workload"], cell["backend"], cell["mode"])
        classes = Counter(cls for w, b, m, status, cls in runs if (w, b, m) == key and status != "completed")
        assert classes[cell["failure"]["class"]] == cell["failure"]["count"] == max(classes.values())


def test_a_decision_with_its_review_and_triggers(exported: tuple[Path, Path, str]) -> None:
    root, out, decision = exported
    [row] = query(out, "SELECT choice, alternatives, triggers, reviews FROM decisions WHERE entry_id = ?", decision)
    assert row[:3] == ("CUDA", ["neuron"], ["release: torch-neuronx"])
    assert [review["note"] for review in row[3]] == ["re-checked on 2.27.1"]
    decisions = kb_data(root, "ls", "--json", "--limit", "0", "--kind", "decision")
    assert sorted(r[0] for r in query(out, "SELECT entry_id FROM decisions")) == sorted(d["id"] for d in decisions)


def test_the_export_is_written_in_batches(exported: tuple[Path, Path, str], tmp_path: Path) -> None:
    root, _, _ = exported
    kb = KnowledgeBase(root)
    prepare(kb)
    db = connect(index_path(kb.cache_path))
    seen: list[int] = []
    written = export_parquet(db, tmp_path / "out", batch_rows=100, progress=seen.append)
    entries = next(item for item in written if item.table == "entries")
    assert seen[:8] == [100] * 6 + [1, 100]  # the entries in batches of 100, then the metrics'
    assert sum(seen) == sum(item.rows for item in written) == total_rows(db)
    assert pq.ParquetFile(entries.path).metadata.num_row_groups == math.ceil(601 / 100)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{t.name}.parquet" for t in TABLES)


def test_an_empty_base_exports_empty_tables(kb: KnowledgeBase, tmp_path: Path) -> None:
    run_kb("export", "--parquet", str(tmp_path / "out"))
    assert query(tmp_path / "out", "SELECT count(*) FROM entries") == [(0,)]
    assert query(tmp_path / "out", "SELECT count(*) FROM decisions") == [(0,)]


def test_a_hand_edited_decision_is_exported_as_text_not_lost(kb: KnowledgeBase, tmp_path: Path) -> None:
    decision = {"question": "Where?", "choice": "CUDA", "status": "accepted", "reviews": [{"by": 5}, "re-checked"]}
    write_entry(kb, "2026-11-01-odd-000001", kind="decision", recorded="2026-11-01T00:00:00Z", decision=decision,
                links={"evidence": "2026-10-01-run-000001"})  # fmt: skip
    assert run_kb("export", "--parquet", str(tmp_path / "out")).returncode == 0
    rows = query(tmp_path / "out", "SELECT choice, evidence, reviews FROM decisions")
    assert rows == [("CUDA", ["2026-10-01-run-000001"], [{"date": None, "by": "5", "note": None}])]


def test_without_pyarrow_the_error_says_what_to_install(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(kb)
    for name in [name for name in sys.modules if name == "pyarrow" or name.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # an import of it fails, as where it is not installed
    with pytest.raises(KbError, match=r"^kb export --parquet needs pyarrow: pip install 'kb\[export\]'"):
        export_parquet(connect(index_path(kb.cache_path)), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_documented_schema_is_the_exports() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cogapp", "--check", "docs/team.md"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, "docs/team.md is stale: run `cog -r docs/team.md`\n" + result.stderr
