"""Batched n-agent environments: the protocol (:mod:`.base`) and the registry (:mod:`.registry`).

from zsceval.envs import make
env = make("overcooked", num_envs=64, device="cpu", seed=0, layout="counter_circuit")
"""

from .base import BatchedEnv, Step
from .registry import describe, env_names, env_options, make, register_env

__all__ = ["BatchedEnv", "Step", "describe", "env_names", "env_options", "make", "register_env"]
