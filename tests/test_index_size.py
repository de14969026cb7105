"""The full-text table keeps only its words; the text it was given is kept once, compressed, and still gives the
snippets, and an edited or deleted entry leaves none of its words behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from test_fulltext import build, find, make, write

from kb.index import fulltext, schema
from kb.index.db import connect, index_path
from kb.index.sync import sync

RUN = "2026-11-03-llama-neuron-eager-0a1b2c"
LOG = "".join(
    f"step {step}: loss 2.{step % 97:02d} tokens/s 1,2{step % 10}0 neuronx-cc cache hit\n" for step in range(400)
)


def _body(word: str) -> str:
    return f"The {word} kernel would not unroll.\n\n## Output\n\n```text\n{LOG}```\n"


def _terms(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute(f"SELECT term FROM {fulltext.VOCABULARY}")}


def _integrity(db: sqlite3.Connection) -> None:
    """FTS5's own check of an external-content table: its words are exactly those of the text it reads back."""
    db.execute(f"INSERT INTO {fulltext.TABLE} ({fulltext.TABLE}, rank) VALUES ('integrity-check', 1)")


def test_the_text_is_kept_once_compressed_and_gives_the_snippets(tmp_path: Path) -> None:
    _, db = build(tmp_path / "kb", [make(RUN, "llama on trainium", _body("flex"), backend="neuron")])
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert f"{fulltext.TABLE}_content" not in tables  # FTS5 keeps no copy of its own
    (packed,) = db.execute(f"SELECT packed FROM {fulltext.DOCUMENTS}").fetchone()
    assert len(packed) < len(LOG) / 4
    (hit,) = find(db, "unroll")
    assert hit.snippet == "The flex kernel would not **unroll**."
    (hit,) = find(db, "neuronx")
    assert "**neuronx**-cc cache hit" in hit.snippet
    _integrity(db)


def test_an_edited_or_deleted_entry_leaves_none_of_its_words(tmp_path: Path) -> None:
    kb, db = build(tmp_path / "kb", [make(RUN, "llama on trainium", _body("zyzzyva"), backend="neuron")])
    assert "zyzzyva" in _terms(db)
    write(kb, [make(RUN, "llama on trainium", _body("quokka"), backend="neuron")])
    assert "zyzzyva" not in _terms(db) and "quokka" in _terms(db)
    assert [hit.snippet for hit in find(db, "quokka")] == ["The **quokka** kernel would not unroll."]
    _integrity(db)
    (kb.entries_path / f"{RUN}.md").unlink()
    write(kb, [])
    assert _terms(db) == set()
    assert db.execute(f"SELECT count(*) FROM {fulltext.DOCUMENTS}").fetchone() == (0,)
    _integrity(db)


def test_an_index_whose_words_kept_their_own_text_is_built_again(tmp_path: Path) -> None:
    kb, db = build(tmp_path / "kb", [make(RUN, "llama on trainium", _body("flex"), backend="neuron")])
    db.close()
    old = sqlite3.connect(index_path(kb.cache_path))  # as the kb before the packed text left it
    old.executescript(f"""
        DROP TRIGGER entries_fulltext; DROP TABLE {fulltext.VOCABULARY}; DROP TABLE {fulltext.TABLE};
        DROP VIEW {fulltext.TEXT}; DROP TABLE {fulltext.DOCUMENTS};
        CREATE VIRTUAL TABLE {fulltext.TABLE} USING fts5({", ".join(fulltext.DEFAULT_FIELDS)});
        UPDATE index_format SET format = 'before the packed text';
    """)
    old.close()
    sync(kb)
    db = connect(index_path(kb.cache_path))
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert f"{fulltext.TABLE}_content" not in tables and fulltext.DOCUMENTS in tables
    assert [hit.snippet for hit in find(db, "unroll")] == ["The flex kernel would not **unroll**."]
    _integrity(db)


def test_a_new_index_has_pages_that_hold_several_entries(tmp_path: Path) -> None:
    _, db = build(tmp_path / "kb", [make(RUN, "llama on trainium", _body("flex"), backend="neuron")])
    assert db.execute("PRAGMA page_size").fetchone() == (schema.PAGE_SIZE,) == (8192,)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_front_matter_is_kept_compressed_and_read_back_as_it_was(tmp_path: Path) -> None:
    import json
    import math

    from kb.index import answers, stored_json

    _, db = build(tmp_path / "kb", [make(RUN, "llama on trainium", _body("flex"), backend="neuron")])
    (stored,) = db.execute("SELECT front_matter FROM entries").fetchone()
    text = stored_json.unpacked_text(stored)
    assert isinstance(stored, bytes)  # zlib-packed: no SQL reads into it
    data = answers.front_matters(db, [RUN])[RUN]
    assert data["id"] == RUN and data["backend"] == "neuron" and json.loads(text)["title"] == "llama on trainium"
    for value in (math.nan, math.inf, "\ufdd0NaN", {"loss": [1.5, -math.inf]}):
        back = stored_json.unpacked(stored_json.packed({"value": value}))["value"]
        assert repr(back) == repr(value)


def test_check_finds_an_attachment_that_is_not_there(tmp_path: Path) -> None:
    from conftest import write_entry

    from kb.index.check import problems
    from kb.store.knowledge_base import KnowledgeBase

    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    write_entry(kb, RUN, recorded="2026-11-03T10:00:00Z", status="completed",
                attachments=[{"path": "kept.txt"}, {"path": "gone.txt"}])  # fmt: skip
    (kb.entries_path / "kept.txt").write_text("here")
    sync(kb)
    db = connect(index_path(kb.cache_path))
    found, _ = problems(kb, db)
    assert [(p.field, p.message) for p in found] == [
        ("attachments", "lists 'gone.txt', which is not there: restore the file or remove it from the list")
    ]
