"""``zsceval play`` without a browser: the Flask app driven by its test client, the command's errors."""

import json
import socket
import time
import urllib.request

import pytest
import torch
from click.testing import CliRunner

pytest.importorskip("flask", reason="zsceval play needs Flask: pip install flask")

from zsceval.cli import main
from zsceval.interop.trajectory import load_trajectories, replay_in_engine
from zsceval.play import KEY_ACTIONS, PlayServer, create_app
from zsceval.play.server import EXTENSION

from .helpers import SOUP_KEYS

STAY, INTERACT = 4, 5


def step(client, gid, key, status=200):
    res = client.post(f"/api/games/{gid}/step", json={"key": key})
    assert res.status_code == status, res.get_json()
    return res.get_json()


def test_key_map_matches_engine_directions():
    """Arrow keys are the screen directions (y grows downwards: up is north = (0, -1))."""
    from zsceval.envs.overcooked.constants import DIRECTIONS

    assert DIRECTIONS[KEY_ACTIONS["ArrowUp"]] == (0, -1)
    assert DIRECTIONS[KEY_ACTIONS["ArrowDown"]] == (0, 1)
    assert DIRECTIONS[KEY_ACTIONS["ArrowRight"]] == (1, 0)
    assert DIRECTIONS[KEY_ACTIONS["ArrowLeft"]] == (-1, 0)
    assert KEY_ACTIONS[" "] == INTERACT and KEY_ACTIONS[None] == STAY


def test_scripted_game_scores_and_is_saved(stay_run, tmp_path):
    """The person cooks and serves a soup alone: keys, agent actions and score land in the file."""
    app = create_app(str(stay_run), "cramped_room", seat=0, fps=5, out_dir=tmp_path, horizon=len(SOUP_KEYS))
    client = app.test_client()
    page = client.get("/")
    assert page.status_code == 200 and b'id="score"' in page.data and b"cramped_room" in page.data
    first = client.post("/api/games").get_json()
    assert first["t"] == 0 and first["score"] == 0 and not first["done"]
    assert first["horizon"] == 41 and first["time_left"] == pytest.approx(41 / 5, abs=0.05)
    assert first["image"].startswith("data:image/png;base64,")
    frames = [step(client, first["game"], key) for key in SOUP_KEYS]
    assert [f["t"] for f in frames] == list(range(1, 42))
    assert [f["done"] for f in frames] == [False] * 40 + [True]
    assert [f["score"] for f in frames] == [0.0] * 40 + [20.0]  # served at the last step
    last = frames[-1]
    assert last["saved"] == str(tmp_path / f"{first['game']}.json") and last["end"] == "horizon"
    (traj,) = load_trajectories(last["saved"])
    assert traj.agents == ["person", "agent"] and traj.layout == "cramped_room" and traj.horizon == 41
    assert [a[0] for a in traj.joint_actions] == [KEY_ACTIONS[k] for k in SOUP_KEYS]
    assert [a[1] for a in traj.joint_actions] == [STAY] * 41
    assert [f["joint_action"] for f in frames] == traj.joint_actions
    assert traj.score == last["score"] == 20.0 and traj.rewards[-1] == 20.0
    assert traj.meta["keys"] == SOUP_KEYS and traj.meta["complete"] is True
    assert traj.meta["person_seat"] == 0 and traj.meta["agent"] == str(stay_run)
    assert traj.meta["trained_horizon"] == 60 and traj.meta["fps"] == 5
    replay_in_engine(traj)  # every recorded state follows from the joint actions
    # The game is over: a further step is refused and names the file.
    res = client.post(f"/api/games/{first['game']}/step", json={"key": None})
    assert res.status_code == 409 and last["saved"] in res.get_json()["error"]


def test_recurrent_agent_acts_with_its_state_carried(gru_run, tmp_path):
    """The agent's recorded actions are those of the policy fed its own GRU state step after step
    (same sampling generator), and a game that ends at the training horizon keeps its last state."""
    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.rl.checkpoint import load_agent

    app = create_app(str(gru_run), "cramped_room", seat=1, fps=10, out_dir=tmp_path, seed=7)
    client = app.test_client()
    gid = client.post("/api/games").get_json()["game"]
    keys = ["ArrowLeft", None, " ", "ArrowDown", "ArrowUp", "ArrowRight", None, " "]
    keys += ["ArrowLeft", None, None, " "]
    last = [step(client, gid, k) for k in keys][-1]
    assert last["done"] and last["t"] == 12  # horizon: the agent's training horizon
    (traj,) = load_trajectories(last["saved"])
    assert traj.agents == ["agent", "person"] and len(traj.states) == 13
    assert [a[1] for a in traj.joint_actions] == [KEY_ACTIONS[k] for k in keys]
    replay_in_engine(traj)  # includes the final state, rebuilt after the env's auto-reset

    policy, _ = load_agent(str(gru_run))
    assert policy.recurrent
    env = OvercookedEnv("cramped_room", num_envs=1, horizon=12)
    s = env.reset()
    gen = torch.Generator().manual_seed(7)
    h = policy.initial_state(1, "cpu")
    expected = []
    with torch.no_grad():
        for t, joint in enumerate(traj.joint_actions):
            out = policy.act(s.obs[:, 0], s.avail_actions[:, 0], h, torch.tensor([t == 0]), generator=gen)
            expected.append(int(out.actions[0]))
            h = out.state
            s = env.step(torch.tensor([joint]))
    assert [a[0] for a in traj.joint_actions] == expected
    assert float(h.abs().sum()) > 0  # the state carried is not trivially zero


