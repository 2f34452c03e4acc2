"""Behavior cloning of the 2019 human-human trials into human-proxy partners.

Carroll et al. (2019), "On the Utility of Learning about Humans for Human-AI Coordination"
(arXiv:1910.05789), fit two models per layout on their human-human trials: **BC** on the
train split, the partner PPO_BC trains with, and the **human proxy** H_proxy on the test split, the
partner every agent is evaluated with (human_aware_rl ``ppo/evaluate.py``: "a human proxy model
(trained with the human testing data)", loaded from ``bc_runs/test``). :func:`train_bc` fits
either: it takes the trials to fit and, optionally, the other split's trials to score on.

We follow human_aware_rl's defaults (``imitation/default_bc_params.py``: an MLP of two hidden
layers of 64, Adam with learning rate 1e-3, batch 64, 15% of the fitted trials held out for model
selection, the weights of the epoch with the lowest validation loss kept) with two documented
choices (docs/differences.md):

* the input is the engine's lossless observation of the player (what every zsceval agent sees),
  not their hand-made 62-dimensional feature vector, which needs a motion planner;
* class balancing is on by default (``use_class_weights``, sklearn's "balanced" weights
  ``n / (A * count_a)``): STAY is 49-71% of the human actions (the game records a STAY on every
  frame without a key press), and an unweighted model learns to stand still.

Each recorded transition gives two examples, one per player (the player's observation and action),
so the model plays either seat.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.human.proxy import HumanProxy, proxy_spec

__all__ = ["BCConfig", "BCResult", "accuracy_table", "observations", "train_bc"]


@dataclass(frozen=True)
class BCConfig:
    """Behavior-cloning settings (defaults: human_aware_rl ``DEFAULT_TRAINING_PARAMS``).

    Attributes:
        hidden: MLP hidden widths.
        epochs: passes over the training examples.
        batch_size: examples per Adam step.
        lr: Adam learning rate.
        validation_split: fraction of the fitted split's trials held out to pick the epoch.
        class_balance: weight the loss by ``n / (A * count_a)`` per action class.
        stuck_time: the proxy's unstuck rule (:class:`~zsceval.human.proxy.HumanProxy`).
        seed: torch/numpy seed of initialization, shuffles and the validation split.
    """

    hidden: tuple[int, ...] = (64, 64)
    epochs: int = 100
    batch_size: int = 64
    lr: float = 1e-3
    validation_split: float = 0.15
    class_balance: bool = True
    stuck_time: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or not 0.0 < self.validation_split < 1.0 or self.lr <= 0:
            raise ValueError(
                "BCConfig needs epochs >= 1, batch_size >= 1, lr > 0 and 0 < validation_split < 1; "
                f"got {self}"
            )


@dataclass
class BCResult:
    """A trained proxy and its accuracies.

    Attributes:
        proxy: the trained :class:`~zsceval.human.proxy.HumanProxy` (eval mode, CPU).
        metrics: ``{"fit"|"validation"|"held_out": {"examples", "accuracy", "balanced_accuracy",
            "majority_accuracy", "majority_balanced_accuracy", "loss"}}``: the fitted examples, the
            validation trials that chose the epoch, and the other split (``held_out`` only when
            ``held_out_trials`` were given); ``best_epoch``; ``majority_class``.
        history: per epoch ``{"epoch", "train_loss", "validation_loss", "validation_accuracy"}``.
        config: the :class:`BCConfig` used, as a dict.
    """

    proxy: HumanProxy
    metrics: dict
    history: list[dict] = field(default_factory=list)
    config: dict = field(default_factory=dict)


def observations(trials: Sequence, layout: str, chunk: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """Every recorded step of ``trials`` as per-player examples.

    Args:
        trials: :class:`~zsceval.human.trials.Trial` objects of one layout (``states`` T+1 state
            dicts, ``actions int64 [T, 2]``).
        layout: our layout name (the engine that encodes the states).
        chunk: states imported into one batched engine at a time.

    Returns:
        ``(obs uint8 [N, H, W, C], actions int64 [N])``, ``N = 2 * sum(T)``, ordered trial by trial,
        step by step, player 0 then player 1.

    Raises:
        ValueError: a trial of another layout, or a state the engine refuses (named).
    """
    pairs = [(s, t) for t in trials for s in range(len(t.actions))]
    for t in trials:
        if t.layout != layout:
            raise ValueError(f"trial {t.trial_id} is on layout {t.layout!r}, not {layout!r}")
    env = OvercookedEnv(load_layout(layout), num_envs=max(1, min(chunk, len(pairs))), horizon=10**6)
    env.reset()
    obs_parts, act_parts = [], []
    for start in range(0, len(pairs), env.num_envs):
        block = pairs[start : start + env.num_envs]
        for i, (s, trial) in enumerate(block):
            try:
                env.import_state(i, trial.states[s])
            except ValueError as exc:
                raise ValueError(f"trial {trial.trial_id} step {s}: {exc}") from None
        obs = env.encoder(env.state)[: len(block)]  # [b, 2, H, W, C] in player order
        obs_parts.append(obs.reshape(-1, *obs.shape[2:]).clone())
        act_parts.append(torch.stack([trial.actions[s] for s, trial in block]).reshape(-1))
    if not obs_parts:
        H, W = env.layout.height, env.layout.width
        return torch.zeros(0, H, W, len(env.obs_channels), dtype=torch.uint8), torch.zeros(
            0, dtype=torch.int64
        )
    return torch.cat(obs_parts), torch.cat(act_parts).long()


def accuracy_table(
    logits: torch.Tensor, actions: torch.Tensor, majority_class: int, num_actions: int
) -> dict:
    """Accuracy, balanced accuracy (mean per-class recall over classes present) and the majority
    baseline's two values, for ``logits float [N, A]`` against ``actions int64 [N]``.

    The majority baseline always predicts ``majority_class`` (the most frequent action of the
    *train* split).
    """
    pred = logits.argmax(1)
    present = [a for a in range(num_actions) if bool((actions == a).any())]

    def balanced(p: torch.Tensor) -> float:
        return float(np.mean([float((p[actions == a] == a).float().mean()) for a in present]))

    maj = torch.full_like(actions, majority_class)
    return {
        "examples": int(len(actions)),
        "accuracy": float((pred == actions).float().mean()),
        "balanced_accuracy": balanced(pred),
        "majority_accuracy": float((maj == actions).float().mean()),
        "majority_balanced_accuracy": balanced(maj),
    }


def _split_trials(trials: Sequence, fraction: float, rng: np.random.Generator) -> tuple[list, list]:
    order = rng.permutation(len(trials))
    n_val = max(1, round(fraction * len(trials))) if len(trials) > 1 else 0
    val = [trials[i] for i in sorted(order[:n_val])]
    train = [trials[i] for i in sorted(order[n_val:])]
    return train, val


def train_bc(
    trials: Sequence,
    layout: str,
    config: BCConfig | None = None,
    held_out_trials: Sequence | None = None,
    progress=None,
) -> BCResult:
    """Fit a behavior-cloned model on ``trials`` (one layout) and measure it on the other split.

    Args:
        trials: the trials of ``layout`` to fit (the test split for H_proxy, the train split for
            BC); ``config.validation_split`` of them (whole trials) are held out to choose the epoch.
        layout: our layout name.
        config: :class:`BCConfig` (default: the defaults).
        held_out_trials: the other split's trials of ``layout``, scored once with the chosen weights.
        progress: optional callable ``progress(epoch, row_dict)`` called after every epoch.

    Returns:
        :class:`BCResult`.

    Raises:
        ValueError: fewer than 2 trials, or trials of another layout.
    """
    config = config or BCConfig()
    if len(trials) < 2:
        raise ValueError(
            f"behavior cloning needs at least 2 trials of {layout!r} (one held out), got {len(trials)}"
        )
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    train_trials, val_trials = _split_trials(list(trials), config.validation_split, rng)
    x, y = observations(train_trials, layout)
    xv, yv = observations(val_trials, layout)
    A = 6
    counts = torch.bincount(y, minlength=A).float()
    majority = int(counts.argmax())
    if config.class_balance:
        weight = torch.where(counts > 0, len(y) / (A * counts.clamp(min=1)), torch.zeros_like(counts))
    else:
        weight = torch.ones(A)
    proxy = HumanProxy(proxy_spec(tuple(x.shape[1:]), A, config.hidden, config.stuck_time))
    opt = torch.optim.Adam(proxy.parameters(), lr=config.lr)
    best = (math.inf, 0, copy.deepcopy(proxy.state_dict()))
    history = []
    gen = torch.Generator().manual_seed(config.seed)
    for epoch in range(1, config.epochs + 1):
        proxy.train()
        order = torch.randperm(len(y), generator=gen)
        total = 0.0
        for start in range(0, len(y), config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = F.cross_entropy(proxy(x[idx]), y[idx], weight=weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        proxy.eval()
        with torch.no_grad():
            lv = proxy(xv)
            val_loss = float(F.cross_entropy(lv, yv, weight=weight))
            val_acc = float((lv.argmax(1) == yv).float().mean())
        row = {
            "epoch": epoch,
            "train_loss": total / len(y),
            "validation_loss": val_loss,
            "validation_accuracy": val_acc,
        }
        history.append(row)
        if progress is not None:
            progress(epoch, row)
        if val_loss < best[0]:
            best = (val_loss, epoch, copy.deepcopy(proxy.state_dict()))
    proxy.load_state_dict(best[2])
    proxy.eval()
    metrics: dict = {"best_epoch": best[1], "majority_class": majority}
    with torch.no_grad():
        for name, (xs, ys) in {"fit": (x, y), "validation": (xv, yv)}.items():
            lg = proxy(xs)
            metrics[name] = accuracy_table(lg, ys, majority, A) | {
                "loss": float(F.cross_entropy(lg, ys, weight=weight))
            }
        if held_out_trials:
            xt, yt = observations(list(held_out_trials), layout)
            lg = proxy(xt)
            metrics["held_out"] = accuracy_table(lg, yt, majority, A) | {
                "loss": float(F.cross_entropy(lg, yt, weight=weight))
            }
    return BCResult(proxy=proxy, metrics=metrics, history=history, config=asdict(config))
