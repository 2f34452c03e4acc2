"""The play page: one HTML document with its script (no files to install, no external assets).

The script starts a game on Enter (or the Start button), remembers the latest arrow/space key
pressed, and every ``1 / fps`` seconds POSTs it to ``/api/games/<id>/step`` and shows the returned
picture, score, step and time left. When the tab is closed mid-game it sends
``/api/games/<id>/quit`` (``navigator.sendBeacon``) so the partial game is saved at once.

Element ids the browser test reads: ``frame`` (the picture), ``score``, ``t``, ``time-left``,
``status``, ``start``; ``window.zscPlay`` holds ``{game, t, done, saved, sent}`` (``sent``: the
key sent at each step of the current game).
"""

from __future__ import annotations

import html
import json

__all__ = ["render_page"]

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>zsceval play: __TITLE__</title>
<style>
  body { font-family: system-ui, sans-serif; background: #20232a; color: #eee; margin: 2em; }
  #board { display: inline-block; text-align: left; }
  #frame { image-rendering: pixelated; border: 2px solid #555; min-width: 200px; min-height: 120px; }
  .bar { margin: .5em 0; font-size: 1.2em; }
  .bar span { margin-right: 1.5em; }
  #status { min-height: 1.5em; color: #ffd479; }
  button { font-size: 1em; padding: .3em 1em; }
  kbd { background: #444; border-radius: 3px; padding: 0 .3em; }
</style>
</head>
<body>
<div id="board">
  <h2>Overcooked: __TITLE__</h2>
  <div class="bar"><span>Score <b id="score">0</b></span><span>Step <b id="t">0</b> / __HORIZON__</span>
    <span>Time left <b id="time-left">-</b> s</span></div>
  <img id="frame" alt="the kitchen">
  <div class="bar" id="status">Press <kbd>Enter</kbd> or Start to play.</div>
  <button id="start">Start</button>
  <p>You are the chef of seat __SEAT_NAME__ (__SEAT_COLOR__). Move with the <kbd>arrow keys</kbd>, pick
    up, put down and serve with <kbd>space</kbd>. The game runs at __FPS__ steps per second.</p>
</div>
<script>
"use strict";
const CFG = __CONFIG__;
const KEYS = new Set(CFG.keys);
const play = window.zscPlay = {game: null, t: 0, done: false, saved: null, sent: []};
let pending = null, timer = null;
const $ = (id) => document.getElementById(id);

function show(f) {
  $("frame").src = f.image;
  $("score").textContent = String(f.score);
  $("t").textContent = String(f.t);
  $("time-left").textContent = f.time_left.toFixed(1);
  play.t = f.t; play.done = f.done; play.saved = f.saved;
}

function status(text) { $("status").textContent = text; }

async function post(url, body) {
  const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                              body: JSON.stringify(body || {})});
  let data;
  try { data = await r.json(); } catch (e) { data = {error: "the server sent no JSON (" + r.status + ")"}; }
  if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
  return data;
}

async function start() {
  if (play.game !== null) return;
  clearTimeout(timer);
  pending = null; play.sent = [];
  try {
    const f = await post("/api/games");
    play.game = f.game; show(f);
    status("Playing: arrows to move, space to interact.");
    timer = setTimeout(tick, CFG.period_ms);
  } catch (e) { status("Could not start a game: " + e.message); }
}

async function tick() {
  if (play.game === null) return;
  const key = pending; pending = null;
  const t0 = performance.now();
  let f;
  try {
    f = await post("/api/games/" + play.game + "/step", {key: key});
  } catch (e) {
    play.game = null;
    status("The game stopped: " + e.message + " Press Enter for a new game.");
    return;
  }
  play.sent.push(key);
  show(f);
  if (f.done) {
    play.game = null;
    status("Game over: score " + f.score + ". Saved to " + f.saved + ". Press Enter to play again.");
    return;
  }
  timer = setTimeout(tick, Math.max(0, CFG.period_ms - (performance.now() - t0)));
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Enter") { e.preventDefault(); start(); return; }
  if (KEYS.has(e.key)) { e.preventDefault(); if (play.game !== null) pending = e.key; }
});
$("start").addEventListener("click", (e) => { e.target.blur(); start(); });
window.addEventListener("pagehide", () => {
  if (play.game !== null) navigator.sendBeacon("/api/games/" + play.game + "/quit", "");
});
</script>
</body>
</html>
"""


def render_page(config: dict) -> str:
    """The HTML page for a server's ``config`` (``layout``, ``agent``, ``seat``, ``horizon``,
    ``fps``, ``keys``; the script reads it as ``CFG``)."""
    seat = int(config["seat"])
    colors = ["blue", "purple", "teal", "gray"]  # zsceval.render.SEAT_COLORS
    cfg = {**config, "period_ms": 1000.0 / float(config["fps"])}
    subs = {
        "__TITLE__": html.escape(f"{config['layout']} with {config['agent']}"),
        "__HORIZON__": str(int(config["horizon"])),
        "__SEAT_NAME__": str(seat),
        "__SEAT_COLOR__": colors[seat % len(colors)],
        "__FPS__": f"{float(config['fps']):.3g}",
        # </ cannot end the script element early
        "__CONFIG__": json.dumps(cfg).replace("</", "<\\/"),
    }
    page = _PAGE
    for k, v in subs.items():
        page = page.replace(k, v)
    return page