def test_composite_agent_plays(mixture_run, tmp_path):
    app = create_app(str(mixture_run), "cramped_room", out_dir=tmp_path, horizon=3)
    client = app.test_client()
    gid = client.post("/api/games").get_json()["game"]
    last = [step(client, gid, k) for k in ("ArrowUp", None, " ")][-1]
    (traj,) = load_trajectories(last["saved"])
    assert traj.meta["agent_class"] == "mixture" and len(traj) == 3
    assert [a[0] for a in traj.joint_actions] == [0, STAY, INTERACT]


def test_abandoned_games_are_saved_as_incomplete(gru_run, tmp_path):
    app = create_app(str(gru_run), "cramped_room", out_dir=tmp_path, idle_timeout=60)
    client = app.test_client()
    games = app.extensions[EXTENSION]
    # The tab is closed after three steps: the page's beacon saves the game so far.
    gid = client.post("/api/games").get_json()["game"]
    for key in ("ArrowUp", "ArrowRight", " "):
        step(client, gid, key)
    res = client.post(f"/api/games/{gid}/quit")
    assert res.status_code == 200 and res.get_json()["end"] == "closed"
    (traj,) = load_trajectories(tmp_path / f"{gid}.json")
    assert len(traj) == 3 and traj.meta["complete"] is False and traj.meta["end"] == "closed"
    assert traj.meta["keys"] == ["ArrowUp", "ArrowRight", " "] and traj.horizon == 12
    replay_in_engine(traj)
    res = client.post(f"/api/games/{gid}/step", json={"key": None})
    assert res.status_code == 409 and "closed" in res.get_json()["error"]
    # A tab that stops ticking (closed without a beacon): the next sweep saves it as idle.
    gid2 = client.post("/api/games").get_json()["game"]
    step(client, gid2, "ArrowLeft")
    assert games.sweep(now=time.monotonic() + 30) == []  # not idle yet
    (swept,) = games.sweep(now=time.monotonic() + 61)
    assert swept.id == gid2 and load_trajectories(swept.saved)[0].meta["end"] == "idle"
    # Shutdown saves what is still open; a game without a step leaves no file.
    gid3 = client.post("/api/games").get_json()["game"]
    step(client, gid3, None)
    gid4 = client.post("/api/games").get_json()["game"]
    closed = {g.id: g for g in games.close_all()}
    assert set(closed) == {gid3, gid4} and closed[gid4].saved is None
    assert load_trajectories(closed[gid3].saved)[0].meta["end"] == "shutdown"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{g}.json" for g in (gid, gid2, gid3))


def test_server_stop_saves_open_games(gru_run, tmp_path):
    """A real server on a free port: stopping it saves the game in progress."""
    server = PlayServer(create_app(str(gru_run), "cramped_room", out_dir=tmp_path), port=0).start()
    try:

        def post(path, body=None):
            req = urllib.request.Request(server.url + path.lstrip("/"), data=json.dumps(body or {}).encode(),
                                         headers={"Content-Type": "application/json"})  # fmt: skip
            with urllib.request.urlopen(req, timeout=30) as res:
                return json.loads(res.read())

        gid = post("/api/games")["game"]
        post(f"/api/games/{gid}/step", {"key": "ArrowDown"})
        post(f"/api/games/{gid}/step", {"key": " "})
    finally:
        (game,) = server.stop()
    (traj,) = load_trajectories(game.saved)
    assert traj.meta["end"] == "shutdown" and [a[0] for a in traj.joint_actions] == [1, INTERACT]


def test_bad_requests_get_clear_errors(gru_run, tmp_path):
    client = create_app(str(gru_run), "cramped_room", out_dir=tmp_path).test_client()
    gid = client.post("/api/games").get_json()["game"]
    err = step(client, gid, "x", status=400)["error"]
    assert "unknown key 'x'" in err and "ArrowUp" in err
    assert "unknown game" in step(client, "nope", None, status=404)["error"]
    res = client.post(f"/api/games/{gid}/step", data="junk")
    assert res.status_code == 400 and '{"key": KEY}' in res.get_json()["error"]
    assert client.post("/api/games/nope/quit").status_code == 404


def invoke(*args):
    res = CliRunner().invoke(main, ["play", *args])
    assert res.exit_code != 0 and "Traceback" not in res.output, res.output
    return res.output


def test_command_errors(gru_run, tmp_path):
    out = ["--out", str(tmp_path / "games")]
    missing = tmp_path / "no_such_run"
    msg = invoke("--agent", str(missing), "--layout", "cramped_room", *out)
    assert f"no saved agent at {missing}" in msg and "run directory" in msg and "meta.json" in msg
    msg = invoke("--agent", f"{gru_run}#nobody", "--layout", "cramped_room", *out)
    assert "has no agent 'nobody'" in msg and "ego" in msg
    msg = invoke("--agent", str(gru_run), "--layout", "counter_circuit", *out)
    assert "different layout or observation spec" in msg and "layout: checkpoint" in msg
    msg = invoke("--agent", str(gru_run), "--layout", "no_such_layout", *out)
    assert "unknown layout 'no_such_layout'" in msg
    msg = invoke("--agent", str(gru_run), "--layout", "cramped_room", "--horizon", "13", *out)
    assert "--horizon 13 must be between 1 and 12" in msg
    msg = invoke("--agent", str(gru_run), "--layout", "cramped_room", "--seat", "2", *out)
    assert "--seat 2 is not a seat" in msg
    assert not (tmp_path / "games").exists()  # nothing created for a command that did not start
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        msg = invoke("--agent", str(gru_run), "--layout", "cramped_room", "--port", str(port), *out)
    assert f"port {port} is in use; pass --port" in msg
