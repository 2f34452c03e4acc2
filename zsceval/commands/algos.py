"""``zsceval algos``: list the registered ZSC algorithms with one-line descriptions."""

from __future__ import annotations

import click

from zsceval import registry


@click.command(name="algos")
def algos() -> None:
    """List registered ZSC algorithms (built-in and from the `zsceval.algorithms` entry points)."""
    rows = registry.describe()
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        click.echo(f"{name.ljust(width)}  {description}")
