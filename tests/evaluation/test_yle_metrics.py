"""The YLE paper's metrics R, SR, NC, SEE (Sec. 5) and the game score S with bootstrap CIs, their
per-episode inputs recorded from ``Step.infos``, and ``zsceval eval`` printing them for Yōkai agents."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.envs.yokai import YokaiEnv
from zsceval.evaluation.episode_infos import InfoRecorder
from zsceval.rl.config import ModelConfig
from zsceval.rl.play import play
from zsceval.rl.policy import Policy, network_spec
from zsceval.stats.episode_metrics import bootstrap_mean_ci, yle_metrics


def test_metrics_by_hand():
    m = yle_metrics(
        np.array([5.0, -3.0, 8.0, -2.0]),
        np.array([True, False, True, False]),
        np.array([True, True, False, False]),
        np.array([3, 1, 3, 2]),
        np.array([5.0, 7.0, 8.0, -1.0]),  # Eq. 1 at the end; S counts it for won games only
        rng=np.random.default_rng(0),
    )
    assert m["R"].estimate == pytest.approx(2.0)  # (5 - 3 + 8 - 2) / 4
    assert m["SR"].estimate == pytest.approx(50.0)  # 2 of 4 won
    assert m["NC"].estimate == pytest.approx(2.25)  # (3 + 1 + 3 + 2) / 4
    assert m["SEE"].estimate == pytest.approx(25.0)  # only episode 0 ended early and won
    assert m["S"].estimate == pytest.approx(3.25)  # (5 + 0 + 8 + 0) / 4: lost games score 0
    for v in m.values():
        assert v.low <= v.estimate <= v.high and v.low < v.high
    assert m["SR"].low >= 0.0 and m["SR"].high <= 100.0
    assert m["NC"].low >= 1.0 and m["NC"].high <= 3.0


def test_bootstrap_interval_by_hand():
    # two episodes 0 and 1: replicate means are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4,
    # so the 2.5% and 97.5% quantiles are 0 and 1
    ci = bootstrap_mean_ci(np.array([0.0, 1.0]), reps=4000, rng=np.random.default_rng(1))
    assert (ci.estimate, ci.low, ci.high) == (0.5, 0.0, 1.0)
    # a constant has a degenerate interval; one episode too
    assert tuple(bootstrap_mean_ci(np.full(7, 3.0), rng=np.random.default_rng(0))) == (3.0, 3.0, 3.0)
    assert tuple(bootstrap_mean_ci(np.array([-2.0]), rng=np.random.default_rng(0))) == (-2.0, -2.0, -2.0)
    # the same generator state gives the same interval
    x = np.random.default_rng(5).normal(size=50)
    assert bootstrap_mean_ci(x, rng=np.random.default_rng(2)) == bootstrap_mean_ci(
        x, rng=np.random.default_rng(2)
    )
    with pytest.raises(ValueError, match="no episodes"):
        bootstrap_mean_ci(np.array([]), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="differ in length"):
        z = np.zeros(3)
        yle_metrics(z, z, z, z, np.zeros(2), rng=np.random.default_rng(0))


def test_recorded_infos_belong_to_the_played_episodes():
    """Every episode's return is Eq. 3 computed from its recorded win / early end / clusters and
    its hint events: the recorder and ``play`` see the same episodes in the same order."""
    env = YokaiEnv(16, seed=3)
    spec = network_spec(ModelConfig(kind="mlp", hidden_size=8, mlp_layers=1), env.obs_shape, env.obs_shape,
                        env.num_actions)  # fmt: skip
    torch.manual_seed(0)
    policy = Policy(spec)
    recorder = InfoRecorder(env)
    result = play(recorder, [policy, policy], 40, torch.Generator().manual_seed(4))  # 3 rounds of 16
    infos = recorder.episodes(40)
    assert len(recorder.rounds) == 3 and infos["win"].shape == (40,)
    ev = {name: result.events[:, :, i].sum(1) for i, name in enumerate(result.event_names)}
    H, C = env.rules.num_hints, env.rules.num_colours
    correct, wrong, reveal = ev["hint_correct"], ev["hint_wrong"], ev["reveal_hint"]
    score = 5 * (H - reveal) + 2 * (reveal - correct - wrong) + correct - wrong  # Eq. 1
    early = infos["ended_early"].float()
    lost = -early - (C - infos["clustered"].float()) - wrong  # Eq. 3, lost game
    expected = torch.where(infos["win"], score, lost)
    assert torch.equal(result.sparse, expected)
    assert torch.equal(infos["score"].float(), score.float())  # Eq. 1 is recorded for lost games too
    per_episode = [result.sparse, *(infos[k] for k in ("win", "ended_early", "clustered", "score"))]
    m = yle_metrics(*(t.numpy() for t in per_episode), rng=np.random.default_rng(0))
    won_score = torch.where(infos["win"], score.float(), 0.0).mean().item()
    assert m["S"].estimate == pytest.approx(won_score)
    assert m["S"].estimate != pytest.approx(score.float().mean().item())  # lost games' scores are left out
    assert torch.equal(infos["ended_early"], ev["end_early"] > 0)
    assert (~infos["win"]).any() and infos["ended_early"].any()  # both branches are exercised


def test_eval_prints_the_metrics_for_yokai_agents(tmp_path):
    runner = CliRunner()
    out = tmp_path / "sp"
    sets = ["env.num_envs=16", "ppo.rollout_length=32", "run.eval_episodes=2", "run.num_threads=1"]
    args = ["train", "--algo", "sp", "--env", "yokai", "--steps", "512", "--out", str(out), "--no-progress"]
    res = runner.invoke(main, args + [x for k in sets for x in ("--set", k)])
    assert res.exit_code == 0, res.output
    ev = ["eval", "--agent", str(out), "--partner", str(out), "--layout", "yokai-3x3-2p", "--episodes", "30"]
    res = runner.invoke(main, [*ev, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    for block in [*data["seatings"], data["pooled"]]:
        m = block["yle_metrics"]
        assert set(m) == {"R", "SR", "NC", "SEE", "S"}
        assert m["R"]["mean"] == pytest.approx(block["sparse_return_mean"])
        assert m["S"]["ci95"][0] <= m["S"]["mean"] <= m["S"]["ci95"][1]
        assert 0.0 <= m["SEE"]["mean"] <= m["SR"]["mean"] <= 100.0 and 0.0 <= m["NC"]["mean"] <= 3.0
        assert m["R"]["ci95"][0] <= m["R"]["mean"] <= m["R"]["ci95"][1]
    res = runner.invoke(main, ev)
    assert res.exit_code == 0, res.output
    assert res.output.count("YLE metrics: R ") == 3  # two seatings and the pooled line
