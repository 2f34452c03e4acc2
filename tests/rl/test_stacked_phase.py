"""A stacked phase (:mod:`zsceval.rl.stacked_phase`): members trained in one process with one env
batch over all their games train, bit for bit on CPU, as each trained alone; each writes its own run
folder; a stacked run killed between two members' checkpoints resumes every member exactly."""

import csv
import json

import pytest
import torch
from safetensors.torch import load_file

from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.stacked_phase import StackedPhase, check_stackable
from zsceval.rl.trainer import Trainer

# 4 games x 12 steps an iteration, 3 iterations, a checkpoint after each; horizon 16: episodes end
# inside the second and third rollouts
BASE = ["run.algo=sp", "env.layout=cramped_room", "env.num_envs=4", "env.horizon=16", "ppo.rollout_length=12",
        "run.num_threads=1", "run.eval_episodes=2", "run.total_steps=144", "run.checkpoint_every=48",
        "run.compile=off"]  # fmt: skip
TIMING = ("time", "wall", "per_s", "_s", "cpu")
# a candidate of the partner pipeline: pi_w with its own reward weights and its BR, seats drawn per
# game at every episode start (the member's host clock re-seats its games inside the stacked rollout)
CANDIDATE = ["run.algo=biased", "algo.weights=[0,0,0,0,-20,0,-20,0,3,5,3,0,0,0,0,0,0,1]"]


def _cfg(seed, *more):
    return resolve_config(preset="quick", overrides=[*BASE, f"run.seed={seed}", *more])


def _metrics(run):
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in r.items() if not any(w in k for w in TIMING)} for r in rows]


def _weights(run):
    out = {}
    for path in sorted((run / "checkpoints").glob("*/*.safetensors")):
        for k, v in load_file(str(path)).items():
            out[f"{path.parent.name}/{path.name}/{k}"] = v
    return out


def _eval(run):
    d = json.loads((run / "eval.json").read_text())
    return {k: v for k, v in d.items() if not any(w in k for w in TIMING)}


def _same_run(a, b):
    assert _metrics(a) == _metrics(b)
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys() and len(wa) > 0
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    assert _eval(a) == _eval(b)


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """Member seed 2 trained alone."""
    root = tmp_path_factory.mktemp("alone")
    Trainer(_cfg(2), root / "s2", progress=False).train()
    return root / "s2"


@pytest.fixture(scope="module")
def candidate_alone(tmp_path_factory):
    """The candidate of seed 3 trained alone."""
    root = tmp_path_factory.mktemp("candidate")
    Trainer(_cfg(3, *CANDIDATE), root / "c3", progress=False).train()
    return root / "c3"


def test_a_stacked_member_trains_as_the_same_run_alone_bit_for_bit(tmp_path, alone, candidate_alone):
    phase = StackedPhase([_cfg(1), _cfg(2), _cfg(3, *CANDIDATE)], [tmp_path / f"s{i}" for i in (1, 2, 3)])
    results = phase.train()
    assert [r["seed"] for r in results] == [1, 2, 3]
    for i in (1, 2, 3):  # every member writes its own folder
        assert (tmp_path / f"s{i}" / "config.yaml").is_file() and (tmp_path / f"s{i}" / "eval.json").is_file()
        assert len(_metrics(tmp_path / f"s{i}")) == 3
    _same_run(tmp_path / "s2", alone)
    _same_run(tmp_path / "s3", candidate_alone)
    assert "biased/policy_loss" in _metrics(tmp_path / "s3")[0]  # the candidate's two learners trained
    # the members differ (their own seeds), so the equality above is not a shared result
    assert _metrics(tmp_path / "s1") != _metrics(tmp_path / "s2")


class _Killed(Exception):
    pass


def _kill(phase, member, iteration, monkeypatch):
    """Train ``phase`` until ``member`` would record ``iteration``: the process dies there."""
    original = Trainer.record_iteration

    def record(self, row, writer=None):
        if self is member and self.iteration == iteration:
            raise _Killed
        original(self, row, writer)

    monkeypatch.setattr(Trainer, "record_iteration", record)
    with pytest.raises(_Killed):
        phase.train()
    monkeypatch.setattr(Trainer, "record_iteration", original)


