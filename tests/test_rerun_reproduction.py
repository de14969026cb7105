"""`kb rerun` by another author (or on another host) is a reproduction attempt: the new entry links the original, and
kb rerun prints the agreement verdict of kb's one rule, each side with its repeats (n, interval, floor); the
board's reproduction line counts the rerun."""

from __future__ import annotations

import sys

from conftest import json_data, run_kb, write_entry

from kb.answers import figures
from kb.answers.compare import agreement
from kb.index.db import connect, index_path
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

EMIT = (
    "import json, os\n"
    "print('step 1 done')\n"
    "with open(os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl'), 'a') as out:\n"
    "    out.write(json.dumps({'event': 'metric', 'name': 'tokens_per_s', 'value': 1000.0, 'unit': 'tokens/s'}))\n"
)


def author(name: str) -> dict[str, str]:
    """git's identity for one command, as a person's own configuration gives it."""
    return {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": name,
            "GIT_CONFIG_KEY_1": "user.email", "GIT_CONFIG_VALUE_1": f"{name}@example.org"}  # fmt: skip


def rate_run(kb: KnowledgeBase, n: int, rate: float, who: str, host: str, **fields) -> str:
    """A completed lm run on the CPU by `who` on `host` at `rate` tokens/s, recorded on day `n`: its id."""
    entry_id = f"2026-11-{n:02d}-lm-cpu-{n:06d}"
    write_entry(kb, entry_id, recorded=f"2026-11-{n:02d}T00:00:00Z", status="completed", backend="cpu",
                mode="eager", workload={"name": "lm"}, author=who, hardware={"hostname": host, "cpu": "x"},
                metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}}, **fields)  # fmt: skip
    return entry_id


def test_a_rerun_by_another_author_is_a_reproduction_attempt_with_its_verdict(kb: KnowledgeBase) -> None:
    recorded = run_kb("record", "--workload", "lm", "--backend", "cpu", "--mode", "eager", "--",
                      sys.executable, "-c", EMIT, env=author("ana"))  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    (original,) = kb.iter_entries()
    result = run_kb("rerun", "--yes", original.id, env=author("bo"))
    assert result.returncode == 0, result.stderr
    (again,) = [entry for entry in kb.iter_entries() if entry.id != original.id]
    assert again.data["links"] == {"rerun_of": original.id}
    assert (original.get("author"), again.get("author")) == ("ana <ana@example.org>", "bo <bo@example.org>")
    host = again.get("hardware.hostname")
    said = " ".join(result.stdout[result.stdout.index("reproduction attempt of") :].split())
    assert said == (
        f"reproduction attempt of {original.id} by bo <bo@example.org> on {host} (ana <ana@example.org> on {host} "
        "before): tokens_per_s undecided, inconclusive ×1 (n=1 vs 1, floor 2%; too few runs: 3 on each side give an "
        "interval)"
    )
    assert all(len(line) <= 80 for line in result.stdout.splitlines()[-3:])
    board = json_data(run_kb("board", "--workload", "lm", "--json").stdout)
    (cell,) = board["workloads"][0]["cells"]
    # A run on a busy machine is kept out of the figure (and so of its reproduction) beside a quiet one.
    if figures.busy(original.data) == figures.busy(again.data):
        # The board's reproduction line says what the rerun's agreement said.
        assert cell["reproduction"] == (
            "reproduction by 2 people on 1 host undecided, inconclusive ×1 (n=1 vs 1, floor 2%; too few runs: 3 on "
            "each side give an interval)"
        )
    else:
        assert cell["reproduction"] == "not reproduced (one author, one host)"


def test_each_side_stands_with_its_own_repeats(kb: KnowledgeBase) -> None:
    def run(n: int, rate: float, who: str, host: str, **fields) -> str:
        return rate_run(kb, n, rate, who, host, **fields)

    original = run(1, 1000.0, "ana", "a")
    ana = [run(2, 1010.0, "ana", "a"), run(3, 990.0, "ana", "a")]
    rerun = {"links": {"rerun_of": original}}
    bo = [run(4, 1500.0, "bo", "b", **rerun), run(5, 1490.0, "bo", "b", **rerun)]
    run(6, 5000.0, "cy", "c", **rerun)  # another person's attempt: a side of its own
    run(7, 1200.0, "ana", "a", **rerun)  # ana's own rerun is no repeat of the original
    newest = run(8, 1520.0, "bo", "b", **rerun)
    assert run_kb("index").returncode == 0
    db = connect(index_path(kb.cache_path))
    try:
        found = agreement(kb, db, kb.load(original), Entry.read(kb.entries_path / f"{newest}.md"))
    finally:
        db.close()
    assert found.original_runs == [original, *reversed(ana)] and found.rerun_runs == [newest, *reversed(bo)]
    assert found.verdict["verdict"] == "faster" and found.verdict["n"] == 3 and found.verdict["n_base"] == 3
    assert found.text().startswith(
        f"reproduction attempt of {original} by bo on b (ana on a before): tokens_per_s disagrees, faster ×1.5 "
        "(n=3 vs 3, 95% interval ×"
    )
    assert found.text().endswith(", floor 2%)")
