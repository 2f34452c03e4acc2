"""The ``zsceval`` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module under ``zsceval.commands`` and is imported only when it is
invoked (or when ``--help`` lists it), so ``zsceval layouts`` does not pay for importing the
training stack.
"""

from __future__ import annotations

import importlib

import click

from zsceval import __version__

# name -> (module, attribute, one-line help shown by `zsceval --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "layouts": ("zsceval.commands.layouts", "layouts", "List Overcooked layouts or show one."),
    "algos": ("zsceval.commands.algos", "algos", "List registered ZSC algorithms."),
    "envs": ("zsceval.commands.envs", "envs", "List registered environments and their options."),
    "train": ("zsceval.commands.train", "train", "Train an algorithm on a layout."),
    "eval": ("zsceval.commands.evaluate", "evaluate", "Cross-play two saved agents in every seat."),
    "partners": ("zsceval.commands.partners", "partners", "Generate and select evaluation partners."),
    "bench": ("zsceval.commands.bench", "bench", "Run a benchmark suite (resumable)."),
    "report": ("zsceval.commands.report", "report", "Print BR-Prox tables and write figures."),
    "render": ("zsceval.commands.render", "render", "Draw a state as a PNG or an episode as a GIF."),
    "play": ("zsceval.commands.play", "play", "Play with a saved agent in the browser (arrow keys, space)."),
}


_RESUME_HINTS = {
    "train": "the checkpoints written so far are kept; `zsceval train --resume --out OUT` continues from "
    "the last one (a multi-stage chain: the same command, or --resume)",
    "bench": "finished jobs are kept; run the same command again to resume (a job continues from its "
    "last checkpoint)",
    "partners": "finished jobs are kept; run the same command again to resume",
}
"""What a Ctrl-C leaves, by subcommand (click alone prints only ``Aborted!``)."""


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module_name, attr, short = COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise

            # Not implemented yet: show it, but say so instead of failing with a traceback.
            @click.command(name=name, help=f"{short} (not available in this version)")
            def unavailable() -> None:
                raise click.ClickException(f"`zsceval {name}` is not available in this version yet.")

            return unavailable
        return getattr(module, attr)

    def invoke(self, ctx: click.Context):
        """Run the subcommand; a folder that another process writes is a one-line error."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo(
                f"\ninterrupted: {_RESUME_HINTS.get(ctx.invoked_subcommand, 'nothing was lost')}", err=True
            )
            raise click.exceptions.Exit(130) from None
        except Exception as exc:
            from zsceval.execution.locks import FolderLockedError

            if isinstance(exc, FolderLockedError):
                raise click.ClickException(str(exc)) from None
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="zsceval")
def main() -> None:
    """zsceval: benchmark zero-shot coordination (ZSC) agents.

    \b
    Examples:
      zsceval layouts
      zsceval train --algo sp --layout counter_circuit --preset quick
      zsceval eval --agent runs/sp_a --partner runs/sp_b --layout counter_circuit
      zsceval bench --suite overcooked-quick
    """


if __name__ == "__main__":
    main()
