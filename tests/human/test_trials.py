"""The loader of the 2019 human-human trials: data location, layout check, state and action
conversion (checked against rows converted by hand), trial grouping and counts."""

import importlib.util
from collections import Counter

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.human import trials as trials_module
from zsceval.human.trials import (
    HUMAN_LAYOUTS,
    INSTALL_HINT,
    HumanDataMissing,
    chain_breaks,
    check_layout,
    convert_state,
    find_data_dir,
    load_trials,
    parse_joint_action,
    read_split,
)

from . import cached_trials, require_data

# Row t=52 of trial 1-run-1-0 (cramped_room, train): player 0 puts the third onion in the pot.
ROW_52_STATE = (
    "{'players': [{'position': [2, 1], 'orientation': [0, -1], 'held_object': {'name': 'onion', "
    "'position': [2, 1]}}, {'position': [3, 1], 'orientation': [1, 0], 'held_object': {'name': "
    "'onion', 'position': [3, 1]}}], 'objects': {'2,0': {'name': 'soup', 'position': [2, 0], "
    "'state': ['onion', 2, 0]}}, 'order_list': ['onion'], 'pot_explosion': False}"
)
ONION = {"name": "onion", "position": (3, 1)}
ORDERS = [{"ingredients": ("onion", "onion", "onion")}]


def soup(pos, n, tick):
    """A soup dict written out by hand (as OvercookedEnv.export_state writes it)."""
    idle, ready = tick == -1, tick == 20
    return {
        "name": "soup",
        "position": pos,
        "_ingredients": [{"name": "onion", "position": pos}] * n,
        "cooking_tick": tick,
        "is_cooking": not idle and not ready,
        "is_ready": ready,
        "is_idle": idle,
        "cook_time": -1 if idle else 20,
        "_cooking_tick": tick,
    }


# The state after row 52 (row 53's state), converted by hand: the pot cooks, tick 1.
ROW_53_CONVERTED = {
    "players": [
        {"position": (2, 1), "orientation": (0, -1), "held_object": None},
        {"position": (3, 1), "orientation": (1, 0), "held_object": ONION},
    ],
    "objects": [soup((2, 0), 3, 1)],
    "bonus_orders": [],
    "all_orders": ORDERS,
    "timestep": 53,
}


# ---------------------------------------------------------------------------- no data needed
def test_convert_state_by_hand():
    d = convert_state(ROW_52_STATE, timestep=52)
    assert d == {
        "players": [
            {
                "position": (2, 1),
                "orientation": (0, -1),
                "held_object": {"name": "onion", "position": (2, 1)},
            },
            {"position": (3, 1), "orientation": (1, 0), "held_object": ONION},
        ],
        "objects": [soup((2, 0), 2, -1)],  # two onions, elapsed 0: an idle soup
        "bonus_orders": [],
        "all_orders": ORDERS,
        "timestep": 52,
    }


def test_convert_state_clips_the_2019_cooking_counter():
    """Elapsed 1..19 is cooking, 20 and beyond (the 2019 counter runs on) is ready at tick 20."""
    legacy = {
        "players": [
            {
                "position": [1, 1],
                "orientation": [1, 0],
                "held_object": {"name": "soup", "position": [1, 1], "state": ["onion", 3, 147]},
            },
            {"position": [2, 2], "orientation": [-1, 0]},
        ],
        "objects": {
            "2,0": {"name": "soup", "position": [2, 0], "state": ["onion", 3, 19]},
            "0,2": {"name": "dish", "position": [0, 2]},
            "4,2": {"name": "soup", "position": [4, 2], "state": ["onion", 3, 20]},
        },
        "order_list": ["onion"],
        "pot_explosion": False,
    }
    d = convert_state(legacy)
    assert d["players"][0]["held_object"] == soup((1, 1), 3, 20)
    assert d["players"][1]["held_object"] is None
    assert d["objects"] == [soup((2, 0), 3, 19), {"name": "dish", "position": (0, 2)}, soup((4, 2), 3, 20)]
    assert d["objects"][0]["is_cooking"] and d["objects"][2]["is_ready"]
    with pytest.raises(ValueError, match="onions only"):
        convert_state(
            {**legacy, "objects": {"2,0": {"name": "soup", "position": [2, 0], "state": ["tomato", 1, 0]}}}
        )


def test_converted_state_survives_import_export():
    env = OvercookedEnv("cramped_room", num_envs=1, horizon=10**6)
    env.reset()
    env.import_state(0, ROW_53_CONVERTED)
    assert env.export_state(0) == ROW_53_CONVERTED


def test_parse_joint_action():
    assert parse_joint_action("['INTERACT', [0, 0]]") == [5, 4]
    assert parse_joint_action("[[0, -1], [1, 0]]") == [0, 2]
    assert parse_joint_action("[[-1, 0], [0, 1]]") == [3, 1]
    with pytest.raises(ValueError, match="not an overcooked-ai action"):
        parse_joint_action("[[2, 0], [0, 0]]")


def test_layout_mapping_accepts_our_grids():
    assert HUMAN_LAYOUTS == {
        "cramped_room": "cramped_room",
        "asymmetric_advantages": "asymmetric_advantages",
        "coordination_ring": "coordination_ring",
        "random0": "forced_coordination",
        "random3": "counter_circuit",
    }
    for theirs, ours in HUMAN_LAYOUTS.items():
        rows = load_layout(ours).grid_text.split("\n")  # with the player digits 1, 2
        assert check_layout(theirs, rows) == ours


