"""benchmarks/learning/tbs_selection.py: the diagnostics of TBS's selection (hand-computed statistics,
and the script on a small chain folder of untrained agents, partial view included)."""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from .scripts import load_script


@pytest.fixture(scope="module")
def diag():
    module = load_script("tbs_selection.py", "tbs_selection_diagnostics")
    try:
        yield module
    finally:
        sys.modules.pop(module.__name__, None)


def test_confusion_of_forced_br_and_argmin(diag):
    # k = 2; argmin [T = 3, 2 seats, 1 pair] per forced BR; step 0 is not counted in the shares
    forced0 = np.array([[[1], [0]], [[0], [0]], [[0], [1]]])  # t >= 1: 0, 0, 0, 1; last step: 0, 1
    forced1 = np.array([[[0], [0]], [[1], [1]], [[1], [1]]])  # t >= 1: all 1; last step: 1, 1
    shares, counts = diag.confusion([forced0, forced1], 2)
    np.testing.assert_allclose(shares, [[0.75, 0.25], [0.0, 1.0]])
    assert counts.tolist() == [[1, 1], [0, 2]] and counts.dtype == np.int64
    with pytest.raises(ValueError, match="all k = 3 forced BRs"):
        diag.confusion([forced0, forced1], 3)
    with pytest.raises(ValueError, match="outside 0..1"):
        diag.confusion([forced0, forced1 + 1], 2)


def test_identification_accuracy_counts_steps_after_the_first(diag):
    labels = np.array([0, 1, 1])
    # [T = 3, 2, 3]; step 0 (all wrong) is ignored
    selected = np.array([
        [[1, 0, 0], [1, 0, 0]],
        [[0, 1, 0], [0, 1, 1]],
        [[1, 1, 1], [0, 0, 1]],
    ])  # fmt: skip
    overall, per = diag.identification(selected, labels, 2)
    # cluster 0 (pair 0): t=1: 1, 1; t=2: 0, 1 -> 3/4; cluster 1 (pairs 1, 2): t=1: 1, 0, 1, 1;
    # t=2: 1, 1, 0, 1 -> 6/8
    np.testing.assert_allclose(per, [0.75, 0.75])
    assert overall == pytest.approx(9 / 12)
    _, per3 = diag.identification(selected, labels, 3)
    assert math.isnan(per3[2])  # an empty cluster


def test_correlations_and_entropy(diag):
    r, rho = diag.correlations([1.0, 2.0, 3.0], [2.0, 4.0, 7.0])
    assert r == pytest.approx(np.corrcoef([1, 2, 3], [2, 4, 7])[0, 1]) and rho == pytest.approx(1.0)
    assert diag.correlations([1.0, 2.0, 3.0], [0.5, 0.2, 0.1]) == pytest.approx((-0.9607689, -1.0))
    assert all(math.isnan(v) for v in diag.correlations([1.0], [0.3]))  # k = 1
    assert all(math.isnan(v) for v in diag.correlations([1.0, 2.0], [0.5, 0.5]))  # constant
    h = diag.bernoulli_entropy(torch.tensor([0.5, 0.0, 1.0, 0.1]))
    np.testing.assert_allclose(
        h[[0, 3]], [math.log(2), -(0.1 * math.log(0.1) + 0.9 * math.log(0.9))], rtol=1e-5
    )
    assert (h[1:3] < 1e-4).all()


def _constant(model, probs) -> None:
    """Make a ToM model predict ``probs`` (one per concept) whatever it observes."""
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.copy_(torch.logit(torch.tensor(probs)))


def _fake_chain(root: Path, radius: int, constant_toms: list[list[float]] | None = None) -> Path:
    """A finished TBS chain folder of untrained agents: a training pool of 3 pairs in clusters
    [[0], [1, 2]], a held-out pool of 2 pairs, 2 cluster BRs and the single BR, the TBS agent.
    ``constant_toms``: the concept probabilities of cluster model 0, 1 and the global model, which
    then ignore their input."""
    from zsceval.algorithms.tbs.agents import TBSAgent
    from zsceval.algorithms.tbs.pool import agent_names
    from zsceval.algorithms.tbs.tom import ToMModel
    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.rl.checkpoint import save_checkpoint
    from zsceval.rl.config import ModelConfig
    from zsceval.rl.policy import network_spec
    from zsceval.rl.qpolicy import QPolicy

    layout = "cramped_room"
    env = OvercookedEnv(layout, num_envs=1, view_radius=radius)
    spec = network_spec(ModelConfig(hidden_size=16, recurrent=False), env.obs_shape, env.critic_obs_shape,
                        env.num_actions)  # fmt: skip
    meta = {"algo": "tbs-pool", "layout": layout, "env_spec": env.spec_dict()}
    torch.manual_seed(0)
    base = root / layout / (f"tbs_partial{radius}" if radius else "tbs")
    for folder, pairs in (("pool_n3_s0", 3), ("heldout_n2_s1000", 2)):
        agents = {name: QPolicy(spec) for i in range(pairs) for name in agent_names(i)}
        save_checkpoint(base / folder / "run" / "checkpoints", 0, agents, meta)
    (base / "cluster_n3_s0").mkdir(parents=True)
    clustering = {"labels": [0, 1, 1], "k": 2, "costs": {"2": 3.0}, "fixed_k": None, "k_rule": "paper"}
    (base / "cluster_n3_s0" / "clustering.json").write_text(json.dumps(clustering))
    brs = {"br_0": QPolicy(spec), "br_1": QPolicy(spec), "br_all": QPolicy(spec)}
    save_checkpoint(base / "brs_n3_s0" / "run" / "checkpoints", 0, brs, meta)
    tom_spec = {"obs_shape": list(env.obs_shape), "num_concepts": 5, "hidden_size": 8,
                "granularity": "coarse", "layout": layout}  # fmt: skip
    toms = [ToMModel(tom_spec) for _ in range(3)]
    for model, probs in zip(toms, constant_toms or []):
        _constant(model, probs)
    tbs = TBSAgent([brs["br_0"], brs["br_1"]], toms[:2], toms[2])
    ego_meta = {
        "algo": "tbs",
        "layout": layout,
        "ego": "tbs",
        "env_spec": env.spec_dict(),
        "clusters": [[0], [1, 2]],
    }
    save_checkpoint(root / "ego" / "run" / "checkpoints", 0, {"tbs": tbs}, ego_meta)
    (root / "ego" / "DONE.json").write_text("{}")
    (root / "chain.json").write_text(json.dumps({"algo": "tbs", "layout": layout, "seed": 0}))
    return root


