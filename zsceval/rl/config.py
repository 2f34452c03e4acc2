"""Training configuration: frozen dataclasses, presets (YAML data files) and ``key=value`` overrides.

A :class:`TrainConfig` is built in layers, each overriding the previous one:

1. the dataclass defaults below;
2. a preset, ``zsceval/presets/<name>.yaml`` (``quick`` or ``paper``);
3. a user YAML file (``--config FILE.yaml``), same nested layout as the presets;
4. dotted overrides (``--set ppo.lr=1e-3``), values parsed as YAML scalars;
5. the explicit command-line flags (``--seed``, ``--steps``, ``--layout``, ``--device``, ``--algo``).

Unknown keys are refused with the closest valid key named. The resolved config is what a run saves
(``config.yaml``) and what ``--resume`` reads back. Nothing mutates a config during a run; derived
sizes are properties.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "ConfigError",
    "EnvConfig",
    "ModelConfig",
    "PPOConfig",
    "RunConfig",
    "ShapingConfig",
    "TrainConfig",
    "apply_overrides",
    "config_from_dict",
    "config_to_dict",
    "list_presets",
    "load_preset",
    "resolve_config",
]


class ConfigError(ValueError):
    """A config key or value is invalid (the message names the key and the closest valid one)."""


@dataclass(frozen=True)
class EnvConfig:
    """Which environment is trained on and how many games run in one batch."""

    name: str = "overcooked"
    """Registered env name (``zsceval.envs.env_names()``): ``overcooked`` (the batched engine),
    ``football`` (Google Research Football, 3 controlled players; ``pip install zsceval[football]``),
    ``toy`` (tiny test game), or a plug-in's."""
    layout: str = "cramped_room"
    """Layout name (``zsceval layouts`` lists them). Ignored by envs without layouts (``toy``)."""
    num_agents: int = 2
    """n, agents per game. Passed to envs that take it (``toy``); for Overcooked the layout fixes
    the player count and this must match it (2 for every shipped layout)."""
    num_envs: int = 256
    """B: games stepped together in one batched call (ZSC-Eval: ``n_rollout_threads``)."""
    horizon: int = 400
    """Episode length in env steps; Overcooked episodes end only by truncation here (ZSC-Eval: 400).
    Football: the game duration (400 frames; its episodes mostly end earlier, on a goal, the ball
    going out of play or a change of possession)."""
    num_workers: int = 0
    """Worker processes of envs that step one simulator per game in processes (Football); 0 = one
    per CPU core (at most one per game). Other envs do not take it."""
    options: dict[str, Any] = field(default_factory=dict)
    """Options of the env's factory that have no field here, e.g. ``env.options.version=4x4`` and
    ``env.options.perfect_memory=true`` for ``yokai`` (``zsceval envs`` lists each env's options)."""
    randomize_seats: bool = False
    """Shuffle which seat each agent slot drives at every reset (ZSC-Eval ``random_index``)."""
    random_start_prob: float = 0.0
    """Probability that a training episode starts from a random kitchen (ready soups and items on
    counters, part-filled pots; ZSC-Eval ``random_start_prob``, docs/overcooked-rules.md §5.9). Evaluation
    always uses the standard start."""
    view_radius: int = 0
    """Partial observability: each agent sees only the cells within Chebyshev distance r of itself
    (the other players and objects outside are zeroed; its own position and the terrain stay);
    0 = fully observable (ZSC-Eval). TBS evaluates fully and partially observable Overcooked
    (paper Sec. 4.1). The joint critic sees the full state (``Step.critic_obs``; CTDE): see
    docs/differences.md ("Partially observable Overcooked")."""


