"""A :class:`~zsceval.envs.base.BatchedEnv` over many single-game Python simulators in worker processes.

Some simulators (Google Research Football: about 200 env steps/s per core, one game per simulator
object) cannot be batched on a tensor device. :class:`ProcessBatchedEnv` runs ``num_envs`` (B)
such games in ``num_workers`` worker processes; each worker owns a contiguous block of games and
steps them one after the other. Nothing here knows about a particular simulator: a game is built
in its worker by a picklable ``make_game(seed)`` and follows the *game protocol* below.

Game protocol (duck-typed)
--------------------------
Attributes: ``num_agents`` (n), ``num_actions`` (A), ``obs_dim`` (D), ``event_names`` (E names),
``horizon``. Methods:

* ``reset() -> GameStep`` and ``step(actions: np.ndarray int64 [n]) -> GameStep``;
* ``close()`` (called when the env closes);
* optional ``get_state() -> bytes`` and ``set_state(bytes)`` for exact resume (see
  :meth:`ProcessBatchedEnv.state_dict`).

A *GameStep* is a dict of numpy arrays (values are cast to these dtypes):

==================  ===============  ====================================================
key                 dtype, shape     meaning
==================  ===============  ====================================================
``obs``             float32 [n, D]   per-agent observation
``avail_actions``   bool [n, A]      available actions
``reward``          float32 []       team sparse reward of the step
``sparse_by_agent`` float32 [n]      sparse reward per agent
``shaped_by_agent`` float32 [n]      shaped reward per agent
``events``          int16 [n, E]     per-agent event counts of the step
``terminated``      bool []          the game reached a terminal state
``truncated``       bool []          the game was cut off (time limit)
any other key       any fixed shape  an *extra*, e.g. ``critic_obs`` float32 [n, Dc]
==================  ===============  ====================================================

``reset()`` needs only ``obs``, ``avail_actions`` and extras (reward, events and done flags of a
reset are zeros / False). The set of extras, their shapes and dtypes are read from a *probe*: at
start-up worker 0 builds one more game with game 0's seed, calls ``reset()`` and one ``step`` (each
agent's first available action), reports the result and closes that game; so ``make_game`` is
called B + 1 times. An extra that a particular GameStep lacks (e.g. a per-step reward that
``reset()`` does not return) is written as zeros; a key the probe did not show is an error.

Batched result
--------------
``reset`` and ``step`` return a :class:`~zsceval.envs.base.Step` (whose ``critic_obs`` is the
``critic_obs`` extra when the games return one) with
torch tensors on ``device``: each Step field from the same-named GameStep key with leading dim B,
``interactions`` zeros ``int64 [B, n]``, ``interaction_cell`` ``-1``, and every extra in
``infos[key]``. A game whose step returns ``terminated`` or ``truncated`` is reset at once in its
worker: ``obs``, ``avail_actions`` and extras are then the new episode's, the pre-reset ``obs`` is in
``final_obs`` (and every extra in ``infos["final_" + key]``); rows of games that did not end equal
the current values; ``final_obs`` is ``None`` (and no ``final_`` infos) when no game ended. Rewards,
events and done flags are those of the step.

Game ``i`` (``0 <= i < B``) is built with seed ``seed * 1_000_003 + i`` (:func:`game_seed`).

Transport: one shared memory file (``/dev/shm``, unlinked as soon as every worker mapped it) holds
the actions and every GameStep field of all B games; the pipes carry only one-word commands and
replies (and tracebacks / game states). Benchmark of the overhead:
``python benchmarks/perf/process_overhead.py`` (on a shared
2-core machine: about 0.3 ms per batched step of B=8 against about 0.6 ms when the GameSteps are
pickled through the pipes).

Robustness: :meth:`ProcessBatchedEnv.close` stops and joins every worker; the env is a context
manager and a ``weakref.finalize`` (which also runs at interpreter exit) closes it if the user does
not. Workers are daemonic (so a game may not start processes of its own), ignore SIGINT (Ctrl-C
raises ``KeyboardInterrupt`` in the parent only, which then closes the workers) and exit by
themselves when the parent dies (pipe closed or parent pid changed). When a worker dies (crash,
``kill -9``, an exception in a game), the ``reset`` / ``step`` that notices raises
``RuntimeError`` naming the worker, its pid, its exit code, the games it held and, for a Python
exception, the worker's traceback; the other workers are closed and the env is unusable.
"""

