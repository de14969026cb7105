"""The board's verdicts stand on repeated runs, the newest release and a baseline that holds.

A knowledge base of hand-written entries for what no run here can produce (other backends, releases, a busy
machine, a NaN loss): repeated noisy runs, a winner that breaks on the newest release, a numerics-failed
incumbent, no incumbent at all, a baseline alone in its configuration, a compiled cell against an eager baseline.
"""

from __future__ import annotations

import sys

import pytest
from conftest import json_data, run_kb, write_entry

from kb.answers import figures
from kb.store.knowledge_base import KnowledgeBase

SEQUENCE = iter(range(1, 10_000))


def run(kb: KnowledgeBase, workload: str, backend: str, mode: str, rate: float | None, **fields) -> str:
    """A run recorded one minute after the one before (so that order is the order of writing)."""
    n = next(SEQUENCE)
    entry_id = f"2026-11-01-{workload}-{backend}-{n:06d}"
    fields.setdefault("status", "completed")
    fields.setdefault("settings", {"batch": 8})
    if rate is not None:
        fields.setdefault("metrics", {"tokens_per_s": {"value": rate, "unit": "tokens/s"}})
    write_entry(kb, entry_id, recorded=f"2026-11-01T{n // 60:02d}:{n % 60:02d}:00Z", backend=backend, mode=mode,
                workload={"name": workload}, **fields)  # fmt: skip
    return entry_id


def cuda(version: str = "2.10.0") -> dict:
    return {"torch": version}


def neuron(version: str) -> dict:
    return {"torch": "2.10.0", "torch-neuronx": version}


PASSED = {"verdict": "pass"}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("verdicts") / "knowledge-base")
    # lm: the baseline, five quiet runs, and two on a busy machine far below them.
    for rate in (1000.0, 1010.0, 990.0, 1005.0, 995.0):
        run(kb, "lm", "cuda", "eager", rate, versions=cuda())
    for rate in (100.0, 120.0):
        run(kb, "lm", "cuda", "eager", rate, versions=cuda(), hardware={"load": {"busy": True}})
    # xpu: three times as fast, but only ever measured on a busy machine.
    for rate in (3000.0, 3100.0, 2900.0):
        run(kb, "lm", "xpu", "eager", rate, versions=cuda(), numerics=PASSED, hardware={"load": {"busy": True}})
    # xla: noisy from run to run (1,649 to 8,668 as seen on a shared machine): no verdict either way.
    for rate in (1649.0, 8668.0, 900.0):
        run(kb, "lm", "xla", "compiled", rate, numerics=PASSED, versions={"torch": "2.10.0", "torch-xla": "2.10.0"})
    # tpu: twice as fast, once: too few runs to call it.
    checked = {"verdict": "pass", "compared": "loss curve", "reference": "eager-loss.txt", "rtol": 0.05}
    run(kb, "lm", "tpu", "compiled", 2000.0, numerics=checked, versions={"torch-xla": "2.10.0"})
    # neuron: x2.1 on 2.26.0, then both runs on 2.27.1 fail to compile.
    for rate in (2100.0, 2150.0, 2080.0):
        run(kb, "lm", "neuron", "compiled", rate, numerics=PASSED, versions=neuron("2.26.0+b1"))
    for _ in range(2):
        run(kb, "lm", "neuron", "compiled", None, status="failed", versions=neuron("2.27.1"),
            failure={"class": "compile_error", "message": "neuronx-cc exited 70"})  # fmt: skip
    # rocm: equivalent to the baseline within the floor.
    for n, rate in enumerate((1001.0, 1003.0, 999.0, 1000.0, 1002.0)):  # by two people on three hosts
        run(kb, "lm", "rocm", "eager", rate, numerics=PASSED, versions=cuda(), author=("ana", "bo")[n % 2],
            hardware={"hostname": f"host{n % 3}"})  # fmt: skip
    # mps: faster by far, but its loss became NaN.
    for rate in (10568.0, 10600.0, 10500.0):
        run(kb, "lm", "mps", "compiled", rate, versions=cuda(),
            metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"},
                     "loss": {"value": None, "nonfinite": "nan", "step": 5}})  # fmt: skip
    # gpt: the incumbent's newest run failed numerics; the other backend is compiled.
    for rate in (500.0, 510.0, 505.0):
        run(kb, "gpt", "cuda", "eager", rate, numerics=PASSED, versions=cuda())
    run(kb, "gpt", "cuda", "eager", 520.0, numerics={"verdict": "fail"}, versions=cuda(),
        failure={"class": "numerical_mismatch"})  # fmt: skip
    for rate in (800.0, 810.0, 790.0):
        run(kb, "gpt", "neuron", "compiled", rate, numerics=PASSED, versions=neuron("2.26.0"))
    # alone: nothing else was measured with batch 256 in fp16.
    for rate in (100.0, 101.0, 99.0):
        run(kb, "alone", "cuda", "eager", rate, settings={"batch": 256, "dtype": "fp16"}, versions=cuda())
    run(kb, "alone", "neuron", "compiled", 300.0, settings={"batch": 8, "dtype": "bf16"}, numerics=PASSED,
        versions=neuron("2.26.0"))  # fmt: skip
    return kb


