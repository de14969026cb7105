"""Words typed apart that an entry holds together: a failure class is indexed as one word as well, so that
"compile timeout" lists compile timeouts before runtime timeouts of compiled runs, in kb search (FTS5) as on the
site (tests/test_search_parity.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_fulltext import build, find, ids, make

from kb.index import fulltext
from kb.index.db import connect, index_path
from kb.index.sync import sync

RUNTIME = "2026-11-30-runtime-000001"
COMPILE = "2026-11-01-compile-000002"


def runs() -> list:
    """A runtime timeout of a compiled run ("compiled" in its title, the heaviest column, and the word timeout
    three times in its failure) and an older compile timeout of an eager run."""
    return [
        make(
            RUNTIME,
            "llama3 neuron compiled",
            backend="neuron",
            mode="compiled",
            recorded="2026-11-30T03:00:00Z",
            failure={
                "class": "timeout",
                "message": "nrt_execute timeout: NeuronCore 0 did not complete within 600 s",
                "evidence": "output.log:3287: nrt_execute timeout",
            },
        ),
        make(
            COMPILE,
            "llama3 neuron eager",
            backend="neuron",
            mode="eager",
            recorded="2026-11-01T03:00:00Z",
            failure={"class": "compile_timeout", "message": "neuronx-cc compilation of graph 80074 timed out"},
        ),
    ]


@pytest.mark.parametrize("filtered", [False, True], ids=["words alone", "with a filter"])
def test_the_class_typed_as_words_ranks_its_entries_first(tmp_path: Path, filtered: bool) -> None:
    _, db = build(tmp_path / "kb", runs())
    hits = find(db, "compile timeout", **({"backend": "neuron"} if filtered else {}))
    assert ids(hits) == [COMPILE, RUNTIME]  # before: the runtime timeout first
    assert ids(find(db, "timeout compile")) == [RUNTIME, COMPILE]  # only as typed, side by side


def test_a_joined_word_stands_for_its_two_words_only_so_a_third_word_still_narrows(tmp_path: Path) -> None:
    _, db = build(tmp_path / "kb", runs())
    assert ids(find(db, "compile timeout")) == [COMPILE, RUNTIME]
    assert ids(find(db, "compile timeout eager")) == [COMPILE]
    # No entry has all three words: those with two come, each saying which two (not every compile timeout as one
    # that has them all).
    assert {(hit.matched, hit.words) for hit in find(db, "compile timeout gpt2")} == {(("compile", "timeout"), 3)}
    assert fulltext.compile_query("compile timeout llama").match == (
        '(("compile") AND ("timeout") AND ("llama")) OR (("compiletimeout") AND ("llama")) '
        'OR (("timeoutllama") AND ("compile"))'
    )

    # With the index at hand, a joined word no entry holds is left out: it finds nothing, and costs time.
    assert fulltext.compile_query("compile timeout llama", db).match == (
        '(("compile") AND ("timeout") AND ("llama")) OR (("compiletimeout") AND ("llama"))'
    )
    assert fulltext.compile_query("neuron timeout", db).match == '("neuron") AND ("timeout")'
    assert ids(find(db, "compile timeout neuron")) == [COMPILE, RUNTIME]


def test_the_joined_word_is_indexed_last_and_matched_only_beside_the_other_words() -> None:
    failure = fulltext.document(runs()[1])["failure"]
    assert failure.startswith("compile_timeout\nneuronx-cc") and failure.endswith("\ncompiletimeout")
    assert fulltext.document(runs()[0])["failure"].splitlines()[0] == "timeout"  # one word: nothing joined
    assert fulltext.joined("compile_timeout") == fulltext.joined("Compile timeout") == "compiletimeout"
    assert fulltext.compile_query("compile timeout").match == '(("compile") AND ("timeout")) OR "compiletimeout"'
    assert fulltext.compile_query("compile").match == '"compile"'
    # A word with punctuation is a phrase of its words, not joined to its neighbour.
    assert "compiletimeout" not in fulltext.compile_query("torch.compile timeout").match


def test_an_index_made_before_the_joined_classes_learns_them_on_the_next_sync(tmp_path: Path) -> None:
    kb, db = build(tmp_path / "kb", runs())
    db.close()
    old = connect(index_path(kb.cache_path))  # as the kb before them left it: the class as words only
    old.execute("UPDATE fulltext SET failure = replace(failure, 'compiletimeout', '')")
    old.execute("UPDATE index_format SET format = 'older'")
    old.commit()
    old.close()
    stale = connect(index_path(kb.cache_path))
    assert ids(find(stale, "compile timeout")) == [RUNTIME, COMPILE]  # the joined word is not there yet
    sync(kb)  # an index of another format is built again
    assert ids(find(connect(index_path(kb.cache_path)), "compile timeout")) == [COMPILE, RUNTIME]


def test_an_entry_whose_file_went_before_the_upgrade_leaves_the_index_with_it(tmp_path: Path) -> None:
    kb, db = build(tmp_path / "kb", runs())
    db.close()
    old = sqlite3.connect(index_path(kb.cache_path))
    old.execute("UPDATE index_format SET format = 'older'")
    old.commit()
    old.close()
    (kb.entries_path / f"{RUNTIME}.md").unlink()  # gone before the upgrade: a git pull, say
    sync(kb)  # an index of another format is built again
    upgraded = connect(index_path(kb.cache_path))
    assert ids(find(upgraded, "timeout")) == [COMPILE]  # before: the runtime one stayed
