"""Kills and signals at every stage of `kb record`: no entry is lost or corrupt, and each says how it ended.

Each round records tests/scripts/noisy_run.py (it marks its progress in a file of its own, hands kb a
metric and a file, writes a large log and exits 0 or 3) and sends SIGINT, SIGTERM or SIGKILL to kb or to
the command at a random moment within one stage of the recording (the stages in turn, so that every one
is aimed at; how long each lasts here is measured first). To know which stage the signal hit, the test
freezes kb and everything under it (SIGSTOP), reads the stage off the disk (is there an entry yet, what
status it has, how far the command got), sends the signal and lets them all go on (SIGCONT), kb first and
the command once kb has passed the signal on: a frozen process takes the signal exactly where it stopped,
so the stage seen is the stage hit.

Afterwards `kb check` (which settles entries whose kb died) must pass, every entry must load, no
temporary file may be left, the output log must hold the command's lines in order, and the status must
say what happened. KB_FAULT_ROUNDS sets the rounds per signal and target (default 4); KB_FAULT_SEED
replays a run; `pytest -s` prints the stages hit.
"""

from __future__ import annotations

import contextlib
import os
import random
import runpy
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from conftest import run_kb

from ingest.signals import SignalForwarder
from kb.model.entry import Entry
from kb.store.home import ENV_HOME
from kb.store.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads thread states from /proc")

PY = sys.executable
NOISY = Path(__file__).resolve().parent / "scripts" / "noisy_run.py"
LINES = 5_000  # 0.5 MB of output: copying it into output.log and scanning it at the end take a measurable time
NOISY_LINE = runpy.run_path(str(NOISY))["LINE"]  # the line format the command writes
ROUNDS = int(os.environ.get("KB_FAULT_ROUNDS", "4"))
SEED = int(os.environ.get("KB_FAULT_SEED") or random.randrange(1 << 32))
FINALISING_TRIES = 5  # a round that waits for the finalising stage may still find kb past it
ATOMIC_WRITE_TRIES = 10  # an atomic write lasts milliseconds: a round may miss it
EXIT_S = 120  # how long kb may take to end after the signal before the round counts as hung
FORWARD_S = 2.0  # how long a stopped command waits for the signal kb may pass on, before it is thawed anyway

STARTING = "kb starting, no entry yet"
BEFORE = "entry written, command not started"
RUNNING = "command running"
WRITING = "command writing output, kb copying it"
FINALISING = "command done, entry being finalised"
FINAL = "entry final, kb exiting"
EXITED = "kb already exited"
TIMELINE = (STARTING, BEFORE, RUNNING, WRITING, FINALISING)  # the stages a round aims at
STAGES = (*TIMELINE, FINAL, EXITED)  # the stages a signal can land in


@dataclass
class Round:
    number: int
    target: str  # "kb" or "command"
    signum: int
    exit_code: int  # what the command exits with when nothing stops it
    progress: Path
    known: set[Path] = field(default_factory=set)  # entry files there before the round
    kb_pid: int = 0
    stage: str = ""
    sent: bool = False
    in_atomic_write: bool = False  # a temporary file of an atomic write was on disk when the signal came
    status_after_exit: str | None = None  # the entry's status as kb left it, before any other kb command
    hung: bool = False
    command_outlived_kb: bool = False

    @property
    def title(self) -> str:
        return f"round {self.number}"

    @property
    def signame(self) -> str:
        return signal.Signals(self.signum).name


Wait = Callable[[KnowledgeBase, subprocess.Popen, Round], None]


