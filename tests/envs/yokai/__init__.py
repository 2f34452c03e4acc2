"""Tests of the Yōkai Learning Environment (zsceval.envs.yokai)."""
