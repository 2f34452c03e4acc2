"""Helpers of the play tests: saved agents written directly (untrained weights are fine), a key script."""

from pathlib import Path

import torch


def save_agent(root: Path, layout: str = "cramped_room", horizon: int = 12, *, recurrent: bool = True,
               mixture: bool = False, stay: bool = False) -> Path:  # fmt: skip
    """A run directory holding one checkpoint of a random-init PPO policy (GRU when ``recurrent``),
    a two-member mixture (``mixture``) or a policy that always stays (``stay``: STAY's logit 30
    above the others), trained, as far as its metadata says, on ``layout`` with ``horizon``."""
    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.rl.checkpoint import save_checkpoint
    from zsceval.rl.config import ModelConfig
    from zsceval.rl.policy import Policy, network_spec
    from zsceval.rl.population import PolicyPool
    from zsceval.rl.population.mixture import MixtureAgent

    env = OvercookedEnv(layout, num_envs=1, horizon=horizon)
    spec = network_spec(ModelConfig(hidden_size=16, recurrent=recurrent), env.obs_shape,
                        env.critic_obs_shape, env.num_actions)  # fmt: skip
    torch.manual_seed(0)
    agent = Policy(spec)
    if stay:
        with torch.no_grad():
            agent.actor.head.weight.zero_()
            agent.actor.head.bias.fill_(-15.0)
            agent.actor.head.bias[4] = 15.0
    if mixture:
        agent = MixtureAgent(PolicyPool.from_policies([agent, Policy(spec)]), [0.5, 0.5])
    meta = {"algo": "sp", "layout": layout, "env_spec": env.spec_dict(), "ego": "ego",
            "config": {"env": {"layout": layout, "horizon": horizon, "num_envs": 4}}}  # fmt: skip
    save_checkpoint(root / "checkpoints", 100, {"ego": agent}, meta)
    return root


U, D, L, R, SPACE = "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", " "
SOUP_KEYS = [U, L, SPACE, R, U, SPACE] + [L, SPACE, R, U, SPACE] * 2 + [L, D, SPACE, U, R, U] + [None] * 14 \
    + [SPACE, D, R, D, SPACE]  # fmt: skip
"""41 keys with which chef 1 (seat 0) of cramped_room, alone, cooks and serves one onion soup
(+20 at the last step) while chef 2 stays at its start: three onions from the left dispenser into
the pot, a dish, wait for the 20-step cooking, take the soup, serve it."""
