"""The entry format: lossless round trips, scalars kept as written, errors that name file, line and field."""

from __future__ import annotations

import math
import os
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.errors import EntryError
from kb.model import frontmatter
from kb.model import validation as schema
from kb.model.entry import Entry, new_entry

DATA = Path(__file__).parent / "data" / "entries"
GOOD = sorted((DATA / "good").glob("*.md"))
BAD = sorted((DATA / "bad").glob("*.md"))


def same(a: object, b: object) -> bool:
    """Equality that counts NaN equal to NaN, as a round trip must."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=False))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_entries_round_trip(path: Path) -> None:
    first = Entry.read(path)
    text = first.serialise()
    second = Entry.parse(text)
    assert same(first.data, second.data)
    assert second.body == first.body
    assert second.serialise() == text  # canonical text is a fixed point: rewriting changes no byte


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_entries_name_file_line_and_field(path: Path) -> None:
    with pytest.raises(EntryError) as caught:
        Entry.read(path)
    expected = path.with_suffix(".expected").read_text().splitlines()
    found = [str(problem).replace(str(path.parent) + "/", "") for problem in caught.value.problems]
    assert found == expected


def test_scalars_stay_as_written() -> None:
    entry = Entry.read(DATA / "good" / "2026-10-23-qwen3-32b-trn2-compiled-5e1c0a.md")
    assert entry.data["versions"] == {"torch-neuronx": "2.13.3.0", "torch": "2.10", "python": "3.11"}
    assert entry.data["settings"] == {"chips": 16, "dtype": "bf16", "lr": "0.10", "overlap": "no", "shard": "010"}
    assert entry.data["provenance"]["date"] == "2025-10-23"
    assert entry.data["custom_field"] == {"reviewed": "yes", "when": "2026-10-24"}  # unknown fields are kept
    assert entry.data["metrics"]["tokens_per_s"] == {"value": 14156, "unit": "tokens/s", "better": "higher"}
    assert "```text\n--- not a fence for front matter ---\n```" in entry.body


def test_special_floats_and_multiline_text_survive() -> None:
    entry = Entry.read(DATA / "good" / "2026-11-30-tiny-lm-eager-0a1b2c.md")
    assert math.isnan(entry.data["metrics"]["loss"]["value"])
    assert entry.data["metrics"]["best"]["value"] == -math.inf
    assert entry.data["failure"]["message"].endswith("\n(second line)")
    assert entry.data["timings"]["step_s"]["count"] == 180


def test_versions_written_by_kb_read_back_as_strings() -> None:
    entry = new_entry("2026-11-30-v-000000", "v", "note", versions={"torch": "2.10", "cuda": "12.0", "x": "010"})
    text = entry.serialise()
    assert "torch: '2.10'" in text and "x: '010'" in text
    assert Entry.parse(text).data["versions"] == {"torch": "2.10", "cuda": "12.0", "x": "010"}


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, width=64), st.text(max_size=40),
    st.sampled_from(["2.10", "no", "010", "2026-11-30", "1e5", "~", "null", "- x", "a: b", "'q'", "\t", "x\n y "]),
)  # fmt: skip
keys = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    extra=st.dictionaries(
        keys.filter(lambda k: k not in {"schema", "id", "title", "kind", "recorded"}), values, max_size=5
    ),
    body=st.text(max_size=200),
)
def test_round_trip_of_arbitrary_unknown_fields(extra: dict, body: str) -> None:
    entry = new_entry("2026-11-30-fuzz-000000", "fuzz", "note", recorded="2026-11-30T00:00:00Z")
    entry.data.update({f"x_{key}": value for key, value in extra.items()})
    entry.body = body
    text = entry.serialise()
    again = Entry.parse(text)
    assert same(again.data, entry.data)
    assert again.body == body
    assert again.serialise() == text


# Plain scalars YAML 1.1 would read as something else, and places the schema types differently: a number, a
# count, text, a value of mixed type, a list's item, a field it does not know. A `&` in a value (plain or quoted)
# makes the builder remember every node, as for an anchor: the other way of building.
PLAIN = ("2.10", "no", "010", "1e5", "1.0e5", "~", "null", "", "true", "False", ".inf", "-.5", "0x1f", "12", "+1",
         "1_000", "3.0", "2026-11-30", "abc", "-0", ".nan", "99999999999999999999999", "a&b", "'x & y'")  # fmt: skip
PLACES = ("timings:\n  wall_s: {}", "timings:\n  step_s:\n    count: {}", "metrics:\n  m:\n    value: {}",
          "settings:\n  k: {}", "versions:\n  torch: {}", "tags:\n  - {}", "hardware:\n  accelerators:\n"
          "    - name: {}\n      count: {}", "failure:\n  message: {}", "x_custom:\n  - a: {}")  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PLACES), st.lists(st.sampled_from(PLAIN), min_size=2, max_size=2)),
                min_size=1, max_size=5, unique_by=lambda pair: pair[0].split(":")[0]))  # fmt: skip
def test_typing_while_building_gives_what_typing_afterwards_gives(fields: list[tuple[str, list[str]]]) -> None:
    """Entries are typed by the schema as their front matter is built; an older entry's upgrade steps see it untyped
    and it is typed after them: both must give every plain scalar the same value."""
    front = "\n".join(place.format(*words) for place, words in fields)
    text = f"---\nschema: 1\nid: 2026-11-30-t-000000\n{front}\n---\n"
    typed = frontmatter.load(text, None, schema.entry_plan()).data
    assert same(typed, schema.coerce_entry(frontmatter.load(text).data))


@settings(max_examples=1500, deadline=None)
@given(st.text(max_size=400) | st.builds(lambda s: "---\n" + s + "\n---\n", st.text(max_size=300)))
def test_parser_only_ever_raises_entry_errors(text: str) -> None:
    try:
        Entry.parse(text, Path("fuzz.md"))
    except EntryError as exc:
        assert exc.problems and all(str(p).startswith("fuzz.md") for p in exc.problems)


def test_saving_an_unchanged_entry_changes_no_byte(kb) -> None:
    source = GOOD[0].read_text()  # written by hand: not kb's canonical layout
    path = kb.entries_path / GOOD[0].name
    path.write_text(source)
    before = path.stat().st_mtime_ns
    entry = Entry.read(path)
    assert kb.save(entry) is False
    assert path.read_text() == source and path.stat().st_mtime_ns == before
    entry.data["tags"].append("edited")
    assert kb.save(entry) is True
    assert Entry.read(path).data["tags"][-1] == "edited"


def test_the_fast_validator_is_made_once_and_then_imported(tmp_path: Path) -> None:
    # Making it takes about 0.13 s, paid by every command that reads an entry unless the cached file loads.
    probe = "from kb.model import validation; print(validation._fast_validator().__module__)"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    stamps = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
        assert done.stdout.startswith("kb_entry_validator_"), done.stdout + done.stderr
        made = list((tmp_path / "cache" / "kb" / "validators").glob("entry_v*.py"))
        assert len(made) == 1
        stamps.append((made[0].stat().st_ino, made[0].stat().st_mtime_ns))
    assert stamps[0] == stamps[1]  # made by the first only: the second imported it, and did not write it again


def test_a_last_field_ending_in_a_line_break_keeps_it() -> None:
    # Found by the round-trip test above: the front matter's last line lost its line break on reading.
    entry = new_entry("2026-11-30-fuzz-000000", "fuzz", "note", recorded="2026-11-30T00:00:00Z")
    entry.data["x_last"] = "0\n"
    assert entry.serialise().endswith("x_last: |\n  0\n---\n")
    assert Entry.parse(entry.serialise()).data["x_last"] == "0\n"


ALIASED = "---\nschema: 1\nid: 2026-11-30-alias-000000\ntitle: t\nkind: note\nrecorded: '2026-11-30T03:24:40Z'\n"


# A list's item is named by its own line, and an alias's line is its anchor's: such an item is found at the anchor.
@pytest.mark.parametrize(
    ("front", "line", "field"),
    [
        ("tags: [&a x, *a]\n", 7, "tags[1]"),  # a list's item
        ("settings:\n  a: &a 1\n  b:\n    c: *a\n", 10, "settings.b.c"),  # a nested value
        ("x_one: &a {k: [1, 2]}\nx_two: *a\n", 8, "x_two"),  # a whole mapping
        ("title2: 'a & b'\nx_list: &l [1]\nx_again: [*l]\n", 8, "x_again[0]"),  # an & in text too
    ],
)
def test_an_alias_is_refused_wherever_it_is(front: str, line: int, field: str) -> None:
    with pytest.raises(EntryError) as caught:
        Entry.parse(ALIASED + front + "---\n", Path("a.md"))
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (line, field)
    assert "anchors and aliases are not supported" in problem.message


def test_a_yaml_alias_bomb_is_refused_at_its_first_alias() -> None:
    # Each level names the one before nine times: expanded, 9**8 values.
    levels = ["x_l0: &l0 [lol]"] + [f"x_l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
    with pytest.raises(EntryError) as caught:
        Entry.parse(ALIASED + "\n".join(levels) + "\n---\n", Path("a.md"))
    assert [(p.line, p.field) for p in caught.value.problems] == [(7, "x_l1[0]")]


def test_more_values_than_an_entry_holds_are_refused() -> None:
    many = ", ".join(["1"] * (frontmatter.MAX_NODES + 1))
    with pytest.raises(EntryError) as caught:
        Entry.parse(f"{ALIASED}x_bulk: [{many}]\n---\n", Path("a.md"))
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (7, "x_bulk")
    assert f"more than {frontmatter.MAX_NODES} values" in problem.message
