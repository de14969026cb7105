"""CompileWatch and fresh_cache against real torch.compile runs (inductor on the CPU), kept tiny for a 2-core box."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch._inductor.config
import torch._inductor.utils

from ingest.compile_format import cache_state
from ingest.pytorch.compile_evidence import CompileWatch, fresh_cache

REPO = Path(__file__).resolve().parent.parent
# One in-process compile worker: a pool of subprocesses would each import torch, slow on two cores.
FAST_COMPILE = {
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
    "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
    "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
}


@pytest.fixture(scope="session")
def inductor_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the session, so no test reads or fills the user's global inductor cache."""
    return tmp_path_factory.mktemp("inductor-cache")


@pytest.fixture(autouse=True)
def compile_isolation(inductor_cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_cache))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(inductor_cache / "triton"))
    torch._dynamo.reset()
    torch._inductor.utils.clear_caches()
    with torch._inductor.config.patch(compile_threads=1):
        yield
    torch._dynamo.reset()
    torch._inductor.utils.clear_caches()


def branchy(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) * 2
    if y.sum() > 0:  # data-dependent: a graph break; what follows compiles to a resume function with no ops
        return y
    return -y


def with_user_break(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


def test_one_graph_break_counts_once_though_counters_and_logs_both_see_it() -> None:
    # Dynamo's counters key this break "Call to torch._dynamo.graph_break()", its log record leads with the
    # bytecode it was tracing ("Encountered graph break when attempting to trace CALL ..."): the same break.
    watch = CompileWatch()
    watch.start()
    torch.compile(with_user_break)(torch.ones(4))
    section = watch.stop()
    assert section["graph_breaks"]["count"] == 1, section["graph_breaks"]
    assert section["graph_breaks"]["reasons"][0]["reason"].startswith("Call to `torch._dynamo.graph_break()`")


def test_graph_break_and_recompile(capfd: pytest.CaptureFixture[str]) -> None:
    watch = CompileWatch()
    watch.start()
    compiled = torch.compile(branchy)
    compiled(torch.ones(8, 16))
    compiled(torch.ones(8, 16))
    compiled(torch.ones(4, 16))  # a new size: the guard on x's size fails, so f recompiles
    section = watch.stop()

    assert "unreadable" not in section, section
    assert section["frame_count"] >= 2
    assert {frame["function"] for frame in section["frames"]} >= {"branchy"}
    assert section["graph_breaks"]["count"] >= 1
    reasons = [item["reason"] for item in section["graph_breaks"]["reasons"]]
    assert any("data-dependent branching" in reason.lower() for reason in reasons), reasons

    assert section["recompiles"]["count"] >= 1
    assert any("size mismatch" in reason for reason in section["recompiles"]["reasons"]), section["recompiles"]
    assert section["stages_nested"] is True
    assert set(section["stages_s"]) >= {"dynamo", "aot_autograd"}
    assert section["stages_s"]["dynamo"] >= section["stages_s"]["aot_autograd"]
    assert section["compile_s"] > 0
    assert section["graphs"] >= 2
    assert section["torch"] == torch.__version__
    json.dumps(section)
    # The graph-break and recompile records were captured, not printed.
    err = capfd.readouterr().err
    assert "Graph break" not in err and "Recompiling" not in err


TRAIN_SCRIPT = textwrap.dedent(
    """
    import json
    import torch
    from ingest.pytorch.compile_evidence import CompileWatch

    watch = CompileWatch()
    watch.start()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 4), torch.nn.ReLU())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model)
    for _ in range(2):
        optimizer.zero_grad()
        compiled(torch.ones(8, 16)).sum().backward()
        optimizer.step()
    print(json.dumps(watch.stop()))
    """
)


def test_cold_then_warm_across_processes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    env = {
        **os.environ,
        **FAST_COMPILE,
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"),
        "TRITON_CACHE_DIR": str(tmp_path / "cache" / "triton"),
        "PYTHONPATH": str(REPO),
    }
    env.pop("TORCH_LOGS", None)

    def run() -> dict:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert cold["cache"] == "fresh", cold
    assert cold["cache_counters"]["fxgraph_miss"] >= 1 and cold["cache_counters"]["aot_miss"] >= 1
    assert warm["cache"] == "warm", warm
    assert warm["cache_counters"]["fxgraph_hit"] >= 1 and warm["cache_counters"]["aot_hit"] >= 1
    assert cold["frame_count"] == warm["frame_count"] >= 1
    assert warm["compile_s"] < cold["compile_s"]
    assert cold["stages_s"]["backend"] > 0 and "backward" in cold["stages_s"]  # a training step compiled both
    assert all(frame["backend_s"] is None for frame in warm["frames"])  # inductor did not run on the hit


DEFERRED_SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    import torch
    from ingest.pytorch.compile_evidence import CompileWatch

    def branchy(x):
        y = torch.sin(x) * 2
        if y.sum() > 0:
            return y
        return -y

    stale = CompileWatch()
    stale.start()
    stale.stop()  # leaves a post-import hook behind that must do nothing
    watch = CompileWatch()
    watch.start()
    eager = watch.stop()
    imported_eagerly = "torch._dynamo" in sys.modules
    watch.start()
    compiled = torch.compile(branchy)
    compiled(torch.ones(8, 16))
    compiled(torch.ones(4, 16))
    section = watch.stop()
    from ingest.pytorch.compile_evidence import _Capture
    logger = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
    print(json.dumps({
        "imported_eagerly": imported_eagerly,
        "eager": eager,
        "section": section,
        "left_attached": any(isinstance(h, _Capture) for h in logger.handlers),
    }))
    """
)


def test_a_process_without_dynamo_imports_it_only_when_the_script_compiles(tmp_path: Path) -> None:
    # Importing Dynamo takes seconds; an eager run must not pay them, and a run that compiles later must
    # still see every frame, graph break and recompile, as captured log records too, with nothing printed.
    script = tmp_path / "deferred.py"
    script.write_text(DEFERRED_SCRIPT)
    env = {**os.environ, **FAST_COMPILE, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    env.pop("TORCH_LOGS", None)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Graph break" not in done.stderr and "Recompiling" not in done.stderr, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["imported_eagerly"] is False
    assert "unreadable" not in seen["eager"] and seen["eager"]["frame_count"] == seen["eager"]["graphs"] == 0
    section = seen["section"]
    assert "unreadable" not in section, section
    assert {frame["function"] for frame in section["frames"]} >= {"branchy"}
    assert section["graph_breaks"]["count"] >= 1 and section["recompiles"]["count"] >= 1
    assert any("size mismatch" in reason for reason in section["recompiles"]["reasons"]), section["recompiles"]
    assert seen["left_attached"] is False


def square_plus_one(x: torch.Tensor) -> torch.Tensor:
    return x * x + 1


def compile_and_watch(fn, *args: torch.Tensor) -> dict:
    watch = CompileWatch()
    watch.start()
    torch.compile(fn)(*args)
    return watch.stop()


def test_fresh_cache_compiles_cold_again(inductor_cache: Path) -> None:
    x = torch.ones(4, 4)
    compile_and_watch(square_plus_one, x)  # fills the session cache, if it was not already
    torch._dynamo.reset()
    assert compile_and_watch(square_plus_one, x)["cache"] == "warm"  # without fresh_cache: a hit

    torch._dynamo.reset()
    with fresh_cache() as folder:
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder)
        section = compile_and_watch(square_plus_one, x)
    assert section["cache"] == "fresh", section
    assert section["cache_counters"]["fxgraph_miss"] >= 1 and section["cache_counters"]["fxgraph_hit"] == 0
    assert not folder.exists()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(inductor_cache)


def test_fresh_cache_keeps_a_given_folder_and_refuses_a_used_one(tmp_path: Path) -> None:
    with fresh_cache(tmp_path / "kept") as folder:
        (folder / "artifact").write_text("x")
    assert (tmp_path / "kept" / "artifact").exists()
    with pytest.raises(ValueError), fresh_cache(tmp_path / "kept"):
        pass


def test_unreadable_internals_do_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> list:
        raise RuntimeError("moved in a later release")

    monkeypatch.setattr(torch._dynamo.utils, "get_compilation_metrics", broken)
    monkeypatch.setattr(torch._dynamo.utils, "counters", object())
    watch = CompileWatch()
    watch.start()
    torch.compile(branchy)(torch.ones(8, 16))
    section = watch.stop()

    unreadable = section["unreadable"]
    assert any(item.startswith("get_compilation_metrics") for item in unreadable), unreadable
    assert any(item.startswith("counters") for item in unreadable), unreadable
    assert "frames" not in section and "cache" not in section  # unknown, so left out rather than guessed
    assert section["graph_breaks"]["count"] >= 1  # the log records still tell
    json.dumps(section)


@pytest.mark.parametrize(
    ("inductor", "aot", "expected"),
    [
        ({"fxgraph_cache_miss": 2}, {"autograd_cache_miss": 1}, "fresh"),
        ({"fxgraph_cache_hit": 2}, {"autograd_cache_hit": 1}, "warm"),
        ({"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 1}, {}, "mixed"),
        ({"fxgraph_cache_hit": 1}, {"autograd_cache_bypass": 1}, "mixed"),
        ({"fxgraph_cache_bypass": 1}, {"autograd_cache_bypass": 1}, "bypass"),
        ({"fxgraph_cache_miss": 1}, {"autograd_cache_bypass": 1}, "fresh"),
        ({}, {}, None),
    ],
)
def test_cache_state(inductor: dict, aot: dict, expected: str | None) -> None:
    before = {"inductor": {"fxgraph_cache_miss": 5, "fxgraph_cache_hit": 3}, "aot_autograd": {"autograd_cache_hit": 7}}
    after = {
        "inductor": {**before["inductor"], **{k: before["inductor"].get(k, 0) + v for k, v in inductor.items()}},
        "aot_autograd": {**before["aot_autograd"], **{k: before["aot_autograd"].get(k, 0) + v for k, v in aot.items()}},
    }
    assert cache_state(before, after) == expected
    assert cache_state({}, {key: dict(value) for key, value in after.items()}) is not None  # baselines matter


def logging_state() -> tuple:
    names = ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.guards.__recompiles")
    loggers = [logging.getLogger(name) for name in names]
    artifacts = set(torch._logging._internal.log_state.artifact_names)
    return [(log.level, log.propagate, list(log.handlers)) for log in loggers], artifacts


def test_no_compile() -> None:
    before = logging_state()
    watch = CompileWatch()
    watch.start()
    assert logging_state() != before  # listening...
    torch.ones(3).sum()
    section = watch.stop()
    assert logging_state() == before  # ...and all put back
    assert section["frame_count"] == 0 and section["frames"] == []
    assert section["cache"] is None
    assert section["graph_breaks"] == {"count": 0, "sites": 0, "reasons": []}
    assert section["recompiles"] == {"count": 0, "reasons": []}
    assert "unreadable" not in section
