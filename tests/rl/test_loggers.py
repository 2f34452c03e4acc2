"""Metric loggers (``run.loggers``): the appended CSV, resume without duplicated rows, wandb offline,
MLflow on a local file store, and the errors of unknown or uninstalled loggers."""

import csv
import json
import sys

import pandas as pd
import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.rl import loggers as lg
from zsceval.rl.trainer import Trainer

# 256 env steps per iteration; checkpoints at 512 and 1024; a kill after iteration 3 resumes at 512
LOGGED = ["run.total_steps=1024", "run.checkpoint_every=512", "run.eval_episodes=0"]


class _Interrupt(Exception):
    pass


def _kill_after(n):
    def hook(trainer, row):
        if trainer.iteration == n:
            raise _Interrupt

    return hook


def _rows(path):
    return list(csv.DictReader(path.open()))


def _open(folder, resume_step=None, names=("csv",)):
    return lg.open_loggers(names, folder, run_name="t", resume_step=resume_step)


def test_csv_appends_rows_and_rewrites_only_for_a_new_column(tmp_path):
    group = _open(tmp_path)
    group.log_row({"iteration": 1, "env_steps": 10, "loss": 0.5}, 10)
    inode = (tmp_path / "metrics.csv").stat().st_ino
    group.log_row({"iteration": 2, "env_steps": 20, "loss": 0.25}, 20)
    assert (tmp_path / "metrics.csv").stat().st_ino == inode  # appended in place, not replaced
    group.log_row({"iteration": 3, "env_steps": 30, "loss": 0.125, "sparse_return": 4.0}, 30)
    group.close()
    rows = _rows(tmp_path / "metrics.csv")
    assert [r["env_steps"] for r in rows] == ["10", "20", "30"]
    assert list(rows[0]) == ["iteration", "env_steps", "loss", "sparse_return"]
    assert rows[0]["sparse_return"] == "" and rows[2]["sparse_return"] == "4.0"


