"""Random reward shaping of the TBS partner pools (TBS paper, App. D.2).

For each agent of each run, a normally distributed coefficient is drawn per game event, with a
magnitude roughly inversely proportional to how often the event is expected (three onions go in a
pot per soup, so placing an onion gets 0.15 and picking up a plate 0.5). Whenever the agent
triggers the event it receives that reward, on top of the sparse reward and the annealed shaping,
for the whole run (it is not annealed).

The paper's six Simple Soup events map onto the engine's ZSC-Eval event counters
(``zsceval.envs.overcooked.constants.CLASSIC_EVENTS``):

=========================  =====  ==========================================================
paper event                scale  engine events
=========================  =====  ==========================================================
place onion in pot         0.15   ``PLACEMENT_IN_POT``
pickup plate               0.5    ``pickup_dish_from_D`` (from the dish pile)
pickup soup                0.5    ``SOUP_PICKUP`` (a dish of soup from a pot)
pickup item from counter   0.15   ``pickup_onion_from_X``, ``pickup_dish_from_X``, ``pickup_soup_from_X``
drop item on counter       0.15   ``put_onion_on_X``, ``put_dish_on_X``, ``put_soup_on_X``
deliver soup               0.5    ``delivery``
=========================  =====  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["SHAPING_EVENTS", "event_matrix", "pool_coefficients", "sample_coefficients"]

SHAPING_EVENTS: dict[str, tuple[float, tuple[str, ...]]] = {
    "place_onion_in_pot": (0.15, ("PLACEMENT_IN_POT",)),
    "pickup_plate": (0.5, ("pickup_dish_from_D",)),
    "pickup_soup": (0.5, ("SOUP_PICKUP",)),
    "pickup_from_counter": (0.15, ("pickup_onion_from_X", "pickup_dish_from_X", "pickup_soup_from_X")),
    "drop_on_counter": (0.15, ("put_onion_on_X", "put_dish_on_X", "put_soup_on_X")),
    "deliver_soup": (0.5, ("delivery",)),
}
"""Paper event -> (magnitude, engine event names) (TBS App. D.2, Simple Soup)."""


def event_matrix(event_names: Sequence[str]) -> torch.Tensor:
    """``float32 [len(SHAPING_EVENTS), E]``: which engine events count as each paper event.

    Raises:
        ValueError: an engine event the mapping needs is missing from ``event_names`` (e.g. a
            multi-recipe layout, whose event vector differs).
    """
    index = {name: i for i, name in enumerate(event_names)}
    out = torch.zeros(len(SHAPING_EVENTS), len(event_names))
    for row, (_, names) in enumerate(SHAPING_EVENTS.values()):
        for name in names:
            if name not in index:
                raise ValueError(
                    f"random reward shaping needs the engine event '{name}', which this env does not "
                    f"record (events: {', '.join(event_names)}); TBS pools use the classic onion-soup layouts"
                )
            out[row, index[name]] = 1.0
    return out


def sample_coefficients(num_agents: int, seed: int, scale: float = 1.0) -> np.ndarray:
    """Per-agent random shaping coefficients ``float64 [num_agents, len(SHAPING_EVENTS)]``:
    ``scale * magnitude_e * z`` with ``z ~ N(0, 1)`` drawn from ``numpy.random.default_rng(seed)``
    (agent-major, events in :data:`SHAPING_EVENTS` order)."""
    mags = np.array([m for m, _ in SHAPING_EVENTS.values()])
    z = np.random.default_rng(seed).standard_normal((num_agents, len(mags)))
    return scale * mags * z


def pool_coefficients(pool_size: int, run_seed: int, scale: float = 1.0) -> np.ndarray:
    """The shaping coefficients of a ``tbs-pool`` run of N = ``pool_size`` pairs and seed
    ``run.seed``: ``float64 [2N, len(SHAPING_EVENTS)]``, rows ``p00_1, p00_2, p01_1, ...`` (pair i's
    agent 1 at row 2i, agent 2 at row 2i + 1), drawn from seed ``10_000 + run_seed`` so that they
    differ from the run's other random streams."""
    return sample_coefficients(2 * pool_size, seed=10_000 + run_seed, scale=scale)
