"""The one registry type (``zsceval.plugins.Registry``) and the one unknown-name error behind all
registries of zsceval."""

from __future__ import annotations

import pytest

from zsceval.plugins import DuplicatePluginError, Registry, UnknownPluginError


class Widget:
    """A widget for the tests."""


class Gadget:
    """Another class."""


@pytest.fixture
def widgets():
    """A registry over an installed group (``zsceval.cores``: ``ppo``, ``pqn``) of its own."""
    return Registry("zsceval.cores", "widget")


def test_register_get_names_and_descriptions(widgets):
    assert widgets.register("w", Widget) is Widget
    assert widgets.get("w") is Widget and widgets.description("w") == "A widget for the tests."
    assert widgets.names() == ["ppo", "pqn", "w"]  # declared entry points and registrations, sorted

    @widgets.register("g", description="one line")
    class G:
        pass

    assert widgets.get("g") is G and ("g", "one line") in widgets.describe()
    assert widgets.name_of(G) == "g" and widgets.name_of(Gadget) is None
    assert widgets.get("ppo").__name__ == "PPOCore"  # the entry point, loaded at its lookup


def test_a_taken_name_is_refused_and_the_same_object_again_changes_nothing(widgets):
    widgets.register("w", Widget)
    widgets.register("w", Widget)
    with pytest.raises(DuplicatePluginError, match=r"widget 'w' is already registered by .*Widget; .*Gadget"):
        widgets.register("w", Gadget)
    assert widgets.get("w") is Widget
    with pytest.raises(ValueError, match="invalid widget name"):
        widgets.register("two words", Gadget)
    with pytest.raises(TypeError, match="is not a class"):
        widgets.register("f", len)


def test_an_unknown_name_lists_the_valid_ones_and_suggests_the_closest(widgets):
    widgets.register("widget-a", Widget)
    with pytest.raises(UnknownPluginError) as info:
        widgets.get("widget-b")
    assert str(info.value) == (
        "unknown widget 'widget-b'. Registered widgets: ppo, pqn, widget-a. Did you mean 'widget-a'?"
    )
    assert info.value.name == "widget-b" and info.value.valid == ["ppo", "pqn", "widget-a"]
    with pytest.raises(UnknownPluginError, match=r"Registered widgets: ppo, pqn, widget-a\.$"):
        widgets.get("zzz")


def test_a_registry_raises_its_own_subclass_and_keeps_the_older_type():
    class UnknownWidgetError(UnknownPluginError, KeyError):
        pass

    reg = Registry("zsceval.cores", "widget", unknown_error=UnknownWidgetError, advice="Install one.")
    with pytest.raises(KeyError) as info:
        reg.get("nope")
    assert isinstance(info.value, UnknownWidgetError) and str(info.value).endswith(". Install one.")
    assert not str(info.value).startswith("'")  # not KeyError's quoted repr


def test_scratch_forgets_what_was_registered_in_it(widgets):
    widgets.register("w", Widget)
    with widgets.scratch():
        widgets.register("g", Gadget)
        widgets.unregister("w")
        assert "g" in widgets.objects and "w" not in widgets.objects
    assert widgets.objects == {"w": Widget}


def test_every_registry_is_one_type_with_one_unknown_name_error():
    from zsceval import registry
    from zsceval.bench import report_contents, suite
    from zsceval.envs import registry as envs
    from zsceval.evaluation import shipped_sets
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.execution import jobs
    from zsceval.rl import agent, cores

    registries = [registry.ALGORITHMS, agent.AGENT_CLASSES, cores.CORES, envs.ENVS, jobs.KINDS,
                  suite.SUITE_COLLECTIONS, shipped_sets.COLLECTIONS, report_contents.SECTIONS]  # fmt: skip
    assert all(isinstance(r, Registry) for r in registries)
    assert len({r.group for r in registries}) == len(registries)
    lookups = [
        (lambda: registry.get("spp"), KeyError),
        (lambda: agent.agent_class("ppp"), KeyError),
        (lambda: cores.get_core("pqm"), ValueError),
        (lambda: envs.make("overcoked", num_envs=1), ValueError),
        (lambda: jobs.job_function("tbs.eg"), KeyError),
        (lambda: suite.load_suite("overcooked-quik"), suite.SuiteError),
        (lambda: shipped_sets.resolve_set("zsceval:cramped_rom"), ManifestError),
    ]
    for lookup, older in lookups:
        with pytest.raises(UnknownPluginError, match="Did you mean") as info:
            lookup()
        assert isinstance(info.value, older), type(info.value)
        assert info.value.valid  # the message lists them
