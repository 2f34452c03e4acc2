"""Other-play plug-in (``op``): the symmetric partner, CLI training with a killed and resumed run,
and a clear failure on an env without symmetries."""

from __future__ import annotations

import csv
import sys

import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.cli import main
from zsceval.envs.yokai import YokaiEnv
from zsceval.rl.checkpoint import list_checkpoints, load_checkpoint, load_policy
from zsceval.rl.config import ConfigError, ModelConfig, resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.trainer import Trainer


def _op_module():
    return sys.modules[registry.get("op").__module__]


def _played_env(B: int = 64, seed: int = 0) -> YokaiEnv:
    """B games after a few random legal steps (different phases, every seat to move)."""
    env = YokaiEnv(B, seed=seed)
    step = env.reset()
    gen = torch.Generator().manual_seed(seed)
    for _ in range(int(torch.randint(3, 12, (1,), generator=gen))):
        B, n, A = step.avail_actions.shape
        acts = torch.multinomial(step.avail_actions.view(B * n, A).float(), 1, generator=gen).view(B, n)
        step = env.step(acts)
    return env


def _agent(env: YokaiEnv, spec: str):
    ms = network_spec(ModelConfig(kind="mlp", hidden_size=16, mlp_layers=1), env.obs_shape, env.obs_shape,
                      env.num_actions)  # fmt: skip
    torch.manual_seed(0)
    policy = Policy(ms)
    sym = env.symmetries()
    return _op_module().SymmetryAgent(policy, sym, sym.elements(spec)), policy, sym


def test_partner_acts_as_the_policy_in_the_mapped_view_and_keeps_its_symmetry():
    env = _played_env()
    agent, policy, sym = _agent(env, "C+R")
    step = env._first_step()
    obs, avail = step.obs.flatten(0, 1), step.avail_actions.flatten(0, 1)
    N = obs.shape[0]
    gen = torch.Generator().manual_seed(1)
    state = agent.initial_state(N, "cpu")
    out = agent.act(obs, avail, state, torch.ones(N, dtype=torch.bool), gen, deterministic=True)
    e = out.extras["symmetry"]
    assert torch.equal(out.state[:, -1].long(), e)
    # the policy's arg-max in the view of e, mapped back by e^-1
    h0 = policy.initial_state(N, "cpu")
    starts = torch.ones(N, dtype=torch.bool)
    mapped = policy.act(sym.observation(obs, e), sym.mask(avail, e), h0, starts, deterministic=True)
    assert torch.equal(out.actions, sym.action(mapped.actions, e, inverse=True))
    assert avail.gather(1, out.actions[:, None]).all()  # mapped back onto the env's own mask
    assert (e != 0).any()  # the rows really play through symmetries
    # the element is kept until the row's next episode start
    starts = torch.zeros(N, dtype=torch.bool)
    starts[:5] = True
    again = agent.act(obs, avail, out.state, starts, gen, deterministic=True)
    assert torch.equal(again.extras["symmetry"][5:], e[5:])


@pytest.mark.parametrize(("spec", "size"), [("C", 6), ("C+R", 24), ("R", 4)])
def test_partner_draws_its_symmetry_uniformly_from_the_chosen_groups(spec, size):
    env = YokaiEnv(1)
    agent, _, sym = _agent(env, spec)
    N = 300 * size
    obs = env.reset().obs[0, :1].expand(N, -1, -1, -1)
    avail = env._first_step().avail_actions[0, :1].expand(N, -1)
    out = agent.act(obs, avail, agent.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool),
                    torch.Generator().manual_seed(2))  # fmt: skip
    counts = torch.bincount(out.extras["symmetry"], minlength=sym.size)
    assert set(counts.nonzero().squeeze(1).tolist()) == set(sym.elements(spec).tolist())
    expected = N / size
    sd = (N * (1 / size) * (1 - 1 / size)) ** 0.5
    assert (counts[sym.elements(spec)] - expected).abs().max() < 5 * sd


def test_op_on_an_env_without_symmetries_fails_at_build_time_naming_it(tmp_path):
    res = CliRunner().invoke(main, ["train", "--algo", "op", "--layout", "cramped_room", "--steps", "100",
                                    "--out", str(tmp_path / "r"), "--no-progress"])  # fmt: skip
    assert res.exit_code != 0
    assert "env 'overcooked' declares none" in res.output and "other-play" in res.output
    cfg = resolve_config(preset="quick", overrides=["run.algo=op", "env.name=yokai", "algo.symmetries=C+Q"])
    with pytest.raises(ConfigError, match="algo.symmetries: unknown Yokai symmetries 'C\\+Q'"):
        registry.get("op")(cfg, 2, 2, torch.device("cpu"))


TINY = ["--algo", "op", "--env", "yokai", "--steps", "2048", "--no-progress",
        "--set", "algo.symmetries=C+R", "--set", "env.num_envs=16", "--set", "ppo.rollout_length=32",
        "--set", "model.recurrent=true", "--set", "model.chunk_length=8", "--set", "env.horizon=32",
        "--set", "run.eval_episodes=4", "--set", "run.checkpoint_every=1024", "--set", "run.num_threads=1",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=2"]  # fmt: skip


class _Killed(Exception):
    pass


def _metrics(run):
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    drop = {"wall_time_s", "env_steps_per_s", "collect_s", "update_s", "cpu_s"}
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def test_cli_train_end_to_end_and_killed_run_resumes_exactly(tmp_path, monkeypatch):
    runner = CliRunner()
    res = runner.invoke(main, ["train", "--out", str(tmp_path / "full"), *TINY])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "full" / "eval.json").is_file()
    rows = _metrics(tmp_path / "full")
    assert len(rows) == 4 and all(float(r["events/illegal"]) == 0 for r in rows)  # mapped-back actions

    original = Trainer.save_checkpoint

    def save_then_die(self):
        path = original(self)
        raise _Killed(path)

    monkeypatch.setattr(Trainer, "save_checkpoint", save_then_die)
    res = runner.invoke(main, ["train", "--out", str(tmp_path / "cut"), *TINY])
    assert isinstance(res.exception, _Killed)
    monkeypatch.undo()
    assert [c.name for c in list_checkpoints(tmp_path / "cut")] == [f"step_{1024:012d}"]
    # the partners' symmetries are part of the saved runner state (last state column, not all 0)
    runner_state = load_checkpoint(list_checkpoints(tmp_path / "cut")[-1], with_train_state=True)[3]["runner"]
    assert runner_state["state"][1][:, -1].abs().sum() > 0
    res = runner.invoke(main, ["train", "--resume", "--out", str(tmp_path / "cut"), "--no-progress"])
    assert res.exit_code == 0, res.output

    full, _ = load_policy(tmp_path / "full")
    cut, _ = load_policy(tmp_path / "cut")
    for k, v in full.state_dict().items():
        assert torch.equal(cut.state_dict()[k], v), k
    assert _metrics(tmp_path / "full") == _metrics(tmp_path / "cut")
