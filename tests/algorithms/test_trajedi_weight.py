"""TrajeDi's diversity step respects ``algo.jsd_weight``.

The JSD step goes through the members' PPO actor optimizer (ZSC-Eval: ``Traj_Trainer.train`` then
``R_MAPPO.update_actor``), whose Adam statistics come from PPO's gradients, so the actor moves in
proportion to the weight. A private Adam (scale-invariant: every step about ``lr`` per weight)
would move the actor as far for a weight of 0.001 as for 0.1.
"""

import copy
import dataclasses

import pytest
import torch

from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer

TINY = [
    "run.algo=trajedi-stage1",
    "env.name=toy",
    "env.horizon=8",
    "env.num_envs=8",
    "ppo.rollout_length=8",
    "ppo.epochs=1",
    "ppo.num_minibatches=1",
    "population.stage1_size=2",
    "run.num_threads=1",
    "run.eval_episodes=2",
    "run.seed=3",
]


def _actor(trainer) -> torch.Tensor:
    return torch.cat(
        [q.detach().reshape(-1) for p in trainer.learners.values() for q in p.actor.parameters()]
    ).clone()


def _zero_momentum(state):
    """Adam's first moments zeroed everywhere in a (nested) optimizer state."""
    if isinstance(state, dict):
        for key, value in state.items():
            if key == "exp_avg" and isinstance(value, torch.Tensor):
                value.zero_()
            else:
                _zero_momentum(value)
    elif isinstance(state, list | tuple):
        for value in state:
            _zero_momentum(value)


@pytest.fixture(scope="module")
def moves(tmp_path_factory):
    """Actor change of one diversity step (``on_rollout``) per weight, from the same weights,
    optimizer state and rollout: ``{(weight, momentum kept): flat change}``."""
    cfg = resolve_config(preset="quick", overrides=TINY)
    tr = Trainer(cfg, tmp_path_factory.mktemp("trajedi") / "run", progress=False)
    tr.runner.reset()
    for _ in range(2):  # PPO updates: the actor optimizer holds PPO's gradient statistics
        tr.core.collect(tr.runner, tr.env_steps)
        tr.core.bootstrap(tr.runner)
        tr.core.update(tr.env_steps, tr.update_gen)
        tr.env_steps += tr.steps_per_iteration
    episodes = tr.core.collect(tr.runner, tr.env_steps)
    weights = {n: copy.deepcopy(p.state_dict()) for n, p in tr.learners.items()}
    core_state = copy.deepcopy(tr.core.state_dict())
    algo_state = copy.deepcopy(tr.algorithm.state_dict())
    options = tr.algorithm.options
    start = _actor(tr)
    out = {}
    for momentum in (True, False):
        for w in (0.0, 0.001, 0.1):
            for n, p in tr.learners.items():
                p.load_state_dict(weights[n])
            state = copy.deepcopy(core_state)
            if not momentum:
                _zero_momentum(state)
            tr.core.load_state_dict(state)
            tr.algorithm.load_state_dict(copy.deepcopy(algo_state))
            tr.algorithm.options = dataclasses.replace(options, jsd_weight=w)
            tr.algorithm.on_rollout(tr.core.rollout, episodes)
            out[w, momentum] = _actor(tr) - start
            assert set(tr.algorithm.last_stats) == {"trajedi/jsd", "trajedi/jsd_loss"}
    for momentum in (True, False):
        total = {w: float(out[w, momentum].norm()) for w in (0.0, 0.001, 0.1)}
        own = {w: float((out[w, momentum] - out[0.0, momentum]).norm()) for w in (0.0, 0.001, 0.1)}
        print(f"momentum kept {momentum}: actor change {total}, beyond weight 0 {own}")
    return out


def test_weight_zero_moves_nothing_without_momentum(moves):
    # with Adam's momentum cleared, only the JSD gradient can move the actor: weight 0 moves nothing
    assert float(moves[0.0, False].norm()) < 1e-7
    assert float(moves[0.1, False].norm()) > 1e-5


def test_diversity_step_scales_with_the_weight(moves):
    for momentum in (True, False):
        # the step's own part: the change beyond what the same step with weight 0 does
        small = float((moves[0.001, momentum] - moves[0.0, momentum]).norm())
        large = float((moves[0.1, momentum] - moves[0.0, momentum]).norm())
        assert large > 1e-5
        assert small < large / 10, (momentum, small, large)
