"""Best response (BR) to a fixed partner, or to a fixed set of partners (n > 2 players).

Method. One policy learns, with PPO, to play with frozen partner agents loaded from checkpoints;
the seating is drawn at random per game at every episode start, so the BR learns every seat. Its
reward is the ordinary one: team sparse reward plus its own base shaped reward scaled by the
annealed shaping factor (docs/overcooked-rules.md §3.3; the env's own per-agent reward in Football). ZSC-Eval
trains such BRs for the ``mid`` checkpoints of selected partners (App. C: MLP policy, 1e7 steps);
a BR's return with its partner is the denominator of BR-Prox.

Seatings. Two players: the BR in seat 0 or 1, the partner in the other. n > 2 players (Football):
with one partner, the partner in one seat and copies of the BR in the others (as a candidate's
co-trained BR plays, docs/reference-protocol.md "Football"); with m partners (``algo.partners``, m <= n - 1),
every placement of the m partners in distinct seats, the BR in the remaining ones (ZSC-Eval trains
one such BR per pair of evaluation partners, ``scripts/prep/gen_train_br_ymls.py``).

``algo.partner`` is a run directory, checkpoint directory or ``meta.json``; ``PATH#name`` (or
``algo.partner_policy``) picks a policy of a multi-policy checkpoint (e.g. ``#biased``).
``algo.partners`` lists several such paths (``PATH#name`` each).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ConfigError
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, ego_partner_arms


def _result(job_dir) -> dict:
    """The result a finished job stored in its ``DONE.json``."""
    return json.loads((Path(job_dir) / "DONE.json").read_text())["result"]


@dataclass(frozen=True)
class BROptions:
    """Options of the ``br`` algorithm (``algo.*`` config keys)."""

    partner: str = ""
    """Checkpoint of the fixed partner (run dir, checkpoint dir or meta.json; ``PATH#policy``)."""
    partner_policy: str = ""
    """Policy name inside the partner checkpoint (default: its ego policy)."""
    partners: tuple[str, ...] = ()
    """Several fixed partners (``PATH#policy`` each), for n > 2 players; replaces ``partner``."""


@register("br", "Best response to fixed partner checkpoint(s) (random seats, annealed shaping).")
class BestResponse(Algorithm):
    """One learner (the BR) with one or more frozen partners."""

    Options = BROptions

    @classmethod
    def job_options(cls, params: dict, needs: dict) -> dict:
        """The partner of a BR of the partner pipeline, from its jobs' results: for a candidate's
        ``mid`` checkpoint ``partner_train`` / ``partner_eval`` (ids of the candidate's train and
        ``candidate.evaluate`` jobs); for a set of partners (n > 2 players) ``partner_refs``, a list of
        ``[train-job id, evaluate-job id, "final" | "mid"]``. Each partner is the ``biased`` policy."""
        options = {}
        if params.get("partner_train"):
            mid = _result(needs[params["partner_eval"]])["mid_checkpoint"]
            options["partner"] = str(Path(needs[params["partner_train"]]) / mid)
            options["partner_policy"] = "biased"
        if params.get("partner_refs"):  # a BR of a set of partners (n > 2 players)
            options["partners"] = [
                f"{Path(needs[train_id]) / _result(needs[eval_id])[level + '_checkpoint']}#biased"
                for train_id, eval_id, level in params["partner_refs"]
            ]
        return options

    @classmethod
    def trains_with_evaluation_partners(cls, params: dict) -> bool:
        """The partner pipeline's own BRs (``partner_train`` or ``partner_refs``) train with the
        partner they define."""
        return bool(params.get("partner_train") or params.get("partner_refs"))

    def __init__(self, config, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        if bool(self.options.partner) == bool(self.options.partners):
            raise ConfigError(
                "algorithm 'br' needs one of algo.partner=CHECKPOINT or algo.partners=[CHECKPOINT, ...] "
                "(not both)"
            )
        if len(self.options.partners) > num_agents - 1:
            raise ConfigError(
                f"algo.partners names {len(self.options.partners)} partners; a {num_agents}-player game "
                f"seats at most {num_agents - 1} besides the BR"
            )
        if self.options.partner:
            self.sources = [(self.options.partner, self.options.partner_policy or None)]
            self.partner_names = ["partner"]
        else:
            self.sources = [(p, None) for p in self.options.partners]
            self.partner_names = [f"partner{i}" for i in range(len(self.sources))]

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The best response (the ego)."""
        return {"br": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict:
        """The frozen partner agents (any agent class), checked against this run's env spec."""
        expected = make_policy().spec
        partners = {}
        for name, (path, policy) in zip(self.partner_names, self.sources):
            partner, meta = load_agent(path, policy, self.device)
            saved = meta.get("env_spec", {})
            for key in ("obs_shape", "num_actions"):
                if key in saved and saved[key] != expected[key]:
                    raise ConfigError(
                        f"partner {path} has {key} {saved[key]}, this layout needs {expected[key]}"
                    )
            partners[name] = partner
        return partners

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Evaluate the BR with its fixed partners (the first arm's seating)."""
        return [name for name, _ in self.arms()[0].seats]

    def arms(self) -> list[Arm]:
        """Two players: the BR in seat 0 or 1. More: every placement of the partners in distinct
        seats, the BR in the others (ego seat = the BR's first seat)."""
        n = self.num_agents
        if n == 2:
            return ego_partner_arms("br", self.partner_names[0], n)
        arms = []
        for seats in itertools.permutations(range(n), len(self.partner_names)):
            row = ["br"] * n
            for name, seat in zip(self.partner_names, seats):
                row[seat] = name
            arms.append(Arm.of(*row, partner="+".join(self.partner_names), ego_seat=row.index("br")))
        return arms
