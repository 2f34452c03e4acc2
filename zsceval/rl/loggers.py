"""Metric loggers: where a training run's rows and a bench's summary go (``run.loggers``).

Every logger gets the same calls: :meth:`MetricLogger.log_row` for each training iteration's row
(``step`` = the row's ``env_steps``), :meth:`MetricLogger.log_table` for a summary table (a bench's
BR-Prox table) and :meth:`MetricLogger.close`. Built in:

* ``csv`` (always on: the bench, the population methods and ``zsceval report`` read
  ``metrics.csv``): one appended line per row, a flush after each; the whole file is rewritten
  only when a row brings a new column (the first rows with finished episodes) or a resume cuts it.
* ``tensorboard`` (``pip install "zsceval[tensorboard]"``): ``tensorboard/`` in the run folder.
* ``wandb`` (``pip install "zsceval[wandb]"``): a Weights & Biases run whose files are under
  ``wandb/`` in the run folder; ``WANDB_MODE=offline`` keeps it on disk (``wandb sync`` uploads it
  later), ``WANDB_PROJECT`` names the project (default ``zsceval``).
* ``mlflow`` (``pip install "zsceval[mlflow]"``): an MLflow run on the tracking server that
  ``MLFLOW_TRACKING_URI`` names (MLflow's default otherwise), in the experiment
  ``MLFLOW_EXPERIMENT_NAME`` (default ``zsceval``).

A logger is imported only when a run asks for it, and a missing package is one error naming the
install command (:func:`check_loggers`, called before a run writes anything). Third-party loggers
register in the entry-point group ``zsceval.loggers`` (name = ``run.loggers`` entry, value = a
:class:`MetricLogger` subclass), as the built-ins do in ``setup.py``.

Resume. A resumed run continues from its checkpoint at env step S and re-runs the iterations after
it. ``metrics.csv`` keeps its rows up to S and gets the re-run's rows again (so it always describes
the trajectory the checkpoints follow); TensorBoard purges its events after S (``purge_step``);
wandb and MLflow continue the same run (its id is stored in ``loggers.json`` in the run folder) and
are not sent the re-run's rows up to the last step the stopped run logged (``metrics.csv``'s last
line before the cut): their services keep points, so sending them again would log a step twice, and
exact resume (:mod:`zsceval.rl.trainer`) makes those rows the same but for their timing columns.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from zsceval.io import atomic_write_text
from zsceval.plugins import Registry, UnknownPluginError
from zsceval.rl.config import ConfigError

__all__ = [
    "LOGGERS_ENV",
    "LOGGER_GROUP",
    "LoggerError",
    "LoggerGroup",
    "MetricLogger",
    "check_loggers",
    "logger_class",
    "logger_names",
    "open_loggers",
    "register_logger",
    "resolve_logger_names",
]

LOGGER_GROUP = "zsceval.loggers"
LOGGERS_ENV = "ZSCEVAL_LOGGERS"
"""Comma-separated loggers added to every run's ``run.loggers`` (set by ``zsceval bench --loggers``
for the bench's training jobs; a logger changes no result, so it is not a job input)."""
STATE = "loggers.json"
"""File in the run (or bench) folder with the ids that a resume continues (wandb run, MLflow run)."""


class LoggerError(ConfigError):
    """An unknown logger name (the valid ones listed) or a logger whose package is missing (its
    install command named)."""


class UnknownLoggerError(UnknownPluginError, LoggerError):
    """``run.loggers`` names no registered logger (the message lists the valid ones)."""


def _check_logger(name: str, cls: type, description: str) -> None:
    if not issubclass(cls, MetricLogger):
        raise TypeError(f"logger {name!r}: {cls!r} is not a MetricLogger subclass")


LOGGERS = Registry(
    LOGGER_GROUP,
    "logger",
    kind="class",
    on_register=_check_logger,
    unknown_error=UnknownLoggerError,
    advice="Set run.loggers to some of them.",
)
"""The metric loggers, name -> :class:`MetricLogger` subclass (entry-point group ``zsceval.loggers``)."""
_LOGGERS = LOGGERS.objects  # the live table (tests patch it)