@dataclass(frozen=True)
class ModelConfig:
    """Actor and critic networks (both use the same architecture; the critic sees the critic obs)."""

    kind: str = "mlp"
    """Encoder: ``mlp`` over the flattened observation, or ``cnn`` (ZSC-Eval's 3-layer CNN); or a
    model plug-in's name (entry-point group ``zsceval.models``, :mod:`zsceval.rl.networks`), e.g.
    ``yokai-relational`` (per-card and per-cell action scores for Yōkai, docs/yokai.md)."""
    hidden_size: int = 64
    """Width of the hidden layers and of the GRU (ZSC-Eval: 64)."""
    mlp_layers: int = 2
    """Hidden layers of the ``mlp`` encoder; for ``cnn`` the number of layers after the CNN's
    projection (ZSC-Eval: 1)."""
    cnn_channels: tuple[int, ...] = (32, 64, 32)
    """Output channels of the 3x3, stride-1, padding-1 conv layers of the ``cnn`` encoder."""
    recurrent: bool = False
    """Add a GRU(hidden_size) after the encoder, trained with chunked BPTT."""
    chunk_length: int = 10
    """BPTT chunk length in env steps for the recurrent policy (ZSC-Eval ``data_chunk_length``)."""
    critic_obs: str = "joint"
    """What the centralized critic sees: ``joint`` = every agent's encoding concatenated on the
    channel axis (ZSC-Eval's share_obs, ``env.critic_obs_shape``), or ``own`` = the agent's own
    encoding. In fully observable Overcooked the own lossless encoding already holds the whole
    state (both players, all objects), so ``own`` is the same information at half the critic
    cost; ``joint`` is the ZSC-Eval setting."""
    bf16: bool | str = False
    """Run actor and critic under bfloat16 autocast (weights and optimizer stay float32). About
    2x faster updates on CPUs with AVX512-BF16 or AMX and on recent GPUs, slower elsewhere (emulated);
    off reproduces float32 math. ``auto`` (the presets): on only where the run's device computes
    bf16 natively, resolved when the run starts and recorded in its config (``zsceval.rl.hardware``)."""
    obs_scale: float = 1.0
    """Observations (uint8 counts and 0/1 planes) are cast to float32 and multiplied by this.
    1.0 matches ZSC-Eval's effective input (it multiplies by 255 in the env and divides by 255
    in the CNN)."""
    layer_norm: bool = False
    """LayerNorm after every hidden Linear layer (Linear -> LayerNorm -> ReLU), as JaxMARL's PQN
    networks (docs/reference-protocol.md "PQN-VDN"): what keeps Q-learning without a target network stable."""


@dataclass(frozen=True)
class PPOConfig:
    """MAPPO hyper-parameters (ZSC-Eval defaults in parentheses where they differ from ours)."""

    rollout_length: int = 100
    """T: env steps per game collected in one rollout (ZSC-Eval: ``episode_length`` 400)."""
    lr: float = 5e-4
    """Adam learning rate of actor and critic."""
    adam_eps: float = 1e-5
    """Adam epsilon."""
    epochs: int = 15
    """Passes over one rollout per iteration (ZSC-Eval ``ppo_epoch``)."""
    num_minibatches: int = 1
    """Minibatches per epoch (ZSC-Eval ``num_mini_batch``)."""
    clip: float = 0.2
    """PPO ratio clip epsilon; also the value-clipping range."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    huber_delta: float = 10.0
    """Huber loss delta of the value loss."""
    clip_value_loss: bool = True
    """Clip the value prediction around the old value (MAPPO ``use_clipped_value_loss``)."""
    value_norm: bool = True
    """Normalize value targets with running statistics (MAPPO ``ValueNorm``)."""
    max_grad_norm: float = 10.0
    """Gradient-norm clip, applied to actor and critic separately."""
    obs_columns: bool = True
    """MLP models: feed the first layer only the rollout's varying observation entries, with the
    constant ones folded into its bias (``networks.ObsColumns``): the same update up to float
    rounding, ~2x faster on CPU for Overcooked's sparse lossless encoding (stacked stage-1 learners
    too, since 2026-11-27). Not for compiled steps, nor for a rollout in which more than half the
    entries vary."""
    skip_forced: bool = True
    """Do not run the actor's output (and, for a feed-forward actor, its whole forward) on
    *forced* samples, those with exactly one available action (Yōkai's waiting player, whose only
    action is NOOP): their log-probability and entropy are exactly 0 and their policy gradient is
    0, so the update is the same up to float rounding while the value loss and the advantage
    normalization still use every sample. Only a rollout that holds forced samples is affected
    (none in Overcooked or Football); not for compiled steps or stacked learners."""
    entropy_coefs: tuple[float, ...] = (0.2, 0.05, 0.01)
    """Entropy coefficient values at ``entropy_milestones``, linear in between."""
    entropy_milestones: tuple[float, ...] = (0.0, 5e6, 1e7)
    """Env-step milestones of the piecewise-linear entropy schedule (constant past the ends)."""


@dataclass(frozen=True)
class PQNConfig:
    """The value-based core (``pqn``): PQN-VDN as JaxMARL trains it and TBS uses it (TBS Table 4;
    docs/reference-protocol.md "PQN-VDN"). Defaults are the TBS paper's VDN pool settings."""

    rollout_length: int = 16
    """T: env steps per game collected in one rollout (TBS: 16 for the pool, 100 for BRs)."""
    lr: float = 7.5e-5
    """RAdam learning rate at the start."""
    lr_linear_decay: bool = True
    """Decay the learning rate linearly to 0 over all gradient steps of the run."""
    optimizer: str = "radam"
    """``radam`` (JaxMARL's) or ``adam``. RAdam's variance rectification scales the first few
    hundred steps down (to ~0.2x at step 100), which the paper's ~3e5 gradient steps absorb and
    short CPU budgets do not."""
    epochs: int = 4
    """Passes over one rollout per iteration."""
    num_minibatches: int = 16
    """Minibatches per epoch; a sample is one (step, game) with its VDN sum over learner seats."""
    gamma: float = 0.99
    """Discount factor."""
    td_lambda: float = 0.5
    """lambda of the Q(lambda) targets."""
    epsilon_start: float = 1.0
    """epsilon of the epsilon-greedy exploration at the start."""
    epsilon_finish: float = 0.2
    """epsilon after the decay (held to the end)."""
    epsilon_decay: float = 0.2
    """Fraction of the run's updates over which epsilon decays linearly."""
    max_grad_norm: float = 10.0
    """Gradient-norm clip, per learner."""
    obs_columns: bool = True
    """MLP Q-networks: the update feeds the first layer only the rollout's varying observation
    entries, the constant ones folded into its bias (``networks.ObsColumns``, as ``ppo.obs_columns``):
    the same update up to float rounding, ~1.5x faster on CPU for Overcooked's sparse lossless
    encoding (docs/performance.md). Off for a rollout in which more than half the entries vary."""


