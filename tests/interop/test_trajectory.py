"""Trajectory files: recording, round trip, replay in our engine and in overcooked-ai, bad files."""

import json

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.interop.trajectory import (
    Trajectory,
    TrajectoryError,
    action_from_overcooked_ai,
    action_to_overcooked_ai,
    json_form,
    load_trajectories,
    record_trajectories,
    replay_in_engine,
    save_trajectories,
    to_overcooked_ai,
)
from zsceval.rl.agent import ActOutput, sample_actions


class BiasedRandomAgent:
    """Random actions among the available ones, INTERACT favoured (so soups get made)."""

    def __init__(self, interact_logit: float = 1.5):
        self.logits = torch.zeros(6)
        self.logits[5] = interact_logit

    def initial_state(self, rows, device):
        return torch.zeros(rows, 1, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        actions, log_probs = sample_actions(
            self.logits.expand(obs.shape[0], 6), avail, generator, deterministic
        )
        return ActOutput(actions, log_probs, state)


class StayAgent(BiasedRandomAgent):
    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        return ActOutput(torch.full((obs.shape[0],), 4), torch.zeros(obs.shape[0]), state)


def record(layout, episodes=3, num_envs=2, horizon=40, seed=0, agents=None, **env_options):
    env = OvercookedEnv(layout, num_envs=num_envs, horizon=horizon, seed=seed, **env_options)
    agent = BiasedRandomAgent()
    gen = torch.Generator().manual_seed(seed)
    return record_trajectories(
        env, agents or [agent, agent], episodes, labels=["a", "b"], generator=gen, meta={"seed": seed}
    )


def test_record_save_load_round_trip(tmp_path):
    trajs = record("cramped_room", episodes=3, num_envs=2, horizon=30)
    assert len(trajs) == 3 and [t.meta["game"] for t in trajs] == [0, 1, 0]
    for t in trajs:
        assert len(t) == 30 and len(t.states) == 31 and t.agents == ["a", "b"]
        assert t.states[0]["timestep"] == 0 and t.states[-1]["timestep"] == 30
        assert t.score == sum(t.rewards) and t.meta["seed"] == 0 and t.meta["grid"]
    path = save_trajectories(tmp_path / "sub" / "trajs.json", trajs)
    raw = json.loads(path.read_text())
    assert isinstance(raw, list) and raw[0]["format"] == "zsceval-trajectory" and raw[0]["version"] == 1
    loaded = load_trajectories(path)
    assert [t.to_dict() for t in loaded] == [t.to_dict() for t in trajs]
    assert list(path.parent.iterdir()) == [path]  # atomic write: no temporary file left
    single = tmp_path / "one.json"
    single.write_text(json.dumps(trajs[1].to_dict()))
    assert load_trajectories(single)[0].to_dict() == trajs[1].to_dict()


@pytest.mark.parametrize(
    "layout,options",
    [("counter_circuit", {"random_start_prob": 1.0}), ("coordination_ring", {"randomize_seats": True}),
     ("forced_coordination_mr", {"random_start_prob": 1.0})],
)  # fmt: skip
def test_replay_in_engine_reproduces_every_state(layout, options):
    trajs = record(layout, episodes=2, num_envs=2, horizon=60, seed=3, **options)
    for traj in trajs:
        rebuilt = replay_in_engine(traj)
        assert rebuilt == traj.states
    if options.get("random_start_prob"):  # random kitchens: the games start differently
        assert trajs[0].states[0] != trajs[1].states[0]
    tampered = Trajectory(**{**trajs[0].__dict__, "joint_actions": [list(a) for a in trajs[0].joint_actions]})
    t = next(
        t
        for t, (s0, s1) in enumerate(zip(tampered.states, tampered.states[1:]))
        if s0["players"] != s1["players"]
    )
    tampered.joint_actions[t] = [4, 4]
    with pytest.raises(TrajectoryError, match=f"step {t} "):
        replay_in_engine(tampered)


def test_seat_randomization_records_actions_by_seat():
    """A STAY agent and a moving agent: in every trajectory the STAYing player is the one whose
    recorded actions are all STAY, whichever seat it drew."""
    trajs = record("cramped_room", episodes=4, num_envs=4, horizon=20, seed=5, randomize_seats=True,
                   agents=[StayAgent(), BiasedRandomAgent()])  # fmt: skip
    stayers = set()
    for traj in trajs:
        assert replay_in_engine(traj) == traj.states
        still = [p for p in range(2) if all(joint[p] == 4 for joint in traj.joint_actions)]
        assert len(still) == 1
        stayers.add(still[0])
        assert all(s["players"][still[0]]["position"] == traj.states[0]["players"][still[0]]["position"]
                   for s in traj.states)  # fmt: skip
    assert stayers == {0, 1}  # both seatings occurred


@pytest.mark.reference
@pytest.mark.parametrize("layout", ["cramped_room", "asymmetric_advantages", "coordination_ring_mr"])
def test_trajectory_replays_in_overcooked_ai(layout):
    pytest.importorskip(
        "overcooked", reason="reference simulator not installed (pip install -e .[reference])"
    )
    trajs = record(layout, episodes=1, num_envs=1, horizon=120, seed=11, random_start_prob=1.0)
    ref = to_overcooked_ai(trajs)
    mdp, actions = ref["mdps"][0], ref["ep_actions"][0]
    states = [*ref["ep_states"][0], ref["ep_final_states"][0]]
    assert len(states) == 121 and len(actions) == 120 and ref["ep_returns"] == [trajs[0].score]
    assert len(ref["ep_rewards"][0]) == len(ref["ep_dones"][0]) == 120 and ref["ep_dones"][0][-1]
    held = {json.dumps([p["held_object"] for p in s["players"]]) for s in trajs[0].states}
    assert len(held) > 3  # objects are picked up and put down: the replay exercises interactions
    state = states[0]
    assert json_form(state.to_dict()) == trajs[0].states[0]
    total = 0
    for t, joint in enumerate(actions):
        state, info = mdp.get_state_transition(state, joint)
        assert json_form(state.to_dict()) == trajs[0].states[t + 1], f"{layout} step {t}"
        assert json_form(states[t + 1].to_dict()) == trajs[0].states[t + 1]
        total += sum(info["sparse_reward_by_agent"])
    if not layout.endswith("_mr"):  # multi-recipe rewards follow ZSC-Eval rules (see reference.py)
        assert total == trajs[0].score


def test_action_conversion_matches_overcooked_ai():
    assert [action_to_overcooked_ai(a) for a in range(6)] == [
        (0, -1),
        (0, 1),
        (1, 0),
        (-1, 0),
        (0, 0),
        "interact",
    ]
    assert [action_from_overcooked_ai(action_to_overcooked_ai(a)) for a in range(6)] == list(range(6))
    assert action_from_overcooked_ai([1, 0]) == 2
    with pytest.raises(ValueError):
        action_to_overcooked_ai(6)
    with pytest.raises(ValueError):
        action_from_overcooked_ai("jump")
    overcooked = pytest.importorskip("overcooked.mdp.actions")
    assert [action_to_overcooked_ai(a) for a in range(6)] == list(overcooked.Action.INDEX_TO_ACTION)


def test_malformed_files_name_the_file_and_the_problem(tmp_path):
    good = record("cramped_room", episodes=1, num_envs=1, horizon=5)[0].to_dict()
    cases = {
        "missing.json": (None, "cannot read"),
        "notjson.json": ("{oops", "not valid JSON"),
        "scalar.json": ("3", "expected a JSON array"),
        "format.json": ([{**good, "format": "other"}], "trajectory 0: 'format' must be"),
        "version.json": ([good, {**good, "version": 2}], "trajectory 1: unsupported version 2"),
        "field.json": ([{k: v for k, v in good.items() if k != "states"}], "missing field 'states'"),
        "length.json": ([{**good, "states": good["states"][:-1]}], "5 states for 5 joint actions"),
        "action.json": ([{**good, "joint_actions": [[0, 9]] * 5}], r"joint_actions\[0\] must be 2 ints"),
        "score.json": ([{**good, "score": 99}], "'score' 99 != sum of rewards"),
        "players.json": ([{**good, "agents": ["x"]}], "has 2 players, 'agents' has 1"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        with pytest.raises(TrajectoryError, match=message) as info:
            load_trajectories(path)
        assert str(path) in str(info.value), name


@pytest.mark.reference
def test_overcooked_ai_visualizer_renders_a_trajectory(tmp_path, monkeypatch):
    pytest.importorskip(
        "overcooked", reason="reference simulator not installed (pip install -e .[reference])"
    )
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from overcooked.visualization.state_visualizer import StateVisualizer

    trajs = record("cramped_room", episodes=1, num_envs=1, horizon=4)
    out = StateVisualizer().display_rendered_trajectory(
        to_overcooked_ai(trajs), img_directory_path=str(tmp_path)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{t}.png" for t in range(4)] and out == str(
        tmp_path
    )
