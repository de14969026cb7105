"""`kb rerun --json`: the one envelope, with the new entry's id and the agreement verdict of the reproduction
attempt (n, interval, floor); the command's own output goes to stderr so that stdout is the JSON alone."""

from __future__ import annotations

import json
import sys

from conftest import run_kb
from test_rerun_reproduction import EMIT, author

from kb.store.knowledge_base import KnowledgeBase


def test_rerun_json_gives_the_new_entry_and_its_agreement_verdict(kb: KnowledgeBase) -> None:
    recorded = run_kb("record", "--workload", "lm", "--backend", "cpu", "--mode", "eager", "--",
                      sys.executable, "-c", EMIT, env=author("ana"))  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    (original,) = kb.iter_entries()
    result = run_kb("rerun", "--yes", "--json", original.id, env=author("bo"))
    assert result.returncode == 0, result.stderr
    envelope = json.loads(result.stdout)  # the run's own output is not on stdout
    assert "step 1 done" in result.stderr
    assert (envelope["kb"], envelope["command"]) == (1, "rerun")
    data = envelope["data"]
    (again,) = [entry for entry in kb.iter_entries() if entry.id != original.id]
    assert (data["id"], data["rerun_of"], data["status"], data["exit_code"]) == (again.id, original.id, "completed", 0)
    agreement = data["agreement"]
    assert agreement["reproduction"] is True and agreement["figure"] == "tokens_per_s"
    assert (agreement["original_runs"], agreement["rerun_runs"]) == ([original.id], [again.id])
    verdict = agreement["verdict"]
    # One run a side: a ratio, no interval, and the floor it would be judged against.
    assert (verdict["verdict"], verdict["ratio"], verdict["n"], verdict["n_base"]) == ("inconclusive", 1.0, 1, 1)
    assert (verdict["low"], verdict["high"], verdict["floor"]) == (None, None, 0.02)
    assert agreement["text"].startswith(f"reproduction attempt of {original.id} by bo <bo@example.org>")
