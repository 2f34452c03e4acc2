"""ZSC-Eval's harder ``academy_3_vs_1_with_keeper`` scenario, loadable without touching site-packages.

The reference copies its scenario file over gfootball's built-in one (``install_grf.sh``). Here
the scenario is a plain function, and :func:`register_scenario` puts a module object holding it
into ``sys.modules`` under ``gfootball.scenarios.<level>``: gfootball's
``scenario_builder.Scenario`` loads a level with ``importlib.import_module(
"gfootball.scenarios.<level>")``, which returns a module already present in ``sys.modules``.
The registration is per process; every process that creates the environment must call it
(:class:`~zsceval.envs.football.game.FootballGame` does).

Source: docs/reference-protocol.md "Football" ("Scenario"); ZSC-Eval
``zsceval/envs/grf/scenarios/academy_3_vs_1_with_keeper_hard.py``.
"""

from __future__ import annotations

import functools
import sys
import types

SCENARIO_NAME = "academy_3_vs_1_with_keeper"
DEFAULT_DIFFICULTY = 0.95
DEFAULT_GAME_DURATION = 400

# (x, y) in gfootball pitch units; the right team is given in its own mirrored frame.
BALL_POSITION = (0.62, 0.0)
LEFT_PLAYERS = ((-1.0, 0.0, "GK"), (0.6, 0.0, "CM"), (0.7, 0.2, "CM"), (0.7, -0.2, "CM"))
RIGHT_PLAYERS = ((-1.0, 0.0, "GK"), (-0.75, 0.0, "CB"))


def _check(difficulty: float, game_duration: int) -> None:
    if not 0.0 <= float(difficulty) <= 1.0:
        raise ValueError(f"difficulty must be in [0, 1] (reference 0.95, 'superhard' 1.0), got {difficulty}")
    if int(game_duration) != game_duration or int(game_duration) < 1:
        raise ValueError(
            f"game_duration must be a positive integer number of steps (reference 400), got {game_duration}"
        )


def build_scenario(
    builder, difficulty: float = DEFAULT_DIFFICULTY, game_duration: int = DEFAULT_GAME_DURATION
) -> None:
    """Fill a gfootball ``scenario_builder.Scenario`` with the hard 3-vs-1-with-keeper game.

    Args:
        builder: gfootball's scenario builder (``config()``, ``SetBallPosition``, ``SetTeam``,
            ``AddPlayer``).
        difficulty: right-team (built-in AI) difficulty in [0, 1]; the reference uses 0.95.
        game_duration: episode length cap in env steps (the reference: 400).

    Non-deterministic, no offsides; the episode ends on a score, on out-of-play and on a change
    of possession. Four left players (GK at (-1, 0), CMs at (0.6, 0), (0.7, 0.2), (0.7, -0.2)),
    two right players (GK at (-1, 0), CB at (-0.75, 0) in their mirrored frame), ball at
    (0.62, 0).
    """
    import gfootball_engine as libgame

    _check(difficulty, game_duration)
    cfg = builder.config()
    cfg.game_duration = int(game_duration)
    cfg.deterministic = False
    cfg.offsides = False
    cfg.end_episode_on_score = True
    cfg.end_episode_on_out_of_play = True
    cfg.end_episode_on_possession_change = True
    cfg.right_team_difficulty = float(difficulty)
    builder.SetBallPosition(*BALL_POSITION)

    role = libgame.e_PlayerRole
    for team, players in ((libgame.e_Team.e_Left, LEFT_PLAYERS), (libgame.e_Team.e_Right, RIGHT_PLAYERS)):
        builder.SetTeam(team)
        for x, y, r in players:
            builder.AddPlayer(x, y, getattr(role, f"e_PlayerRole_{r}"))


def scenario_level(difficulty: float = DEFAULT_DIFFICULTY, game_duration: int = DEFAULT_GAME_DURATION) -> str:
    """The gfootball level name under which :func:`register_scenario` registers these settings."""
    _check(difficulty, game_duration)
    d = f"{float(difficulty):.4f}".replace(".", "p")
    return f"zsceval_{SCENARIO_NAME}_hard_d{d}_t{int(game_duration)}"


def register_scenario(
    difficulty: float = DEFAULT_DIFFICULTY, game_duration: int = DEFAULT_GAME_DURATION
) -> str:
    """Make the scenario loadable by ``gfootball.env.create_environment(env_name=<level>)``.

    Returns:
        the level name (see :func:`scenario_level`); idempotent.

    Raises:
        ValueError: difficulty outside [0, 1] or a non-positive game_duration.
        ImportError: gfootball is not installed.
    """
    level = scenario_level(difficulty, game_duration)
    full = f"gfootball.scenarios.{level}"
    if full not in sys.modules:
        import gfootball.scenarios as package

        module = types.ModuleType(
            full, f"zsceval's hard {SCENARIO_NAME} (difficulty {difficulty}, {game_duration} steps)"
        )
        module.build_scenario = functools.partial(
            build_scenario, difficulty=float(difficulty), game_duration=int(game_duration)
        )
        sys.modules[full] = module
        setattr(package, level, module)
    return level
