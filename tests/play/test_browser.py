"""``zsceval play`` end to end in headless Chromium: a script presses keys on the page, reads the
score from it, and checks the saved trajectory against the keys it sent.

Needs a Chromium (``apt-get install chromium`` on Debian, ``chromium-browser`` on Ubuntu; or set
``ZSCEVAL_CHROMIUM``); skipped without one. The page is driven through the DevTools protocol over
a pipe (:mod:`tests.play.cdp`, standard library only).
"""

import time

import pytest

pytest.importorskip("flask", reason="zsceval play needs Flask: pip install flask")

from zsceval.interop.trajectory import load_trajectories
from zsceval.play import KEY_ACTIONS, PlayServer, create_app

from .cdp import Browser, find_chromium
from .helpers import SOUP_KEYS

FPS = 4.0  # slow enough that the script's key lands between two ticks on a loaded machine
INSTALL = (
    "no Chromium found for the browser test; install it with: apt-get install chromium "
    "(Debian; Ubuntu: apt-get install chromium-browser), or set ZSCEVAL_CHROMIUM=/path/to/chrome"
)


@pytest.fixture
def chromium(tmp_path):
    exe = find_chromium()
    if exe is None:
        pytest.skip(INSTALL)
    profile = tmp_path / "profile"
    profile.mkdir()
    browser = Browser(exe, profile)
    yield browser
    browser.close()


@pytest.fixture
def server(stay_run, tmp_path):
    app = create_app(str(stay_run), "cramped_room", seat=0, fps=FPS, out_dir=tmp_path / "games",
                     horizon=len(SOUP_KEYS))  # fmt: skip
    srv = PlayServer(app, port=0).start()
    yield srv
    srv.stop()


def test_play_in_headless_chromium(chromium, server, tmp_path):
    page = chromium
    target, tab = page.open_page(server.url)
    page.wait_for(tab, "document.readyState === 'complete' && typeof window.zscPlay === 'object'")
    assert "Press Enter" in page.evaluate(tab, "document.getElementById('status').textContent")

    # Start with Enter, then press each key of the script between two ticks: after the page shows
    # step i, before it sends step i + 1 (None: press nothing, the person stays).
    page.press(tab, "Enter")
    page.wait_for(tab, "window.zscPlay.game !== null && window.zscPlay.t === 0")
    for i, key in enumerate(SOUP_KEYS):
        page.wait_for(tab, f"window.zscPlay.t >= {i}")
        assert page.evaluate(tab, "window.zscPlay.t") == i, f"the page ran ahead of the script at step {i}"
        if key is not None:
            page.press(tab, key)
    page.wait_for(tab, "window.zscPlay.done")
    sent = page.evaluate(tab, "window.zscPlay.sent")
    assert sent == SOUP_KEYS, "the page did not send the script's key at every step"

    score = page.evaluate(tab, "document.getElementById('score').textContent")
    status = page.evaluate(tab, "document.getElementById('status').textContent")
    assert score == "20" and f"Game over: score {score}" in status
    saved = page.evaluate(tab, "window.zscPlay.saved")
    assert saved and saved in status
    (traj,) = load_trajectories(saved)
    assert [joint[0] for joint in traj.joint_actions] == [KEY_ACTIONS[k] for k in SOUP_KEYS]
    assert traj.meta["keys"] == SOUP_KEYS and traj.meta["complete"] is True
    assert traj.score == float(score) == 20.0
    assert [joint[1] for joint in traj.joint_actions] == [4] * len(SOUP_KEYS)  # the agent stayed

    # A second game, closed mid-game: the tab's beacon saves it as incomplete.
    page.press(tab, "Enter")
    page.wait_for(tab, "window.zscPlay.game !== null && window.zscPlay.t === 0")
    page.press(tab, "ArrowRight")
    page.wait_for(tab, "window.zscPlay.t >= 3")
    game = page.evaluate(tab, "window.zscPlay.game")
    page.send("Target.closeTarget", {"targetId": target})
    path = tmp_path / "games" / f"{game}.json"
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "the closed tab's game was not saved"
    (partial,) = load_trajectories(path)
    assert partial.meta["complete"] is False and partial.meta["end"] == "closed"
    assert 3 <= len(partial) < len(SOUP_KEYS) and partial.joint_actions[0][0] == KEY_ACTIONS["ArrowRight"]
    assert not server.games.open
