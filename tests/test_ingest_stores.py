"""kb ingest mlflow and kb ingest tensorboard: real stores written by MLflow's client and by SummaryWriter."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import json_data, only_entry, run_kb

from kb.store.knowledge_base import KnowledgeBase

mlflow = pytest.importorskip("mlflow", reason="needs kb's mlflow extra (pip install -e '.[mlflow]')")
pytest.importorskip("tensorboard", reason="needs kb's tensorboard extra (pip install -e '.[tensorboard]')")


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite tracking store with two runs (one failed) and an artifact, written through MLflow's client."""
    folder = tmp_path_factory.mktemp("mlflow")
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.create_experiment("llama-neuron", artifact_location=(folder / "artifacts").as_uri())
    tags = {"team": "infra", "mlflow.source.git.commit": "abc123"}
    good = client.create_run(experiment, run_name="bf16-compiled", tags=tags)
    client.log_param(good.info.run_id, "batch", "8")
    client.log_param(good.info.run_id, "optimizer/lr", "0.0003")
    for step in range(5):
        client.log_metric(good.info.run_id, "train/loss", 5.0 - step, step=step)
    client.log_metric(good.info.run_id, "tokens_per_s", 14156.0)
    (folder / "config.json").write_text('{"layers": 2}')
    client.log_artifact(good.info.run_id, str(folder / "config.json"))
    client.set_terminated(good.info.run_id, "FINISHED")
    bad = client.create_run(experiment, run_name="fp8")
    client.log_metric(bad.info.run_id, "train/loss", 9.0)
    client.set_terminated(bad.info.run_id, "FAILED")
    return folder / "mlflow.db"


def test_mlflow_runs_become_entries_and_a_second_import_adds_none(kb: KnowledgeBase, mlflow_store: Path) -> None:
    result = run_kb("ingest", "mlflow", str(mlflow_store), "--backend", "neuron", "--json")
    assert result.returncode == 0, result.stderr
    written = json_data(result.stdout)
    assert len(written) == 2 and "kb: 2 runs imported" in result.stderr
    entries = {e.data["mlflow"]["run_name"]: e for e in kb.iter_entries()}
    good, bad = entries["bf16-compiled"], entries["fp8"]
    assert good.status == "completed" and bad.status == "failed"
    data = good.data
    assert data["provenance"]["tool"] == "kb ingest mlflow" and data["backend"] == "neuron"
    assert data["settings"] == {"batch": 8, "optimizer:lr": 0.0003}
    assert (
        data["metrics"]["train:loss"] == {"value": 1.0, "step": 4} and data["metrics"]["tokens_per_s"]["value"] == 14156
    )
    assert data["git"]["commit"] == "abc123"
    assert data["mlflow"]["tags"] == {"team": "infra"} and data["mlflow"]["experiment"] == "llama-neuron"
    assert data["mlflow"]["artifacts"] == ["config.json"]
    assert data["timings"]["wall_s"] >= 0 and data["timings"]["started"] <= data["timings"]["ended"]
    curve = kb.attachments_path(good) / "metric-train.loss.txt"
    assert curve.read_text().split() == ["5.0", "4.0", "3.0", "2.0", "1.0"]
    assert not (kb.attachments_path(good) / "config.json").exists()  # listed, not copied
    again = run_kb("ingest", "mlflow", str(mlflow_store))
    assert again.returncode == 0 and "kb: 0 runs imported, 2 imported before" in again.stderr
    assert len(list(kb.iter_entries())) == 2


def test_artifacts_are_copied_when_asked(kb: KnowledgeBase, mlflow_store: Path) -> None:
    result = run_kb("ingest", "mlflow", str(mlflow_store), "--experiment", "llama-neuron", "--copy-artifacts")
    assert result.returncode == 0, result.stderr
    good = next(e for e in kb.iter_entries() if e.data["mlflow"]["run_name"] == "bf16-compiled")
    assert (kb.attachments_path(good) / "config.json").read_text() == '{"layers": 2}'