@pytest.fixture(scope="module")
def timeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """Seconds each stage of one undisturbed recording lasts here: a round's kill time is drawn within one."""
    base, _ = KnowledgeBase.init(tmp_path_factory.mktemp("timeline") / "kb")
    plan = Round(0, "", 0, 0, base.root / "progress")
    proc = start_recording(base, plan, {**os.environ, ENV_HOME: str(base.root)})
    began, reached_at = time.monotonic(), {}
    while proc.poll() is None:
        for stage in TIMELINE[1:]:
            if stage not in reached_at and reached(stage, base, plan):
                reached_at[stage] = time.monotonic() - began
        time.sleep(0.001)
    assert proc.returncode == 0 and len(reached_at) == len(TIMELINE) - 1, proc.returncode
    starts = [0.0, *(reached_at[stage] for stage in TIMELINE[1:])]
    ends = [*starts[1:], time.monotonic() - began]
    return {stage: end - start for stage, start, end in zip(TIMELINE, starts, ends, strict=True)}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("target", ["kb", "command"])
def test_kills_at_every_stage_never_lose_or_corrupt_an_entry(
    kb: KnowledgeBase, tmp_path: Path, timeline: dict[str, float], target: str, signum: int
) -> None:
    rng = random.Random(f"{SEED}:{target}:{signum}")
    first = rng.randrange(len(TIMELINE))
    rounds = []
    for number in range(ROUNDS):
        # Stages in turn, at a random moment within each: a few rounds already reach every stage.
        stage = TIMELINE[(first + number) % len(TIMELINE)]
        plan = Round(number, target, signum, rng.choice((0, 3)), tmp_path / f"round-{number}.progress")
        rounds.append(run_round(kb, plan, within(stage, rng.uniform(0, timeline[stage]))))
    check = run_kb("check")
    problems: list = []
    entries = {entry.title: entry for entry in kb.iter_entries(problems)}
    found = [f"kb check: {line}" for line in check.stdout.splitlines()] + [f"unreadable: {p}" for p in problems]
    found += [f"left behind: {path}" for path in litter(kb)]
    for plan in rounds:
        found += [f"{plan.title} ({plan.stage}): {issue}" for issue in judge(kb, plan, entries.get(plan.title))]
    print(summary(rounds, entries))
    assert found == [], f"KB_FAULT_SEED={SEED}"
    assert check.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_while_the_entry_is_finalised_keeps_the_command_outcome(
    kb: KnowledgeBase, tmp_path: Path, signum: int
) -> None:
    # kb knows how the command ended: the entry must say so, not stay `running` (later read as killed).
    for number in range(FINALISING_TRIES):
        plan = run_round(kb, Round(number, "kb", signum, 3, tmp_path / f"round-{number}.progress"), output_closed)
        if plan.stage == FINALISING:
            break
    assert plan.stage == FINALISING
    assert plan.status_after_exit == "failed"
    entry = {entry.title: entry for entry in kb.iter_entries()}[plan.title]
    assert judge(kb, plan, entry) == []
    assert entry.data["command"]["exit_code"] == 3 and entry.data["failure"]["message"] == "exit code 3"


def test_a_signal_sent_after_the_command_ended_interrupts_nothing() -> None:
    # kb's own forwarder in this process: a SIGTERM that comes once the command has ended is not passed on.
    with SignalForwarder() as forwarder:
        proc = subprocess.Popen([PY, "-c", "pass"])
        forwarder.attach(proc)
        proc.wait()
        os.kill(os.getpid(), signal.SIGTERM)
    assert forwarder.received == []
    assert forwarder.interrupted is None


@pytest.mark.parametrize("stage", [STARTING, FINALISING], ids=["new-entry", "final-entry"])
def test_sigkill_in_the_middle_of_an_atomic_write_leaves_no_temporary_file(
    kb: KnowledgeBase, tmp_path: Path, stage: str
) -> None:
    # The entry is written to a temporary file, then renamed: a kill in between leaves that file, which
    # the next kb command removes once it knows its writer is dead.
    for number in range(ATOMIC_WRITE_TRIES):
        plan = Round(number, "kb", signal.SIGKILL, 3, tmp_path / f"round-{number}.progress")
        run_round(kb, plan, writing_after(stage))
        if plan.in_atomic_write and plan.stage == stage:
            break
    assert plan.in_atomic_write and plan.stage == stage, plan.stage
    assert run_kb("check").returncode == 0
    assert litter(kb) == []
    entries = {entry.title: entry for entry in kb.iter_entries()}
    assert judge(kb, plan, entries.get(plan.title)) == []