@dataclass(frozen=True)
class ShapingConfig:
    """Annealed reward shaping (docs/overcooked-rules.md §3.3 and 3.6)."""

    initial_factor: float = 1.0
    """rsf at step 0."""
    horizon: float = 1e8
    """Env steps over which rsf decays linearly to 0; 0 keeps rsf constant (SP in ZSC-Eval: 1e8)."""


@dataclass(frozen=True)
class PopulationConfig:
    """Population methods (FCP, MEP, TrajeDi, HSP, COLE): sizes in the papers' terms."""

    size: int = 0
    """Stage-2 population: the partners the ego trains with (ZSC-Eval 12 / 24 / 36 for the
    co-play methods, 25 / 50 / 75 for COLE); a stage-1 member contributes 3 checkpoints.
    0: the algorithm's default (12 for FCP, MEP, TrajeDi and HSP; COLE 5 in ``quick``, 25 in ``paper``)."""
    stage1_size: int = 0
    """Members trained in one stage-1 population run; 0: ``size / 3 * 5 / 4`` rounded up
    (ZSC-Eval's 5 / 10 / 15 runs for 12 / 24 / 36), from which each ego seed takes a sliding
    window of ``size / 3`` members."""
    stage1_steps: int = 10_000_000
    """Env steps per stage-1 member (ZSC-Eval 1e7)."""