@pytest.mark.parametrize("radius", [0, 2])
def test_script_runs_on_a_chain_folder_in_the_chains_view(diag, tmp_path, monkeypatch, capsys, radius):
    chain = _fake_chain(tmp_path / "chain", radius)
    radii = []
    real_env = diag.OvercookedEnv

    def env(*args, **kwargs):
        radii.append(kwargs["view_radius"])
        return real_env(*args, **kwargs)

    monkeypatch.setattr(diag, "OvercookedEnv", env)
    out = tmp_path / "diag.json"
    (result,) = diag.main([str(chain), "--horizon", "12", "--json", str(out)])
    assert radii == [radius] * 8  # 2 pools x (2 forced BRs, the single BR, TBS)
    assert json.loads(out.read_text()) == json.loads(json.dumps([result]))
    assert result["k"] == 2 and result["view_radius"] == radius and result["rule"] == "k rule paper"
    assert result["tracker_agreement"] == 1.0  # the tracked argmin_i D_i is TBS's own choice
    held = result["held-out"]
    np.testing.assert_allclose(np.sum(held["confusion_steps"], 1), [1.0, 1.0])
    assert np.sum(held["confusion_end"], 1).tolist() == [4, 4]  # 2 held-out pairs x 2 seats
    ident = result["training"]["identification"]
    assert 0 <= ident["tbs_acting"] <= 1 and len(ident["forced_per_br"]) == 2
    assert len(held["entropy"]["entropy_tbs"]) == 2 and sum(held["entropy"]["selected_tbs"]) == pytest.approx(
        1
    )
    # the global model's entropy: a sum over its 5 Bernoulli concepts, in (0, 5 ln 2]
    for key in ("entropy_global_tbs", "entropy_global_forced"):
        assert 0 < held["entropy"][key] <= 5 * np.log(2) + 1e-6
    text = capsys.readouterr().out
    assert "global |" in text and "BR j forced: share of steps" in text
    assert "identification accuracy on training pairs" in text


def test_entropies_are_each_models_own_in_nats(diag, tmp_path):
    # models that ignore their input: each row's entropy is known by hand, so a row read from the
    # wrong model, a mean over the wrong axis or a unit other than nats fails
    probs = [[0.5] * 5, [0.05] * 5, [0.1, 0.2, 0.3, 0.4, 0.6]]
    chain = _fake_chain(tmp_path / "chain", 0, constant_toms=probs)
    (result,) = diag.main([str(chain), "--horizon", "8"])

    def h(p):
        return -(p * math.log(p) + (1 - p) * math.log(1 - p))

    expected = [sum(h(p) for p in row) for row in probs]  # 5 ln 2 = 3.466, 0.994, 2.976
    ent = result["held-out"]["entropy"]
    for key in ("entropy_tbs", "entropy_forced"):
        np.testing.assert_allclose(ent[key], expected[:2], rtol=1e-5)
    for key in ("entropy_global_tbs", "entropy_global_forced"):
        assert ent[key] == pytest.approx(expected[2], rel=1e-5)
    # D_i = KL(cluster i || global) is smaller for the p = 0.5 model than for the p = 0.05 one on
    # every step, so TBS (after its random first step) always picks cluster 0
    assert ent["selected_tbs"] == pytest.approx([1.0, 0.0])


def test_script_names_a_folder_that_is_not_a_tbs_chain(diag, tmp_path):
    with pytest.raises(SystemExit, match="chain.json"):
        diag.main([str(tmp_path)])
    (tmp_path / "chain.json").write_text(json.dumps({"algo": "sp", "layout": "cramped_room"}))
    with pytest.raises(SystemExit, match="'sp' chain, not tbs"):
        diag.main([str(tmp_path)])
    chain = _fake_chain(tmp_path / "chain", 0)
    with pytest.raises(SystemExit, match="--layout counter_circuit does not match the layout of"):
        diag.main([str(chain), "--layout", "counter_circuit"])


def test_pool_pair_labels_separate_scoring_counter_loops_and_the_rest():
    from .scripts import load_script

    b = load_script("tbs_pool_behaviour.py")
    assert b.label(0.0, np.array([195.0, 0.0]), 400) == "counter loop"  # a counter event every ~2 steps
    assert b.label(0.0, np.array([100.0, 3.0]), 400) == "counter loop"  # every fourth step: the threshold
    assert b.label(0.0, np.array([99.0, 3.0]), 400) == "no score"
    assert b.label(20.0, np.array([195.0, 0.0]), 400) == "scores"  # a pair that delivers scores, loop or not
