"""The hypothesis-scoring agent (Hypothetical Minds, over TBS's cluster ToM models and BRs): Rescorla-Wagner
values by hand, validation and fallback, the partner's concept read from observations, a scripted
partner, which prediction is scored, checkpoint round trip and the chain's options."""

import json

import pytest
import torch
from torch import nn

from zsceval.algorithms.tbs.agents import partner_summary
from zsceval.algorithms.tbs.concepts import build_concept_set, next_interaction_labels
from zsceval.algorithms.tbs.hypothesis import (
    HypothesisAgent,
    infer_partner_interaction,
    partner_visible,
    prediction_rewards,
    rescorla_wagner,
    select_hypothesis,
)
from zsceval.algorithms.tbs.tom import ToMModel
from zsceval.envs.overcooked.env import OvercookedEnv
from zsceval.rl.agent import ActOutput, agent_class, register_agent
from zsceval.rl.checkpoint import load_agent, save_checkpoint
from zsceval.rl.config import ModelConfig
from zsceval.rl.policy import Policy, network_spec


@register_agent("test-hyp-table-tom")
class TableToM(nn.Module):
    """Predicts ``table[t % len(table)]`` at episode step t (tbs-tom interface)."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        self.register_buffer("table", torch.tensor(spec["table"], dtype=torch.float32))

    @classmethod
    def from_spec(cls, spec):
        return cls(spec)

    def initial_state(self, rows, device):
        return torch.zeros(rows, 1, device=device)

    def step(self, obs, h, starts):
        h = torch.where(starts[:, None], 0, h)
        return self.table[h[:, 0].long() % len(self.table)], h + 1


@register_agent("test-hyp-const")
class ConstAgent(nn.Module):
    """Always plays ``spec['action']`` (the action tells which best response acted)."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    @classmethod
    def from_spec(cls, spec):
        return cls(spec)

    def initial_state(self, rows, device):
        return torch.zeros(rows, 0, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        n = obs.shape[0]
        return ActOutput(torch.full((n,), self.spec["action"]), torch.zeros(n), state)


def _one_hot_rows(indices, m):
    return [[1.0 if j == i else 0.0 for j in range(m)] for i in indices]


def _table_tom(table, layout="cramped_room", granularity="action"):
    return TableToM({"table": table, "layout": layout, "granularity": granularity,
                     "num_concepts": len(table[0])})  # fmt: skip


# -- the rule by hand -------------------------------------------------------------------------------
def test_rescorla_wagner_values_of_a_hand_computed_prediction_record():
    """right, right, wrong, right with alpha 0.3, c 1 from V = 0."""
    probs = torch.tensor([[[0.1, 0.7, 0.2]]])  # one hypothesis predicting concept 1 (arg-max)
    v = torch.zeros(1, 1)
    seen = []
    for realised in (1, 1, 2, 1):
        r = prediction_rewards(probs, torch.tensor([realised]), top_k=1, c=1.0)
        v = rescorla_wagner(v, r, 0.3)
        seen.append(v.item())
    # 0.3; 0.3 + 0.3 (1 - 0.3) = 0.51; 0.51 + 0.3 (-1 - 0.51) = 0.057; 0.057 + 0.3 (1 - 0.057) = 0.3399
    assert seen == pytest.approx([0.3, 0.51, 0.057, 0.3399])
    # top-k: concept 2 is the 2nd most probable, right with top_k = 2 only; c scales the reward
    assert prediction_rewards(probs, torch.tensor([2]), top_k=2, c=0.5).item() == 0.5
    assert prediction_rewards(probs, torch.tensor([0]), top_k=2, c=0.5).item() == -0.5
    # rows that see no concept keep their values
    masked = rescorla_wagner(torch.zeros(2, 1), torch.ones(2, 1), 0.3, torch.tensor([True, False]))
    assert masked[:, 0].tolist() == pytest.approx([0.3, 0.0])


def test_always_right_hypothesis_is_validated_after_four_predictions():
    """V_n = 1 - 0.7^n: 0.657 < 0.7 <= 0.7599, so n = 4 with alpha 0.3, c 1, V_thr 0.7."""
    v = torch.zeros(1, 2)
    validated_at = None
    for n in range(1, 8):
        v = rescorla_wagner(v, torch.tensor([[1.0, -1.0]]), 0.3)
        assert v[0, 0].item() == pytest.approx(1 - 0.7**n)
        choice, validated = select_hypothesis(v, torch.tensor([1]))
        assert choice.item() == 0  # the highest value, validated or not (fallback "highest")
        if validated.item() and validated_at is None:
            validated_at = n
    assert validated_at == 4


def test_validation_fallback_and_switching_back():
    cur = torch.tensor([0])
    # the highest valued of several validated hypotheses
    choice, validated = select_hypothesis(torch.tensor([[0.75, 0.8, 0.1]]), cur)
    assert (choice.item(), validated.item()) == (1, True)
    # validated by >= V_thr
    assert select_hypothesis(torch.tensor([[0.7, 0.2]]), torch.tensor([1]))[1].item() is True
    # hypothesis 0 is validated; one wrong prediction takes it below V_thr, while 1 passes it
    v = torch.tensor([[1 - 0.7**4, 1 - 0.7**3]])
    assert select_hypothesis(v, cur)[0].item() == 0
    v = rescorla_wagner(v, torch.tensor([[-1.0, 1.0]]), 0.3)
    assert v[0].tolist() == pytest.approx([0.23193, 0.7599])
    choice, validated = select_hypothesis(v, cur)
    assert (choice.item(), validated.item()) == (1, True)
    # then 1 falls below too: none validated, the fallback picks
    v = rescorla_wagner(v, torch.tensor([[1.0, -1.0]]), 0.3)  # [0.462351, 0.23193]
    choice, validated = select_hypothesis(v, torch.tensor([1]))
    assert (choice.item(), validated.item()) == (0, False)  # highest value
    last_right = torch.tensor([[2, 5]])  # hypothesis 1 was right more recently
    choice, _ = select_hypothesis(v, torch.tensor([0]), fallback="latest_correct", last_right=last_right)
    assert choice.item() == 1
    # exact ties keep the current hypothesis (t = 0: all values 0)
    tie = torch.zeros(3, 3)
    assert select_hypothesis(tie, torch.tensor([2, 0, 1]))[0].tolist() == [2, 0, 1]
    with pytest.raises(ValueError, match="fallback must be one of highest, latest_correct"):
        select_hypothesis(v, cur, fallback="latest")


# -- the partner's concept from the ego's observations -----------------------------------------------
@pytest.mark.parametrize("layout,radius", [("cramped_room", 0), ("counter_circuit", 0),
                                           ("coordination_ring_mr", 0), ("counter_circuit", 2)])  # fmt: skip
def test_partner_interaction_inferred_exactly_on_random_rollouts(layout, radius):
    env = OvercookedEnv(layout, num_envs=32, seed=1, horizon=100, view_radius=radius)
    concepts = build_concept_set(layout, "fine")
    step = env.reset()
    g = torch.Generator().manual_seed(0)
    checked = events = 0
    for _ in range(200):
        obs = step.obs[:, 0]
        prev, seen = partner_summary(obs), partner_visible(obs)
        logits = torch.rand(32, 2, 6, generator=g)
        logits[..., 5] += 0.3  # interact more often than uniformly
        step = env.step(logits.masked_fill(~step.avail_actions, -1).argmax(-1))
        kind, cell = infer_partner_interaction(prev, step.obs[:, 0])
        valid = ~step.truncated & seen & partner_visible(step.obs[:, 0])
        true_kind = step.interactions[:, 1]
        real = (true_kind >= 5) & (true_kind != 18)  # every kind that changes what is held (not COOK)
        assert torch.equal(kind[valid & real], true_kind[valid & real])
        assert torch.equal(cell[valid & real], step.interaction_cell[valid & real, 1])
        assert (kind[valid & ~real] == 0).all()
        truth = concepts.concept_index(true_kind, step.interaction_cell[:, 1])
        assert torch.equal(concepts.concept_index(kind, cell)[valid], truth[valid])
        checked += int(valid.sum())
        events += int((valid & (truth >= 0)).sum())
    assert events > 100 and checked > 2000  # measured: ~350-1200 concepts in ~3600-6400 visible steps


# -- a scripted partner ------------------------------------------------------------------------------
def test_scripted_partner_validates_the_right_hypothesis_and_its_br_acts():
    """The partner alternates EAST, WEST (every action is seen: the orientation changes); hypothesis
    1's model predicts exactly that, hypothesis 0's always INTERACT. With alpha 0.3, c 1, V_thr 0.7
    hypothesis 1 is scored at every step t >= 1 (the action of step t-1) and validated at t = 4."""
    horizon, N = 10, 8
    env = OvercookedEnv("cramped_room", num_envs=N, seed=0, horizon=horizon)
    right = _table_tom(_one_hot_rows([2, 3], 6))
    wrong = _table_tom(_one_hot_rows([5], 6))
    agent = HypothesisAgent([ConstAgent({"action": 4}), ConstAgent({"action": 5})], [wrong, right])
    g = torch.Generator().manual_seed(0)
    step, state = env.reset(), agent.initial_state(N, "cpu")
    starts = torch.ones(N, dtype=torch.bool)
    for t in range(2 * horizon):  # two episodes: values reset at the second start
        out = agent.act(step.obs[:, 0], step.avail_actions[:, 0], state, starts, generator=g)
        state, e = out.state, out.extras
        tt = t % horizon
        v1 = 1 - 0.7**tt
        assert e["values"][:, 1].tolist() == pytest.approx([v1] * N)
        assert e["values"][:, 0].tolist() == pytest.approx([-v1] * N)
        assert e["validated"].tolist() == [tt >= 4] * N
        if tt >= 1:  # the highest value (fallback) from the first scored step, validated from t = 4
            assert e["choice"].tolist() == [1] * N and out.actions.tolist() == [5] * N
        partner = torch.full((N,), 2 if tt % 2 == 0 else 3)
        step = env.step(torch.stack([out.actions, partner], 1))
        starts = step.truncated.clone()
    assert starts.all()


def _recorded_game(steps=150, seed=3):
    """One random game of cramped_room: the ego's observations and the partner's true concepts."""
    env = OvercookedEnv("cramped_room", num_envs=1, seed=seed, horizon=steps)
    concepts = build_concept_set("cramped_room", "fine")
    g = torch.Generator().manual_seed(seed)
    step = env.reset()
    obs, done = [], []
    concept = []
    for _ in range(steps):
        obs.append(step.obs[:, 0].clone())
        logits = torch.rand(1, 2, 6, generator=g)
        logits[..., 5] += 0.3
        step = env.step(logits.masked_fill(~step.avail_actions, -1).argmax(-1))
        concept.append(concepts.concept_index(step.interactions[:, 1], step.interaction_cell[:, 1]))
        done.append(step.truncated.clone())
    return torch.cat(obs), torch.cat(concept), torch.cat(done), concepts.num_concepts


@pytest.mark.parametrize("prediction", ["held", "latest"])
def test_which_prediction_a_concept_scores(prediction):
    """A perfect model (the true next concept at every step, the ToM label) is right at every event in
    both settings; a model that names the concept only at the step the partner performs it (and a
    wrong one before) is right at every event with ``latest`` and only where two concepts follow on
    consecutive steps with ``held`` (the prediction made right after the previous concept)."""
    obs, concept, done, M = _recorded_game()
    labels = next_interaction_labels(concept[:, None], done[:, None], M)[:, 0].argmax(-1)  # [T]
    late = torch.where(concept >= 0, concept, (labels + 1) % M)  # wrong until the step of the concept
    perfect = _table_tom(_one_hot_rows(labels.tolist(), M), granularity="fine")
    at_event = _table_tom(_one_hot_rows(late.tolist(), M), granularity="fine")
    agent = HypothesisAgent([ConstAgent({"action": 0}), ConstAgent({"action": 1})], [perfect, at_event],
                            prediction=prediction)  # fmt: skip
    state = agent.initial_state(1, "cpu")
    T = obs.shape[0]
    values = []
    for t in range(T):
        out = agent.act(obs[t : t + 1], None, state, torch.tensor([t == 0]))
        state = out.state
        values.append(out.extras["values"][0])
    events = (concept[: T - 1] >= 0).nonzero().squeeze(1).tolist()  # scored at the next step
    assert len(events) > 10
    n = len(events)
    assert values[-1][0].item() == pytest.approx(1 - 0.7**n, abs=1e-5)  # always right
    v = 0.0
    for i, s in enumerate(events):
        right = prediction == "latest" or (i > 0 and events[i - 1] == s - 1) or (i == 0 and s == 0)
        v += 0.3 * ((1.0 if right else -1.0) - v)
    assert values[-1][1].item() == pytest.approx(v, abs=1e-5)


# -- save / load -------------------------------------------------------------------------------------
def _policy(env, seed, recurrent=False):
    torch.manual_seed(seed)
    spec = network_spec(ModelConfig(hidden_size=16, mlp_layers=1, recurrent=recurrent), env.obs_shape,
                        env.critic_obs_shape, 6)  # fmt: skip
    return Policy(spec)


def _rollout(env, agent, steps, seed):
    g = torch.Generator().manual_seed(seed)
    step, state = env.reset(), agent.initial_state(env.num_envs, "cpu")
    starts = torch.ones(env.num_envs, dtype=torch.bool)
    log = []
    for _ in range(steps):
        out = agent.act(step.obs[:, 0], step.avail_actions[:, 0], state, starts, generator=g)
        state = out.state
        noise = torch.rand(env.num_envs, 6, generator=g)
        partner = noise.masked_fill(~step.avail_actions[:, 1], -1).argmax(-1)
        log.append((out.actions, out.extras["choice"], out.extras["values"], state))
        step = env.step(torch.stack([out.actions, partner], 1))
        starts = step.truncated.clone()
    return log


def test_checkpoint_round_trip(tmp_path):
    env = OvercookedEnv("cramped_room", num_envs=6, seed=0, horizon=40)
    concepts = build_concept_set("cramped_room", "fine")
    toms = []
    for s in (3, 4):
        torch.manual_seed(s)
        toms.append(ToMModel.for_env(env, concepts, hidden_size=8))
    agent = HypothesisAgent([_policy(env, 1, True), _policy(env, 2)], toms, alpha=0.5, v_thr=0.6, top_k=2,
                            fallback="latest_correct", prediction="latest")  # fmt: skip
    spec = json.loads(json.dumps(agent.spec))
    assert spec["top_k"] == 2 and spec["granularity"] == "fine" and spec["layout"] == "cramped_room"
    fresh = agent_class("tbs-hypothesis").from_spec(spec)
    pairs = zip(agent.state_dict().values(), fresh.state_dict().values())
    assert not all(torch.equal(a, b) for a, b in pairs)
    save_checkpoint(tmp_path / "checkpoints", 0, {"hypothesis": agent}, {"algo": "tbs", "ego": "hypothesis"})
    loaded, _ = load_agent(tmp_path, "hypothesis")
    assert type(loaded) is HypothesisAgent and (loaded.alpha, loaded.v_thr, loaded.fallback) == (
        0.5, 0.6, "latest_correct")  # fmt: skip
    log_a, log_b = _rollout(env, agent, 60, seed=7), _rollout(env, loaded, 60, seed=7)
    for (a1, c1, v1, s1), (a2, c2, v2, s2) in zip(log_a, log_b):
        assert torch.equal(a1, a2) and torch.equal(c1, c2) and torch.equal(v1, v2) and torch.equal(s1, s2)
    assert log_a[0][3].dtype == torch.float32 and log_a[0][3].dim() == 2
    assert torch.stack([v for _, _, v, _ in log_a]).abs().sum() > 0  # the partner's concepts were scored


def test_options_are_checked():
    env = OvercookedEnv("cramped_room", num_envs=1, seed=0, horizon=5)
    brs = [ConstAgent({"action": 0})]
    tom = [_table_tom(_one_hot_rows([0], 6))]
    with pytest.raises(ValueError, match="prediction must be one of held, latest"):
        HypothesisAgent(brs, tom, prediction="next")
    with pytest.raises(ValueError, match="0 < alpha <= 1"):
        HypothesisAgent(brs, tom, alpha=0.0)
    with pytest.raises(ValueError, match="need k >= 1 best responses and k ToM models"):
        HypothesisAgent(brs, tom * 2)
    with pytest.raises(ValueError, match="predict \\[6\\] concepts"):
        HypothesisAgent(brs, tom, granularity="fine")  # cramped_room fine has 12
    assert env.num_envs == 1


def test_chain_options_reach_the_ego_and_evaluation_jobs():
    from zsceval import registry
    from zsceval.bench.chain import _context
    from zsceval.rl.config import ConfigError

    def jobs(*overrides):
        params = {"algo": "tbs", "layout": "counter_circuit", "seed": 0, "steps": None, "preset": "quick",
                  "device": "cpu", "overrides": list(overrides)}  # fmt: skip
        return {j.kind: j for j in registry.get("tbs").jobs(_context(params))}

    default = jobs()
    assert not any(k.startswith("hypothesis_") for k in default["tbs.ego"].params)  # fingerprints kept
    set_ = jobs(
        "algo.hypothesis_v_thr=0.5", "algo.hypothesis_fallback=latest_correct", "algo.hypothesis_c=1.0"
    )
    for kind in ("tbs.ego", "tbs.evaluate"):
        hyp = {k: v for k, v in set_[kind].params.items() if k.startswith("hypothesis_")}
        assert hyp == {"hypothesis_v_thr": 0.5, "hypothesis_fallback": "latest_correct"}
    with pytest.raises(ConfigError, match="fallback must be one of highest, latest_correct"):
        jobs("algo.hypothesis_fallback=newest")


def test_evaluation_builds_the_agent_from_an_older_checkpoints_tbs_agent(tmp_path, monkeypatch):
    """An ego checkpoint from before the hypothesis agent: ``tbs.evaluate`` builds it from the TBS
    agent's cluster ToM models and BRs, with the options in its params, and plays it last."""
    from types import SimpleNamespace

    import zsceval.evaluation.matches as matches
    import zsceval.rl.checkpoint as checkpoint
    from zsceval.algorithms.tbs import jobs as tbs_jobs

    brs, toms = nn.ModuleList([ConstAgent({"action": 0})]), nn.ModuleList([_table_tom(_one_hot_rows([0], 6))])
    tbs = SimpleNamespace(brs=brs, toms=toms, eval=lambda: tbs)

    def load(run, name, device):
        if name == "hypothesis":
            raise checkpoint.CheckpointError(f"checkpoint {run} has no agent 'hypothesis'; it has tbs, br")
        return (tbs if name == "tbs" else nn.Module()), {}

    monkeypatch.setattr(tbs_jobs, "_pool", lambda run, device: ([nn.Module()], [nn.Module()]))
    monkeypatch.setattr(checkpoint, "load_agent", load)
    monkeypatch.setattr(tbs_jobs, "plot_tbs", lambda *args, **kwargs: None)
    played = []

    def spy(env, policies, assignment, **kwargs):
        played.append(policies[0])
        return SimpleNamespace(sparse=torch.full((assignment.shape[0],), 20.0))

    monkeypatch.setattr(matches, "play_games", spy)
    params = {"layout": "cramped_room", "heldout": "h", "ego": "e", "episodes": 1, "seed": 0,
              "hypothesis_v_thr": 0.5, "hypothesis_top_k": 2}  # fmt: skip
    (tmp_path / "out").mkdir()
    result = tbs_jobs.evaluate_job(params, tmp_path / "out", {"h": tmp_path, "e": tmp_path})
    hyp = played[5]  # TBS, BR, Random, CEM, CBPR, then the hypothesis agent; the Oracle last
    assert isinstance(hyp, HypothesisAgent) and (hyp.v_thr, hyp.top_k, hyp.alpha) == (0.5, 2, 0.3)
    assert hyp.toms[0] is tbs.toms[0] and hyp.brs[0] is tbs.brs[0]
    assert [r["agent"] for r in result["summary"]] == ["TBS", "BR", "Hypothesis", "Random", "CEM", "CBPR",
                                                       "Oracle"]  # fmt: skip