@dataclass(frozen=True)
class RunConfig:
    """Budget, seeding, device and outputs of one run."""

    algo: str = "sp"
    """Registered algorithm name (``zsceval algos``)."""
    seed: int = 0
    """Seeds network init, action sampling, minibatch order and the env generator."""
    total_steps: int = 10_000_000
    """Env steps to train for (one joint action in one game is one env step)."""
    device: str = "cpu"
    """Torch device for env state, rollouts and networks (``cpu``, ``cuda``, ``cuda:1``)."""
    num_threads: int | str = 0
    """``torch.set_num_threads`` for the run; 0 keeps torch's default. ``auto`` (the presets): the
    free cores, or 1 when another zsceval run is active or other processes hold the cores; resolved
    when the run starts and recorded in its config (``zsceval.rl.hardware``)."""
    checkpoint_every: int = 1_000_000
    """Save a checkpoint at the first resumable point after every this many env steps."""
    keep_checkpoints: int = 3
    """How many of the most recent checkpoints are kept on disk (the final one is always kept)."""
    checkpoint_first: bool = False
    """Also save a checkpoint after the first iteration (a population member's ``init``
    checkpoint: ZSC-Eval's first save comes after one update, docs/reference-protocol.md "FCP")."""
    eval_episodes: int = 20
    """Episodes of the final self-play evaluation written to ``eval.json`` (0 to skip)."""
    loggers: tuple[str, ...] = ("csv",)
    """Where the metric rows go (:mod:`zsceval.rl.loggers`): ``csv`` (``metrics.csv``, always
    written), ``tensorboard``, ``wandb``, ``mlflow`` (each needs its extra, e.g.
    ``pip install "zsceval[wandb]"``) or a plug-in's; ``--set run.loggers=[csv,wandb]``."""
    tensorboard: bool = False
    """Also write TensorBoard logs; the same as adding ``tensorboard`` to ``run.loggers`` (kept
    for the configs of older runs)."""
    compile: str = "auto"
    """``torch.compile`` of the hot paths, one of ``off``, ``step``, ``full``,
    ``rollout``, ``auto``: ``off``, all eager; ``step``, the env step as one graph (envs with
    ``compile_step``, deterministic starts; others stay eager with a note); ``full``, the env step,
    acting (each policy that drives every row), the critic's values and the PPO minibatch step
    (loss and its backward, then clipping and Adam: :meth:`~zsceval.rl.ppo.PPOCore.compile`), with
    a rollout that reads no tensor on the host for one-arm runs (SP); the ``ppo`` core only, which
    then turns ``ppo.obs_columns`` off; ``rollout``, K env steps of the PPO collection (acting and
    sampling, values, env step, rewards, buffer writes) as one graph
    (:mod:`zsceval.rl.rollout_graph`; the update stays eager; it trains as ``off`` does, bit for
    bit with ``aot_eager``) for one-arm runs of envs with ``graph_step``, others collect eagerly
    with a note; ``auto``, ``step`` on CUDA and ``off`` on CPU (on CPU the compile takes minutes
    and the compiled step was not faster: docs/performance.md)."""
    rollout_graph_steps: int = 8
    """K, the env steps per compiled graph of ``run.compile: rollout`` (the last graph of a
    rollout takes the ``T mod K`` steps left; a larger K compiles longer)."""
    compile_backend: str = "inductor"
    """``torch.compile`` backend of ``run.compile`` (``inductor``; the tests use ``aot_eager``,
    which traces the same graphs without generating code)."""
    cuda_graphs: bool = False
    """With ``run.compile: full`` on CUDA, compile the env step, acting and values with
    ``mode="reduce-overhead"`` (CUDA graphs). Ignored on other devices. Off by default: on an H200
    inductor skips the graphs for the env step (it resets games in place) and quick SP ran at 0.83x
    of plain ``full`` (docs/performance.md, first GPU measurements)."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on; saved resolved as ``config.yaml`` in the run dir."""

    run: RunConfig = field(default_factory=RunConfig)
    """Budget, seeding, device and outputs."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """Environment and batch size."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """Networks."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """MAPPO hyper-parameters."""
    pqn: PQNConfig = field(default_factory=PQNConfig)
    """Value-based (PQN-VDN) hyper-parameters (algorithms whose core is ``pqn``)."""
    shaping: ShapingConfig = field(default_factory=ShapingConfig)
    """Reward-shaping annealing."""
    population: PopulationConfig = field(default_factory=PopulationConfig)
    """Population sizes and budgets (population methods only)."""
    algo: dict[str, Any] = field(default_factory=dict)
    """Algorithm-specific options, validated by the plug-in's ``Options`` dataclass."""

    def rollout_length(self, core: str) -> int:
        """T of one rollout of the learning core ``core`` (``Algorithm.core``): the
        ``rollout_length`` of the config section of that name (``ppo.rollout_length``, or
        ``pqn.rollout_length`` for the value-based core). The caller names the core: the config
        loads no plug-in (the trainer has resolved the algorithm already).

        Raises:
            ConfigError: ``core`` has no config section with a ``rollout_length``.
        """
        section = getattr(self, core, None)
        if not hasattr(section, "rollout_length"):
            raise ConfigError(f"learning core '{core}' has no config section with a rollout_length")
        return int(section.rollout_length)

    def steps_per_iteration(self, core: str) -> int:
        """Env steps collected per iteration by the learning core ``core``: ``env.num_envs *``
        :meth:`rollout_length`."""
        return self.env.num_envs * self.rollout_length(core)


def population_size(cfg: TrainConfig) -> int:
    """The population size of a run: ``population.size``, or when it is 0 the default of the
    algorithm ``run.algo`` (``Algorithm.default_population_size``: 12 for the co-play methods, their
    stage-1 runs and HSP, ZSC-Eval's smallest; 25 for COLE; ZSC-Eval Sec. 5.1). The one place of
    the rule "0 means the algorithm's default"; loads that algorithm's entry point only.

    Raises:
        ConfigError: the algorithm trains no population (its default is 0) and none is given.
    """
    if cfg.population.size:
        return int(cfg.population.size)
    from zsceval import registry

    size = int(getattr(registry.get(cfg.run.algo), "default_population_size", 0))
    if size < 1:
        raise ConfigError(f"algorithm '{cfg.run.algo}' has no default population size: set population.size")
    return size


