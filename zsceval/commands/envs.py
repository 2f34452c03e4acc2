"""``zsceval envs``: list the registered batched environments and their options."""

from __future__ import annotations

import click


@click.command(name="envs")
def envs() -> None:
    """List registered environments (`--env NAME` of `zsceval train`) with their options.

    \b
    Example:
      zsceval envs
    """
    from zsceval.envs.registry import describe, env_options

    for name, description in describe():
        options = ", ".join(f"{k}={v!r}" for k, v in env_options(name).items()) or "-"
        click.echo(f"{name}: {description}\n    options: {options}")
