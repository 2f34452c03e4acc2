"""``zsceval layouts``: list the shipped Overcooked layouts, or show one."""

from __future__ import annotations

import click


@click.group(name="layouts", invoke_without_command=True)
@click.pass_context
def layouts(ctx: click.Context) -> None:
    """List Overcooked layouts (paper names with ZSC-Eval aliases).

    \b
    Examples:
      zsceval layouts
      zsceval layouts show counter_circuit
      zsceval layouts show random3
    """
    if ctx.invoked_subcommand is not None:
        return
    from zsceval.envs.overcooked import list_layouts

    rows = [
        (lay.name, ", ".join(lay.aliases) or "-", lay.dynamics, f"{lay.width}x{lay.height}", lay.title)
        for lay in list_layouts()
    ]
    header = ("name", "aliases", "dynamics", "size", "title")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())


@layouts.command(name="show")
@click.argument("name")
def show(name: str) -> None:
    """Print the grid and metadata of layout NAME (a name, an alias, or a .layout path)."""
    from zsceval.envs.overcooked import load_layout

    try:
        lay = load_layout(name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{lay.title} ({lay.name})")
    click.echo(f"  aliases:   {', '.join(lay.aliases) or '-'}")
    click.echo(f"  dynamics:  {lay.dynamics}")
    click.echo(f"  size:      {lay.width} x {lay.height} (W x H), {lay.num_players} players")
    click.echo(f"  horizon:   {lay.horizon}")
    for r in lay.orders:
        click.echo(f"  order:     {' '.join(r.ingredients)}  value {r.value}  cook time {r.time}")
    if lay.dynamics == "multi_recipe":
        click.echo(f"  non-order: value {lay.non_order_value}  cook time {lay.default_cook_time}")
    starts = ", ".join(f"player {i} at {p}" for i, p in enumerate(lay.start_positions))
    click.echo(f"  starts:    {starts}")
    if lay.source:
        click.echo(f"  file:      {lay.source}")
    click.echo("")
    for row in lay.grid_text.split("\n"):
        click.echo("  " + row)
