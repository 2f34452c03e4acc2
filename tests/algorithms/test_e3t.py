"""E3T plug-in: the epsilon-mixture partner, the Polyak partner update, CLI training and exact resume."""

import csv
import math
import sys

import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.cli import main
from zsceval.rl.agent import agent_class
from zsceval.rl.checkpoint import list_checkpoints, load_checkpoint, load_policy
from zsceval.rl.config import ConfigError, ModelConfig, resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.trainer import Trainer

A = 6  # Overcooked's action space


def _e3t_module():
    """The plug-in module (``registry.get`` imports algorithms/e3t.py)."""
    return sys.modules[registry.get("e3t").__module__]


def _peaked_policy(favourite: int = 2) -> Policy:
    """A policy whose logits put ~all mass on ``favourite`` (zero weights, bias +50)."""
    spec = network_spec(ModelConfig(kind="mlp", hidden_size=8, mlp_layers=1), (3, 3, 4), (3, 3, 4), A)
    policy = Policy(spec)
    with torch.no_grad():
        policy.actor.head.weight.zero_()
        policy.actor.head.bias.zero_()
        policy.actor.head.bias[favourite] = 50.0
    return policy


def _mixture(epsilon: float, favourite: int = 2):
    return _e3t_module().EpsilonMixtureAgent(_peaked_policy(favourite), epsilon)


@pytest.mark.parametrize("epsilon", [0.5, 0.25])
def test_mixture_partner_acts_uniformly_at_random_at_rate_epsilon(epsilon):
    agent = _mixture(epsilon, favourite=2)
    N = 60_000
    obs = torch.randint(0, 3, (N, 3, 3, 4), dtype=torch.uint8)
    avail = torch.ones(N, A, dtype=torch.bool)
    avail[:, 4] = False  # the random half ignores the mask: action 4 still appears at eps / A
    gen = torch.Generator().manual_seed(123)
    out = agent.act(obs, avail, agent.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool), gen)
    counts = torch.bincount(out.actions, minlength=A).double() / N
    p_other = epsilon * (A - 1) / A
    tol = 5 * math.sqrt(p_other * (1 - p_other) / N)  # 5 binomial standard deviations
    assert abs((1 - counts[2]).item() - p_other) < tol
    p_each = epsilon / A
    tol_each = 5 * math.sqrt(p_each * (1 - p_each) / N)
    for a in (0, 1, 3, 4, 5):  # uniform over the whole action space, the masked action included
        assert abs(counts[a].item() - p_each) < tol_each, (a, counts[a].item())
    replaced = out.extras["random"].double().mean().item()
    assert abs(replaced - epsilon) < 5 * math.sqrt(epsilon * (1 - epsilon) / N)
    # log-probabilities under the mixture, by hand: favourite (1 - eps) * 1 + eps / A, others eps / A
    fav = out.actions == 2
    assert torch.allclose(out.log_probs[fav], torch.tensor(math.log(1 - epsilon + epsilon / A)))
    assert torch.allclose(out.log_probs[~fav], torch.tensor(math.log(epsilon / A)))


def test_mixture_partner_is_the_policy_at_epsilon_zero_and_reproducible():
    agent = _mixture(0.0, favourite=3)
    N = 500
    obs = torch.randint(0, 3, (N, 3, 3, 4), dtype=torch.uint8)
    st = torch.ones(N, dtype=torch.bool)
    out = agent.act(obs, None, agent.initial_state(N, "cpu"), st, torch.Generator().manual_seed(0))
    assert bool((out.actions == 3).all())
    agent1 = _mixture(1.0)
    a1 = agent1.act(obs, None, agent1.initial_state(N, "cpu"), st, torch.Generator().manual_seed(7)).actions
    a2 = agent1.act(obs, None, agent1.initial_state(N, "cpu"), st, torch.Generator().manual_seed(7)).actions
    assert torch.equal(a1, a2) and len(torch.unique(a1)) == A  # same generator state, same draws
    rebuilt = agent_class("epsilon_mixture").from_spec(agent1.spec)
    assert rebuilt.epsilon == 1.0 and rebuilt.policy.spec == agent1.policy.spec


