"""NaN and infinity, from every way they reach an entry, never break the index or any command that reads it."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from ingest import handover
from kb.index import stored_json
from kb.store.knowledge_base import KnowledgeBase

# What the readers of the index are asked: each died on a NaN ("malformed JSON"), or every one did
# ("cannot update index.db") where a NaN metric stood beside another.
READERS = (
    ("ls",),
    ("search", "diverged"),
    ("check",),
    ("board",),
    ("board", "--regressions"),
    ("trend", "tokens_per_s", "--workload", "llama"),
    ("trend", "loss", "--workload", "llama"),
    ("compare", "--workload", "llama", "--by", "mode"),
    ("site", "build"),
)


def diverged_runs(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A run imported from a training node whose loss went NaN (run.json by json.dump, a figure handed over with
    handover.set_field), one written by hand with `.nan` and `.inf` in its YAML, and a good run beside them."""
    folder = tmp_path / "run-7"
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps(
            {
                "title": "llama diverged on node 7",
                "status": "completed",
                "backend": "cuda",
                "mode": "eager",
                "workload": {"name": "llama"},
                "versions": {"torch": "2.12.0"},
                "metrics": {"loss": {"value": math.nan}, "grad_norm": {"value": math.inf}},
                "timings": {"started": "2026-11-29T22:00:00Z", "ended": "2026-11-29T23:30:00Z"},
            }
        )
    )
    handover.set_field("metrics.tokens_per_s", {"value": math.nan, "unit": "tokens/s"}, folder)
    handover.set_field("settings.lr", -math.inf, folder)
    result = run_kb("record", "--from", str(folder), "--no-edit")
    assert result.returncode == 0, result.stderr
    write_entry(
        kb,
        "2026-11-30-good-run",
        recorded="2026-11-30T00:00:00Z",
        status="completed",
        backend="cuda",
        mode="eager",
        workload={"name": "llama"},
        versions={"torch": "2.13.0"},
        metrics={"tokens_per_s": {"value": 1200.0, "unit": "tokens/s"}, "loss": {"value": 2.5}},
    )
    text = (
        "---\nschema: 1\nid: 2026-12-01-yaml-nan\ntitle: diverged yaml\nkind: run\nstatus: completed\n"
        "recorded: '2026-12-01T00:00:00Z'\nworkload:\n  name: llama\nbackend: cuda\nmode: compile\n"
        "versions:\n  torch: 2.13.0\nsettings:\n  warmup: .inf\n"
        "metrics:\n  tokens_per_s:\n    value: .inf\n    unit: tokens/s\n  loss:\n    value: .nan\n---\n"
    )
    (kb.entries_path / "2026-12-01-yaml-nan.md").write_text(text)


def test_nan_and_infinity_break_no_reader_even_from_a_fresh_index(kb: KnowledgeBase, tmp_path: Path) -> None:
    diverged_runs(kb, tmp_path)
    for _ in range(2):  # as the first sync left the index, and built again after deleting the cache
        for args in READERS:
            result = run_kb(*args)
            assert result.returncode == 0, (args, result.stdout[-500:], result.stderr[-2000:])
            assert "Traceback" not in result.stderr, (args, result.stderr[-2000:])
        shutil.rmtree(kb.cache_path)
    shown = json_data(run_kb("ls", "--json").stdout)
    assert {row["id"] for row in shown} >= {"2026-11-30-good-run", "2026-12-01-yaml-nan"} and len(shown) == 3


def test_a_non_finite_figure_is_shown_as_such_and_never_judged(kb: KnowledgeBase, tmp_path: Path) -> None:
    diverged_runs(kb, tmp_path)
    page = run_kb("site", "build")
    assert page.returncode == 0, page.stderr
    html = (kb.root / "site" / "entries" / "2026-12-01-yaml-nan.html").read_text()
    assert "nan" in html and "inf" in html
    board = run_kb("board", "--json")
    assert board.returncode == 0, board.stderr
    json.loads(board.stdout, parse_constant=pytest.fail)  # no NaN or Infinity among its figures
    assert "1,200" in run_kb("board").stdout  # the good run is the cell's figure, not the infinite one
    # Numeric columns hold no NaN or infinity: an SQL MAX or sort never picks a diverged figure.
    with sqlite3.connect(kb.cache_path / "index.db") as db:
        values = [row[0] for row in db.execute("SELECT value FROM metrics WHERE name = 'tokens_per_s'")]
        numbers = [row[0] for row in db.execute("SELECT number FROM settings")]
        assert sorted(values, key=str) == [1200.0, None, None] and numbers == [None, None]
        # The front matter, unpacked, is valid JSON, also what SQL builds from it.
        db.create_function("front_matter_text", 1, stored_json.unpacked_text)
        front = [row[0] for row in db.execute("SELECT front_matter_text(front_matter) FROM entries")]
        assert all(db.execute("SELECT json_valid(?)", [text]).fetchone()[0] for text in front)
        built = db.execute(
            "SELECT json(json_object('v', json_extract(front_matter_text(front_matter), "
            "'$.metrics.tokens_per_s.value'))) "
            "FROM entries"
        ).fetchall()
        assert len(built) == 3


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        {"loss": [math.nan, 1.5, -math.inf], "note": "NaN and Infinity are words here", "n": 3},
        ["\ufdd0NaN", "\ufdd0", "\ufdd0\ufdd0Infinity", 'x"NaN\\', "Infinity"],
    ],
)
def test_stored_json_reads_back_as_written_and_sqlite_accepts_it(value: object) -> None:
    text = stored_json.dumps({"value": value})
    with sqlite3.connect(":memory:") as db:
        assert db.execute("SELECT json_valid(?)", [text]).fetchone()[0] == 1
        extracted = db.execute("SELECT json_extract(?, '$.value')", [text]).fetchone()[0]
    back = stored_json.loads(text)["value"]
    assert json.dumps(back) == json.dumps(value)  # NaN compares unequal to itself; its JSON text does not
    if isinstance(value, float):
        assert isinstance(extracted, str)  # never a figure to SQL