def test_a_stacked_run_killed_between_two_members_checkpoints_resumes_every_member_exactly(
    tmp_path, alone, monkeypatch
):
    dirs = [tmp_path / "s1", tmp_path / "s2"]
    phase = StackedPhase([_cfg(1), _cfg(2)], dirs)
    _kill(phase, phase.members[1], 2, monkeypatch)  # member 1 saved iteration 2, member 2 did not
    resumed = StackedPhase([_cfg(1), _cfg(2)], dirs, resume=True)
    assert [m.env_steps for m in resumed.members] == [96, 48]  # the members stand at different checkpoints
    resumed.train()
    _same_run(tmp_path / "s2", alone)
    ref = tmp_path / "ref"
    Trainer(_cfg(1), ref, progress=False).train()
    _same_run(tmp_path / "s1", ref)


def test_members_that_differ_in_shape_or_budget_cannot_be_stacked():
    check_stackable([_cfg(1), _cfg(2, "ppo.lr=0.001")])  # a different learning rate stacks
    with pytest.raises(ConfigError, match="must share env, model, ppo.rollout_length"):
        check_stackable([_cfg(1), _cfg(2, "env.num_envs=8")])
    with pytest.raises(ConfigError, match="must share"):
        check_stackable([_cfg(1), _cfg(2, "run.total_steps=96")])
    with pytest.raises(ConfigError, match="deterministic resets"):
        check_stackable([_cfg(1, "env.randomize_seats=true")])


# -- vmapped acting (zsceval.rl.stacked_acting) ---------------------------------------------------------
F32 = "model.bf16=false"  # float32: the vmapped and the one-by-one forwards differ by rounding only


def _count_vmapped(monkeypatch):
    """Count the vmapped actor and critic forwards and the stacked updates, and keep the columns
    of the stacked updates' compressed observations (``calls["columns"]``)."""
    from zsceval.rl.population import StackedPolicies
    from zsceval.rl.stacked_update import VmappedUpdate

    calls = {"act": 0, "value": 0, "_steps": 0}
    compress = VmappedUpdate._compress
    columns = []

    def kept(self, *a):
        columns.append(compress(self, *a))
        return columns[-1]

    monkeypatch.setattr(VmappedUpdate, "_compress", kept)
    for name in calls:
        cls = VmappedUpdate if name == "_steps" else StackedPolicies
        original = getattr(cls, name)

        def wrapped(self, *a, _original=original, _name=name, **kw):
            calls[_name] += 1
            return _original(self, *a, **kw)

        monkeypatch.setattr(cls, name, wrapped)
    calls["columns"] = columns
    return calls


@pytest.mark.parametrize(
    "model", [[], ["model.kind=cnn", "model.recurrent=true", "model.chunk_length=4"]], ids=["mlp", "cnn-gru"]
)
def test_vmapped_members_act_and_update_together_and_train_as_the_exact_phase(tmp_path, monkeypatch, model):
    cfgs = [_cfg(2, F32, *model), _cfg(3, *CANDIDATE, F32, *model)]
    StackedPhase(cfgs, [tmp_path / "e2", tmp_path / "e3"]).train()
    calls = _count_vmapped(monkeypatch)
    phase = StackedPhase(cfgs, [tmp_path / "v2", tmp_path / "v3"], vmap=True)
    assert set(phase.vmapped.slots) == {
        (0, 0),
        (1, 0),
        (1, 1),
    }  # SP: one actor; the candidate: pi_w and its BR
    assert set(phase.vmapped_update.slots) == {(0, 0), (1, 0), (1, 1)}
    phase.train()
    # one actor and one critic forward per step, 3 rollouts of 12 steps; one stacked update per iteration
    columns = calls.pop("columns")
    assert calls == {"act": 3 * 12, "value": 3 * 12, "_steps": 3}
    # the MLP reads the entries that vary in either member's rollout (ppo.obs_columns), as alone
    assert all((c is not None) == (not model) for c in columns) and len(columns) == 3
    for e, v in (("e2", "v2"), ("e3", "v3")):
        me, mv = _metrics(tmp_path / e), _metrics(tmp_path / v)
        assert len(me) == len(mv) == 3
        for a, b in zip(me, mv):
            for k in a:
                if k in ("episodes", "sparse_return", "shaped_return") or k.startswith("events/"):
                    assert a[k] == b[k], k  # the same actions, so the same games
                elif a[k] not in ("", None):
                    assert float(b[k]) == pytest.approx(float(a[k]), rel=1e-3, abs=1e-6), k
        we, wv = _weights(tmp_path / e), _weights(tmp_path / v)
        assert we.keys() == wv.keys() and len(we) > 0
        for k in we:
            torch.testing.assert_close(wv[k], we[k], rtol=1e-5, atol=1e-5)


