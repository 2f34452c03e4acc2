"""Config: presets, overrides, unknown keys, coercion, frozen dataclasses."""

import dataclasses

import pytest

from zsceval.rl.config import (
    ConfigError,
    TrainConfig,
    apply_overrides,
    config_from_dict,
    config_to_dict,
    load_preset,
    resolve_config,
)


def test_presets_load_and_paper_matches_zsceval():
    paper = load_preset("paper")
    assert paper.model.kind == "cnn" and paper.ppo.epochs == 15 and paper.ppo.num_minibatches == 1
    assert paper.ppo.lr == 5e-4 and paper.ppo.clip == 0.2 and paper.ppo.gamma == 0.99
    assert paper.ppo.entropy_coefs == (0.2, 0.05, 0.01)
    assert paper.ppo.entropy_milestones == (0.0, 5e6, 1e7)
    assert paper.run.total_steps == 10_000_000 and paper.shaping.horizon == 1e8
    quick = load_preset("quick")
    assert quick.model.kind == "mlp"


def test_overrides_and_flags_apply_in_order_and_coerce_types():
    cfg = resolve_config(preset="quick", overrides=["ppo.lr=1e-3", "run.total_steps=2e6"], **{"run.seed": 7})
    assert cfg.ppo.lr == 1e-3 and cfg.run.total_steps == 2_000_000 and isinstance(cfg.run.total_steps, int)
    assert cfg.run.seed == 7


def test_unknown_key_names_closest_valid_key():
    with pytest.raises(ConfigError, match=r"unknown config key 'ppo.lrr'; did you mean 'ppo.lr'"):
        apply_overrides(TrainConfig(), ["ppo.lrr=1"])
    with pytest.raises(ConfigError, match="'ppo'"):
        config_from_dict({"ppoo": {"lr": 1}})


def test_bad_value_is_refused():
    with pytest.raises(ConfigError, match="env.num_envs"):
        apply_overrides(TrainConfig(), ["env.num_envs=1.5"])
    with pytest.raises(ConfigError, match="unknown preset 'quik'"):
        load_preset("quik")


def test_config_is_frozen_and_round_trips():
    cfg = resolve_config(preset="paper")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.ppo.lr = 1.0  # type: ignore[misc]
    assert config_from_dict(config_to_dict(cfg)) == cfg


def test_quick_preset_by_dynamics_applies_to_multi_recipe_layouts_only():
    classic = resolve_config(preset="quick", **{"env.layout": "counter_circuit"})
    multi = resolve_config(preset="quick", **{"env.layout": "random3_m"})  # alias of counter_circuit_mr
    assert classic.env.random_start_prob == 0.0
    assert multi.env.random_start_prob > 0.0
    assert multi.run.total_steps > classic.run.total_steps
    # Everything the user says still wins over the preset's by_dynamics entry.
    user = resolve_config(
        preset="quick",
        overrides=["env.random_start_prob=0"],
        **{"env.layout": "counter_circuit_mr", "run.total_steps": 1000},
    )
    assert user.env.random_start_prob == 0.0 and user.run.total_steps == 1000
    assert load_preset("quick", dynamics="multi_recipe").env.random_start_prob == multi.env.random_start_prob
    assert load_preset("quick").env.random_start_prob == 0.0


def test_preset_by_dynamics_with_an_unknown_dynamics_is_refused(monkeypatch):
    import zsceval.rl.config as config

    monkeypatch.setattr(config, "list_presets", lambda: ["quick", "weird"])
    real = config.resources.files

    class Fake:
        def __truediv__(self, other):
            return self

        def read_text(self):
            return "by_dynamics:\n  multi-recipe:\n    env: {random_start_prob: 0.5}\n"

    monkeypatch.setattr(config.resources, "files", lambda pkg: Fake() if pkg == "zsceval" else real(pkg))
    expected = "by_dynamics.multi-recipe is not one of classic, multi_recipe, football"
    with pytest.raises(ConfigError, match=expected):
        config.load_preset("weird")


def test_bad_critic_obs_is_refused_when_the_config_is_resolved():
    with pytest.raises(ConfigError, match="model.critic_obs must be 'joint' or 'own', got 'both'"):
        resolve_config(preset="quick", overrides=["model.critic_obs=both"])


def test_env_name_must_be_registered_and_the_error_lists_registered_envs():
    expected = r"registered env \(football, overcooked, toy, yokai\), got 'tooy'\. Did you mean 'toy'\?"
    with pytest.raises(ConfigError, match=expected):
        resolve_config(overrides=["env.name=tooy"])
    assert resolve_config(overrides=["env.name=toy", "env.horizon=8"]).env.name == "toy"


def test_env_num_agents_defaults_to_two_and_must_be_positive():
    assert TrainConfig().env.num_agents == 2
    assert resolve_config(overrides=["env.name=toy", "env.num_agents=3"]).env.num_agents == 3
    with pytest.raises(ConfigError, match="env.num_agents must be >= 1"):
        resolve_config(overrides=["env.num_agents=0"])
    with pytest.raises(ConfigError, match="env.num_agents"):
        apply_overrides(TrainConfig(), ["env.num_agents=2.5"])


def test_a_plugins_preset_additions_see_the_env_dynamics_section():
    """Stage 1 multiplies the preset's games per member: on Football that is the Football section's
    16 games, not Overcooked's 512 (the plug-in's additions used to be computed before it)."""
    from zsceval.algorithms.base.stage1 import stage1_size

    football = ["env.name=football", "env.layout=academy_3_vs_1_with_keeper"]
    cfg = resolve_config(preset="quick", overrides=["run.algo=fcp-stage1", *football])
    sp = resolve_config(preset="quick", overrides=["run.algo=sp", *football])
    assert sp.env.num_envs == 16
    assert cfg.env.num_envs == stage1_size(cfg) * 16
    classic = resolve_config(preset="quick", overrides=["run.algo=fcp-stage1"])
    assert classic.env.num_envs == stage1_size(classic) * 512  # Overcooked unchanged


def test_env_options_reach_the_env_factory_and_unknown_ones_are_named():
    from zsceval.rl.envs import make_env

    base = ["env.name=yokai", "env.num_envs=2"]
    cfg = resolve_config(preset="quick", overrides=[*base, "env.options.version=4x4",
                                                     "env.options.perfect_memory=true"])  # fmt: skip
    assert cfg.env.options == {"version": "4x4", "perfect_memory": True}
    env = make_env(cfg.env)
    assert env.num_actions == 2325 and env.perfect_memory  # 4x4 (docs/yokai.md), with memory
    assert make_env(resolve_config(preset="quick", overrides=base).env).num_actions == 1068
    again = config_from_dict(config_to_dict(cfg))  # saved and read back as config.yaml is
    assert again.env.options == cfg.env.options
    with pytest.raises(ConfigError, match=r"no option 'colour'.*its options: horizon, num_agents"):
        make_env(resolve_config(preset="quick", overrides=[*base, "env.options.colour=1"]).env)
    with pytest.raises(ConfigError, match="set it as env.horizon"):
        make_env(resolve_config(preset="quick", overrides=[*base, "env.options.horizon=9"]).env)
