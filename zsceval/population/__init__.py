"""Populations: policy pools (stacked same-spec members acting in one batched forward) and the
mixture agent that plays one pool member per episode.

Importing this package registers the ``mixture`` agent class.
"""

from zsceval.population.mixture import MixtureAgent
from zsceval.population.pool import PolicyPool, PoolError

__all__ = ["MixtureAgent", "PolicyPool", "PoolError"]
