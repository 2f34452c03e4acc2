"""Populations: policy pools (stacked same-spec members acting in one batched forward), the
mixture agent that plays one pool member per episode, and stacked trainable learners.

Importing this package registers the ``mixture`` agent class.
"""

from zsceval.rl.population.mixture import MixtureAgent
from zsceval.rl.population.pool import PolicyPool, PoolError
from zsceval.rl.population.stacked import StackedPolicies

__all__ = ["MixtureAgent", "PolicyPool", "PoolError", "StackedPolicies"]