def test_a_tracking_folder_is_read_too(kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 writes such folders only when told to
    client = mlflow.MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run = client.create_run(client.create_experiment("legacy"), run_name="old")
    client.log_metric(run.info.run_id, "loss", 2.0, step=0)
    client.log_metric(run.info.run_id, "loss", 1.5, step=1)
    client.set_terminated(run.info.run_id)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    result = run_kb("ingest", "mlflow", str(tmp_path / "mlruns"))
    assert result.returncode == 0, result.stderr
    assert only_entry(kb).data["metrics"]["loss"] == {"value": 1.5, "step": 1}
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = run_kb("ingest", "mlflow", str(empty))
    assert refused.returncode == 1 and "not an MLflow tracking folder" in refused.stderr
    assert list(empty.iterdir()) == []  # nothing written into it


def test_a_store_that_is_not_one_is_named(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("not a database")
    result = run_kb("ingest", "mlflow", str(tmp_path / "notes.db"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"kb: error: {tmp_path / 'notes.db'}: not an MLflow database (not SQLite)" in result.stderr
    missing = run_kb("ingest", "mlflow", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "no such folder or file" in missing.stderr
    assert list(kb.iter_entries()) == []


def test_a_run_with_a_thousand_metrics_keeps_what_an_entry_holds(kb: KnowledgeBase, tmp_path: Path) -> None:
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'wide.db'}")
    run = client.create_run(client.create_experiment("wide"), run_name="sweep")
    client.log_batch(run.info.run_id, metrics=[mlflow.entities.Metric(f"m{i:04d}", i, 0, 0) for i in range(1000)])
    client.set_terminated(run.info.run_id)
    result = run_kb("ingest", "mlflow", str(tmp_path / "wide.db"))
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert len(entry.data["metrics"]) == 200 and "m0000" in entry.data["metrics"]
    assert "The run logged 1000 metrics; the first 200 by name are imported." in entry.body


@pytest.fixture(scope="module")
def event_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log folder with one run written by torch.utils.tensorboard.SummaryWriter, as Lightning and torchtitan do."""
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path_factory.mktemp("tb")
    with SummaryWriter(str(folder / "version_0")) as writer:
        for step in range(1, 11):
            writer.add_scalar("loss_metrics/global_avg_loss", 10.0 / step, step)
            writer.add_scalar("wps", 1000.0 + step, step)
        writer.add_text("notes", "text is not a scalar", 0)
    return folder


def test_tensorboard_scalars_become_metrics_with_curves(kb: KnowledgeBase, event_folder: Path) -> None:
    result = run_kb("ingest", "tensorboard", str(event_folder), "--workload", "llama3-8b", "--backend", "cuda")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    assert data["workload"] == {"name": "llama3-8b"} and data["tensorboard"] == {"run": "version_0"}
    assert data["metrics"]["loss_metrics:global_avg_loss"] == {"value": 1.0, "step": 10}
    assert data["metrics"]["wps"]["value"] == 1010.0 and "notes" not in data["metrics"]
    assert data["timings"]["wall_s"] >= 0
    curve = kb.attachments_path(entry) / "metric-loss_metrics.global_avg_loss.txt"
    assert len(curve.read_text().split()) == 10


def test_two_tags_with_one_entry_name_keep_a_metric_and_a_curve_each(kb: KnowledgeBase, tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "logs" / "run")) as writer:
        for step in range(3):
            writer.add_scalar("val.loss", 1.0 + step, step)
            writer.add_scalar("val_loss", 10.0 + step, step)
    result = run_kb("ingest", "tensorboard", str(tmp_path / "logs"))
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert {name: metric["value"] for name, metric in entry.data["metrics"].items()} == {
        "val_loss": 12.0,
        "val_loss-2": 3.0,
    }
    curves = sorted(path for path in kb.attachments_path(entry).glob("metric-*.txt"))
    assert {path.name: path.read_text().split() for path in curves} == {
        "metric-val_loss.txt": ["10.0", "11.0", "12.0"],
        "metric-val_loss-2.txt": ["1.0", "2.0", "3.0"],
    }
    assert sorted(item["path"].rsplit("/", 1)[-1] for item in entry.data["attachments"]) == [p.name for p in curves]


def test_a_damaged_event_file_keeps_what_was_read_and_names_the_file(
    kb: KnowledgeBase, event_folder: Path, tmp_path: Path
) -> None:
    (source,) = (event_folder / "version_0").glob("*tfevents*")
    damaged = tmp_path / "logs" / "run"
    damaged.mkdir(parents=True)
    data = source.read_bytes()
    (damaged / source.name).write_bytes(data[: len(data) * 2 // 3] + b"\x00garbage" * 4)
    (damaged / "events.out.tfevents.0.broken").write_bytes(b"this is no event file")
    result = run_kb("ingest", "tensorboard", str(tmp_path / "logs"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"kb: {damaged / source.name}: damaged after " in result.stderr
    assert f"kb: {damaged / 'events.out.tfevents.0.broken'}: not a TensorBoard event file" in result.stderr
    entry = only_entry(kb)  # the events before the damage
    assert 0 < entry.data["metrics"]["wps"]["step"] < 10


@pytest.mark.parametrize("wall_time", [float("nan"), -1e12, 1e308])
def test_an_event_time_that_is_no_time_is_refused_by_name_and_the_scalars_kept(
    kb: KnowledgeBase, tmp_path: Path, wall_time: float
) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "logs" / "run")) as writer:
        writer.add_scalar("loss", 2.0, 0)
        writer.add_scalar("loss", float("nan"), 1, walltime=wall_time)
    result = run_kb("ingest", "tensorboard", str(tmp_path / "logs"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"event 3: wall_time {wall_time!r} is not a time (seconds since 1970, up to the year 9999)" in result.stderr
    assert "its run is imported without times" in result.stderr
    data = only_entry(kb).data
    assert "timings" not in data
    assert data["metrics"]["loss"]["step"] == 1 and data["metrics"]["loss"]["value"] != data["metrics"]["loss"]["value"]


def test_a_metric_line_that_is_not_a_number_names_its_experiment_and_the_others_are_imported(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    for name in ("broken", "fine"):
        run = client.create_run(client.create_experiment(name), run_name=name)
        client.log_metric(run.info.run_id, "loss", 2.0, step=0)
        client.set_terminated(run.info.run_id)
    (broken,) = (tmp_path / "mlruns").glob(f"{client.get_experiment_by_name('broken').experiment_id}/*/metrics/loss")
    with broken.open("a") as metric_file:
        metric_file.write("1700000000000 notanumber 1\n")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    result = run_kb("ingest", "mlflow", str(tmp_path / "mlruns"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "kb: experiment broken (" in result.stderr
    assert "MLflow cannot read its runs: ValueError: could not convert string to float: 'notanumber'" in result.stderr
    assert only_entry(kb).data["mlflow"]["run_name"] == "fine"


def test_artifacts_are_read_only_from_inside_the_store_unless_a_folder_is_named(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"  # what a received store's meta.yaml may point at: someone's home folder
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("private key\n")
    (home / "notes.txt").write_text("notes\n")
    (home / "link").symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "elsewhere.txt").write_text("not in the folder\n")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run = client.create_run(client.create_experiment("received"), run_name="theirs")
    client.set_terminated(run.info.run_id)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    (meta,) = (tmp_path / "mlruns").glob(f"*/{run.info.run_id}/meta.yaml")
    text = meta.read_text()
    meta.write_text(text.replace(f"artifact_uri: {run.info.artifact_uri}", f"artifact_uri: {home.as_uri()}"))
    assert home.as_uri() in meta.read_text()

    listed = run_kb("ingest", "mlflow", str(tmp_path / "mlruns"))  # not asked to copy: not listed either, no error
    assert listed.returncode == 0, listed.stderr
    entry = only_entry(kb)
    assert "artifacts" not in entry.data["mlflow"] and "id_ed25519" not in entry.path.read_text()
    assert f"The run's artifacts are not read: artifact_uri {home.as_uri()} is outside the store" in entry.body
    entry.path.unlink()

    refused = run_kb("ingest", "mlflow", str(tmp_path / "mlruns"), "--copy-artifacts")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert (
        f"its artifacts are not read: artifact_uri {home.as_uri()} is outside the store; give --artifacts-from {home} "
        "if that folder is meant" in refused.stderr
    )
    entry = only_entry(kb)  # the run itself is imported, its artifacts neither copied nor listed
    assert not kb.attachments_path(entry).exists() and "artifacts" not in entry.data["mlflow"]
    assert "id_ed25519" not in entry.path.read_text()

    (kb.entries_path / entry.path.name).unlink()
    named = run_kb("ingest", "mlflow", str(tmp_path / "mlruns"), "--copy-artifacts", "--artifacts-from", str(home))
    assert named.returncode == 0, named.stderr
    copied = kb.attachments_path(only_entry(kb))
    assert sorted(p.name for p in copied.rglob("*") if p.is_file()) == ["id_ed25519", "notes.txt"]


def test_a_tracking_server_that_never_answers_is_given_up_on(kb: KnowledgeBase) -> None:
    import socket

    with socket.socket() as server:  # the kernel accepts connections to a listening socket; no answer ever comes
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        result = run_kb("ingest", "mlflow", url, "--timeout", "1", timeout=240)  # MLflow alone waits 8 x 120 s
    assert result.returncode == 1
    assert result.stderr == (
        f"kb: error: {url}: no answer from the tracking server in 1 s (tried 2 times); check the server, or give a "
        "longer --timeout\n"
    )
    assert list(kb.iter_entries()) == []


def test_a_fifo_beside_the_event_files_is_named_and_the_run_imported(
    kb: KnowledgeBase, event_folder: Path, tmp_path: Path
) -> None:
    import os
    import shutil

    run = tmp_path / "logs" / "run"
    shutil.copytree(event_folder / "version_0", run)
    os.mkfifo(run / "events.out.tfevents.0.pipe")  # opened, it would wait for a writer for good
    result = run_kb("ingest", "tensorboard", str(tmp_path / "logs"), timeout=120)
    assert result.returncode == 1
    assert f"kb: {run / 'events.out.tfevents.0.pipe'}: a FIFO, not read\n" in result.stderr
    assert only_entry(kb).data["metrics"]["wps"]["value"] == 1010.0