def test_a_member_that_cannot_be_vmapped_trains_alone_bit_for_bit_beside_vmapped_ones(
    tmp_path, alone, monkeypatch
):
    from zsceval.rl.stacked_acting import VmappedActing
    from zsceval.rl.stacked_update import VmappedUpdate

    acting, update = VmappedActing.eligible, VmappedUpdate._key
    monkeypatch.setattr(
        VmappedActing,
        "eligible",
        staticmethod(lambda tr, spec=None: tr.cfg.run.seed != 2 and acting(tr, spec)),
    )
    monkeypatch.setattr(
        VmappedUpdate, "_key", staticmethod(lambda tr: None if tr.cfg.run.seed == 2 else update(tr))
    )
    calls = _count_vmapped(monkeypatch)
    phase = StackedPhase([_cfg(1), _cfg(3), _cfg(2)], [tmp_path / f"s{i}" for i in (1, 3, 2)], vmap=True)
    assert set(phase.vmapped.slots) == set(phase.vmapped_update.slots) == {(0, 0), (1, 0)}
    assert any("members [2] act one by one" in n for n in phase.notes)
    assert any("members [2] update one by one" in n for n in phase.notes)
    phase.train()
    assert calls["_steps"] == 3
    _same_run(tmp_path / "s2", alone)


def test_a_killed_vmapped_phase_resumes_with_each_members_own_optimizer_state(tmp_path, monkeypatch):
    """The stacked Adam moments are written back into each member's optimizer (checkpoints): a
    vmapped phase killed after two iterations and resumed ends bit for bit where the same phase
    run through ends."""
    cfgs = [_cfg(2, F32), _cfg(3, *CANDIDATE, F32)]
    StackedPhase(cfgs, [tmp_path / "a2", tmp_path / "a3"], vmap=True).train()
    dirs = [tmp_path / "b2", tmp_path / "b3"]
    phase = StackedPhase(cfgs, dirs, vmap=True)
    _kill(phase, phase.members[0], 3, monkeypatch)  # both members saved iteration 2
    resumed = StackedPhase(cfgs, dirs, resume=True, vmap=True)
    assert [m.env_steps for m in resumed.members] == [96, 96]
    resumed.train()
    _same_run(tmp_path / "b2", tmp_path / "a2")
    _same_run(tmp_path / "b3", tmp_path / "a3")


def test_a_population_stage_1_beside_a_candidate_acts_vmapped_and_updates_with_its_stacked_learners(tmp_path):
    """FCP's stage 1 (its members stacked already, population stage 1) joins a vmapped phase's
    acting; its update stays its own (StackedLearners), the candidate's is vmapped."""
    cfgs = [_cfg(3, *CANDIDATE, F32), _cfg(1, "run.algo=fcp-stage1", "population.stage1_size=2", F32)]
    StackedPhase(cfgs, [tmp_path / "e3", tmp_path / "e1"]).train()
    phase = StackedPhase(cfgs, [tmp_path / "v3", tmp_path / "v1"], vmap=True)
    assert set(phase.vmapped.slots) == {(0, 0), (0, 1), (1, 0), (1, 1)}  # both stage-1 members act vmapped
    assert set(phase.vmapped_update.slots) == {(0, 0), (0, 1)}
    assert any("members [1] update one by one" in n for n in phase.notes)
    phase.train()
    for e, v in (("e3", "v3"), ("e1", "v1")):
        we, wv = _weights(tmp_path / e), _weights(tmp_path / v)
        assert we.keys() == wv.keys() and len(we) > 0
        for k in we:
            torch.testing.assert_close(wv[k], we[k], rtol=1e-5, atol=1e-5)
