"""Interoperability: Farama adapters over the batched engine, and trajectory files.

* :class:`~zsceval.interop.parallel.ParallelGame`: a PettingZoo ``ParallelEnv`` over one game
  (needs ``pip install zsceval[interop]``).
* :class:`~zsceval.interop.vector.BatchedVectorEnv`: a Gymnasium ``VectorEnv`` over B games.
* :mod:`zsceval.interop.trajectory`: the ``zsceval-trajectory`` JSON format (record, save, load,
  replay in our engine, convert to overcooked-ai objects).
* :class:`~zsceval.interop.jaxmarl.JaxMARLPolicy`: a JaxMARL Overcooked policy as an external agent
  (:func:`~zsceval.interop.jaxmarl.jaxmarl_obs` builds JaxMARL's observation with NumPy).

Attributes are imported lazily, so ``import zsceval.interop`` does not need PettingZoo.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ParallelGame": "parallel",
    "BatchedVectorEnv": "vector",
    "Trajectory": "trajectory",
    "TrajectoryError": "trajectory",
    "load_trajectories": "trajectory",
    "save_trajectories": "trajectory",
    "record_trajectories": "trajectory",
    "replay_in_engine": "trajectory",
    "to_overcooked_ai": "trajectory",
    "action_to_overcooked_ai": "trajectory",
    "action_from_overcooked_ai": "trajectory",
    "JaxMARLPolicy": "jaxmarl",
    "jaxmarl_obs": "jaxmarl",
    "jaxmarl_layout": "jaxmarl",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