def test_check_layout_refuses_a_modified_grid():
    rows = ["XXPXX", "O  2O", "X1  X", "XDXSX"]
    assert check_layout("cramped_room", rows) == "cramped_room"
    moved_pot = ["XXXPX", "O  2O", "X1  X", "XDXSX"]
    with pytest.raises(ValueError, match=r"2 cell\(s\): \(x=2, y=0\): 'X' vs ours 'P'; \(x=3, y=0\)"):
        check_layout("cramped_room", moved_pot)
    with pytest.raises(ValueError, match="differs in size"):
        check_layout("cramped_room", rows[:3])
    with pytest.raises(ValueError, match="valid: asymmetric_advantages, coordination_ring, cramped_room"):
        check_layout("random1", rows)


def test_missing_data_names_the_install_command(tmp_path, monkeypatch):
    with pytest.raises(HumanDataMissing, match="pip install --no-deps overcooked-ai==1.1.0"):
        find_data_dir(tmp_path)
    monkeypatch.setenv("ZSCEVAL_HUMAN_DATA", str(tmp_path))
    with pytest.raises(HumanDataMissing, match="ZSCEVAL_HUMAN_DATA"):
        find_data_dir()
    monkeypatch.delenv("ZSCEVAL_HUMAN_DATA")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HumanDataMissing, match="not installed; install them with `pip install --no-deps"):
        load_trials("train")
    assert INSTALL_HINT == "pip install --no-deps overcooked-ai==1.1.0"


def test_bad_split_and_layout_names():
    with pytest.raises(ValueError, match="unknown split 'valid'; valid: train, test"):
        load_trials("valid")
    with pytest.raises(ValueError, match="no human trials for layout 'large_room'; valid: .*random3"):
        load_trials("train", ["large_room"])


# ---------------------------------------------------------------------------- on the data
TRAIN_ROWS = {
    "asymmetric_advantages": 10768,
    "random3": 9627,
    "coordination_ring": 9619,
    "cramped_room": 9564,
    "random0": 7151,
}
TRIALS = {
    "train": {
        "asymmetric_advantages": 9,
        "coordination_ring": 8,
        "cramped_room": 8,
        "random0": 6,
        "random3": 8,
    },
    "test": {
        "asymmetric_advantages": 8,
        "coordination_ring": 8,
        "cramped_room": 8,
        "random0": 6,
        "random3": 7,
    },
}


def test_data_dir_lookup_orders():
    folder = require_data()
    assert find_data_dir(folder) == folder
    assert find_data_dir(folder.parent.parent) == folder  # the overcooked_ai_py package folder


@pytest.mark.parametrize("split", ["train", "test"])
def test_raw_rows_and_trial_keys(split):
    require_data()
    frame = read_split(split)
    assert len(frame) == {"train": 46729, "test": 44373}[split]
    if split == "train":
        assert frame["layout_name"].value_counts().to_dict() == TRAIN_ROWS
    groups = frame.groupby(list(trials_module.TRIAL_KEY))
    assert groups["layout_name"].nunique().max() == 1  # a trial is one layout
    per_layout = Counter(rows["layout_name"].iloc[0] for _, rows in groups)
    assert dict(per_layout) == TRIALS[split]
    # Ticks run 0..T-1 without gaps or repeats, and the recorded states chain.
    for _, rows in groups:
        assert sorted(rows["cur_gameloop"]) == list(range(len(rows)))
    assert chain_breaks(frame) == 0
    assert (frame["reward_norm"] == 4 * frame["reward"]).all()  # 20 vs 5 per delivery
    assert groups.ngroups == frame.groupby(["workerid_num", "layout_name"]).ngroups  # human_aware_rl's key


def test_trial_grouping_and_tensors():
    trials = cached_trials("train", ("cramped_room",))
    assert len(trials) == 8
    assert sum(len(t) for t in trials) == TRAIN_ROWS["cramped_room"]
    assert len({t.trial_id for t in trials}) == 8
    for t in trials:
        assert (t.layout, t.source_layout, t.split) == ("cramped_room", "cramped_room", "train")
        assert len(t.states) == len(t) + 1
        assert [s["timestep"] for s in t.states] == list(range(len(t) + 1))
        assert t.actions.dtype == torch.int64 and t.actions.shape == (len(t), 2)
        assert int(t.actions.min()) >= 0 and int(t.actions.max()) <= 5
        assert t.rewards.dtype == torch.float32 and t.rewards.shape == (len(t),)
        assert set(t.rewards.unique().tolist()) <= {0.0, 20.0, 40.0}
    # 140 deliveries in the cramped_room train trials, 20 each (reward_norm; `reward` says 5).
    assert float(sum(t.rewards.sum() for t in trials)) == 140 * 20.0
    assert sum(int((t.rewards > 0).sum()) for t in trials) == 140


def test_a_known_row_converted_by_hand():
    trial = {t.trial_id: t for t in cached_trials("train", ("cramped_room",))}["1-run-1-0"]
    assert convert_state(ROW_52_STATE, 52) == trial.states[52]
    assert trial.actions[52].tolist() == [5, 4]  # ['INTERACT', [0, 0]]
    assert trial.states[53] == ROW_53_CONVERTED
    assert trial.actions[81].tolist() == [5, 4] and float(trial.rewards[81]) == 20.0  # a delivery
    assert float(trial.rewards[:81].sum()) == 0.0


def test_states_import_and_export_unchanged():
    env = OvercookedEnv("cramped_room", num_envs=1, horizon=10**6)
    env.reset()
    for trial in cached_trials("train", ("cramped_room",))[:3]:
        for state in trial.states[::23]:
            env.import_state(0, state)
            assert env.export_state(0) == state


def test_layouts_in_either_naming():
    require_data()
    ours = load_trials("test", ["forced_coordination"])
    theirs = load_trials("test", ["random0"])
    assert [t.trial_id for t in ours] == [t.trial_id for t in theirs] and len(ours) == 6
    assert {(t.layout, t.source_layout) for t in ours} == {("forced_coordination", "random0")}