def board(kb: KnowledgeBase, *args: str) -> dict:
    result = run_kb("--kb", str(kb.root), "board", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def cells(data: dict, workload: str) -> dict[str, dict]:
    (found,) = [w for w in data["workloads"] if w["workload"] == workload]
    return {cell["label"]: cell for cell in found["cells"]} | {"": found}


def test_a_cell_is_the_median_of_its_repeats_with_n_spread_and_an_interval(evidence: KnowledgeBase) -> None:
    lm = cells(board(evidence, "--incumbent", "cuda"), "lm")
    base = lm["cuda · eager"]
    # The busy runs are kept out and counted: the median of the five quiet ones.
    assert base["figure"]["value"] == 1000.0 and base["n"] == 5 and base["busy"] == 2
    assert base["spread"] == [990.0, 1010.0] and base["release"] == "torch 2.10.0"
    assert base["evidence_date"] == "2026-11-01"
    xla = lm["xla · compiled"]["comparison"]
    assert xla["verdict"] == "inconclusive" and xla["n"] == 3 and xla["n_base"] == 5
    assert xla["low"] < 1 - xla["floor"] < xla["high"]  # the interval straddles the floor
    numerics = {c["question"]: c for c in lm["tpu · compiled"]["checklist"]}["numerics agree with a reference"]
    assert numerics["ok"] is True and numerics["detail"] == "loss curve against eager-loss.txt, rtol 0.05"
    tpu = lm["tpu · compiled"]["comparison"]
    assert tpu["verdict"] == "inconclusive" and tpu["ratio"] == 2.0 and tpu["low"] is None
    rocm = lm["rocm · eager"]["comparison"]
    assert rocm["verdict"] == "equivalent" and 0.98 <= rocm["low"] <= rocm["high"] <= 1.02
    # The newest run's author on its host ran it once: no interval to call the others' runs a reproduction.
    assert lm["rocm · eager"]["reproduction"] == (
        "reproduction by 2 people on 3 hosts undecided, inconclusive ×0.999 (n=4 vs 1, floor 2%; too few runs: 3 "
        "on each side give an interval)"
    )
    assert lm["cuda · eager"]["reproduction"] == "not reproduced"
    busy = lm["xpu · eager"]
    assert busy["figure"]["value"] == 3000.0 and busy["busy_only"] and busy["busy"] == 3
    assert busy["comparison"]["verdict"] == "inconclusive"
    assert busy["comparison"]["reason"] == "runs on a busy machine decide nothing"


def test_a_winner_that_fails_on_the_newest_release_is_not_the_answer(evidence: KnowledgeBase) -> None:
    lm = cells(board(evidence, "--incumbent", "cuda"), "lm")
    broken = lm["neuron · compiled"]
    assert broken["current_failure"] == "fails on torch-neuronx 2.27.1: compile_error ×2"
    assert broken["history"] == "passed on 2.26.0 at ×2.1" and broken["speedup"] is None
    assert broken["note"] == "fails on torch-neuronx 2.27.1: compile_error ×2; passed on 2.26.0 at ×2.1"
    # The NaN loss fails numerics whatever the check said: a speed-up of zero, never a winner.
    nan = lm["mps · compiled"]
    assert nan["numerics"] == "failed" and nan["speedup"] == 0.0
    assert nan["numerics_note"] == "loss became NaN at step 5"
    assert not lm[""]["best"].startswith(("neuron", "mps")), lm[""]["best"]
    text = run_kb("--kb", str(evidence.root), "board", "--incumbent", "cuda", "--workload", "lm").stdout
    words = " ".join(text.split())
    assert "fails on torch-neuronx 2.27.1: compile_error ×2; passed on 2.26.0 at ×2.1" in words
    assert "numerics failed: loss became NaN at step 5" in words
    assert "5 runs, 990 to 1,010; torch 2.10.0, 2026-11-01; 2 busy kept out" in words
    assert max(len(line) for line in text.splitlines()) <= 80


def test_missing_tells_not_run_from_run_and_failed(evidence: KnowledgeBase) -> None:
    run_kb("--kb", str(evidence.root), "release", "torch-xla", "2.11.0")
    try:
        lm = cells(board(evidence, "--incumbent", "cuda"), "lm")
        checks = {c["question"]: c for c in lm["xla · compiled"]["checklist"]}
        assert checks["evidence newer than the latest release"]["detail"].startswith("not run on torch-xla 2.11.0")
        broken = {c["question"]: c for c in lm["neuron · compiled"]["checklist"]}
        said = broken["evidence newer than the latest release"]["detail"]
        assert said.startswith("run on torch-neuronx 2.27.1 and failed: compile_error ×2"), said
    finally:
        for path in evidence.entries_path.glob("*release*"):
            path.unlink()


def test_a_numerics_failed_incumbent_is_no_baseline_and_modes_are_named(evidence: KnowledgeBase) -> None:
    gpt = cells(board(evidence, "--incumbent", "cuda"), "gpt")
    assert gpt[""]["baseline"] == "neuron · compiled"
    assert gpt[""]["baseline_reason"] == (
        "the incumbent cuda: its newest run on torch 2.10.0 failed numerics; guessed: most completed runs"
    )
    assert gpt["cuda · eager"]["numerics"] == "failed" and gpt["cuda · eager"]["speedup"] == 0.0
    lm = cells(board(evidence, "--incumbent", "cuda"), "lm")
    # The fastest failed numerics: nothing beats the baseline with numerics checked.
    assert (
        lm[""]["best"]
        == "nothing beats cuda · eager with numerics checked (fastest: mps · compiled ×10.6, numerics failed)"
    )


def test_without_an_incumbent_the_first_line_says_what_was_guessed(evidence: KnowledgeBase) -> None:
    data = board(evidence)
    assert data["guessed"].startswith("No incumbent: each workload's baseline is guessed")
    assert "kb init --incumbent BACKEND" in data["guessed"]
    text = run_kb("--kb", str(evidence.root), "board").stdout
    assert text.startswith("No incumbent: each workload's baseline is guessed")
    assert "kb init --incumbent" not in run_kb("--kb", str(evidence.root), "board", "--incumbent", "cuda").stdout


def test_the_baseline_is_fastest_only_when_another_cell_was_comparable(evidence: KnowledgeBase) -> None:
    alone = cells(board(evidence, "--incumbent", "cuda"), "alone")
    assert alone[""]["best"] == "nothing else measured in the baseline's configuration (batch 256, dtype fp16)"
    assert alone["neuron · compiled"]["verdict"] == "not comparable: batch 256 vs 8, dtype fp16 vs bf16"


def test_the_floor_comes_from_kb_toml(evidence: KnowledgeBase) -> None:
    config = evidence.root / "kb.toml"
    saved = config.read_text()
    try:
        config.write_text(saved.replace("floor = 0.02", "floor = 0.0001"))
        rocm = cells(board(evidence, "--incumbent", "cuda"), "lm")["rocm · eager"]["comparison"]
        assert rocm["floor"] == 0.0001 and rocm["verdict"] != "equivalent"
    finally:
        config.write_text(saved)


def test_a_non_finite_figure_is_a_numerics_failure_with_its_step() -> None:
    assert figures.nonfinite({"metrics": {"loss": {"value": float("nan"), "step": 5}}}) == "loss became NaN at step 5"
    assert figures.nonfinite({"metrics": {"loss": {"value": ".inf"}}}) == "loss became infinite"
    assert figures.nonfinite({"numerics": {"nan": 3}}) == "non-finite values in the checked outputs: nan 3"
    assert figures.numerics({"numerics": {"verdict": "pass"}, "metrics": {"loss": {"value": float("inf")}}}) == "failed"
    assert figures.headline({"metrics": {"tokens_per_s": {"value": float("nan")}}}) is None
    assert figures.nonfinite({"metrics": {"loss": {"value": 2.5, "step": 5}}}) == ""


def test_kb_init_records_the_incumbent_by_option_or_on_a_terminal(tmp_path) -> None:
    from conftest import run_kb_in_terminal

    made = run_kb("init", str(tmp_path / "given"), "--incumbent", "cuda eager")
    assert made.returncode == 0 and "Incumbent: cuda eager" in made.stdout, made.stderr
    assert KnowledgeBase(tmp_path / "given").config.answers.incumbent == "cuda eager"
    code, said = run_kb_in_terminal(
        "init", str(tmp_path / "asked"), answer=lambda shown: b"neuron\r" if b"incumbent" in shown else None
    )
    assert code == 0 and b"Incumbent: neuron" in said, said
    assert KnowledgeBase(tmp_path / "asked").config.answers.incumbent == "neuron"
    # Without a terminal nothing is asked, and the board will say what it guessed.
    quiet = run_kb("init", str(tmp_path / "quiet"))
    assert "Incumbent: not set" in quiet.stdout and KnowledgeBase(tmp_path / "quiet").config.answers.incumbent == ""


def test_kb_record_repeat_makes_the_runs_one_cell_of_n(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    script = (
        "import json, os, random\n"
        "path = os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl')\n"
        "line = dict(event='metric', name='tokens_per_s', value=1000 + random.random(), unit='tokens/s')\n"
        "open(path, 'a').write(json.dumps(line) + '\\n')\n"
    )
    made = run_kb("--kb", str(kb.root), "record", "--repeat", "3", "--workload", "lm", "--backend", "cpu",
                  "--mode", "eager", "--", sys.executable, "-c", script)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert [line for line in made.stderr.splitlines() if "(run 3 of 3, repeat-" in line], made.stderr
    groups = {tag for entry in kb.iter_entries([]) for tag in entry.data.get("tags") or []}
    assert len(groups) == 1 and next(iter(groups)).startswith("repeat-")
    eager = cells(board(kb), "lm")["cpu · eager"]
    assert eager["n"] + eager["busy"] == 3 and 1000 <= eager["figure"]["value"] <= 1001
    refused = run_kb("--kb", str(kb.root), "record", "--repeat", "2", "--workload", "lm", "--no-edit")
    assert refused.returncode == 1 and "--repeat runs a command again" in refused.stderr


def test_the_checklist_reads_the_evidence(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    home = ("--kb", str(kb.root))
    after = ("record", "--workload", "lm", "--backend", "cpu", "--setting", "batch=8", "--metric",
             "tokens_per_s=1000tokens/s")  # fmt: skip
    # Recorded after the fact: its versions are this machine's now, not the run's.
    assert run_kb(*home, *after, "--mode", "eager", "--no-edit").returncode == 0
    # Adaptations given as options, and written under the editor template's heading.
    given = run_kb(*home, *after, "--mode", "compiled", "--no-edit", "--adaptation", "patched rotary embedding")
    assert given.returncode == 0, given.stderr
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\npath = sys.argv[1]\ntext = open(path).read()\n"
        "open(path, 'w').write(text.replace('## Adaptations\\n', '## Adaptations\\n\\nreplaced flash attention\\n'))\n"
    )
    written = run_kb(*home, *after, "--mode", "xla", "--edit", env={"EDITOR": f"{sys.executable} {editor}"})
    assert written.returncode == 0, written.stderr
    write_entry(kb, "2026-11-01-lm-junit-000001", kind="coverage", recorded="2026-11-01T00:00:00Z", backend="cpu",
                workload={"name": "lm"}, coverage={"passed": 2, "skipped": 0, "total": 4})  # fmt: skip
    lm = cells(board(kb), "lm")
    checks = {
        mode: {c["question"]: c for c in lm[f"cpu · {mode}"]["checklist"]} for mode in ("eager", "compiled", "xla")
    }
    versions = checks["eager"]["settings and versions recorded"]
    assert versions["ok"] is False and "recording machine's" in versions["detail"]
    assert checks["compiled"]["adaptations recorded"]["ok"] is True
    assert checks["compiled"]["adaptations recorded"]["detail"] == "1 adaptation"
    assert checks["xla"]["adaptations recorded"]["ok"] is True
    assert checks["eager"]["adaptations recorded"]["ok"] is False
    tested = checks["eager"]["test coverage disclosed"]
    assert tested["ok"] is True and tested["detail"] == "2 passed, 0 skipped of 4 (50% pass)"
    text = run_kb(*home, "board").stdout
    assert "test coverage on cpu: 2 passed, 0 skipped of 4 (50% pass)" in text


def test_the_summary_gives_each_backend_on_one_line(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for workload, speedup in (("w1", 2.0), ("w2", 1.5), ("w3", 3.0)):
        for rate in (1000.0, 1010.0, 990.0):
            run(kb, workload, "cuda", "eager", rate, versions=cuda())
            run(kb, workload, "neuron", "compiled", rate * speedup, numerics=PASSED, versions=neuron("2.26.0"),
                tags=["warm"], timings={"compile_s": 30.0})  # fmt: skip
        run(kb, workload, "neuron", "compiled", None, status="failed", versions=neuron("2.26.0"),
            failure={"class": "compile_error"})  # fmt: skip
    result = run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["label"]: row for row in json_data(result.stdout)["rows"]}
    neuron_row = rows["neuron · compiled"]
    assert (neuron_row["completed"], neuron_row["tried"], neuron_row["counted"]) == (9, 12, 3)
    assert neuron_row["geomean"] == pytest.approx((2.0 * 1.5 * 3.0) ** (1 / 3), rel=1e-3)
    assert neuron_row["low"] < neuron_row["geomean"] < neuron_row["high"]
    assert neuron_row["warm_compile_s"] == 30.0 and neuron_row["releases"] == ["torch-neuronx 2.26.0"]
    assert rows["cuda · eager"]["geomean"] is None  # the baseline has no speed-up over itself
    text = run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda").stdout
    assert "neuron · compiled" in text and "×2.08 [" in text and max(len(line) for line in text.splitlines()) <= 80


CUDA_SYNC = {"device_sync": "torch.cuda.synchronize"}
LAUNCH = {"device_sync": "none: this backend offers kb no way to wait for the device: launch times"}


def test_launch_times_are_shown_and_never_ranked_against_device_times(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    xla = {"torch": "2.9.0", "torch-xla": "2.9.0"}
    # A run that did wait, older than the cell's newest: the cell's figure is one kind of time, never a mixture.
    run(kb, "queued", "xla", "compiled", 900.0, numerics=PASSED, versions=xla, timings={"device_sync": "xm.wait"})
    for rate in (1000.0, 1010.0, 990.0):
        run(kb, "queued", "cuda", "eager", rate, numerics=PASSED, versions=cuda(), timings=CUDA_SYNC)
        run(kb, "queued", "rocm", "eager", rate * 1.5, numerics=PASSED, versions=cuda(), timings=CUDA_SYNC)
        # Nothing waited for the XLA device: each step's time is its launch, fifty times "faster".
        run(kb, "queued", "xla", "compiled", rate * 50, numerics=PASSED, versions=xla, timings=LAUNCH)
    for rate in (1000.0, 1010.0, 990.0):  # alone with a launch-time cell, the baseline is not the fastest
        run(kb, "lone", "cuda", "eager", rate, numerics=PASSED, versions=cuda(), timings=CUDA_SYNC)
        run(kb, "lone", "xla", "compiled", rate * 50, numerics=PASSED, versions=xla, timings=LAUNCH)
    data = board(kb, "--incumbent", "cuda")
    lone = cells(data, "lone")[""]["best"]
    assert lone == "nothing else timed on the device (xla · compiled: launch times: not ranked)", lone
    queued = cells(data, "queued")
    launched = queued["xla · compiled"]
    assert launched["verdict"] == "launch times: not ranked" and launched["launch_times"] is True
    assert launched["figure"]["value"] == 50000.0 and launched["n"] == 3  # shown, with its footing
    assert launched["comparison"] is None and launched["ratio"] is None and launched["speedup"] is None
    assert queued[""]["best"].startswith("rocm · eager: ×1.5 over cuda · eager"), queued[""]["best"]
    # An incumbent timed at launch is no baseline either.
    named = cells(board(kb, "--incumbent", "xla"), "queued")
    assert named[""]["baseline"] == "cuda · eager"
    assert named[""]["baseline_reason"].startswith("the incumbent xla: its figures are launch times")
    summary = run_kb("--kb", str(kb.root), "board", "--summary", "--incumbent", "cuda", "--json")
    rows = {row["label"]: row for row in json_data(summary.stdout)["rows"]}
    assert rows["xla · compiled"]["geomean"] is None and rows["xla · compiled"]["counted"] == 0
    text = run_kb("--kb", str(kb.root), "board", "--incumbent", "cuda").stdout
    assert "launch times: not ranked" in text and max(len(line) for line in text.splitlines()) <= 80
