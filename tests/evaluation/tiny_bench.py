"""The tiny ZSC-Eval suite: the whole pipeline on cramped_room with budgets of seconds.

``tests/evaluation/conftest.py`` runs it once per session (the ``tiny_bench`` fixture); the pipeline
tests read its output and the shipped-set tests reuse its candidates and mid-checkpoint best responses.
"""

from pathlib import Path

TINY = """
name: tiny
seed: 0
layouts: [cramped_room]
algorithms: [sp, pecan]
ego_seeds: 2
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8, run.eval_episodes=2]
partners:
  candidates: 3
  candidate_steps: 6400
  checkpoints: 2
  feature_episodes: 2
  k: 2
  mid_br_steps: 3200
  dpp_samples: 50
  min_return: -1
evaluation:
  episodes: 2
"""


def write_suite(tmp_path: Path, text: str = TINY, name: str = "tiny.yaml") -> Path:
    """``text`` written as ``tmp_path / name``; returns the path."""
    path = tmp_path / name
    path.write_text(text)
    return path