from __future__ import annotations

import json
import mmap
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from zsceval.envs.base import (
    Step,
    agent_names,
    box_space,
    check_state_config,
    discrete_space,
)

__all__ = ["ProcessBatchedEnv", "game_seed", "CounterGame"]

SEED_STRIDE = 1_000_003
START_METHODS = ("forkserver", "spawn")
# Keys every GameStep of ``step`` has, with their dtype and per-game shape (symbolic dims).
STEP_KEYS = {
    "obs": (np.float32, ("n", "D")),
    "avail_actions": (np.bool_, ("n", "A")),
    "reward": (np.float32, ()),
    "sparse_by_agent": (np.float32, ("n",)),
    "shaped_by_agent": (np.float32, ("n",)),
    "events": (np.int16, ("n", "E")),
    "terminated": (np.bool_, ()),
    "truncated": (np.bool_, ()),
}
RESET_KEYS = ("obs", "avail_actions")
ALIGN = 64
POLL_S = 1.0  # how often an idle worker checks that its parent is alive
JOIN_S = 5.0  # how long close() waits for a worker before terminating it


def game_seed(seed: int, index: int) -> int:
    """Seed of game ``index`` in an env of ``seed``: ``seed * 1_000_003 + index``."""
    return int(seed) * SEED_STRIDE + int(index)


