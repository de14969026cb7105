"""A knowledge base holding every answer the CLI gives, for the site's answer pages and their browser tests.

Runs of one workload on cuda (torch 2.9.0, then slower on 2.10.0), neuron (torch-neuronx 2.26.0 completed,
2.27.1 once, then failed to compile), a numerics-failed xla run, a real `kb record` run, three decisions (one
made due by `kb release`, one by newer runs, one reviewed with `kb revisit --ack`) and an expectations.toml
with a passing and a failing bound. The decisions are dated before the release and the newer runs, so that
which is due never rests on a clock. Text that looks like markup is data throughout.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

WORKLOAD = "lm"
HOSTILE = "<b>neuronx-cc</b> exited 70"
XLA_FAILED = "2026-11-12-lm-xla-000012"
NEURON_OK = "2026-11-05-lm-neuron-000005"
NEURON_BROKEN = "2026-11-14-lm-neuron-000014"
EXPECTATIONS = """\
[[expect]]
workload = "lm"
backend = "cuda"
mode = "compiled"
figure = "numerics"

[[expect]]
workload = "lm"
backend = "neuron"
mode = "compiled"
figure = "compile_s"
max = 600
"""


def kb_ok(base: KnowledgeBase, *args: str) -> str:
    result = run_kb("--kb", str(base.root), *args, cwd=base.root.parent)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout + result.stderr


def _run(base: KnowledgeBase, day: int, backend: str, versions: dict[str, str], **fields) -> str:
    entry_id = f"2026-11-{day:02d}-lm-{backend}-{day:06d}"
    fields.setdefault("status", "completed")
    fields.setdefault("mode", "compiled")
    write_entry(base, entry_id, recorded=f"2026-11-{day:02d}T10:00:00Z", backend=backend, workload={"name": WORKLOAD},
                settings={"batch": 8}, versions={"torch": "2.10.0", **versions}, **fields)  # fmt: skip
    return entry_id


def _rate(value: float) -> dict[str, object]:
    return {"tokens_per_s": {"value": value, "unit": "tokens/s"}}


def make_base(root: Path) -> tuple[KnowledgeBase, dict[str, str]]:
    """The base at root/knowledge-base, and the ids the tests look for by name."""
    base, _ = KnowledgeBase.init(root / "knowledge-base")
    ids: dict[str, str] = {}
    for day, (torch, rate) in enumerate([("2.9.0", 16000.0)] * 3 + [("2.10.0", 12000.0)] * 3, start=1):
        ids[f"cuda{day}"] = _run(base, day, "cuda", {"torch": torch}, numerics={"verdict": "pass"},
                                 metrics=_rate(rate + day), timings={"compile_s": 40.0})  # fmt: skip
    for day in (7, 8, 5):
        _run(base, day, "neuron", {"torch-neuronx": "2.26.0"}, numerics={"verdict": "pass"}, metrics=_rate(9000 + day),
             timings={"compile_s": 500.0})  # fmt: skip
    _run(base, 10, "neuron", {"torch-neuronx": "2.27.1"}, numerics={"verdict": "pass"}, metrics=_rate(9100.0))
    for day in (13, 14):
        _run(base, day, "neuron", {"torch-neuronx": "2.27.1"}, status="failed",
             failure={"class": "compile_error", "message": HOSTILE})  # fmt: skip
    _run(base, 12, "xla", {"torch-xla": "2.10.0"}, numerics={"verdict": "fail"}, metrics=_rate(3170.0))
    (base.root / "expectations.toml").write_text(EXPECTATIONS)
    recorded = kb_ok(base, "record", "--workload", "w", "--backend", "cpu", "--", sys.executable, "-c", "print(1)")
    ids["recorded"] = re.search(r"recorded (\S+) \(completed\)", recorded)[1]
    for key, title, evidence, trigger in (
        ("released", "lm stays on CUDA <until> neuron compiles", [NEURON_OK, XLA_FAILED], "release: torch-neuronx"),
        ("newer", "lm keeps its CUDA baseline", [ids["cuda1"]], "newer-evidence"),
        ("reviewed", "lm neuron waits, reviewed", [NEURON_OK], "release: torch-neuronx"),
    ):
        ids[key] = f"2026-11-20-{key}-decision-{len(ids):06d}"
        decision = {"question": "Where?", "choice": "CUDA", "status": "accepted", "date": "2026-11-20",
                    "time": "2026-11-20T10:00:00Z", "triggers": [trigger]}  # fmt: skip
        write_entry(base, ids[key], title, kind="decision", recorded="2026-11-20T10:00:00Z",
                    links={"evidence": evidence}, decision=decision)  # fmt: skip
    kb_ok(base, "release", "torch-neuronx", "2.27.1", "--date", "2026-11-28")
    kb_ok(base, "revisit", "--ack", ids["reviewed"], "--note", "re-checked <2.27.1>: still failing", "--by", "Ana")
    for day in (25, 26):  # newer than the decisions: the newer-evidence trigger names both
        ids[f"newer{day}"] = _run(base, day, "cuda", {}, numerics={"verdict": "pass"}, metrics=_rate(12000.0 + day))
    return base, ids
