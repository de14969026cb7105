"""The benchmark generator: valid, canonical, deterministic and varied knowledge bases."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from bench.generate import BLOCK, generate
from kb.errors import Problem
from kb.model import frontmatter
from kb.model import validation as schema
from kb.model.entry import Entry
from kb.model.ids import is_valid_id
from kb.model.taxonomy import FAILURE_CLASSES, KINDS
from kb.store.knowledge_base import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent
COUNT = 300
BACKENDS = {"cuda", "rocm", "neuron", "tpu", "xla", "mps", "cpu"}


def files(kb: KnowledgeBase) -> dict[str, bytes]:
    return {str(path.relative_to(kb.entries_path)): path.read_bytes() for path in kb.iter_entry_paths()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, list[Entry], list[Problem]]:
    kb = generate(tmp_path_factory.mktemp("generated") / "kb", COUNT, seed=0, workers=1)
    problems: list[Problem] = []
    return kb, list(kb.iter_entries(problems)), problems


@pytest.fixture(scope="module")
def entries(generated: tuple[KnowledgeBase, list[Entry], list[Problem]]) -> list[Entry]:
    return generated[1]


def test_every_file_reads(generated: tuple[KnowledgeBase, list[Entry], list[Problem]]) -> None:
    kb, entries, problems = generated
    assert problems == []
    assert len(entries) == COUNT
    assert (kb.root / "kb.toml").is_file()


def test_files_are_what_kb_writes(entries: list[Entry]) -> None:
    # The generator writes front matter without PyYAML's representer; reading and writing back must change no byte.
    for entry in entries:
        assert entry.serialise() == entry.path.read_text("utf-8"), entry.path


def test_ids_are_unique_valid_and_name_their_files(entries: list[Entry]) -> None:
    ids = [entry.id for entry in entries]
    assert len(set(ids)) == len(ids)
    for entry in entries:
        assert is_valid_id(entry.id)
        assert entry.path.stem == entry.id
        assert entry.id.startswith(entry.recorded[:10])


def test_some_entries_live_in_year_folders(generated: tuple[KnowledgeBase, list[Entry], list[Problem]]) -> None:
    kb, entries, _ = generated
    nested = [entry for entry in entries if entry.path.parent != kb.entries_path]
    assert 0.03 * COUNT < len(nested) < 0.2 * COUNT
    assert all(entry.path.parent.name == entry.recorded[:4] for entry in nested)


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    first = files(generate(tmp_path / "a", COUNT, seed=7, workers=1))
    assert first == files(generate(tmp_path / "b", COUNT, seed=7, workers=1))
    assert first != files(generate(tmp_path / "c", COUNT, seed=8, workers=1))


def test_worker_processes_do_not_change_the_bytes(tmp_path: Path) -> None:
    count = BLOCK + 20  # two blocks, one per worker
    serial = files(generate(tmp_path / "serial", count, seed=3, workers=1))
    assert len(serial) == count
    assert serial == files(generate(tmp_path / "parallel", count, seed=3, workers=2))


def test_the_mix_has_every_kind_backend_and_status(entries: list[Entry]) -> None:
    kinds = Counter(entry.kind for entry in entries)
    assert set(kinds) == set(KINDS)
    assert kinds["run"] > 0.75 * COUNT
    assert {entry.data.get("backend") for entry in entries} - {None} == BACKENDS
    statuses = Counter(entry.status for entry in entries if entry.kind == "run")
    assert set(statuses) == {"completed", "failed", "interrupted", "killed"}
    assert statuses["completed"] > statuses["failed"] > 0


def test_failures_carry_a_class_and_a_message(entries: list[Entry]) -> None:
    failed = [entry for entry in entries if entry.status == "failed"]
    assert failed
    for entry in failed:
        assert entry.get("failure.class") in FAILURE_CLASSES
        assert entry.get("failure.message")
        assert entry.get("failure.evidence").startswith("output.log:")
    assert len({entry.get("failure.class") for entry in failed}) >= 6
    assert any(entry.get("failure.explanation") for entry in failed)
    assert all(entry.status == "completed" for entry in entries if entry.kind == "run" and "failure" not in entry.data)


def test_graph_compiler_backends_fail_at_compile_time_more_often(tmp_path: Path) -> None:
    kb = generate(tmp_path / "kb", 1500, seed=1, workers=1)
    by_backend: dict[str, Counter[str]] = {}
    for entry in kb.iter_entries():
        if entry.status == "failed":
            by_backend.setdefault(entry.data["backend"], Counter())[entry.get("failure.class")] += 1

    def share(backend: str) -> float:
        classes = by_backend[backend]
        return (classes["compile_timeout"] + classes["unsupported_op"]) / sum(classes.values())

    assert share("neuron") > 2 * share("cuda")
    assert by_backend["cuda"].most_common(1)[0][0] == "oom"


def test_reported_entries_name_their_source(entries: list[Entry]) -> None:
    reports = [entry for entry in entries if entry.kind == "report"]
    assert reports
    for entry in reports:
        assert entry.get("provenance.source") == "reported"
        assert entry.get("provenance.publisher")
        assert entry.get("provenance.url").startswith("https://")
    runs = [entry for entry in entries if entry.kind == "run"]
    assert {entry.get("provenance.source") for entry in runs} == {"measured", "imported"}


def test_versions_stay_text(entries: list[Entry]) -> None:
    torches = set()
    for entry in entries:
        for name, value in entry.data.get("versions", {}).items():
            assert isinstance(value, str), (entry.path, name, value)
        if "torch" in entry.data.get("versions", {}):
            torches.add(entry.data["versions"]["torch"])
    assert any(version.startswith("2.10.") for version in torches)
    assert "2.1" not in torches  # 2.10 read as a float would print as 2.1
    rocm = {entry.get("versions.rocm") for entry in entries} - {None}
    assert rocm and rocm <= {"6.2", "6.2.4", "6.3", "6.4", "7.0"}


def test_versions_move_along_the_dates(tmp_path: Path) -> None:
    early = generate(tmp_path / "early", 200, seed=2, start=date(2025, 1, 1), days=30, workers=1)
    late = generate(tmp_path / "late", 200, seed=2, start=date(2026, 11, 1), days=30, workers=1)

    def torch_minors(kb: KnowledgeBase) -> set[str]:
        return {
            ".".join(entry.get("versions.torch").split(".")[:2])
            for entry in kb.iter_entries()
            if entry.kind == "run" and entry.data["backend"] == "cuda"
        }

    assert torch_minors(early) <= {"2.5", "2.6"}
    assert "2.13" in torch_minors(late)
    neuronx = {entry.get("versions.torch-neuronx") for entry in late.iter_entries()} - {None}
    assert neuronx <= {"2.13.3.0", "2.14.3.0", "2.9.0.2.15.1"}


def test_links_point_back_to_existing_entries(entries: list[Entry]) -> None:
    recorded = {entry.id: entry.recorded for entry in entries}
    roles = Counter()
    for entry in entries:
        for role, target in entry.data.get("links", {}).items():
            roles[role] += 1
            for linked in target if isinstance(target, list) else [target]:
                assert linked in recorded, (entry.id, role, linked)
                assert recorded[linked] <= entry.recorded
    assert roles["rerun_of"] and roles["evidence"]


def test_runs_carry_the_fields_searches_filter_on(entries: list[Entry]) -> None:
    runs = [entry for entry in entries if entry.kind == "run"]
    for entry in runs:
        assert entry.get("workload.name") and entry.get("workload.task") in ("training", "inference")
        assert entry.data["mode"] in ("eager", "compiled")
        assert 1 <= entry.get("settings.devices") <= 64
        assert entry.get("timings.wall_s") > 0
        assert entry.get("metrics.peak_memory_gb.better") == "lower"
    completed = [entry for entry in runs if entry.status == "completed"]
    assert all(
        entry.get("metrics.tokens_per_s.better") == "higher" or entry.get("metrics.samples_per_s.better") == "higher"
        for entry in completed
    )
    compiles = {"cold": [], "cached": []}
    for entry in runs:
        if entry.get("timings.compile_s") is not None:
            compiles[entry.get("settings.compile_cache")].append(entry.get("timings.compile_s"))
    assert statistics.median(compiles["cold"]) > 3 * statistics.median(compiles["cached"])
    assert len({tag for entry in entries for tag in entry.data.get("tags", [])}) > 20
    assert all(entry.get("hardware.accelerators") for entry in runs if entry.data["backend"] != "cpu")


def test_bodies_range_from_one_line_to_pages_of_notes(entries: list[Entry]) -> None:
    sizes = sorted(len(entry.body.encode()) for entry in entries)
    assert sizes[0] < 200
    assert sizes[-1] > 5000
    outputs = [entry for entry in entries if "## Output" in entry.body]
    assert outputs and all("```text\n" in entry.body for entry in outputs)
    assert any("## Adaptations" in entry.body for entry in entries)
    failed_logs = [entry for entry in outputs if entry.status == "failed"]
    assert failed_logs
    assert all(entry.get("failure.message").splitlines()[-1] in entry.body for entry in failed_logs)


def test_count_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate(tmp_path / "kb", -1)
    assert files(generate(tmp_path / "empty", 0)) == {}


def test_command_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.generate", str(tmp_path / "kb"), "--count", "25", "--seed", "4"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert "25 entries" in result.stdout and " s" in result.stdout
    assert len(list(KnowledgeBase(tmp_path / "kb").iter_entry_paths())) == 25


def test_typing_while_building_gives_what_typing_afterwards_gives(
    generated: tuple[KnowledgeBase, list[Entry], list[Problem]],
) -> None:
    """Entries are typed by the schema as their front matter is built; upgrade steps see it untyped and type it
    after: the two must agree on every generated entry."""
    kb = generated[0]
    for path in kb.iter_entry_paths():
        text = path.read_text("utf-8")
        typed = frontmatter.load(text, path, schema.entry_plan()).data
        afterwards = schema.coerce_entry(frontmatter.load(text, path).data)
        assert json.dumps(typed) == json.dumps(afterwards)  # as JSON: 1, 1.0 and True differ


def test_a_cached_base_is_the_generated_one_and_is_copied_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh = files(generate(tmp_path / "fresh", 120, seed=4, workers=1))
    assert files(generate(tmp_path / "first", 120, seed=4, workers=1, cache=cache)) == fresh
    (kept,) = cache.iterdir()
    marked = next(path for path in sorted(kept.rglob("*.md")))
    marked.write_bytes(marked.read_bytes() + b"\nfrom the cache\n")
    again = files(generate(tmp_path / "again", 120, seed=4, workers=1, cache=cache))
    assert again[str(marked.relative_to(kept))].endswith(b"from the cache\n")
    assert files(generate(tmp_path / "other", 120, seed=5, workers=1, cache=cache)) != fresh
    assert len(list(cache.iterdir())) == 2
