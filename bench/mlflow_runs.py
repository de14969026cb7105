"""Every run entry of a knowledge base as an MLflow run, for the benchmarks that set kb beside MLflow (bench.index's
bulk insert, bench.peers_scale's store)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

STATUS = {"completed": "FINISHED", "failed": "FAILED", "interrupted": "KILLED", "killed": "KILLED",
          "running": "RUNNING"}  # fmt: skip
FAILURE_PARTS = ("class", "words", "message", "explanation", "evidence")  # what kb's full-text `failure` field holds
MAX_VALUE = 5000  # MLflow refuses params over 6,000 characters


def mlflow_runs(kb: Any) -> list[dict[str, Any]]:
    """Every run entry as an MLflow run: what ran as params, what it ran on and how it ended as tags, the
    metrics and main timings as metrics; the entry id as the run name."""
    from kb.model import frontmatter

    runs = []
    for path in kb.iter_entry_paths():
        data = frontmatter.load(path.read_text("utf-8"), path).data
        if data.get("kind") == "run":
            runs.append(_mlflow_run(data))
    return runs


def _mlflow_run(data: dict[str, Any]) -> dict[str, Any]:
    timings = data.get("timings") or {}
    workload = data.get("workload") or {}
    from kb.index.fulltext import FAILURE_WORDS

    failure = data.get("failure") or {}
    failure = {**failure, "words": FAILURE_WORDS.get(failure.get("class") or "")}  # oom: "out of memory", as kb
    params = {"backend": data.get("backend"), "mode": data.get("mode"), "workload": workload.get("name"),
              "model": workload.get("model"), "task": workload.get("task"),
              **{f"settings.{k}": v for k, v in (data.get("settings") or {}).items()}}  # fmt: skip
    tags = {
        "kb.status": data["status"],
        "mlflow.user": data.get("author"),
        "title": data.get("title"),
        "tags": ",".join(data.get("tags") or []),
        "failure.class": failure.get("class"),
        "failure.text": " ".join(str(failure[k]) for k in FAILURE_PARTS if failure.get(k)) or None,
        **{f"versions.{k}": v for k, v in (data.get("versions") or {}).items()},
    }
    step = timings.get("step_s") if isinstance(timings.get("step_s"), dict) else {}
    figures = {name: metric.get("value") for name, metric in (data.get("metrics") or {}).items()}
    figures |= {"timings.wall_s": timings.get("wall_s"), "timings.compile_s": timings.get("compile_s"),
                "timings.step_s_median": step.get("median")}  # fmt: skip
    started = _ms(timings.get("started") or data["recorded"])
    return {
        "id": data["id"],
        "status": STATUS.get(data["status"], "FINISHED"),
        "start_ms": started,
        "end_ms": _ms(timings["ended"]) if timings.get("ended") else started,
        "params": _texts(params),
        "tags": _texts(tags),
        "metrics": {name: number for name, value in figures.items() if (number := _number(value)) is not None},
    }


def _number(value: Any) -> float | None:
    """A metric's value: front matter keeps figures as quoted text (their digits exactly as written)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() * 1000)


def _texts(values: dict[str, Any]) -> dict[str, str]:
    return {key: str(value)[:MAX_VALUE] for key, value in values.items() if value is not None and value != ""}
