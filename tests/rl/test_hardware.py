"""Hardware-aware defaults: ``model.bf16: auto`` and ``run.num_threads: auto`` are
resolved once when a run starts, recorded in its config and reused by ``--resume``."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import yaml
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.rl import hardware as hw
from zsceval.rl.config import ConfigError, resolve_config

TINY = ["--preset", "quick", "--steps", "3200", "--no-progress", "--layout", "cramped_room",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=0",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


@pytest.fixture
def registry_dir(tmp_path, monkeypatch):
    """An empty active-run registry and no thread cap."""
    folder = tmp_path / "active"
    monkeypatch.setenv(hw.ACTIVE_DIR_ENV, str(folder))
    monkeypatch.delenv(hw.MAX_THREADS_ENV, raising=False)
    monkeypatch.setattr(hw, "_registered", None)
    return folder


def fake_cpu(monkeypatch, *, avx512_bf16=False, amx=False):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)


def test_bf16_auto_is_on_only_where_the_cpu_computes_bf16_natively(monkeypatch):
    fake_cpu(monkeypatch)
    on, note = hw.resolve_bf16("auto", "cpu")
    assert on is False and "without native bf16" in note
    fake_cpu(monkeypatch, avx512_bf16=True)
    assert hw.resolve_bf16("auto", "cpu")[0] is True
    fake_cpu(monkeypatch, amx=True)
    assert hw.resolve_bf16("auto", torch.device("cpu")) == (True, "model.bf16=auto -> true (CPU with AMX)")
    fake_cpu(monkeypatch)  # explicit values win on any CPU
    assert hw.resolve_bf16(True, "cpu") == (True, None) and hw.resolve_bf16(False, "cpu") == (False, None)
    with pytest.raises(ValueError, match="'auto'"):
        hw.resolve_bf16("yes", "cpu")


def test_bf16_auto_on_cuda_follows_the_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert hw.resolve_bf16("auto", "cuda")[0] is True
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert hw.resolve_bf16("auto", "cuda:0")[0] is False


def test_config_accepts_auto_and_names_the_valid_values():
    cfg = resolve_config(preset="quick", overrides=[])
    assert cfg.model.bf16 == "auto" and cfg.run.num_threads == "auto"
    cfg = resolve_config(preset="quick", overrides=["model.bf16=false", "run.num_threads=3"])
    assert cfg.model.bf16 is False and cfg.run.num_threads == 3
    with pytest.raises(ConfigError, match="model.bf16.*'auto'"):
        resolve_config(preset="quick", overrides=["model.bf16=sometimes"])
    with pytest.raises(ConfigError, match="run.num_threads.*'auto'"):
        resolve_config(preset="quick", overrides=["run.num_threads=many"])
    with pytest.raises(ConfigError, match="run.num_threads must be 'auto' or a count >= 0"):
        resolve_config(preset="quick", overrides=["run.num_threads=-2"])


def test_auto_threads_take_the_free_cores_or_one(registry_dir, monkeypatch):
    monkeypatch.setattr(hw, "usable_cores", lambda: 4)
    monkeypatch.setattr(hw, "busy_cores", lambda *a: 0.1)
    assert hw.auto_threads()[0] == 4
    monkeypatch.setattr(hw, "busy_cores", lambda *a: 2.8)  # other processes hold three cores
    assert hw.auto_threads()[0] == 1
    monkeypatch.setattr(hw, "busy_cores", lambda *a: 1.0)
    assert hw.auto_threads()[0] == 3
    monkeypatch.setenv(hw.MAX_THREADS_ENV, "2")  # zsceval bench running jobs side by side
    threads, note = hw.resolve_threads("auto")
    assert threads == 2 and hw.MAX_THREADS_ENV in note
    monkeypatch.delenv(hw.MAX_THREADS_ENV)
    # another live zsceval run on this host: one thread, whatever the load says
    parent = os.getppid()
    (registry_dir / f"{hw.socket.gethostname()}-{parent}").write_text(f"{parent}\n")
    threads, why = hw.auto_threads()
    assert threads == 1 and f"pid {parent}" in why


def test_stale_registrations_are_ignored_and_removed(registry_dir, monkeypatch):
    monkeypatch.setattr(hw, "busy_cores", lambda *a: 0.0)
    monkeypatch.setattr(hw, "usable_cores", lambda: 2)
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)  # fmt: skip
    dead = int(done.stdout)
    registry_dir.mkdir(parents=True, exist_ok=True)
    stale = registry_dir / f"{hw.socket.gethostname()}-{dead}"
    stale.write_text(f"{dead}\n")
    assert hw.auto_threads()[0] == 2
    assert not stale.exists()
    assert (registry_dir / f"{hw.socket.gethostname()}-{os.getpid()}").exists()  # this process registered


def test_two_runs_started_at_once_each_take_one_thread(registry_dir):
    """Two processes resolving ``auto`` at the same moment see each other (register, then look)."""
    script = textwrap.dedent("""
        import sys, time
        t0 = float(sys.argv[1])
        time.sleep(max(0.0, t0 - time.time()))
        from zsceval.rl.hardware import auto_threads
        print(auto_threads()[0], flush=True)
        time.sleep(1.0)  # stay alive while the other one looks
    """)
    import time

    t0 = f"{time.time() + 4.0}"  # both past their imports
    env = {**os.environ, hw.ACTIVE_DIR_ENV: str(registry_dir)}
    env.pop(hw.MAX_THREADS_ENV, None)
    procs = [subprocess.Popen([sys.executable, "-c", script, t0], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]  # fmt: skip
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["1", "1"]


def test_a_run_records_the_resolved_values_and_resume_keeps_them(registry_dir, monkeypatch, tmp_path):
    fake_cpu(monkeypatch)
    monkeypatch.setattr(hw, "auto_threads", lambda: (1, "test"))
    run = tmp_path / "run"
    res = CliRunner().invoke(main, ["train", "--out", str(run), *TINY])
    assert res.exit_code == 0, res.output
    assert "model.bf16=auto -> false" in res.output
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["model"]["bf16"] is False and saved["run"]["num_threads"] == 1
    # the machine "changes": a resume still uses what the run recorded
    fake_cpu(monkeypatch, amx=True)
    monkeypatch.setattr(hw, "auto_threads", lambda: (2, "test"))
    args = ["train", "--out", str(run), "--resume", "--steps", "6400", "--no-progress"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["model"]["bf16"] is False and saved["run"]["num_threads"] == 1


def test_worker_thread_env_caps_concurrent_jobs_and_keeps_a_smaller_outer_cap(monkeypatch):
    monkeypatch.setattr(hw, "usable_cores", lambda: 8)
    monkeypatch.delenv(hw.MAX_THREADS_ENV, raising=False)
    assert hw.worker_thread_env(1) == {}
    assert hw.worker_thread_env(3) == {hw.MAX_THREADS_ENV: "2"}
    assert hw.worker_thread_env(16) == {hw.MAX_THREADS_ENV: "1"}
    monkeypatch.setenv(hw.MAX_THREADS_ENV, "1")
    assert hw.worker_thread_env(2) == {hw.MAX_THREADS_ENV: "1"}  # 8 // 2 = 4, the outer 1 wins
    monkeypatch.setenv(hw.MAX_THREADS_ENV, "junk")
    assert hw.worker_thread_env(2) == {hw.MAX_THREADS_ENV: "4"}


def test_scoped_environ_restores_set_and_unset_variables_even_on_error(monkeypatch):
    import os

    monkeypatch.setenv("ZSCEVAL_T_SET", "old")
    monkeypatch.delenv("ZSCEVAL_T_UNSET", raising=False)
    with pytest.raises(RuntimeError), hw.scoped_environ({"ZSCEVAL_T_SET": "new", "ZSCEVAL_T_UNSET": "x"}):
        assert os.environ["ZSCEVAL_T_SET"] == "new" and os.environ["ZSCEVAL_T_UNSET"] == "x"
        raise RuntimeError
    assert os.environ["ZSCEVAL_T_SET"] == "old" and "ZSCEVAL_T_UNSET" not in os.environ