class MetricLogger:
    """One destination of metric rows. Subclasses set :attr:`name` and, for an optional package,
    :attr:`requires` (its import name) and :attr:`extra` (the zsceval extra that installs it).

    Args:
        folder: the run folder (or a bench folder); files the logger writes go inside it.
        run_name: a human-readable name of the run (``algo layout seed``, a suite's name).
        config: the run's resolved config as a nested dict (sent where the destination keeps one).
        resume_step: for a resumed run, the env steps of the checkpoint it continues from; None
            for a new run.
        logged_upto: for a resumed run, the largest step the stopped run logged (None: unknown or
            nothing); destinations that cannot drop points skip rows up to it.
        state: this logger's entry of ``loggers.json`` (ids of a run to continue); the logger
            fills it for the next resume.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[str | None] = None
    extra: ClassVar[str | None] = None

    def __init__(
        self,
        folder: Path,
        *,
        run_name: str,
        config: Mapping[str, Any],
        resume_step: int | None,
        logged_upto: int | None,
        state: dict[str, Any],
    ) -> None:
        self.folder, self.run_name, self.config = Path(folder), run_name, config
        self.resume_step, self.logged_upto, self.state = resume_step, logged_upto, state

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        """Log one row of scalars (a training iteration's; keys such as ``sparse_return``,
        ``events/soup_delivery``) at ``step`` env steps."""
        raise NotImplementedError

    def log_table(self, name: str, frame: Any) -> None:
        """Log a summary table (a pandas DataFrame) under ``name``; default: ignored."""

    def close(self) -> None:
        """Flush and finish (idempotent)."""


def register_logger(cls: type[MetricLogger]) -> type[MetricLogger]:
    """Class decorator registering a :class:`MetricLogger` under its ``name``.

    Raises:
        ValueError: the name is empty or taken by another class (``DuplicatePluginError``).
    """
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no `name`")
    return LOGGERS.register(cls.name, cls)


def logger_names() -> list[str]:
    """Names ``run.loggers`` accepts: registered loggers and declared entry points."""
    return LOGGERS.names()


def logger_class(name: str) -> type[MetricLogger]:
    """The logger class of ``name`` (its entry point loaded if needed).

    Raises:
        UnknownLoggerError: unknown name (the valid ones listed; a :class:`LoggerError`).
        zsceval.plugins.PluginLoadError: its entry point failed to load.
    """
    return LOGGERS.get(name)


def resolve_logger_names(names: Iterable[str], tensorboard: bool = False) -> list[str]:
    """The loggers of a run, in order without repeats: ``csv`` first (always written), then
    ``names``, ``tensorboard`` when the older ``run.tensorboard`` flag is set, then those of
    :data:`LOGGERS_ENV`."""
    extra = [n.strip() for n in os.environ.get(LOGGERS_ENV, "").split(",") if n.strip()]
    return list(dict.fromkeys(["csv", *names, *(["tensorboard"] if tensorboard else []), *extra]))


def check_loggers(names: Iterable[str]) -> None:
    """Fail before anything is written: every name is a logger and its package imports.

    Raises:
        LoggerError: an unknown name, or a missing package with its install command, e.g.
            ``pip install "zsceval[wandb]"``.
    """
    for name in names:
        cls = logger_class(name)
        if cls.requires is None:
            continue
        try:
            __import__(cls.requires)
        except ImportError as exc:
            how = f'pip install "zsceval[{cls.extra}]"' if cls.extra else f"pip install {cls.requires}"
            raise LoggerError(
                f"run.loggers: the {name!r} logger needs the {cls.requires!r} package ({exc}): {how}, "
                f"or drop {name!r} from run.loggers"
            ) from None


class LoggerGroup:
    """The open loggers of one run; every call goes to each, in order (``csv`` first)."""

    def __init__(self, folder: Path, loggers: list[MetricLogger], state: dict[str, Any]) -> None:
        self.folder, self.loggers, self.state = folder, loggers, state

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        """:meth:`MetricLogger.log_row` of every logger."""
        for logger in self.loggers:
            logger.log_row(row, step)

    def log_table(self, name: str, frame: Any) -> None:
        """:meth:`MetricLogger.log_table` of every logger."""
        for logger in self.loggers:
            logger.log_table(name, frame)

    def close(self) -> None:
        """Close every logger (each once, also when another's close raised)."""
        errors = []
        for logger in self.loggers:
            try:
                logger.close()
            except Exception as exc:  # noqa: BLE001 - close the others, then report
                errors.append(exc)
        self.loggers = []
        if errors:
            raise errors[0]

    def __enter__(self) -> LoggerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_loggers(
    names: Iterable[str],
    folder: str | Path,
    *,
    run_name: str,
    config: Mapping[str, Any] | None = None,
    resume_step: int | None = None,
    metrics_file: str = "metrics.csv",
) -> LoggerGroup:
    """Open the loggers ``names`` (``csv`` is opened first whether named or not) for ``folder``.

    Args:
        names: logger names (:func:`resolve_logger_names`).
        folder: the run or bench folder (created if missing).
        run_name: the run's name at the destinations.
        config: the run's config as a nested dict.
        resume_step: the checkpoint's env steps of a resumed run (the CSV keeps its rows up to it;
            0 drops them all); None for a new run.
        metrics_file: the CSV's file name inside ``folder``.

    Raises:
        LoggerError: see :func:`check_loggers`.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(["csv", *names]))
    check_loggers(names)
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        state = {}
    state = state if isinstance(state, dict) and resume_step is not None else {}
    csv_logger = CSVLogger(
        folder, run_name=run_name, config=config or {}, resume_step=resume_step, logged_upto=None,
        state={}, file=metrics_file,
    )  # fmt: skip
    opened: list[MetricLogger] = [csv_logger]
    try:
        for name in names[1:]:
            entry = state.setdefault(name, {})
            opened.append(
                logger_class(name)(
                    folder,
                    run_name=run_name,
                    config=config or {},
                    resume_step=resume_step,
                    logged_upto=csv_logger.logged_upto,
                    state=entry,
                )  # fmt: skip
            )
    except BaseException:
        LoggerGroup(folder, opened, state).close()
        raise
    if any(state.values()):
        atomic_write_text(folder / STATE, json.dumps(state, indent=2))
    return LoggerGroup(folder, opened, state)


def _scalars(row: Mapping[str, Any]) -> dict[str, float]:
    """The finite-or-not numeric entries of ``row`` as floats (booleans and strings left out)."""
    return {k: float(v) for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}


@register_logger
class CSVLogger(MetricLogger):
    """``metrics.csv``: one line per row, appended and flushed (see the module docstring)."""

    name = "csv"

    def __init__(self, folder: Path, *, file: str = "metrics.csv", **kwargs: Any) -> None:
        super().__init__(folder, **kwargs)
        self.path = self.folder / file
        self.columns: list[str] = []
        self._fh: io.TextIOWrapper | None = None
        self._complete = True
        rows = self._read() if self.path.is_file() else []
        self.logged_upto = max((_step(r) for r in rows), default=None)
        """Largest ``env_steps`` in the file as found (what a stopped run logged), or None."""
        if self.resume_step is None:
            self.path.unlink(missing_ok=True)  # a new run starts a new file
            return
        kept = [r for r in rows if _step(r) <= self.resume_step]
        if rows and (len(kept) < len(rows) or not self._complete):
            self._rewrite(kept)
        elif rows:
            self.columns = list(rows[0])

    def _read(self) -> list[dict[str, str]]:
        text = self.path.read_text()
        self._complete = text.endswith("\n") or not text
        if not self._complete:  # a line cut by a kill mid-write
            text = text[: text.rfind("\n") + 1]
        reader = csv.DictReader(io.StringIO(text))
        self.columns = list(reader.fieldnames or [])
        return [r for r in reader if r.get("env_steps") not in (None, "")]

    def _rewrite(self, rows: list[Mapping[str, Any]]) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=self.columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(self.path, out.getvalue())

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        new = [c for c in row if c not in self.columns]
        if new or not self.path.is_file():
            old = self._read() if self.path.is_file() else []
            self.columns += new
            self._rewrite([*old, row])
            return
        if self._fh is None:
            self._fh = self.path.open("a", newline="")
        line = io.StringIO()
        csv.DictWriter(line, fieldnames=self.columns, lineterminator="\n").writerow(row)
        self._fh.write(line.getvalue())  # one write per line
        self._fh.flush()

    def log_table(self, name: str, frame: Any) -> None:
        """Write ``<folder>/<name>.csv``."""
        atomic_write_text(self.folder / f"{name}.csv", frame.to_csv(index=False))

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _step(row: Mapping[str, str]) -> int:
    return int(float(row["env_steps"]))


@register_logger
class TensorBoardLogger(MetricLogger):
    """TensorBoard event files under ``tensorboard/`` (a resume purges the events after its
    checkpoint: ``SummaryWriter(purge_step=S + 1)``)."""

    name = "tensorboard"
    requires = "tensorboard"
    extra = "tensorboard"

    def __init__(self, folder: Path, **kwargs: Any) -> None:
        super().__init__(folder, **kwargs)
        from torch.utils.tensorboard import SummaryWriter

        purge = None if self.resume_step is None else self.resume_step + 1
        self.writer = SummaryWriter(str(self.folder / "tensorboard"), purge_step=purge)

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        for key, value in _scalars(row).items():
            self.writer.add_scalar(key, value, step)

    def log_table(self, name: str, frame: Any) -> None:
        self.writer.add_text(name, frame.to_string(index=False))

    def close(self) -> None:
        self.writer.close()


@register_logger
class WandbLogger(MetricLogger):
    """A Weights & Biases run with its files under ``<folder>/wandb/``; a resume continues the
    run whose id ``loggers.json`` holds (``wandb.init(id=..., resume="allow")``)."""

    name = "wandb"
    requires = "wandb"
    extra = "wandb"

    def __init__(self, folder: Path, **kwargs: Any) -> None:
        super().__init__(folder, **kwargs)
        import wandb

        self.state.setdefault("id", secrets.token_hex(6))  # wandb run ids: [a-z0-9]
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "zsceval"),
            name=self.run_name,
            id=self.state["id"],
            resume="allow",
            dir=str(self.folder),
            config=dict(self.config),
            reinit="create_new",
        )

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        if self.logged_upto is not None and step <= self.logged_upto:
            return
        self.run.log(_scalars(row), step=step)

    def log_table(self, name: str, frame: Any) -> None:
        import wandb

        self.run.log({name: wandb.Table(dataframe=frame)})

    def close(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


@register_logger
class MLflowLogger(MetricLogger):
    """An MLflow run (client API, no global active run); a resume continues the run whose id
    ``loggers.json`` holds, on the tracking URI recorded with it."""

    name = "mlflow"
    requires = "mlflow"
    extra = "mlflow"

    def __init__(self, folder: Path, **kwargs: Any) -> None:
        super().__init__(folder, **kwargs)
        import mlflow

        uri = self.state.get("tracking_uri") or mlflow.get_tracking_uri()
        self.client = mlflow.MlflowClient(tracking_uri=uri)
        if "run_id" in self.state:
            self.run_id = self.state["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            return
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME", "zsceval")
        experiment = self.client.get_experiment_by_name(name)
        exp_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
        self.run_id = self.client.create_run(exp_id, run_name=self.run_name).info.run_id
        self.state.update(run_id=self.run_id, tracking_uri=uri, experiment_id=exp_id)
        params = [mlflow.entities.Param(k, str(v)[:6000]) for k, v in _flatten(self.config).items()]
        for i in range(0, len(params), 100):  # MLflow's batch limit is 100 params
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def log_row(self, row: Mapping[str, Any], step: int) -> None:
        if self.logged_upto is not None and step <= self.logged_upto:
            return
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        metrics = [Metric(k, v, stamp, step) for k, v in _scalars(row).items() if not math.isnan(v)]
        self.client.log_batch(self.run_id, metrics=metrics)

    def log_table(self, name: str, frame: Any) -> None:
        self.client.log_text(self.run_id, frame.to_csv(index=False), f"{name}.csv")

    def close(self) -> None:
        if self.client is not None:
            self.client.set_terminated(self.run_id)
            self.client = None


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