def test_sigkill_while_the_run_folder_is_masked_leaves_no_temporary_file(kb: KnowledgeBase) -> None:
    # The files a run wrote into its folder are masked in place as the recording ends, each through a temporary
    # file beside it: a kill then leaves that file deep in the entry's folder, for the next kb command to remove.
    writer = "import os, pathlib; pathlib.Path(os.environ['KB_RUN_DIR'], 'steps.txt').write_text('loss 1\\n' * 500_000)"
    proc = subprocess.Popen([PY, "-m", "kb", "record", "--title", "masked", "--", PY, "-c", writer],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    poll_until(proc, lambda: any(kb.entries_path.glob("*/run/.*.tmp")))
    proc.kill()
    proc.wait()
    assert any(kb.entries_path.glob("*/run/.*.tmp"))  # killed in the middle of masking
    assert run_kb("check").returncode == 0
    assert litter(kb) == []
    (entry,) = kb.iter_entries()
    assert (entry.title, entry.status) == ("masked", "killed")
    assert (kb.attachments_path(entry) / "run" / "steps.txt").read_text() == "loss 1\n" * 500_000


def writing_after(stage: str) -> Wait:
    """Wait until the recording reaches `stage` and kb is in the middle of writing the entry file."""

    def wait(kb: KnowledgeBase, proc: subprocess.Popen, plan: Round) -> None:
        poll_until(proc, lambda: reached(stage, kb, plan) and any(kb.entries_path.glob(".*.tmp")))

    return wait


def within(stage: str, delay: float) -> Wait:
    """Wait until the recording reaches `stage`, then `delay` seconds more (less if kb ends)."""

    def wait(kb: KnowledgeBase, proc: subprocess.Popen, plan: Round) -> None:
        poll_until(proc, lambda: reached(stage, kb, plan))
        deadline = time.monotonic() + delay
        poll_until(proc, lambda: time.monotonic() >= deadline)

    return wait


def output_closed(kb: KnowledgeBase, proc: subprocess.Popen, plan: Round) -> None:
    """Until kb has collected the ended command (a zombie is still its child) and closed output.log after
    copying the last of it: kb is then finalising the entry."""
    command = wait_for_command(proc, plan)
    if command is not None:
        poll_until(proc, lambda: command.pid not in pids(descendants(proc.pid)) and not log_open(proc.pid))


def log_open(pid: int) -> bool:
    try:
        return any(Path(item.path).name == "output.log" for item in psutil.Process(pid).open_files())
    except psutil.Error:
        return False


def pids(processes: list[psutil.Process]) -> set[int]:
    return {process.pid for process in processes}


def poll_until(proc: subprocess.Popen, done: Callable[[], bool]) -> None:
    while proc.poll() is None and not done():
        time.sleep(0.001)


def reached(stage: str, kb: KnowledgeBase, plan: Round) -> bool:
    """Whether the recording has got as far as `stage` (seen from outside, without stopping it)."""
    if stage == STARTING:
        return True
    if stage == BEFORE:
        return bool(new_entries(kb, plan))
    return {RUNNING: "started", WRITING: "writing", FINALISING: "written"}[stage] in steps(plan.progress)


def start_recording(kb: KnowledgeBase, plan: Round, env: dict[str, str] | None = None) -> subprocess.Popen:
    plan.known = set(kb.entries_path.glob("*.md"))
    command = [PY, str(NOISY), str(plan.progress), str(LINES), str(plan.exit_code)]
    with open(plan.progress.with_suffix(".stderr"), "wb") as errors:
        return subprocess.Popen(
            [PY, "-m", "kb", "record", "--title", plan.title, "--", *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=env,
            start_new_session=True,
        )


def new_entries(kb: KnowledgeBase, plan: Round) -> list[Path]:
    return [path for path in kb.entries_path.glob("*.md") if path not in plan.known]


def run_round(kb: KnowledgeBase, plan: Round, wait: Wait) -> Round:
    """Record the command, wait, strike, and note how kb left the entry."""
    proc = start_recording(kb, plan)
    plan.kb_pid = proc.pid
    seen: list[psutil.Process] = []
    try:
        wait(kb, proc, plan)
        seen = strike(kb, proc, plan)
        proc.wait(timeout=EXIT_S)
    except subprocess.TimeoutExpired:
        plan.hung = True
        proc.kill()
        proc.wait()
    finally:
        plan.command_outlived_kb = end_all(seen)
    new = new_entries(kb, plan)
    if new:
        plan.status_after_exit = Entry.read(new[0]).status
    return plan


def strike(kb: KnowledgeBase, proc: subprocess.Popen, plan: Round) -> list[psutil.Process]:
    """Freeze kb and its children, note the stage, send the signal, thaw; returns the children."""
    command = wait_for_command(proc, plan) if plan.target == "command" else None
    if proc.returncode is not None:
        plan.stage = EXITED
        return []
    os.kill(proc.pid, signal.SIGSTOP)
    wait_stopped(proc.pid)
    children = descendants(proc.pid)
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.suspend()
    for child in children:
        wait_stopped(child.pid, "TtZXD")  # a child that forks waits (D) for its own stopped child to exec
    try:
        plan.stage = stage_of(kb, proc.pid, plan)
        plan.in_atomic_write = bool(litter(kb))
        plan.sent = plan.stage != EXITED and send(proc.pid, plan, command)
    finally:
        # kb first, its children once kb has passed the signal on: a command thawed first could finish in
        # between, and kb rightly leaves a signal that comes after the command ended without effect. (kb's own
        # capture helpers, children too, wait with the command: at worst a capture notes a timeout.)
        os.kill(proc.pid, signal.SIGCONT)
        if plan.sent and plan.target == "kb" and plan.signum != signal.SIGKILL:
            wait_forwarded(proc, children, plan.signum)
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.resume()
    return children


def wait_forwarded(proc: subprocess.Popen, children: list[psutil.Process], signum: int) -> None:
    """Until the stopped command holds `signum` pending (kb forwarded it), kb ends, or FORWARD_S passes."""
    command = next((child for child in children if is_command(child)), None)
    if command is None:
        return
    deadline = time.monotonic() + FORWARD_S
    poll_until(proc, lambda: signum in pending_signals(command.pid) or time.monotonic() >= deadline)


def pending_signals(pid: int) -> set[int]:
    """The signals sent to pid and not yet taken (it is stopped): /proc's ShdPnd mask, bit n-1 for signal n."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return set()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("ShdPnd:")), 16)
    return {number + 1 for number in range(64) if mask >> number & 1}


def wait_for_command(proc: subprocess.Popen, plan: Round) -> psutil.Process | None:
    """The recorded command as soon as it runs, or None once it has done its work (or kb has ended)."""
    while proc.poll() is None and "written" not in steps(plan.progress):
        for child in descendants(proc.pid):
            if is_command(child):
                return child
        time.sleep(0.001)
    return next((child for child in descendants(proc.pid) if is_command(child)), None)


def is_command(process: psutil.Process) -> bool:
    """The recorded command once it runs; before its exec a fork still shows kb's own command line."""
    try:
        return process.cmdline()[:2] == [PY, str(NOISY)] and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def wait_stopped(pid: int, settled: str = "TtZX") -> None:
    """Until every thread of pid is stopped or gone: only then is what is on disk what the signal will hit."""
    deadline = time.monotonic() + EXIT_S
    while not all(state in settled for state in thread_states(pid)):
        assert time.monotonic() < deadline, f"pid {pid} did not stop"
        time.sleep(0.001)


def thread_states(pid: int) -> list[str]:
    states = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return states


def stage_of(kb: KnowledgeBase, pid: int, plan: Round) -> str:
    if thread_states(pid) in ([], ["Z"]):
        return EXITED
    new = new_entries(kb, plan)
    if not new:
        return STARTING
    if Entry.read(new[0]).status != "running":
        return FINAL
    done = steps(plan.progress)
    if "written" in done:
        return FINALISING
    if "writing" in done:
        return WRITING
    return RUNNING if done else BEFORE


def steps(progress: Path) -> list[str]:
    """The steps the command marked so far (see noisy_run.py)."""
    return progress.read_text().split() if progress.exists() else []


def send(kb_pid: int, plan: Round, command: psutil.Process | None) -> bool:
    """Signal kb, or the command while it runs; returns whether a signal went out."""
    signum = plan.signum
    if plan.target == "kb":
        os.kill(kb_pid, signum)
        return True
    if command is None:
        return False
    try:
        if command.status() == psutil.STATUS_ZOMBIE:
            return False
        command.send_signal(signum)
    except psutil.NoSuchProcess:
        return False
    return True


def end_all(processes: list[psutil.Process]) -> bool:
    """Kill what kb left running (after a SIGKILL of kb its command runs on); returns whether the command did."""
    outlived = False
    for process in processes:
        outlived = outlived or is_command(process)
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
            process.wait(timeout=EXIT_S)
    return outlived


def litter(kb: KnowledgeBase) -> list[Path]:
    """Temporary files of atomic writes (dot-named): nothing but entries and their attachments may remain."""
    return sorted(path for path in kb.entries_path.rglob(".*") if path.is_file())


def expected_statuses(plan: Round) -> set[str]:
    natural = "completed" if plan.exit_code == 0 else "failed"
    if not plan.sent or plan.stage in (FINAL, EXITED):
        return {natural}
    if plan.target == "kb" and plan.signum == signal.SIGKILL:
        return {"killed"}  # left running, settled as killed by the next kb command
    if plan.target == "kb":
        stopped = {"interrupted"}
    else:  # Python answers a SIGINT with KeyboardInterrupt: exit code 1 (failed) while starting up
        stopped = {"killed", "failed"} if plan.signum == signal.SIGINT else {"killed"}
    # Once the command has done its work the signal may come too late to change how it ends.
    return stopped | {natural} if plan.stage == FINALISING else stopped


def judge(kb: KnowledgeBase, plan: Round, entry: Entry | None) -> list[str]:
    """Everything wrong with one round's outcome; [] when the entry is whole and truthful."""
    killed_kb = plan.target == "kb" and plan.signum == signal.SIGKILL and plan.sent
    issues = ["kb did not end after the signal"] if plan.hung else []
    if plan.command_outlived_kb and not killed_kb:
        issues.append("the command was still running after kb ended")
    if entry is None:
        # Only a kb stopped before it wrote anything may leave nothing, and then nothing ran.
        if plan.target == "kb" and plan.stage == STARTING and not plan.progress.exists():
            return issues
        return [*issues, "lost: no entry"]
    if plan.status_after_exit == "running" and not killed_kb:
        issues.append("kb ended without finishing the entry (left running)")
    expected = expected_statuses(plan)
    if entry.status not in expected:
        issues.append(f"status {entry.status}, expected {' or '.join(sorted(expected))}")
    return issues + explanation_problems(kb, plan, entry) + log_problems(kb, plan, entry) + attachment_problems(entry)


def explanation_problems(kb: KnowledgeBase, plan: Round, entry: Entry) -> list[str]:
    """The entry says why it ended the way it did."""
    data, failure = entry.data, entry.data.get("failure") or {}
    if entry.status == "interrupted":
        wanted = f"{plan.signame} sent to kb record and passed on to the command"
        return [] if failure.get("message") == wanted else [f"interrupted, but the failure says {failure}"]
    if entry.status == "killed" and plan.target == "kb":
        settled = plan.status_after_exit == "running" and f"pid {plan.kb_pid}" in failure.get("message", "")
        return [] if settled else [f"killed, but not settled as a dead kb: {failure}"]
    if entry.status == "killed":
        signalled = data["command"]["signal"]
        return [] if signalled == plan.signame else [f"killed by {signalled}, but {plan.signame} was sent"]
    code, metrics = data["command"]["exit_code"], data.get("metrics", {})
    if code != plan.exit_code:
        said = "KeyboardInterrupt" in output_log(kb, entry).read_text("utf-8")
        return [] if plan.signum == signal.SIGINT and code == 1 and said else [f"{entry.status} with exit code {code}"]
    return [] if metrics.get("rounds") == {"value": 1} else [f"the metric handed over is missing: {metrics}"]


def log_problems(kb: KnowledgeBase, plan: Round, entry: Entry) -> list[str]:
    """output.log holds the command's lines in order, none lost or garbled; only the last may be cut short
    (by the signal that stopped the command). Other lines are the command's stderr (a traceback)."""
    log = output_log(kb, entry)
    if not log.is_file():
        return [] if not plan.progress.exists() else ["the command ran but output.log is missing"]
    number, cut = 0, False
    for line in log.read_text("utf-8").splitlines():
        want = noisy_line(number)
        if line == want and not cut:
            number += 1
        elif line and want.startswith(line) and not cut:
            cut = True
        elif line.startswith("step "):
            return [f"output.log: line {line[:12]!r} where {want[:12]!r} was due"]
    ran_through = entry.status in ("completed", "failed") and entry.data["command"]["exit_code"] == plan.exit_code
    if ran_through and (number, cut) != (LINES, False):
        return [f"output.log holds {number} whole lines of {LINES}"]
    return []


def output_log(kb: KnowledgeBase, entry: Entry) -> Path:
    return kb.attachments_path(entry) / "output.log"


def noisy_line(number: int) -> str:
    return NOISY_LINE.format(number).rstrip("\n")


def attachment_problems(entry: Entry) -> list[str]:
    assert entry.path is not None
    issues = []
    for attachment in entry.data.get("attachments", []):
        path = entry.path.parent / attachment["path"]
        size = path.stat().st_size if path.is_file() else None
        if size != attachment["bytes"]:
            issues.append(f"attachment {attachment['path']}: {size} bytes on disk, {attachment['bytes']} listed")
    return issues


def summary(rounds: list[Round], entries: dict[str, Entry]) -> str:
    """Rounds per stage hit, with how many signals went out and the statuses the entries ended with."""
    first = rounds[0]
    lines = [f"kills: {first.signame} to {first.target}, seed {SEED}"]
    for stage in STAGES:
        hit = [plan for plan in rounds if plan.stage == stage]
        if hit:
            statuses = Counter(entries[p.title].status if p.title in entries else "no entry" for p in hit)
            during = sum(plan.in_atomic_write for plan in hit)
            lines.append(
                f"  {stage}: {len(hit)} rounds, {sum(p.sent for p in hit)} sent, {during} in an atomic write, "
                + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items()))
            )
    return "\n".join(lines)


def test_ctrl_c_while_kb_starts_is_acted_on(kb: KnowledgeBase) -> None:
    # Raised inside an import, a KeyboardInterrupt can be printed and dropped by Python; kb holds it until
    # its command line is loaded, then stops: no entry, or an interrupted one, and never a run as if unsent.
    # The delays count from the end of Python's own start-up (the first line printed), where kb's begins.
    starter = "import sys; print(flush=True); from kb.launch import main; sys.argv[0] = 'kb'; main()"
    command = [sys.executable, "-c", starter, "record", "--", sys.executable, "-c", "import time; time.sleep(30)"]
    for delay in (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3):
        before = set(kb.iter_entry_paths())
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "\n"
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert "Exception ignored" not in stderr, stderr
        new = [Entry.read(path) for path in set(kb.iter_entry_paths()) - before]
        assert all(entry.status == "interrupted" for entry in new), stderr
        # 130 from kb; killed by SIGINT when it came before kb's first line ran; or, once the signal was passed
        # on to a command that had started, that command's own exit code, which its entry records
        passed_on = [entry.data["command"]["exit_code"] for entry in new]
        assert process.returncode in (130, -signal.SIGINT, *passed_on), stderr
