"""The human-proxy agent: the unstuck rule, history bookkeeping, checkpoint round trip, and BC metrics."""

import math

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.human.bc import accuracy_table, observations
from zsceval.human.proxy import HumanProxy, proxy_spec
from zsceval.rl.agent import agent_class
from zsceval.rl.checkpoint import load_agent, save_checkpoint


def _obs(env: OvercookedEnv) -> torch.Tensor:
    return env.reset().obs[:, 0]  # [B, H, W, C], agent slot 0


def _proxy_preferring(env: OvercookedEnv, action: int, stuck_time: int = 3) -> HumanProxy:
    """A proxy whose logits strongly prefer ``action`` (then action+1), whatever it sees."""
    proxy = HumanProxy(proxy_spec(env.obs_shape, 6, hidden=(4,), stuck_time=stuck_time))
    last = proxy.net[-1]
    with torch.no_grad():
        for p in proxy.parameters():
            p.zero_()
        last.bias[action] = 10.0
        last.bias[(action + 1) % 6] = 5.0
    return proxy


def test_pose_reads_own_position_and_facing():
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=1, horizon=400)
    env.reset()
    state = env.export_state(0)
    obs = _obs(env)
    W = env.layout.width
    (x, y), facing = state["players"][0]["position"], tuple(state["players"][0]["orientation"])
    from zsceval.envs.overcooked.constants import DIRECTIONS

    assert int(HumanProxy.pose(obs)[0]) == (y * W + x) * 4 + DIRECTIONS.index(facing)


def test_unstuck_rule_removes_the_actions_taken_while_stuck():
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=2, horizon=400)
    obs = _obs(env)
    proxy = _proxy_preferring(env, action=4)  # STAY, then INTERACT
    pose = float(HumanProxy.pose(obs)[0])
    k = 3
    # row 0: same pose for the last 3 steps, having chosen STAY each time -> stuck: STAY removed
    # row 1: the pose changed one step ago -> not stuck: STAY kept
    state = torch.tensor([[pose, pose, pose, 4, 4, 4], [pose - 1, pose, pose, 4, 4, 4]])
    out = proxy.act(obs, None, state, torch.zeros(2, dtype=torch.bool), deterministic=True)
    assert out.actions.tolist() == [5, 4]
    # the history shifts: oldest pose/action dropped, current pose and chosen action appended
    assert out.state[0].tolist() == [pose, pose, pose, 4, 4, 5]
    assert out.state[1].tolist() == [pose, pose, pose, 4, 4, 4]
    # an episode start clears the history, so row 0 is no longer stuck
    out = proxy.act(obs, None, state, torch.tensor([True, False]), deterministic=True)
    assert out.actions.tolist() == [4, 4]
    assert out.state[0, :k].tolist() == [-1, -1, pose]


def test_stuck_time_zero_turns_the_rule_off():
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=1, horizon=400)
    obs = _obs(env)
    proxy = _proxy_preferring(env, action=4, stuck_time=0)
    state = proxy.initial_state(1, "cpu")
    assert state.shape == (1, 0)
    for _ in range(5):
        out = proxy.act(obs, None, state, torch.zeros(1, dtype=torch.bool), deterministic=True)
        state = out.state
        assert int(out.actions[0]) == 4


def test_checkpoint_round_trip(tmp_path):
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=1, horizon=400)
    proxy = HumanProxy(proxy_spec(env.obs_shape, 6, hidden=(8, 8)))
    meta = {"algo": "human-proxy", "ego": "human_proxy", "env_spec": env.spec_dict()}
    save_checkpoint(tmp_path / "checkpoints", 0, {"human_proxy": proxy}, meta)
    loaded, _ = load_agent(tmp_path, "human_proxy")
    assert agent_class("human-proxy") is HumanProxy
    obs = _obs(env)
    assert torch.equal(loaded(obs), proxy(obs))


def test_proxy_spec_rejects_bad_values():
    with pytest.raises(ValueError, match="hidden widths"):
        proxy_spec((5, 4, 20), 6, hidden=(0,))
    with pytest.raises(ValueError, match="stuck_time"):
        proxy_spec((5, 4, 20), 6, stuck_time=-1)


def test_accuracy_table_hand_computed():
    # 6 examples, true actions [0, 0, 0, 1, 1, 2]; predictions [0, 0, 1, 1, 0, 2]
    actions = torch.tensor([0, 0, 0, 1, 1, 2])
    pred = torch.tensor([0, 0, 1, 1, 0, 2])
    logits = torch.nn.functional.one_hot(pred, 6).float()
    t = accuracy_table(logits, actions, majority_class=0, num_actions=6)
    assert t["accuracy"] == pytest.approx(4 / 6)
    # per-class recall: class 0 2/3, class 1 1/2, class 2 1/1 -> mean over the 3 present classes
    assert t["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    assert t["majority_accuracy"] == pytest.approx(3 / 6)
    assert t["majority_balanced_accuracy"] == pytest.approx((1 + 0 + 0) / 3)


class _Trial:
    def __init__(self, layout, states, actions, trial_id="t"):
        self.layout, self.states, self.actions, self.trial_id = layout, states, actions, trial_id


def test_observations_are_each_players_encoding_in_order():
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=1, horizon=400)
    step = env.reset()
    states, obs_ref = [env.export_state(0)], [step.obs[0].clone()]
    acts = torch.tensor([[3, 2], [1, 5], [4, 0]])
    for a in acts:
        step = env.step(a.unsqueeze(0))
        states.append(env.export_state(0))
        obs_ref.append(step.obs[0].clone())
    x, y = observations([_Trial("cramped_room", states, acts)], "cramped_room", chunk=2)
    assert x.shape == (6, *env.obs_shape) and x.dtype == torch.uint8
    assert y.tolist() == [3, 2, 1, 5, 4, 0]
    for t in range(3):  # player p of step t is example 2t + p (no seat shuffling: slot = player)
        assert torch.equal(x[2 * t], obs_ref[t][0]) and torch.equal(x[2 * t + 1], obs_ref[t][1])
    with pytest.raises(ValueError, match="layout"):
        observations([_Trial("counter_circuit", states, acts)], "cramped_room")


def test_bc_learns_a_deterministic_rule():
    """BC on a synthetic 'human' who always moves east recovers that action (loss far below log 6)."""
    from zsceval.human.bc import BCConfig, train_bc

    env = OvercookedEnv(load_layout("cramped_room"), num_envs=1, horizon=400)
    env.reset()
    trials = []
    gen = torch.Generator().manual_seed(0)
    for i in range(4):
        states, acts = [env.export_state(0)], []
        for _ in range(20):
            a = torch.tensor([2, int(torch.randint(0, 6, (1,), generator=gen))])  # player 0 always EAST
            env.step(a.unsqueeze(0))
            states.append(env.export_state(0))
            acts.append(a)
        trials.append(_Trial("cramped_room", states, torch.stack(acts), f"t{i}"))
    result = train_bc(trials, "cramped_room", BCConfig(epochs=30, batch_size=16, validation_split=0.25))
    assert result.metrics["fit"]["loss"] < math.log(6)
    x, y = observations(trials, "cramped_room")
    p0 = result.proxy(x[0::2]).argmax(1)
    assert (p0 == 2).float().mean() > 0.9
