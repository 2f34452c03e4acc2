"""The scripted probe partners in the engine ("Who is Helping Whom?", Sec. 6.1)."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.interdependence import interdependence_of_trajectory
from zsceval.interdependence.probe import ScriptedProbe
from zsceval.interop.trajectory import record_trajectories
from zsceval.rl.agent import ActOutput, agent_class, sample_actions


class RandomAgent:
    """Uniform over the available actions."""

    def initial_state(self, rows, device):
        return torch.zeros(rows, 0, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        a, logp = sample_actions(torch.zeros(obs.shape[0], 6), avail, generator)
        return ActOutput(a, logp, state)


def play(layout, seat_agents, horizon=400, seed=0):
    env = OvercookedEnv(layout, num_envs=1, horizon=horizon, seed=seed)
    agents = [a(env) if callable(a) and not hasattr(a, "act") else a for a in seat_agents]
    (traj,) = record_trajectories(env, agents, 1, generator=torch.Generator().manual_seed(seed))
    return traj


def test_onion_passer_with_random_partner_passes_onions():
    """forced_coordination, probe in seat 1 (left: onions), random partner in seat 0, 300 steps:
    the probe puts onions on the middle counters x=2 only, each placement is a trigger action."""
    traj = play(
        "forced_coordination",
        [RandomAgent(), lambda env: ScriptedProbe(env.obs_channels, "onion_passer")],
        horizon=300,
    )
    c = interdependence_of_trajectory(traj)
    placed = [tr for tr in c.triggers if tr[1] == 1]
    assert len(placed) >= 3
    assert all(kind == "put_counter" and cell[0] == 2 for _, _, kind, cell in placed)
    onions_mid = [o for o in traj.states[-1]["objects"] if o["name"] == "onion" and o["position"][0] == 2]
    assert len(onions_mid) >= 1
    # the probe never receives anything and never places elsewhere
    assert sum(c.accepted[1].values()) == 0
    # every interdependence detected is the random partner taking one of the probe's onions
    assert all(i.giver == 1 and i.object_kind == "onion" for i in c.interdependencies)
    assert c.not_accepted(1) == c.trigger_actions[1] - len({i.t_effect for i in c.interdependencies})


def test_supplier_and_cook_are_constructive_on_forced_coordination():
    """supplier (seat 1) passes onions and dishes, cook (seat 0) cooks and serves: every delivered
    soup holds 3 passed onions and was plated on a passed dish, so by Def. 4.6
    constructive = 4 x soups delivered, all triggered by seat 1 and accepted by seat 0."""
    traj = play(
        "forced_coordination",
        [
            lambda env: ScriptedProbe(env.obs_channels, "cook"),
            lambda env: ScriptedProbe(env.obs_channels, "supplier"),
        ],
    )
    soups = int(traj.score // 20)
    assert soups >= 5
    c = interdependence_of_trajectory(traj)
    assert c.constructive == 4 * soups
    assert c.triggered[1]["constructive"] == c.accepted[0]["constructive"] == c.constructive
    assert c.looping == 0 and c.trigger_actions[0] == 0
    assert c.not_accepted(1) <= 3  # only the last items, still on the counter at the end
    kinds = {i.object_kind for i in c.interdependencies if i.category == "constructive"}
    assert kinds == {"onion", "dish"}


def test_onion_passer_on_counter_circuit_is_taken_up_by_cook():
    traj = play(
        "counter_circuit",
        [
            lambda env: ScriptedProbe(env.obs_channels, "cook"),
            lambda env: ScriptedProbe(env.obs_channels, "onion_passer"),
        ],
    )
    c = interdependence_of_trajectory(traj)
    assert traj.score > 0
    assert c.triggered[1]["constructive"] >= 3 * int(traj.score // 20) - 3
    assert all(i.giver == 1 and i.object_kind == "onion" for i in c.interdependencies)


def test_probe_spec_round_trip_and_errors():
    env = OvercookedEnv("forced_coordination", num_envs=3)
    probe = ScriptedProbe(env.obs_channels, "supplier")
    again = agent_class("interdep_probe").from_spec(probe.spec)
    step = env.reset()
    obs = step.obs.reshape(-1, *env.obs_shape)
    avail = step.avail_actions.reshape(-1, 6) if step.avail_actions is not None else None
    s = probe.initial_state(6, "cpu")
    a1 = probe.act(obs, avail, s, torch.ones(6, dtype=torch.bool)).actions
    a2 = again.act(obs, avail, s, torch.ones(6, dtype=torch.bool)).actions
    assert torch.equal(a1, a2) and a1.dtype == torch.int64 and a1.shape == (6,)
    with pytest.raises(ValueError, match="role"):
        ScriptedProbe(env.obs_channels, "chef")
    with pytest.raises(ValueError, match="channels"):
        ScriptedProbe(("a", "b"))


def test_counts_from_a_trajectory_file(tmp_path):
    """``interdependence_of_file`` reads what ``zsceval eval --save-trajectories`` writes."""
    from zsceval.interdependence import interdependence_of_file, summarize
    from zsceval.interop.trajectory import save_trajectories

    traj = play(
        "forced_coordination",
        [
            lambda env: ScriptedProbe(env.obs_channels, "cook"),
            lambda env: ScriptedProbe(env.obs_channels, "supplier"),
        ],
        horizon=120,
    )
    path = save_trajectories(tmp_path / "t.json", [traj, traj])
    counts = interdependence_of_file(path)
    direct = interdependence_of_trajectory(traj).to_dict()
    assert [c.to_dict() for c in counts] == [direct, direct]
    assert summarize(counts)["constructive"] == direct["constructive"] > 0


def test_partners_probe_saves_a_checkpoint_that_eval_plays(tmp_path):
    """`zsceval partners probe` writes the probe as a checkpoint; `zsceval eval` pairs two of them
    (supplier and cook) and counts the interdependencies of their episodes."""
    import json

    from click.testing import CliRunner

    from zsceval.cli import main

    runner = CliRunner()
    for role in ("supplier", "cook"):
        res = runner.invoke(main, ["partners", "probe", "--layout", "forced_coordination", "--role", role,
                                   "--out", str(tmp_path / role)])  # fmt: skip
        assert res.exit_code == 0, res.output
    args = ["eval", "--agent", str(tmp_path / "supplier"), "--partner", str(tmp_path / "cook"),
            "--layout", "forced_coordination", "--episodes", "1", "--interdependence", "--json"]  # fmt: skip
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # the supplier in seat 1 starts on the dispensers' side: soups, every handover triggered by it
    seat1 = out["interdependence"]["seatings"][1]
    assert out["seatings"][1]["sparse_return_mean"] > 0
    assert seat1["constructive"] > 0 and seat1["ego_triggered_constructive"] == seat1["constructive"]
