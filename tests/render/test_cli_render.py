"""`zsceval render` and `zsceval eval --gif` write pictures; bad input is a clear click error."""

import json

import pytest
from click.testing import CliRunner
from PIL import Image

from zsceval.cli import main
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.render import COLORS, cell_center

TINY = ["--preset", "quick", "--steps", "800", "--no-progress", "--set", "env.num_envs=8",
        "--set", "ppo.rollout_length=100", "--set", "run.eval_episodes=2"]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("render") / "sp"
    res = CliRunner().invoke(
        main, ["train", "--algo", "sp", "--layout", "cramped_room", "--out", str(out), *TINY]
    )
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def state_file(tmp_path):
    env = OvercookedEnv("cramped_room", num_envs=1)
    env.reset()
    state = env.export_state(0)
    state["objects"] = [{"name": "onion", "position": (0, 2)}]
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["render", *map(str, args)])


def test_render_episode_gif_and_png(run, tmp_path):
    res = invoke("--agent", run, "--layout", "cramped_room", "--out", tmp_path / "ep.gif",
                 "--steps", "12", "--png-at", "5", "--tile", "16", "--fps", "4")  # fmt: skip
    assert res.exit_code == 0, res.output
    gif = Image.open(tmp_path / "ep.gif")
    assert gif.n_frames == 13
    png = Image.open(tmp_path / "ep_t5.png")
    assert png.size == gif.size


def test_render_state_png(state_file, tmp_path):
    res = invoke(
        "--state", state_file, "--layout", "cramped_room", "--out", tmp_path / "s.png", "--tile", "32"
    )
    assert res.exit_code == 0, res.output
    img = Image.open(tmp_path / "s.png").convert("RGB")
    x, y = cell_center(0, 2, 32)
    assert img.getpixel((int(x), int(y))) == COLORS["onion"]


def test_render_trajectory(tmp_path):
    env = OvercookedEnv("cramped_room", num_envs=1)
    env.reset()
    states = [env.export_state(0)]
    for _ in range(3):
        env.step(__import__("torch").tensor([[2, 4]]))
        states.append(env.export_state(0))
    traj = {"format": "zsceval-trajectory", "version": 1, "layout": "cramped_room", "horizon": 400,
            "agents": ["a", "b"], "states": states, "joint_actions": [[2, 4]] * 3, "rewards": [0, 0, 20],
            "score": 20}  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(traj))
    res = invoke("--trajectory", tmp_path / "t.json", "--out", tmp_path / "t.gif")
    assert res.exit_code == 0, res.output
    assert Image.open(tmp_path / "t.gif").n_frames == 4
    assert "final score 20" in res.output
    # a file of several episodes (as zsceval.interop.trajectory writes): --episode picks one
    (tmp_path / "two.json").write_text(json.dumps([dict(traj, states=states[:2], rewards=[0]), traj]))
    res = invoke("--trajectory", tmp_path / "two.json", "--episode", 0, "--out", tmp_path / "e0.gif")
    assert res.exit_code == 0 and Image.open(tmp_path / "e0.gif").n_frames == 2
    res = invoke("--trajectory", tmp_path / "two.json", "--episode", 2, "--out", tmp_path / "e2.gif")
    assert res.exit_code == 2 and "has episodes 0..1" in res.output
    traj["format"] = "something-else"
    (tmp_path / "bad.json").write_text(json.dumps(traj))
    res = invoke("--trajectory", tmp_path / "bad.json", "--out", tmp_path / "b.gif")
    assert res.exit_code == 2 and "not a zsceval-trajectory file" in res.output


def test_eval_gif(run, tmp_path):
    res = CliRunner().invoke(main, ["eval", "--agent", str(run), "--partner", str(run),
                                    "--layout", "cramped_room", "--episodes", "1",
                                    "--gif", str(tmp_path / "gifs")])  # fmt: skip
    assert res.exit_code == 0, res.output
    gifs = sorted((tmp_path / "gifs").glob("*.gif"))
    assert [g.name for g in gifs] == ["cramped_room_agent_seat0.gif", "cramped_room_agent_seat1.gif"]
    assert Image.open(gifs[0]).n_frames == 401


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layout", "no_such_layout"], "unknown layout 'no_such_layout'"),
        (["--layout", "cramped_room", "--missing"], "does not exist"),
        (["--layout", "counter_circuit"], "does not fit layout 'counter_circuit'"),
        ([], "--state needs --layout"),
    ],
)
def test_bad_input_is_a_click_error(state_file, tmp_path, args, message):
    if "--missing" in args:
        args = [a for a in args if a != "--missing"]
        state_file = tmp_path / "nope.json"
    res = invoke("--state", state_file, "--out", tmp_path / "s.png", *args)
    assert res.exit_code != 0 and res.exception is None or isinstance(res.exception, SystemExit)
    assert message in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "s.png").exists()


def test_agent_errors(tmp_path, run):
    res = invoke("--agent", tmp_path / "nope", "--layout", "cramped_room", "--out", tmp_path / "e.gif")
    assert res.exit_code == 1 and "no checkpoint" in res.output
    res = invoke("--agent", run, "--layout", "counter_circuit", "--out", tmp_path / "e.gif")
    assert res.exit_code == 1 and "different layout" in res.output
    res = invoke("--agent", run, "--state", tmp_path / "x.json", "--out", tmp_path / "e.gif")
    assert res.exit_code == 2 and "exactly one of" in res.output