# ============================================================================ shared buffers
def _layout(fields: list[tuple[str, tuple[int, ...], str]], num_envs: int) -> tuple[dict, int]:
    """Byte offsets of ``[num_envs, *shape]`` arrays of each field, 64-byte aligned."""
    layout, offset = {}, 0
    for name, shape, dtype in fields:
        layout[name] = (offset, tuple(shape), dtype)
        nbytes = int(np.prod((num_envs, *shape))) * np.dtype(dtype).itemsize
        offset += -(-max(nbytes, 1) // ALIGN) * ALIGN
    return layout, max(offset, ALIGN)


def _views(buffer, layout: dict, num_envs: int) -> dict[str, np.ndarray]:
    return {
        name: np.ndarray((num_envs, *shape), dtype=np.dtype(dtype), buffer=buffer, offset=offset)
        for name, (offset, shape, dtype) in layout.items()
    }


def _map_file(path: str, size: int) -> mmap.mmap:
    fd = os.open(path, os.O_RDWR)
    try:
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


# ============================================================================ worker side
def _describe(gs: Any, what: str) -> dict[str, tuple[tuple[int, ...], str]]:
    if not isinstance(gs, dict):
        raise TypeError(f"game.{what} must return a dict of numpy arrays, got {type(gs).__name__}")
    return {key: (np.shape(value), np.asarray(value).dtype.str) for key, value in gs.items()}


def _probe(make_game: Callable, seed: int) -> dict[str, Any]:
    """Attributes and GameStep keys of one game (built, reset, stepped once and closed)."""
    game = make_game(seed)
    try:
        attrs = {}
        for name in ("num_agents", "num_actions", "obs_dim", "event_names", "horizon"):
            if not hasattr(game, name):
                raise AttributeError(
                    f"game {type(game).__name__} has no attribute {name!r}; a game needs num_agents, "
                    "num_actions, obs_dim, event_names, horizon, reset(), step(actions), close()"
                )
            attrs[name] = getattr(game, name)
        attrs["event_names"] = [str(e) for e in attrs["event_names"]]
        for name in ("num_agents", "num_actions", "obs_dim", "horizon"):
            attrs[name] = int(attrs[name])
        attrs["game_type"] = f"{type(game).__module__}.{type(game).__qualname__}"
        attrs["exact"] = callable(getattr(game, "get_state", None)) and callable(
            getattr(game, "set_state", None)
        )
        first = game.reset()
        reset_keys = _describe(first, "reset()")
        avail = np.asarray(first.get("avail_actions", np.ones((attrs["num_agents"], 1), bool)))
        actions = np.argmax(avail.reshape(attrs["num_agents"], -1), axis=-1).astype(np.int64)
        step_keys = _describe(game.step(actions), "step(actions)")
        return {"attrs": attrs, "reset_keys": reset_keys, "step_keys": step_keys}
    finally:
        game.close()


class _Worker:
    """Runs in a worker process: owns games ``lo..hi-1`` and their rows of the shared buffers."""

    def __init__(
        self, games: list, buffer: mmap.mmap, layout: dict, num_envs: int, lo: int, extras: list[str]
    ):
        self.games = games
        views = _views(buffer, layout, num_envs)
        self.views = {name: v[lo : lo + len(games)] for name, v in views.items()}
        self.extras = extras
        self.known = set(STEP_KEYS) | set(extras)

    def _check(self, gs: Any, i: int, what: str) -> None:
        if not isinstance(gs, dict):
            raise TypeError(f"game.{what} must return a dict of numpy arrays, got {type(gs).__name__}")
        unknown = gs.keys() - self.known
        if unknown:
            raise KeyError(
                f"game.{what} returned keys {sorted(unknown)} that the start-up probe did not show; "
                f"known keys: {sorted(self.known)}"
            )

    def _write_obs(self, i: int, gs: dict, prefix: str = "") -> None:
        v = self.views
        v[prefix + "obs"][i] = gs["obs"]
        if not prefix:
            v["avail_actions"][i] = gs["avail_actions"]
        for key in self.extras:
            if key in gs:
                v[prefix + key][i] = gs[key]
            else:
                v[prefix + key][i] = 0

    def reset(self) -> None:
        v = self.views
        for i, game in enumerate(self.games):
            gs = game.reset()
            self._check(gs, i, "reset()")
            self._write_obs(i, gs)
        for key in ("reward", "sparse_by_agent", "shaped_by_agent", "events", "terminated", "truncated"):
            v[key][:] = 0

    def step(self) -> None:
        v = self.views
        actions = v["actions"]
        for i, game in enumerate(self.games):
            gs = game.step(actions[i].copy())
            self._check(gs, i, "step(actions)")
            for key in ("reward", "sparse_by_agent", "shaped_by_agent", "events", "terminated", "truncated"):
                v[key][i] = gs[key]
            if v["terminated"][i] or v["truncated"][i]:
                self._write_obs(i, gs, prefix="final_")
                gs = game.reset()
                self._check(gs, i, "reset()")
            self._write_obs(i, gs)


def _parent_alive(parent_pid: int, first_ppid: int) -> bool:
    """False once this worker was re-parented or the env's process is gone (a backup for the pipe's
    end-of-file, which is how a worker normally notices that the env's process died)."""
    if os.getppid() != first_ppid:
        return False
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _worker_main(index: int, make_game_blob: bytes, seeds: list[int], conn, parent_pid: int, probe: bool):
    """Entry point of worker ``index``: builds its games with the pickled ``make_game`` (unpickled
    here, so that an import error of the game's module is reported to the env), then serves
    ``(command, argument)`` messages: attach, reset, step, get_state, set_state, close."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first_ppid = os.getppid()  # the env's process (spawn) or the fork server (forkserver)
    games: list = []
    worker = None
    buffer = None
    try:
        make_game = pickle.loads(make_game_blob)
        if probe:
            conn.send(("probe", _probe(make_game, seeds[0])))
        games = [make_game(s) for s in seeds]
        conn.send(("built", None))
        while True:
            try:
                while not conn.poll(POLL_S):
                    if not _parent_alive(parent_pid, first_ppid):
                        return
                cmd, arg = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            if cmd == "step":
                worker.step()
                conn.send(("ok", None))
            elif cmd == "reset":
                worker.reset()
                conn.send(("ok", None))
            elif cmd == "attach":
                path, size, layout, num_envs, lo, extras = arg
                buffer = _map_file(path, size)
                worker = _Worker(games, buffer, layout, num_envs, lo, extras)
                conn.send(("ok", None))
            elif cmd == "get_state":
                conn.send(("ok", [bytes(g.get_state()) for g in games]))
            elif cmd == "set_state":
                for game, data in zip(games, arg):
                    game.set_state(data)
                conn.send(("ok", None))
            elif cmd == "close":
                conn.send(("ok", None))
                return
            else:
                raise ValueError(f"unknown worker command {cmd!r}")
    except BaseException as exc:  # report to the parent, then exit with code 1
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        except Exception:
            pass
        sys.exit(1)
    finally:
        for game in games:
            try:
                game.close()
            except Exception:
                pass
        if worker is not None:
            worker.views.clear()


@contextmanager
def _sigint_ignored():
    """Ignore SIGINT while starting a worker, so that the child inherits SIG_IGN from birth
    (Python keeps an inherited SIG_IGN) and a Ctrl-C during its imports cannot reach it."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# ============================================================================ parent side
class _Resources:
    """Processes, pipes and the shared buffer of one env; :meth:`shutdown` releases them all
    (idempotent; also the ``weakref.finalize`` callback, so it must not reference the env)."""

    def __init__(self) -> None:
        self.procs: list = []
        self.conns: list = []
        self.path: str | None = None
        self.buffer: mmap.mmap | None = None
        self.views: dict[str, np.ndarray] = {}
        self.closed = False

    def unlink(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            self.path = None

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        for proc, conn in zip(self.procs, self.conns):
            if proc.is_alive():
                try:
                    conn.send(("close", None))
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + JOIN_S
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        self.unlink()
        self.views.clear()
        if self.buffer is not None:
            try:
                self.buffer.close()
            except BufferError:  # a view is still referenced somewhere; the GC frees the map
                pass
            self.buffer = None


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exit code {code}"
    try:
        return f"exit code {code} (killed by {signal.Signals(-code).name})"
    except ValueError:
        return f"exit code {code}"


class ProcessBatchedEnv:
    """B single-game simulators stepped in worker processes; implements ``BatchedEnv``.

    See the module docstring for the game protocol, the GameStep keys and the robustness
    guarantees.

    Args:
        make_game: picklable callable ``make_game(seed: int) -> game`` (a module-level function or a
            ``functools.partial`` of one), called inside the workers; game ``i`` gets
            ``game_seed(seed, i) = seed * 1_000_003 + i``.
        num_envs: B >= 1.
        num_workers: worker processes, default ``min(num_envs, os.cpu_count())``; clamped to
            ``1..num_envs``. Worker ``w`` owns a contiguous block of games (sizes differ by at most 1).
        device: torch device of the returned tensors.
        seed: base seed (int).
        event_names: expected event names; a ValueError is raised if the games report others.
        spec: JSON-able dict merged into :meth:`spec_dict` (give at least ``name``, e.g.
            ``{"name": "football", "scenario": ...}``).
        start_method: ``"forkserver"`` (default: the server imports this module once, workers fork
            from it; the server keeps the ``sys.path`` of its start, so a ``make_game`` from a module
            that is importable only through a later ``sys.path`` change needs ``"spawn"``) or
            ``"spawn"`` (every worker imports torch: about 2 s more per worker).

    Raises:
        ValueError: a size out of range, an unknown start method, a non-JSON-able ``spec``, an
            unpicklable ``make_game``, games
            whose reported sizes and GameStep shapes disagree, or other ``event_names``.
        RuntimeError: a worker failed to build its games (the message has the worker's error and
            traceback, e.g. the ``ImportError`` of a missing simulator).
    """

    def __init__(
        self,
        make_game: Callable[[int], Any],
        num_envs: int,
        *,
        num_workers: int | None = None,
        device="cpu",
        seed: int = 0,
        event_names=None,
        spec: dict | None = None,
        start_method: str = "forkserver",
    ) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if start_method not in START_METHODS:
            raise ValueError(f"unknown start_method {start_method!r}; valid: {', '.join(START_METHODS)}")
        spec = dict(spec or {})
        try:
            json.dumps(spec)
        except TypeError as exc:
            raise ValueError(f"spec must be JSON-able: {exc}") from None
        self.num_envs = B = int(num_envs)
        if num_workers is None:
            num_workers = os.cpu_count() or 1
        if int(num_workers) < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        self.num_workers = W = min(int(num_workers), B)
        self.device = torch.device(device)
        self.seed = int(seed)
        self.spec = spec
        self.start_method = start_method
        bounds = np.linspace(0, B, W + 1).round().astype(int)
        self.blocks = [(int(bounds[w]), int(bounds[w + 1])) for w in range(W)]
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.shutdown)
        self._failure: str | None = None
        try:
            blob = pickle.dumps(make_game)
        except Exception as exc:
            raise ValueError(
                "make_game must be picklable (a module-level function or class, or a functools.partial "
                f"of one; not a lambda or a local function): {type(exc).__name__}: {exc}"
            ) from None
        try:
            self._start(blob)
            self._check_events(event_names)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ start-up
    def _start(self, make_game_blob: bytes) -> None:
        ctx = mp.get_context(self.start_method)
        if self.start_method == "forkserver":
            from multiprocessing import forkserver

            if getattr(forkserver._forkserver, "_forkserver_pid", None) is None:
                ctx.set_forkserver_preload(["zsceval.envs.process_vector"])
        res = self._res
        for w, (lo, hi) in enumerate(self.blocks):
            seeds = [game_seed(self.seed, i) for i in range(lo, hi)]
            parent_conn, child_conn = ctx.Pipe()
            proc = ctx.Process(
                target=_worker_main,
                args=(w, make_game_blob, seeds, child_conn, os.getpid(), w == 0),
                name=f"ProcessBatchedEnv-worker-{w}",
                daemon=True,
            )
            with _sigint_ignored():
                proc.start()
            child_conn.close()
            res.procs.append(proc)
            res.conns.append(parent_conn)
        probe = self._collect({0: "probe"}, "build its games")[0]
        self._setup(probe)
        self._collect({w: "built" for w in range(self.num_workers)}, "build its games")
        res.path, size = self._make_buffer()
        for w, (lo, _hi) in enumerate(self.blocks):
            res.conns[w].send(("attach", (res.path, size, self._layout, self.num_envs, lo, self.extras)))
        self._collect({w: "ok" for w in range(self.num_workers)}, "map the shared buffer")
        res.unlink()  # every worker has it mapped: the memory lives until the last map closes

    def _setup(self, probe: dict) -> None:
        attrs = probe["attrs"]
        self.game_type = attrs["game_type"]
        self.num_agents = n = attrs["num_agents"]
        self.num_actions = A = attrs["num_actions"]
        self.obs_dim = D = attrs["obs_dim"]
        self.horizon = attrs["horizon"]
        self._event_names = tuple(attrs["event_names"])
        self.exact = bool(attrs["exact"])
        dims = {"n": n, "A": A, "D": D, "E": len(self._event_names)}
        problems = []
        for what, keys, required in (
            ("reset()", probe["reset_keys"], RESET_KEYS),
            ("step(actions)", probe["step_keys"], tuple(STEP_KEYS)),
        ):
            for key in required:
                if key not in keys:
                    problems.append(f"game.{what} has no {key!r}")
                    continue
                expected = tuple(dims[d] for d in STEP_KEYS[key][1])
                if keys[key][0] != expected:
                    problems.append(
                        f"game.{what}[{key!r}] has shape {list(keys[key][0])}, expected {list(expected)}"
                    )
        extras: dict[str, tuple[tuple[int, ...], str]] = {}
        for keys in (probe["reset_keys"], probe["step_keys"]):
            for key, (shape, dtype) in keys.items():
                if key in STEP_KEYS:
                    continue
                if key.startswith("final_"):
                    problems.append(f"extra {key!r}: names starting with 'final_' are reserved")
                elif key in extras and extras[key][0] != shape:
                    problems.append(
                        f"extra {key!r} has shape {list(shape)} in one GameStep, "
                        f"{list(extras[key][0])} in another"
                    )
                extras.setdefault(key, (shape, dtype))
        if problems:
            raise ValueError(
                f"games of {self.game_type} (n={n}, A={A}, D={D}, E={dims['E']}) do not follow the "
                "game protocol: " + "; ".join(problems)
            )
        self.extras = list(extras)
        self._extra_specs = extras
        fields = [("actions", (n,), "<i8")]
        fields += [
            (key, tuple(dims[d] for d in shape), np.dtype(dt).str) for key, (dt, shape) in STEP_KEYS.items()
        ]
        fields.append(("final_obs", (n, D), np.dtype(np.float32).str))
        for key, (shape, dtype) in extras.items():
            fields += [(key, shape, dtype), ("final_" + key, shape, dtype)]
        self._layout, self._size = _layout(fields, self.num_envs)
        if "critic_obs" in extras:
            self.critic_obs_shape = (
                tuple(extras["critic_obs"][0][1:]) if len(extras["critic_obs"][0]) > 1 else ()
            )
        else:
            self.critic_obs_shape = (n * D,)
        self.obs_shape = (D,)

    def _make_buffer(self) -> tuple[str, int]:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="zsceval-penv-", dir=shm)
        try:
            os.ftruncate(fd, self._size)
            self._res.buffer = mmap.mmap(fd, self._size)
        finally:
            os.close(fd)
        self._res.views = _views(self._res.buffer, self._layout, self.num_envs)
        return path, self._size

    def _check_events(self, event_names) -> None:
        if event_names is not None and tuple(event_names) != self._event_names:
            raise ValueError(
                f"games report event_names {list(self._event_names)}, expected {list(event_names)}"
            )

    # ------------------------------------------------------------------ talking to workers
    def _collect(self, expect: dict[int, str], doing: str) -> dict[int, Any]:
        """Wait for one reply from each worker in ``expect`` (worker -> expected tag).

        Raises:
            RuntimeError: a worker died or reported an error (the env is then closed).
        """
        res = self._res
        replies: dict[int, Any] = {}
        pending = dict(expect)
        while pending:
            waitables = [res.conns[w] for w in pending] + [res.procs[w].sentinel for w in pending]
            mp_connection.wait(waitables)
            for w in list(pending):
                conn, proc = res.conns[w], res.procs[w]
                if conn.poll():
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        raise self._fail(w, doing) from None
                    if msg[0] == "error":
                        raise self._fail(w, doing, error=msg[1], tb=msg[2])
                    if msg[0] != pending[w]:
                        raise self._fail(
                            w, doing, error=f"protocol error: got {msg[0]!r}, expected {pending[w]!r}"
                        )
                    replies[w] = msg[1]
                    del pending[w]
                elif not proc.is_alive():
                    raise self._fail(w, doing)
        return replies

    def _fail(self, w: int, doing: str, error: str | None = None, tb: str | None = None) -> RuntimeError:
        """Close the env and return the RuntimeError describing worker ``w``'s failure."""
        proc = self._res.procs[w]
        proc.join(JOIN_S)
        lo, hi = self.blocks[w]
        msg = (
            f"ProcessBatchedEnv worker {w} (pid {proc.pid}, {_signal_name(proc.exitcode)}, "
            f"games {lo}..{hi - 1}) failed to {doing}"
        )
        if error:
            msg += f": {error}"
        if tb:
            msg += f"\n--- worker {w} traceback ---\n{tb.rstrip()}"
        self._failure = msg
        self.close()
        return RuntimeError(msg)

    def _command(self, cmd: str, args: list | None = None, doing: str = "") -> dict[int, Any]:
        res = self._res
        if res.closed:
            raise RuntimeError(
                "ProcessBatchedEnv is closed"
                + (f" after a worker failure:\n{self._failure}" if self._failure else "")
            )
        try:
            for w, conn in enumerate(res.conns):
                try:
                    conn.send((cmd, None if args is None else args[w]))
                except (OSError, ValueError):
                    raise self._fail(w, doing or cmd) from None
            return self._collect({w: "ok" for w in range(self.num_workers)}, doing or cmd)
        except BaseException:  # KeyboardInterrupt included: never leave workers mid-command
            self.close()
            raise

    # ------------------------------------------------------------------ description
    @property
    def possible_agents(self) -> tuple[str, ...]:
        """``("agent_0", ..., "agent_{n-1}")``."""
        return agent_names(self.num_agents)

    @property
    def event_names(self) -> tuple[str, ...]:
        """The games' ``event_names`` (E names, order of ``Step.events``)."""
        return self._event_names

    @property
    def single_observation_space(self):
        """``Box(-inf, inf, (D,), float32)``."""
        return box_space(-np.inf, np.full(self.obs_shape, np.inf), torch.float32)

    @property
    def single_critic_observation_space(self):
        """``Box(-inf, inf, (Dc,), float32)`` of the ``critic_obs`` extra, else ``(n*D,)``."""
        return box_space(-np.inf, np.full(self.critic_obs_shape, np.inf), torch.float32)

    @property
    def single_action_space(self):
        """``Discrete(A)``."""
        return discrete_space(self.num_actions)

    def spec_dict(self) -> dict[str, Any]:
        """JSON-able description: ``name`` (default ``"process"``), the caller's ``spec`` entries,
        ``obs_shape``, ``critic_obs_shape``, ``num_agents``, ``num_actions``, ``event_names``,
        ``horizon``."""
        return {
            "name": "process",
            **self.spec,
            "obs_shape": list(self.obs_shape),
            "critic_obs_shape": list(self.critic_obs_shape),
            "num_agents": self.num_agents,
            "num_actions": self.num_actions,
            "event_names": list(self.event_names),
            "horizon": self.horizon,
        }

    # ------------------------------------------------------------------ stepping
    def check_actions(self, actions) -> np.ndarray:
        """Validate a joint action; returns it as an int64 numpy array ``[B, n]``.

        Raises:
            ValueError: not an int64 torch tensor or numpy array of shape ``[num_envs, num_agents]``
                with values in ``0..num_actions-1``.
        """
        if isinstance(actions, torch.Tensor):
            if actions.dtype != torch.int64:
                raise ValueError(f"actions must have dtype int64, got {actions.dtype} (use .long())")
            actions = actions.detach().cpu().numpy()
        if not isinstance(actions, np.ndarray):
            raise ValueError(
                f"actions must be an int64 torch tensor or int64 numpy array, got {type(actions).__name__}"
            )
        if actions.dtype != np.int64:
            raise ValueError(f"actions must have dtype int64, got {actions.dtype} (use .astype(np.int64))")
        expected = (self.num_envs, self.num_agents)
        if actions.shape != expected:
            raise ValueError(
                f"actions must have shape {list(expected)} [num_envs, num_agents], got {list(actions.shape)}"
            )
        if actions.size and (actions.min() < 0 or actions.max() >= self.num_actions):
            raise ValueError(
                f"actions must be in 0..{self.num_actions - 1}, "
                f"got values in [{actions.min()}, {actions.max()}]"
            )
        return actions

    def _tensor(self, name: str) -> torch.Tensor:
        return torch.from_numpy(self._res.views[name].copy()).to(self.device)

    def _gather(self, stepped: bool) -> Step:
        B, n = self.num_envs, self.num_agents
        terminated, truncated = self._tensor("terminated"), self._tensor("truncated")
        infos = {key: self._tensor(key) for key in self.extras}
        obs = self._tensor("obs")
        final_obs = None
        done = terminated | truncated
        if stepped and bool(done.any()):
            rows = done.cpu().numpy()
            final_obs = obs.clone()
            final_obs[done] = torch.from_numpy(self._res.views["final_obs"][rows]).to(self.device)
            for key in self.extras:
                final = infos[key].clone()
                final[done] = torch.from_numpy(self._res.views["final_" + key][rows]).to(self.device)
                infos["final_" + key] = final
        return Step(
            obs=obs,
            avail_actions=self._tensor("avail_actions"),
            reward=self._tensor("reward"),
            sparse_by_agent=self._tensor("sparse_by_agent"),
            shaped_by_agent=self._tensor("shaped_by_agent"),
            events=self._tensor("events"),
            interactions=torch.zeros(B, n, dtype=torch.int64, device=self.device),
            interaction_cell=torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            infos=infos,
        )

    def reset(self) -> Step:
        """Reset every game; zero rewards and events, done flags False, ``final_obs`` None.

        Raises:
            RuntimeError: a worker died or a game raised (see the module docstring).
        """
        self._command("reset")
        return self._gather(stepped=False)

    def step(self, actions) -> Step:
        """Advance every game by ``actions`` (``int64 [B, n]`` tensor or numpy array); finished games
        are reset in their workers (module docstring).

        Raises:
            ValueError: actions of the wrong type, shape, dtype or range (nothing is stepped).
            RuntimeError: a worker died or a game raised (see the module docstring).
        """
        actions = self.check_actions(actions)
        if self._res.closed:
            self._command("step")  # raises the closed / failure message
        self._res.views["actions"][:] = actions
        self._command("step")
        return self._gather(stepped=True)

    # ------------------------------------------------------------------ save / restore
    def _config(self) -> dict[str, Any]:
        return {
            "game_type": self.game_type,
            "num_envs": self.num_envs,
            "num_agents": self.num_agents,
            "num_actions": self.num_actions,
            "obs_dim": self.obs_dim,
            "event_names": list(self.event_names),
            "horizon": self.horizon,
            "seed": self.seed,
            "spec": dict(self.spec),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on, if the games can save themselves.

        Returns:
            ``{"env": "process", "config": {...}, "exact": True, "games": [uint8 tensor per game]}``
            when the games implement ``get_state() -> bytes`` / ``set_state(bytes)``; otherwise
            ``{"env": "process", "config": {...}, "exact": False}`` (such a state cannot be loaded).

        Raises:
            RuntimeError: a worker died or a game raised.
        """
        state: dict[str, Any] = {"env": "process", "config": self._config(), "exact": self.exact}
        if self.exact:
            replies = self._command("get_state", doing="save its games' states")
            state["games"] = [
                torch.frombuffer(bytearray(data), dtype=torch.uint8)
                if data
                else torch.zeros(0, dtype=torch.uint8)
                for w in range(self.num_workers)
                for data in replies[w]
            ]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output into the games; continue with ``step``.

        Raises:
            ValueError: not a process-env state, another config, a malformed ``games`` entry, or
                games without ``get_state`` / ``set_state`` (``"exact": False``): those cannot be
                restored exactly.
            RuntimeError: a worker died or a game raised.
        """
        if not isinstance(state, dict) or state.get("env") != "process":
            got = state.get("env") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not a process env state (env={got!r})")
        check_state_config(state, self._config(), "process")
        if not self.exact or not state.get("exact"):
            raise ValueError(
                f"games of {self.game_type} cannot be restored exactly: they do not implement "
                "get_state() -> bytes and set_state(bytes)"
            )
        games = state.get("games")
        if (
            not isinstance(games, (list, tuple))
            or len(games) != self.num_envs
            or not all(isinstance(g, torch.Tensor) and g.dtype == torch.uint8 and g.dim() == 1 for g in games)
        ):
            raise ValueError(f"env state entry 'games' must be a list of {self.num_envs} 1-d uint8 tensors")
        data = [g.cpu().numpy().tobytes() for g in games]
        self._command("set_state", [data[lo:hi] for lo, hi in self.blocks], doing="restore its games")

    # ------------------------------------------------------------------ lifetime
    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or a worker failure closed the env)."""
        return self._res.closed

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (in block order)."""
        return [p.pid for p in self._res.procs]

    def close(self) -> None:
        """Stop every worker (a ``close`` command, then terminate / kill after 5 s), join it, and
        free the shared buffer. Idempotent."""
        self._finalizer()

    def __enter__(self) -> ProcessBatchedEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.num_workers} workers"
        return f"ProcessBatchedEnv({getattr(self, 'game_type', '?')}, num_envs={self.num_envs}, {state})"


