"""Agents from outside zsceval (an object with act(obs, avail_actions)) scored on a shipped set, and
one clear message for every way such an agent can be broken."""

import sys
import textwrap

import pytest

from tests.cli_helpers import clean_error, invoke

AGENTS = """
import numpy as np

class Stay:
    def act(self, obs, avail):
        assert obs.dtype == np.uint8 and obs.ndim == 4 and avail.dtype == bool and avail.shape[1] == 6
        return np.full(obs.shape[0], 4, dtype=np.int64)

class Random:
    def __init__(self):
        self.rng, self.resets = np.random.default_rng(0), 0
    def reset(self, mask):
        self.resets += int(mask.sum())
    def act(self, obs, avail):
        return np.array([self.rng.choice(np.flatnonzero(a)) for a in avail], dtype=np.int64)

def make_agent():
    return Stay()

class OutOfRange:
    def act(self, obs, avail):
        return np.full(obs.shape[0], 9, dtype=np.int64)

class WrongShape:
    def act(self, obs, avail):
        return np.zeros((obs.shape[0], 2), dtype=np.int64)

class Floats:
    def act(self, obs, avail):
        return np.zeros(obs.shape[0])

class Raises:
    def act(self, obs, avail):
        raise RuntimeError("my agent's own bug")

no_act = object()
"""


@pytest.fixture
def agents(tmp_path, monkeypatch):
    name = f"my_agents_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(AGENTS))
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize("attr", ["make_agent", "Random"])
def test_an_external_agent_is_scored_on_a_shipped_set_with_br_prox_and_intervals(agents, attr):
    import json

    res = invoke("eval", "--agent", f"{agents}:{attr}", "--partner-set", "zsceval:cramped_room",
                 "--episodes", "2", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert len(out["units"]) == 12 and {"iqm", "ci_low", "ci_high"} <= set(out["summary"]["all"])
    if attr == "make_agent":  # a partner that only stays serves nothing: BR-Prox 0 wherever the BR scores
        assert all(u["br_prox"] == 0.0 for u in out["units"] if u["br_return"] > 0)


@pytest.mark.parametrize(
    ("attr", "needles"),
    [
        ("OutOfRange", ["returned action 9 at step 0", "0..5"]),
        ("WrongShape", ["returned int64 [", "act must return int64"]),
        ("Floats", ["returned float64", "act must return int64"]),
        ("Raises", ["raised at step 0", "RuntimeError: my agent's own bug"]),
        ("no_act", ["has no act(obs, avail_actions) method"]),
        ("missing", ["cannot import the agent", "AttributeError"]),
    ],
)
def test_a_broken_external_agent_is_one_message_naming_it(agents, attr, needles):
    res = invoke(
        "eval", "--agent", f"{agents}:{attr}", "--partner-set", "zsceval:cramped_room", "--episodes", "1"
    )
    clean_error(res, f"{agents}:{attr}", *needles)


def test_a_module_that_does_not_import_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("eval", "--agent", "no_such_module_here:agent", "--partner-set", "zsceval:cramped_room")
    clean_error(res, "cannot import the agent no_such_module_here:agent", "ModuleNotFoundError")


def test_an_external_partner_plays_a_saved_agent_in_cross_play(agents):
    from zsceval.evaluation.shipped_sets import resolve_set

    saved = next((resolve_set("zsceval:cramped_room").folder / "policies" / "c002_final").glob("step_*"))
    res = invoke("eval", "--agent", saved, "--partner", f"{agents}:Random", "--layout", "cramped_room",
                 "--episodes", "2")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pooled: sparse return" in res.output


def test_an_external_agent_is_scored_with_the_shipped_human_proxy(agents):
    """``--partner-set human-proxy``: the layout's shipped H_proxy in the other seat, both seatings,
    with the agent's own resets called."""
    import json

    res = invoke("eval", "--agent", f"{agents}:Random", "--partner-set", "human-proxy", "--layout",
                 "cramped_room", "--episodes", "2", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["partner"].endswith("#human_proxy") and out["human_proxy"]["layout"] == "cramped_room"
    assert out["human_proxy"]["trained_on"] == "test"
    assert [s["agent_seat"] for s in out["seatings"]] == [0, 1]
    assert out["agent"] == f"{agents}:Random"


def test_gifs_and_trajectories_are_written_for_an_external_agent(agents, tmp_path):
    import json

    gifs, trajs = tmp_path / "gifs", tmp_path / "trajs"
    res = invoke("eval", "--agent", f"{agents}:Stay", "--partner", f"{agents}:Random", "--layout",
                 "cramped_room", "--episodes", "1", "--gif", gifs, "--save-trajectories", trajs,
                 "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert sorted(p.name for p in gifs.iterdir()) == [
        "cramped_room_agent_seat0.gif",
        "cramped_room_agent_seat1.gif",
    ]
    assert all(p.read_bytes()[:6] == b"GIF89a" for p in gifs.iterdir())
    assert len(out["trajectory_files"]) == 2
    for seat, path in enumerate(sorted(trajs.glob("agent_seat_*.json"))):
        episode = json.loads(path.read_text())[0]
        assert {a[seat] for a in episode["joint_actions"]} == {4}  # the stay agent's seat only stays
        assert len(episode["states"]) == len(episode["joint_actions"]) + 1


def test_render_draws_an_external_agent(agents, tmp_path):
    out = tmp_path / "ep.gif"
    res = invoke("render", "--agent", f"{agents}:Stay", "--partner", f"{agents}:Random", "--layout",
                 "cramped_room", "--steps", "5", "--out", out)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "6 frames" in res.output and out.read_bytes()[:6] == b"GIF89a"