def test_csv_resume_keeps_rows_up_to_the_checkpoint_and_drops_a_cut_line(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("iteration,env_steps,loss\n1,10,0.5\n2,20,0.4\n3,30,0.3\n4,4")  # killed mid-line
    group = _open(tmp_path, resume_step=20)
    assert group.loggers[0].logged_upto == 30
    group.log_row({"iteration": 3, "env_steps": 30, "loss": 0.3}, 30)
    group.close()
    assert [r["env_steps"] for r in _rows(path)] == ["10", "20", "30"]
    assert path.read_text().endswith("\n")
    _open(tmp_path).close()  # a new run in the folder starts a new file
    assert not path.exists()


class Recorder(lg.MetricLogger):
    """A logger that keeps its rows in memory (as a service that cannot drop points would)."""

    name = "recorder"
    steps: list[int] = []
    tables: dict = {}

    def log_row(self, row, step):
        if self.logged_upto is None or step > self.logged_upto:
            Recorder.steps.append(step)

    def log_table(self, name, frame):
        Recorder.tables[name] = frame


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.setitem(lg._LOGGERS, "recorder", Recorder)
    monkeypatch.setattr(Recorder, "steps", [])
    monkeypatch.setattr(Recorder, "tables", {})
    return Recorder


def test_resumed_run_logs_no_step_twice_and_its_csv_matches_the_uninterrupted_run(
    tmp_path, toy_config, recorder
):
    cfg = toy_config(*LOGGED, "run.loggers=[csv,recorder]")
    Trainer(cfg, tmp_path / "full", progress=False).train()
    full_steps = list(recorder.steps)
    recorder.steps.clear()
    with pytest.raises(_Interrupt):
        Trainer(cfg, tmp_path / "cut", progress=False).train(_kill_after(3))
    assert [int(r["env_steps"]) for r in _rows(tmp_path / "cut" / "metrics.csv")] == [256, 512, 768]
    resumed = Trainer(cfg, tmp_path / "cut", resume=True, progress=False)
    assert resumed.env_steps == 512
    resumed.train()
    assert recorder.steps == full_steps == [256, 512, 768, 1024]  # 768 is not logged a second time
    keep = ("iteration", "env_steps", "policy_loss", "value_loss", "sparse_return")
    cut, full = _rows(tmp_path / "cut" / "metrics.csv"), _rows(tmp_path / "full" / "metrics.csv")
    assert [{k: r[k] for k in keep} for r in cut] == [{k: r[k] for k in keep} for r in full]


def test_unknown_logger_lists_the_valid_ones(tmp_path, toy_config):
    with pytest.raises(
        lg.LoggerError, match=r"unknown logger 'wandbb'. Registered loggers: csv.*Did you mean 'wandb'\?"
    ):
        Trainer(toy_config("run.loggers=[wandbb]"), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["wandb", "mlflow", "tensorboard"])
def test_missing_extra_names_its_install_command(tmp_path, monkeypatch, name):
    monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
    args = ["train", "--env", "toy", "--no-progress", "--out", str(tmp_path / "run")]
    res = CliRunner().invoke(main, [*args, "--set", f"run.loggers=[csv,{name}]"])
    assert res.exit_code != 0
    assert f'pip install "zsceval[{name}]"' in res.output, res.output
    assert not (tmp_path / "run" / "metrics.csv").exists()


def test_loggers_env_adds_to_the_config_and_csv_is_always_first(monkeypatch):
    monkeypatch.setenv(lg.LOGGERS_ENV, "mlflow, recorder")
    names = lg.resolve_logger_names(["wandb"], tensorboard=True)
    assert names == ["csv", "wandb", "tensorboard", "mlflow", "recorder"]


def test_wandb_offline_run_lives_in_the_run_folder_and_resume_continues_it(tmp_path, toy_config, monkeypatch):
    pytest.importorskip("wandb", reason='the wandb logger needs: pip install "zsceval[wandb]"')
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = toy_config(*LOGGED, "run.loggers=[csv,wandb]")
    run = tmp_path / "run"
    with pytest.raises(_Interrupt):
        Trainer(cfg, run, progress=False).train(_kill_after(3))
    run_id = json.loads((run / "loggers.json").read_text())["wandb"]["id"]
    first = sorted((run / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(first) == 1 and list(first[0].glob("*.wandb"))
    Trainer(cfg, run, resume=True, progress=False).train()
    assert json.loads((run / "loggers.json").read_text())["wandb"]["id"] == run_id  # the same run
    runs = sorted((run / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(runs) == 2 and all((r / f"run-{run_id}.wandb").stat().st_size > 0 for r in runs)


def test_mlflow_file_store_run_resumes_without_duplicated_steps(tmp_path, toy_config, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason='the mlflow logger needs: pip install "zsceval[mlflow]"')
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file:{tmp_path / 'mlruns'}")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for the opt-in
    cfg = toy_config(*LOGGED, "run.loggers=[mlflow]")
    run = tmp_path / "run"
    with pytest.raises(_Interrupt):
        Trainer(cfg, run, progress=False).train(_kill_after(3))
    state = json.loads((run / "loggers.json").read_text())["mlflow"]
    Trainer(cfg, run, resume=True, progress=False).train()
    assert json.loads((run / "loggers.json").read_text())["mlflow"]["run_id"] == state["run_id"]
    client = mlflow.MlflowClient(tracking_uri=state["tracking_uri"])
    steps = [m.step for m in client.get_metric_history(state["run_id"], "env_steps")]
    assert sorted(steps) == [256, 512, 768, 1024]
    got = client.get_run(state["run_id"])
    assert got.info.status == "FINISHED" and got.data.params["run.algo"] == "sp"
    group = lg.open_loggers(["mlflow"], tmp_path / "bench", run_name="bench")
    group.log_table("br_prox", pd.DataFrame({"algo": ["sp"], "br_prox": [0.5]}))
    group.close()
    bench_run = json.loads((tmp_path / "bench" / "loggers.json").read_text())["mlflow"]["run_id"]
    text = mlflow.artifacts.load_text(f"{client.get_run(bench_run).info.artifact_uri}/br_prox.csv")
    assert text.splitlines() == ["algo,br_prox", "sp,0.5"]
    assert (tmp_path / "bench" / "br_prox.csv").read_text().splitlines() == ["algo,br_prox", "sp,0.5"]


def test_bench_summary_goes_to_every_logger(tmp_path, recorder):
    from zsceval.bench.run import log_summary

    rows = [{"layout": "cramped_room", "algorithm": "sp", "ego_seed": s, "partner": p, "partner_level": lvl,
             "seat": seat, "episode": 0, "sparse_return": 100.0 + 10 * s}
            for s in range(2) for p, lvl in (("c001", "expert"), ("c001_mid", "moderate"))
            for seat in (0, 1)]  # fmt: skip
    pd.DataFrame(rows).to_parquet(tmp_path / "results.parquet")
    br = [{"layout": "cramped_room", "partner": p, "seat": seat, "br_return": 200.0}
          for p in ("c001", "c001_mid") for seat in (0, 1)]  # fmt: skip
    pd.DataFrame(br).to_parquet(tmp_path / "br_returns.parquet")
    log_summary(tmp_path, ("csv", "recorder"), name="tiny")
    table = pd.read_csv(tmp_path / "br_prox_summary.csv")
    assert set(table["partner_level"]) == {"all", "expert", "moderate"} and (table["algorithm"] == "sp").all()
    pd.testing.assert_frame_equal(recorder.tables["br_prox_summary"].reset_index(drop=True), table,
                                  check_dtype=False)  # fmt: skip
    scalars = _rows(tmp_path / "summary_metrics.csv")
    expert = table.set_index("partner_level").loc["expert", "iqm"]
    assert float(scalars[0]["cramped_room/sp/expert/iqm"]) == pytest.approx(expert)
    assert recorder.steps == [0]