# ============================================================================ benchmark
class CounterGame:
    """A trivial game for the benchmark (and examples): obs ``[t, seed, k, 0...]``, reward 1 per step,
    truncated after ``horizon`` steps; ``work_us`` microseconds of busy work per step stand in for a
    simulator (Football: about 5000)."""

    num_actions = 4
    event_names = ("stay",)

    def __init__(
        self, seed: int, num_agents: int = 3, obs_dim: int = 58, horizon: int = 100, work_us: float = 0.0
    ) -> None:
        self.seed, self.num_agents, self.obs_dim, self.horizon = seed, num_agents, obs_dim, horizon
        self.work_s = work_us * 1e-6
        self.t = 0

    def _gs(self) -> dict:
        obs = np.zeros((self.num_agents, self.obs_dim), np.float32)
        obs[:, 0], obs[:, 1], obs[:, 2] = self.t, self.seed, np.arange(self.num_agents)
        return {"obs": obs, "avail_actions": np.ones((self.num_agents, self.num_actions), bool)}

    def reset(self) -> dict:
        self.t = 0
        return self._gs()

    def step(self, actions: np.ndarray) -> dict:
        if self.work_s:
            end = time.perf_counter() + self.work_s
            while time.perf_counter() < end:
                pass
        self.t += 1
        n = self.num_agents
        return {
            **self._gs(),
            "reward": np.float32(1),
            "sparse_by_agent": np.zeros(n, np.float32),
            "shaped_by_agent": np.zeros(n, np.float32),
            "events": (actions == 0).astype(np.int16).reshape(n, 1),
            "terminated": False,
            "truncated": self.t >= self.horizon,
        }

    def close(self) -> None:
        pass