def test_polyak_update_is_exact(tmp_path):
    cfg = resolve_config(
        preset="quick",
        overrides=[
            "run.algo=e3t", "env.name=toy", "env.horizon=8", "env.num_envs=16", "ppo.rollout_length=8",
            "ppo.epochs=2", "ppo.num_minibatches=2", "run.eval_episodes=2", "run.total_steps=128",
            "algo.copy_factor=0.1",
        ],
    )  # fmt: skip
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    partner, ego = tr.partners["partner"].policy, tr.learners["ego"]
    old = {k: v.detach().clone() for k, v in partner.named_parameters()}
    assert any(not torch.equal(old[k], v) for k, v in ego.named_parameters())  # its own initialisation
    tr.train()  # one iteration (16 * 8 = 128 env steps)
    assert tr.iteration == 1 and tr.algorithm.blends == 1
    c = 0.1
    names = [k for k, _ in partner.named_parameters()]
    assert any(k.startswith("actor.") for k in names) and any(k.startswith("critic.") for k in names)
    ego_now = dict(ego.named_parameters())
    for k, v in partner.named_parameters():
        expected = (1 - c) * old[k] + c * ego_now[k].detach()
        assert torch.equal(v, expected), k
        assert not torch.equal(v, old[k]), k
    # the blend is what the checkpoint holds for a resume
    _, _, _, state = load_checkpoint(list_checkpoints(tmp_path / "run")[-1], with_train_state=True)
    for k, v in partner.state_dict().items():
        assert torch.equal(state["algorithm"]["partner"][k], v), k


def test_options_are_validated():
    E3T = registry.get("e3t")

    def build(*overrides):
        return E3T(resolve_config(preset="quick", overrides=["run.algo=e3t", *overrides]), 4, 2, "cpu")

    assert build().options.epsilon == 0.5 and build().options.copy_factor == 0.1
    assert build("algo.partner_model=true").model_spec(6) == {"partner_model": 6}
    with pytest.raises(ConfigError, match="algo.epsilon"):
        build("algo.epsilon=1.5")
    with pytest.raises(ConfigError, match="algo.copy_factor"):
        build("algo.copy_factor=-0.1")


def test_presets():
    paper = resolve_config(preset="paper", overrides=["run.algo=e3t"])
    assert list(paper.ppo.entropy_milestones) == [0, 6_000_000, 10_000_000]
    assert list(paper.ppo.entropy_coefs) == [0.2, 0.05, 0.01]
    assert paper.run.total_steps == 10_000_000 and paper.shaping.horizon == 100_000_000
    assert paper.model.kind == "cnn" and not paper.model.recurrent
    quick, sp = (resolve_config(preset="quick", overrides=[f"run.algo={a}"]) for a in ("e3t", "sp"))
    assert (quick.ppo, quick.model, quick.shaping, quick.env) == (sp.ppo, sp.model, sp.shaping, sp.env)
    assert quick.run.total_steps == sp.run.total_steps


TINY = ["--algo", "e3t", "--layout", "cramped_room", "--preset", "quick", "--steps", "4000", "--no-progress",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=1600", "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=2", "--set", "run.num_threads=1",
        "--set", "algo.epsilon=0.25"]  # fmt: skip


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

    original = Trainer.save_checkpoint

    def save_then_die(self):
        path = original(self)
        raise _Killed(path)

    monkeypatch.setattr(Trainer, "save_checkpoint", save_then_die)
    res = runner.invoke(main, ["train", "--out", str(tmp_path / "cut"), *TINY])
    assert isinstance(res.exception, _Killed)
    monkeypatch.undo()
    ckpts = list_checkpoints(tmp_path / "cut")
    assert [c.name for c in ckpts] == [f"step_{1600:012d}"]  # mid-episode: 200 of 400 steps
    res = runner.invoke(main, ["train", "--resume", "--out", str(tmp_path / "cut"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "resuming" in res.output

    full, _ = load_policy(tmp_path / "full")
    cut, _ = load_policy(tmp_path / "cut")
    for k, v in full.state_dict().items():
        assert torch.equal(cut.state_dict()[k], v), k
    states = [
        load_checkpoint(list_checkpoints(tmp_path / run)[-1], with_train_state=True)[3]["algorithm"]
        for run in ("full", "cut")
    ]
    assert states[0]["blends"] == states[1]["blends"] == 5
    for k, v in states[0]["partner"].items():
        assert torch.equal(states[1]["partner"][k], v), k
    assert _metrics(tmp_path / "full") == _metrics(tmp_path / "cut")
