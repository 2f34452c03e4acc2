"""zsceval: a toolkit for benchmarking zero-shot coordination (ZSC).

Batched Overcooked engine (``zsceval.envs``), shared training cores (``zsceval.rl``), algorithm
plug-ins (``zsceval.algorithms``) and the ZSC-Eval evaluation core (``zsceval.evaluation``).
"""

__version__ = "0.1.0"
