"""Shared pytest configuration: tests run on CPU with one intra-op thread (CI has 2 cores)."""

import torch

torch.set_num_threads(1)