def _section_classes() -> dict[str, type]:
    hints = typing.get_type_hints(TrainConfig)
    return {name: tp for name, tp in hints.items() if dataclasses.is_dataclass(tp)}


def valid_keys() -> list[str]:
    """All dotted keys that ``--set`` accepts, e.g. ``ppo.lr`` (``algo.*`` is free-form)."""
    keys = []
    for section, cls in _section_classes().items():
        keys += [f"{section}.{f.name}" for f in dataclasses.fields(cls)]
    return keys


def _unknown(key: str, candidates: list[str]) -> ConfigError:
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.4)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"unknown config key '{key}'{hint} (`zsceval train --print-config` shows every key)")


def coerce_value(value: Any, tp: Any, key: str) -> Any:
    """Convert a YAML-parsed value to the field type ``tp``: int (from ``1e7``, not from 1.5 or a
    bool), float, bool, str, ``tuple[X, ...]`` (a scalar becomes a 1-tuple) or dict.

    Raises:
        ConfigError: naming ``key`` and the expected type.
    """
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):  # ``bool | str`` etc.: a typed value or "auto"
        args = typing.get_args(tp)
        if isinstance(value, str) and str in args:
            if value != "auto":
                raise ConfigError(
                    f"config key '{key}': use 'auto' or a value of type "
                    f"{' or '.join(a.__name__ for a in args if a is not str)}, got {value!r}"
                )
            return value
        for inner in args:
            if inner is str:
                continue
            try:
                return coerce_value(value, inner, key)
            except ConfigError:
                pass
        names = " or ".join(a.__name__ for a in args if a is not str)
        raise ConfigError(f"config key '{key}': cannot use {value!r} as {names} or 'auto'")
    try:
        if tp is bool:
            if isinstance(value, bool):
                return value
            raise TypeError
        if tp is int:
            if isinstance(value, bool):
                raise TypeError
            as_float = float(value)
            if as_float != int(as_float):
                raise TypeError
            return int(as_float)
        if tp is float:
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if tp is str:
            if isinstance(value, bool):  # YAML 1.1 reads a bare off / on as a boolean
                return "on" if value else "off"
            if not isinstance(value, str):
                raise TypeError
            return value
        if origin is tuple:
            (inner, _) = typing.get_args(tp)
            if not isinstance(value, list | tuple):
                value = [value]
            return tuple(coerce_value(v, inner, key) for v in value)
        if origin is dict:
            if not isinstance(value, dict):
                raise TypeError
            return dict(value)
    except (TypeError, ValueError):
        pass
    else:
        return value
    raise ConfigError(f"config key '{key}': cannot use {value!r} as {getattr(tp, '__name__', tp)}")


def config_from_dict(data: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """Build a config from a nested dict (YAML layout), starting from ``base`` (default: defaults).

    Args:
        data: ``{"ppo": {"lr": 1e-3}, "env": {...}, "algo": {...}}``; missing keys keep ``base``.
        base: config whose values are overridden.

    Raises:
        ConfigError: an unknown section or key (the closest valid key is named), or a bad value.
    """
    base = base or TrainConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a mapping of sections, got {type(data).__name__}")
    classes = _section_classes()
    changes: dict[str, Any] = {}
    for section, values in data.items():
        if section == "algo":
            if not isinstance(values, dict):
                raise ConfigError("config section 'algo' must be a mapping")
            changes["algo"] = {**base.algo, **values}
            continue
        if section not in classes:
            raise _unknown(section, [*classes, "algo"])
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"config section '{section}' must be a mapping, got {values!r}")
        cls = classes[section]
        hints = typing.get_type_hints(cls)
        current = getattr(base, section)
        updates = {}
        for key, value in values.items():
            if section == "env" and key.startswith("options."):  # one option: env.options.version=4x4
                updates.setdefault("options", dict(current.options))[key[len("options.") :]] = value
                continue
            if key not in hints:
                raise _unknown(f"{section}.{key}", valid_keys())
            updates[key] = coerce_value(value, hints[key], f"{section}.{key}")
        changes[section] = dataclasses.replace(current, **updates)
    return dataclasses.replace(base, **changes)


def config_to_dict(cfg: TrainConfig) -> dict[str, Any]:
    """Nested plain dict (tuples as lists) suitable for YAML/JSON."""

    def plain(x: Any) -> Any:
        if isinstance(x, tuple | list):
            return [plain(v) for v in x]
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        return x

    return {
        **{s: plain(dataclasses.asdict(getattr(cfg, s))) for s in _section_classes()},
        "algo": plain(dict(cfg.algo)),
    }


def apply_overrides(cfg: TrainConfig, overrides: list[str] | tuple[str, ...]) -> TrainConfig:
    """Apply ``section.key=value`` strings (values parsed as YAML scalars/lists).

    Raises:
        ConfigError: malformed item, unknown key (closest key named) or bad value.
    """
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override '{item}' is not of the form section.key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if "." not in key:
            raise _unknown(key, valid_keys())
        section, name = key.split(".", 1)
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"override '{item}': cannot parse value: {exc}") from None
        cfg = config_from_dict({section: {name: value}}, cfg)
    return cfg


def list_presets() -> list[str]:
    """Names of the preset files shipped in ``zsceval/presets``."""
    folder = resources.files("zsceval") / "presets"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


DYNAMICS = ("classic", "multi_recipe")


def _preset_data(name: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(sections, by_dynamics)`` of the preset file ``zsceval/presets/<name>.yaml``."""
    names = list_presets()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown preset '{name}'. Valid presets: {', '.join(names)}.{hint}")
    text = (resources.files("zsceval") / "presets" / f"{name}.yaml").read_text()
    data = yaml.safe_load(text) or {}
    by_dynamics = data.pop("by_dynamics", None) or {}
    from zsceval.envs.registry import env_names

    valid = (*DYNAMICS, *(e for e in env_names() if e != "overcooked"))
    for key, value in by_dynamics.items():
        if key not in valid:
            raise ConfigError(f"preset '{name}': by_dynamics.{key} is not one of {', '.join(valid)}")
        if not isinstance(value, dict):
            raise ConfigError(f"preset '{name}': by_dynamics.{key} must be a mapping of config sections")
    return data, by_dynamics


def load_preset(name: str, base: TrainConfig | None = None, dynamics: str | None = None) -> TrainConfig:
    """Apply the preset ``zsceval/presets/<name>.yaml`` on top of ``base``.

    A preset may hold a ``by_dynamics`` mapping (``classic`` / ``multi_recipe``, or an env name such
    as ``football``) of further config
    sections, applied after the preset's own when the layout has those dynamics (e.g. the quick
    preset's random starts and longer budget for multi-recipe layouts).

    Args:
        name: preset name (``list_presets()``).
        base: config to apply the preset on (default: the dataclass defaults).
        dynamics: the layout's dynamics, selecting a ``by_dynamics`` entry; None applies none.

    Raises:
        ConfigError: unknown preset (valid names listed) or invalid preset content.
    """
    data, by_dynamics = _preset_data(name)
    cfg = config_from_dict(data, base)
    if dynamics is not None and dynamics in by_dynamics:
        cfg = config_from_dict(by_dynamics[dynamics], cfg)
    return cfg


def layout_dynamics(env: EnvConfig) -> str | None:
    """``classic`` or ``multi_recipe`` for an Overcooked env config, the env's name for other envs
    (a preset's ``by_dynamics`` entry ``football`` applies to Football runs); None for an unknown
    layout (the env constructor reports that error with the valid names)."""
    if env.name != "overcooked":
        return env.name
    from zsceval.envs.overcooked import load_layout

    try:
        return load_layout(env.layout).dynamics
    except (ValueError, OSError):
        return None


def load_yaml_file(path: str | Path, base: TrainConfig | None = None) -> TrainConfig:
    """Apply a user YAML config file on top of ``base``."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read config file {path}: it is not a text (UTF-8 YAML) file") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    return config_from_dict(data, base)


def resolve_config(
    *,
    base: TrainConfig | None = None,
    preset: str | None = None,
    config_file: str | Path | None = None,
    overrides: tuple[str, ...] | list[str] = (),
    **flags: Any,
) -> TrainConfig:
    """Resolve a config in the documented order: defaults, preset (with its ``by_dynamics`` entry for
    the resolved layout, then the algorithm's own additions to it, :meth:`~zsceval.rl.algorithm.
    Algorithm.preset_config`, then :func:`~zsceval.rl.preset_rules.late_exploration`), file,
    overrides (except those an addition takes as its input: ``Algorithm.preset_derived``), flags.

    Args:
        base: starting config (default: the dataclass defaults).
        preset: preset name or None.
        config_file: user YAML file or None.
        overrides: ``section.key=value`` strings.
        **flags: dotted keys given by explicit CLI flags (``{"run.seed": 3}``); None values skip.
    """
    resolve = config_layers(base, preset, config_file, overrides, flags)
    cfg = resolve(None)
    if preset is not None:
        dynamics, plugin, derived = preset_additions(preset, cfg, resolve)
        if dynamics is not None or plugin:
            cfg = resolve(dynamics, plugin, derived)
    validate(cfg)
    return cfg


def config_layers(base: TrainConfig | None, preset: str | None, config_file, overrides, flags: dict):
    """``resolve(dynamics, plugin, derived)``: :func:`resolve_config`'s layers, unvalidated."""

    def resolve(
        dynamics: str | None, plugin: dict | None = None, derived: frozenset = frozenset()
    ) -> TrainConfig:
        cfg = base or TrainConfig()
        if preset is not None:
            cfg = load_preset(preset, cfg, dynamics)
        if plugin:
            cfg = config_from_dict(plugin, cfg)
        if config_file is not None:
            cfg = load_yaml_file(config_file, cfg)
        cfg = apply_overrides(cfg, [o for o in overrides if o.split("=", 1)[0].strip() not in derived])
        for key, value in flags.items():
            if value is not None:
                section, name = key.split(".", 1)
                cfg = config_from_dict({section: {name: value}}, cfg)
        return cfg

    return resolve


def preset_additions(preset: str, cfg: TrainConfig, resolve) -> tuple[str | None, dict[str, Any], frozenset]:
    """``(dynamics, additions, derived)``: the preset's ``by_dynamics`` entry that applies (or None),
    the sections the algorithm adds (:func:`plugin_preset`, then :func:`~zsceval.rl.preset_rules.
    late_exploration`), computed from ``cfg`` (user values included), and the added keys computed
    from the user's own value (``Algorithm.preset_derived``)."""
    dynamics = layout_dynamics(cfg.env)
    if dynamics not in _preset_data(preset)[1]:
        dynamics = None
    if dynamics is not None:  # the plug-in's additions see the dynamics' section (Football's games)
        cfg = resolve(dynamics)
    from zsceval.rl.preset_rules import late_exploration

    plugin, derived = plugin_preset(cfg.run.algo, preset, cfg)
    late = late_exploration(preset, resolve(dynamics, plugin, derived) if plugin else cfg)
    if late:
        plugin = {**plugin, "ppo": {**plugin.get("ppo", {}), **late}}
    return dynamics, plugin, derived & {f"{sec}.{key}" for sec, keys in plugin.items() for key in keys}


def plugin_preset(algo: str, preset: str, cfg: TrainConfig) -> tuple[dict[str, Any], frozenset]:
    """The config sections algorithm ``algo`` adds to ``preset`` (:meth:`Algorithm.preset_config`),
    given the config resolved without them, and its ``preset_derived`` keys; ``({}, frozenset())``
    for an unknown algorithm (the trainer reports it with the valid names)."""
    from zsceval import registry

    try:
        cls = registry.get(algo)
    except Exception:  # unknown or broken plug-in: reported where it is used
        return {}, frozenset()
    return dict(cls.preset_config(preset, cfg) or {}), frozenset(getattr(cls, "preset_derived", ()))


def _check_env_name(name: str) -> tuple[bool, str]:
    """``(ok, message)``: is ``name`` a registered env (the message lists them, closest first)."""
    from zsceval.envs.registry import env_names

    valid = env_names()
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return name in valid, f"env.name must be a registered env ({', '.join(valid)}), got '{name}'.{hint}"


def _check_model_kind(kind: str) -> tuple[bool, str]:
    """``(ok, message)``: is ``kind`` a built-in encoder or a model plug-in (the message lists them)."""
    from zsceval.rl.networks import model_kinds

    valid = model_kinds()
    close = difflib.get_close_matches(kind, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return kind in valid, f"model.kind must be one of {', '.join(valid)}, got '{kind}'.{hint}"


COMPILE_MODES = ("off", "step", "full", "rollout", "auto")
"""Values of ``run.compile``."""


def compile_mode(cfg: TrainConfig, device: Any) -> str:
    """``run.compile`` resolved for ``device`` (a ``torch.device``): ``off``, ``step``, ``full`` or
    ``rollout`` (``auto``: ``step`` on CUDA, ``off`` elsewhere)."""
    if cfg.run.compile == "auto":
        return "step" if getattr(device, "type", str(device)) == "cuda" else "off"
    return cfg.run.compile


def validate(cfg: TrainConfig) -> None:
    """Check value ranges that would otherwise fail deep inside training.

    Raises:
        ConfigError: naming the key and the constraint.
    """
    checks = [
        (cfg.env.num_envs >= 1, "env.num_envs must be >= 1"),
        (cfg.env.horizon >= 1, "env.horizon must be >= 1"),
        (0.0 <= cfg.env.random_start_prob <= 1.0, "env.random_start_prob must be in [0, 1]"),
        (cfg.env.view_radius >= 0, "env.view_radius must be >= 0 (0 = fully observable)"),
        (cfg.env.num_workers >= 0, "env.num_workers must be >= 0 (0 = one per CPU core)"),
        (cfg.ppo.rollout_length >= 1, "ppo.rollout_length must be >= 1"),
        (cfg.ppo.epochs >= 1, "ppo.epochs must be >= 1"),
        (cfg.ppo.num_minibatches >= 1, "ppo.num_minibatches must be >= 1"),
        (cfg.ppo.lr > 0, f"ppo.lr must be > 0, got {cfg.ppo.lr}"),
        (cfg.ppo.adam_eps > 0, f"ppo.adam_eps must be > 0, got {cfg.ppo.adam_eps}"),
        (cfg.ppo.clip > 0, f"ppo.clip must be > 0, got {cfg.ppo.clip}"),
        (0.0 <= cfg.ppo.gamma <= 1.0, f"ppo.gamma must be in [0, 1], got {cfg.ppo.gamma}"),
        (0.0 <= cfg.ppo.gae_lambda <= 1.0, f"ppo.gae_lambda must be in [0, 1], got {cfg.ppo.gae_lambda}"),
        (cfg.ppo.max_grad_norm > 0, f"ppo.max_grad_norm must be > 0, got {cfg.ppo.max_grad_norm}"),
        (cfg.run.total_steps >= 1, "run.total_steps must be >= 1"),
        (
            cfg.run.compile in COMPILE_MODES,
            f"run.compile must be one of {', '.join(COMPILE_MODES)}, got {cfg.run.compile!r}",
        ),
        (
            cfg.run.rollout_graph_steps >= 1,
            f"run.rollout_graph_steps must be >= 1, got {cfg.run.rollout_graph_steps}",
        ),
        (
            cfg.run.checkpoint_every >= 1,
            f"run.checkpoint_every must be >= 1 env step, got {cfg.run.checkpoint_every}",
        ),
        (cfg.run.keep_checkpoints >= 1, f"run.keep_checkpoints must be >= 1, got {cfg.run.keep_checkpoints}"),
        (
            cfg.run.num_threads == "auto"
            or (isinstance(cfg.run.num_threads, int) and cfg.run.num_threads >= 0),
            "run.num_threads must be 'auto' or a count >= 0 (0 = torch's default), "
            f"got {cfg.run.num_threads!r}",
        ),
        (cfg.pqn.rollout_length >= 1, "pqn.rollout_length must be >= 1"),
        (
            cfg.pqn.epochs >= 1 and cfg.pqn.num_minibatches >= 1,
            "pqn.epochs and pqn.num_minibatches must be >= 1",
        ),
        (cfg.pqn.lr > 0, f"pqn.lr must be > 0, got {cfg.pqn.lr}"),
        (
            cfg.pqn.optimizer in ("radam", "adam"),
            f"pqn.optimizer must be 'radam' or 'adam', got '{cfg.pqn.optimizer}'",
        ),
        (0.0 <= cfg.pqn.td_lambda <= 1.0, f"pqn.td_lambda must be in [0, 1], got {cfg.pqn.td_lambda}"),
        (0.0 <= cfg.pqn.gamma <= 1.0, f"pqn.gamma must be in [0, 1], got {cfg.pqn.gamma}"),
        (
            0.0 <= cfg.pqn.epsilon_finish <= 1.0 and 0.0 <= cfg.pqn.epsilon_start <= 1.0,
            "pqn.epsilon_start and pqn.epsilon_finish must be in [0, 1]",
        ),
        (
            0.0 <= cfg.pqn.epsilon_decay <= 1.0,
            f"pqn.epsilon_decay must be in [0, 1], got {cfg.pqn.epsilon_decay}",
        ),
        (
            len(cfg.ppo.entropy_coefs) == len(cfg.ppo.entropy_milestones) >= 1,
            "ppo.entropy_coefs and ppo.entropy_milestones must have the same, non-zero length",
        ),
        (
            list(cfg.ppo.entropy_milestones) == sorted(cfg.ppo.entropy_milestones),
            "ppo.entropy_milestones must be increasing",
        ),
        _check_model_kind(cfg.model.kind),
        (
            cfg.model.critic_obs in ("joint", "own"),
            f"model.critic_obs must be 'joint' or 'own', got '{cfg.model.critic_obs}'",
        ),
        (cfg.env.num_agents >= 1, "env.num_agents must be >= 1"),
        _check_env_name(cfg.env.name),
        (
            not cfg.model.recurrent or cfg.ppo.rollout_length % cfg.model.chunk_length == 0,
            "ppo.rollout_length must be a multiple of model.chunk_length for a recurrent model",
        ),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
