"""``zsceval partners``: generate behavior-preferring candidates, select an evaluation-partner set,
list the shipped sets, add a set to a collection, make a collection's release and fetch a set."""

from __future__ import annotations

from pathlib import Path

import click

from zsceval.commands._common import COUNT, check_writable, job_failure, parse_steps, write_error
from zsceval.commands._common import plural as _n


@click.group(name="partners")
def partners() -> None:
    """Evaluation partners (ZSC-Eval Sec. 4): candidates, BR-Div selection, partner-set manifests.

    \b
    Examples:
      zsceval partners generate --layout counter_circuit --candidates 24 --out eval_partners/counter_circuit
      zsceval partners select --layout counter_circuit -k 10 --out eval_partners/counter_circuit
      zsceval partners list
      zsceval partners fetch zsceval:counter_circuit@2/validation
    """


_common = [
    click.option("--layout", required=True, help="Layout name or alias."),
    click.option(
        "--out",
        type=click.Path(file_okay=False),
        default=None,
        help="Working directory. [default: eval_partners/LAYOUT]",
    ),
    click.option("--seed", type=int, default=None, help="Seed. [default: 0, or the folder's record]"),
    click.option(
        "--preset",
        default=None,
        help="Training preset of every run. [default: quick, or the folder's record]",
    ),
    click.option("--device", default=None, help="Torch device. [default: cpu, or the folder's record]"),
    click.option(
        "--steps",
        default=None,
        help="Env steps per candidate and per mid BR (e.g. 1e7). [default: the suite budget, or the record]",
    ),
    click.option(
        "--weight-sampling",
        type=click.Choice(["reference", "random"]),
        default=None,
        help="Candidate i's weights: grid point (seed + i) % len(grid) (ZSC-Eval), or a random draw. "
        "[default: reference, or the folder's record]",
    ),
    click.option(
        "--force",
        is_flag=True,
        default=False,
        help="Accept settings that differ from the folder's record (jobs whose inputs changed are redone).",
    ),
]


def _settings(out: str, layout: str, given: dict, force: bool) -> dict:
    """:func:`~zsceval.bench.partner_runs.resolve_settings`, its errors as click errors."""
    from zsceval.bench.partner_runs import PartnerSettingsError, resolve_settings

    try:
        return resolve_settings(out, layout, given, force)
    except PartnerSettingsError as exc:
        raise click.ClickException(str(exc)) from None


def _check(suite, what: str) -> None:
    from zsceval.bench.partner_runs import check_partner_suite
    from zsceval.bench.suite import SuiteError

    try:
        check_partner_suite(suite, what)
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from None


def _resolve_layout(layout: str) -> str:
    from zsceval.envs.overcooked import resolve_layout_name

    try:
        return resolve_layout_name(layout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--layout") from None


def _options(fn):
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@partners.command(name="generate")
@_options
@click.option(
    "--candidates",
    type=click.IntRange(min=1),
    default=None,
    help="Weight vectors to train. [default: 8, or the folder's record]",
)
def generate(layout, out, seed, preset, device, steps, weight_sampling, force, candidates) -> None:
    """Train behavior-preferring candidates (pi_w with its BR) and compute their behavior features.

    The settings are recorded in OUT/partners.yaml, which `partners select` reads."""
    from zsceval.bench.partner_runs import generate_partners, partner_suite, write_settings
    from zsceval.execution import JobError
    from zsceval.execution.locks import FolderLock

    layout = _resolve_layout(layout)
    out = out or f"eval_partners/{layout}"
    given = {"seed": seed, "preset": preset, "device": device, "steps": parse_steps(steps),
             "weight_sampling": weight_sampling, "candidates": candidates}  # fmt: skip
    st = _settings(out, layout, given, force)
    suite = partner_suite(st, k=1)
    _check(suite, "partners generate")
    check_writable(out)
    try:
        with FolderLock(out, "partner folder"):  # the record and the jobs: one writer
            write_settings(out, st)
            returns = generate_partners(suite, out)
    except JobError as exc:
        raise job_failure(exc) from None
    except OSError as exc:
        raise write_error(exc) from None
    for candidate, final_return in returns:
        click.echo(f"{candidate}: return with its BR {final_return:.1f}")


@partners.command(name="select")
@_options
@click.option(
    "-k", "k", type=int, required=True, help="Partners to select (the set has 2k: finals and mids)."
)
@click.option(
    "--candidates",
    type=click.IntRange(min=1),
    default=None,
    help="As given to `generate`; needed when OUT holds no record of `generate` (select then generates "
    "them first). [default: the folder's record]",
)
@click.option(
    "--min-return",
    type=float,
    default=None,
    help="Drop candidates whose return with their BR is <= this. [default: 10, ZSC-Eval's]",
)
def select(
    layout, out, seed, preset, device, steps, weight_sampling, force, k, candidates, min_return
) -> None:
    """Select k candidates by BR-Div (k-DPP), train BRs of their mid checkpoints, write the manifest.

    Then notes name the (partner, seat) units whose BR return misstates BR-Prox: a BR that never
    scores, or a fresh mid BR that the candidate's co-trained BR beats.

    Settings not given are read from OUT/partners.yaml (written by `generate`)."""
    from zsceval.bench.br_notes import set_folder_notes
    from zsceval.bench.partner_runs import RECORD, partner_suite, select_partners, write_settings
    from zsceval.execution import JobError
    from zsceval.execution.locks import FolderLock

    layout = _resolve_layout(layout)
    out = out or f"eval_partners/{layout}"
    if candidates is None and not (Path(out) / RECORD).is_file():
        raise click.ClickException(
            f"{out} holds no {RECORD}: `zsceval partners generate --layout {layout} --out {out}` was not "
            "run there. Run it first, or pass --candidates N to generate N candidates as part of select"
        )
    given = {"seed": seed, "preset": preset, "device": device, "steps": parse_steps(steps),
             "weight_sampling": weight_sampling, "candidates": candidates}  # fmt: skip
    st = _settings(out, layout, given, force)
    if k > st["candidates"]:
        raise click.ClickException(f"-k {k} is larger than the number of candidates ({st['candidates']})")
    suite = partner_suite(st, k=k, min_return=min_return)
    _check(suite, "partners select")
    check_writable(out)
    try:
        with FolderLock(out, "partner folder"):
            write_settings(out, st, overwrite=False)
            manifest = select_partners(suite, out)
    except (JobError, ValueError) as exc:
        raise job_failure(exc) from None
    except OSError as exc:
        raise write_error(exc) from None
    click.echo(f"partner-set manifest: {manifest}")
    for line in set_folder_notes(Path(manifest).parent):
        click.echo(f"note: {line}")


def _human_model_options(role: str):
    """The options of ``partners human-proxy`` and ``partners bc`` (one BC recipe, two splits)."""

    def wrap(f):
        for opt in reversed(
            [
                click.option(
                    "--layout",
                    required=True,
                    help="A layout with 2019 human data (cramped_room, asymmetric_advantages, "
                    "coordination_ring, forced_coordination = random0, counter_circuit = random3).",
                ),
                click.option(
                    "--out", default=None, help=f"Output folder [default: eval_partners/<layout>/{role}]."
                ),
                click.option(
                    "--epochs", type=click.IntRange(min=1), default=100, show_default=True, help="BC epochs."
                ),
                click.option(
                    "--seed",
                    type=int,
                    default=0,
                    show_default=True,
                    help="Seed of init, shuffles and validation split.",
                ),
                click.option(
                    "--class-balance/--no-class-balance",
                    default=True,
                    show_default=True,
                    help="Weight the loss by inverse action frequency (STAY is 49-71% of human actions).",
                ),
                click.option(
                    "--data-dir",
                    default=None,
                    help="Folder of clean_{train,test}_trials.pickle [default: the installed overcooked-ai "
                    "package; env ZSCEVAL_HUMAN_DATA].",
                ),
                click.option(
                    "--json/--no-json",
                    "as_json",
                    default=False,
                    show_default=True,
                    help="Print the record as JSON.",
                ),
            ]
        ):
            f = opt(f)
        return f

    return wrap


def _build_human_model(role, layout, out, epochs, seed, class_balance, data_dir, as_json) -> None:
    import json

    from tqdm import tqdm

    from zsceval.human.bc import BCConfig
    from zsceval.human.partners import build_human_model, default_proxy_dir

    try:
        folder = Path(out) if out else default_proxy_dir(layout, role)
        cfg = BCConfig(epochs=epochs, seed=seed, class_balance=class_balance)
        with tqdm(total=epochs, desc=f"{role} {layout}", unit="epoch", disable=as_json) as bar:

            def progress(epoch, row):
                bar.set_postfix(
                    val_loss=f"{row['validation_loss']:.3f}", val_acc=f"{row['validation_accuracy']:.3f}"
                )
                bar.update(1)

            record = build_human_model(layout, folder, role, cfg, data_dir=data_dir, progress=progress)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({k: v for k, v in record.items() if k != "history"}, indent=2))
        return
    m, fit, held = record["metrics"], record["trained_on"], record["held_out"]
    click.echo(f"{role} model of {record['layout']} -> {folder} (epoch {m['best_epoch']} of {epochs})")
    click.echo(
        f"  fitted on the {fit} split ({record['data'][f'{fit}_trials']} trials), "
        f"held out: the {held} split ({record['data'][f'{held}_trials']} trials)"
    )
    for key, label in (
        ("fit", f"{fit} (fit)"),
        ("validation", "validation"),
        ("held_out", f"{held} (held out)"),
    ):
        if key in m:
            r = m[key]
            click.echo(
                f"  {label:<16} accuracy {r['accuracy']:.3f} (majority class {r['majority_accuracy']:.3f})  "
                f"balanced accuracy {r['balanced_accuracy']:.3f} "
                f"(majority {r['majority_balanced_accuracy']:.3f})"
            )


@partners.command(name="human-proxy")
@_human_model_options("human-proxy")
def human_proxy(layout, out, epochs, seed, class_balance, data_dir, as_json) -> None:
    """Behavior-clone the 2019 human-human trials of LAYOUT into H_proxy, the evaluation partner.

    Fits the test split, as Carroll et al. (2019) and human_aware_rl do for the human proxy (15% of
    its trials held out to pick the epoch), and reports accuracy on the train split beside a
    majority-class baseline. The five classic layouts' H_proxy ships with zsceval (`--partner-set
    human-proxy` plays it); this rebuilds one, which `--partner-set FOLDER` plays. Needs the trials:
    pip install --no-deps overcooked-ai==1.1.0.

    \b
    Examples:
      zsceval partners human-proxy --layout counter_circuit --out my-proxy
      zsceval eval --agent runs/sp_counter_circuit_s0 --layout counter_circuit --partner-set human-proxy
    """
    _build_human_model("human-proxy", layout, out, epochs, seed, class_balance, data_dir, as_json)


@partners.command(name="bc")
@_human_model_options("bc")
def bc(layout, out, epochs, seed, class_balance, data_dir, as_json) -> None:
    """Behavior-clone the 2019 human-human trials of LAYOUT into BC, a training partner.

    Fits the train split (the model PPO_BC trains with in Carroll et al. 2019) and reports accuracy on
    the test split. Never score with it: H_proxy (`zsceval partners human-proxy`) is fitted on the
    other split so that no agent is scored with a model it trained with.

    \b
    Example:
      zsceval partners bc --layout counter_circuit
    """
    _build_human_model("bc", layout, out, epochs, seed, class_balance, data_dir, as_json)


@partners.command(name="probe")
@click.option(
    "--layout", required=True, help="Layout the probe plays (forced_coordination, counter_circuit, ...)."
)
@click.option(
    "--role",
    type=click.Choice(["onion_passer", "supplier", "cook"]),
    default="onion_passer",
    show_default=True,
    help="onion_passer: the scripted probe of Biswas et al., 'Who is Helping Whom?' (puts onions on a shared "
    "counter); supplier: also passes dishes; cook: the other side of the kitchen.",
)
@click.option("--out", default=None, help="Output folder [default: eval_partners/<layout>/probe-<role>].")
def probe(layout, role, out) -> None:
    """Save the scripted probe partner of Biswas et al. ('Who is Helping Whom?') as a checkpoint that
    `zsceval eval --partner` plays.

    \b
    Examples:
      zsceval partners probe --layout forced_coordination
      zsceval eval --agent runs/sp_forced_coordination_s0 --layout forced_coordination \\
                   --partner eval_partners/forced_coordination/probe-onion_passer --interdependence
    """
    from zsceval.envs.overcooked import load_layout
    from zsceval.evaluation.probe_partner import save_probe_partner

    try:
        lay = load_layout(layout)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    ckpt = save_probe_partner(lay.name, role, out)
    click.echo(f"scripted probe ({role}) for {lay.name} -> {ckpt}")


@partners.command(name="list")
@click.option("--json/--no-json", "as_json", default=False, show_default=True, help="Print the sets as JSON.")
def list_sets(as_json) -> None:
    """The installed evaluation-partner sets: name, layout, split, partners per level, provenance.

    Play one with `zsceval eval --agent RUN --partner-set NAME` (docs/partner-sets.md).

    \b
    Examples:
      zsceval partners list
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner-set zsceval:counter_circuit
    """
    import json

    from zsceval.evaluation.manifest import ManifestError
    from zsceval.evaluation.shipped_sets import list_sets as installed

    try:
        sets = installed()
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in sets], indent=2))
        return
    if not sets:
        click.echo("no partner set is installed yet (docs/partner-sets.md says which runs will produce them)")
        return
    for s in sets:
        levels = ", ".join(f"{n} {lvl}" for lvl, n in s.levels.items())
        p = s.provenance
        where = "" if s.installed else f"; not downloaded: zsceval partners fetch {s.full_name}"
        where = " (acting-only copy)" if s.acting_only else where
        size = "" if s.bytes is None else f", {s.bytes / 1e6:.1f} MB"
        protocol = "" if s.protocol is None else f", {s.protocol} protocol"
        click.echo(
            f"{s.full_name}: layout {s.layout}, {s.split} split, {_n(s.partners, 'partner')} ({levels})"
            + size
            + protocol
            + where
        )
        click.echo(
            f"    suite {p.suite}, seed {p.seed}, commit {(p.commit or 'unknown')[:12]}, {p.date}, "
            f"zsceval {s.engine_version}; budgets: "
            + ", ".join(f"{k} {v}" for k, v in (p.budgets or {}).items() if v is not None)
        )


@partners.command(name="export")
@click.option(
    "--from", "source", required=True, type=click.Path(file_okay=False, exists=True),
    help="A finished `zsceval bench` or `zsceval partners select` output folder.",
)  # fmt: skip
@click.option("--layout", required=True, help="The layout whose partner set to add.")
@click.option(
    "--into", "root", default="eval_partners", show_default=True,
    help="The collection folder (index.yaml and sets/); eval_partners is zsceval's own.",
)  # fmt: skip
@click.option("--name", default=None, help="The set's name. [default: the layout]")
@click.option(
    "--version", type=click.IntRange(min=1), default=1, show_default=True, help="The set's version."
)
@click.option(
    "--episodes", type=COUNT, default=50, show_default=True,
    help="Episodes per (partner, seat) for the validation split's BR returns.",
)  # fmt: skip
@click.option(
    "--validation/--no-validation", default=True, show_default=True,
    help="Also add the validation split (the candidates the selection left out, with their BRs).",
)  # fmt: skip
@click.option("--suite", default=None, help="Provenance: the suite name. [default: the folder's record]")
@click.option("--commit", default=None, help="Provenance: git commit. [default: the checkpoints' record]")
@click.option("--device", default="cpu", show_default=True, help="Torch device.")
@click.option(
    "--acting-only/--full", default=True, show_default=True,
    help="Keep what playing and tuning need (partner actors and BR returns; BR checkpoints in the "
    "validation split only), or everything (critics, the test split's BRs).",
)  # fmt: skip
@click.option(
    "--protocol", type=click.Choice(["reference", "quick"]), default=None,
    help="How the set was made: ZSC-Eval's protocol at the reference's budgets, or reduced budgets. "
    "NAME without @VERSION names the newest reference version. [default: unstated]",
)  # fmt: skip
def export(
    source, layout, root, name, version, episodes, validation, suite, commit, device, acting_only, protocol
) -> None:
    """Add a finished pipeline folder's partner set (test split) and the held-out candidates
    (validation split) to a collection, with its index entries and provenance.

    \b
    Examples:
      zsceval partners export --from bench/overcooked-s12 --layout counter_circuit --version 1
    """
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.generation.set_export import export_sets

    layout = _resolve_layout(layout)
    check_writable(root)
    try:
        added = export_sets(source, layout, root, name=name, version=version, episodes=episodes,
                            device=device, validation=validation, suite=suite, commit=commit,
                            acting_only=acting_only, protocol=protocol)  # fmt: skip
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise write_error(exc) from None
    for s in added:
        size = "" if s.bytes is None else f", {s.bytes / 1e6:.1f} MB"
        click.echo(f"added {s.name}@{s.version}/{s.split}: {_n(s.partners, 'partner')}{size} -> {s.folder}")


@partners.command(name="fetch")
@click.argument("name")
@click.option(
    "--url", default=None,
    help="Base URL of the archives (https://... or file:///...). [default: $ZSCEVAL_PARTNERS_URL, "
    "else the collection index's mirror]",
)  # fmt: skip
def fetch(name, url) -> None:
    """Download a listed partner set that is not installed (validation splits, older versions, the
    full test split with critics and BR checkpoints) into the user's cache, checked against the
    SHA-256 in the collection's index.

    The package installs only the test split of each set's newest version (acting-only: the
    partners' actors and the stored BR returns). `zsceval partners list` shows what is downloaded.

    \b
    Examples:
      zsceval partners fetch zsceval:counter_circuit@2/validation
      ZSCEVAL_PARTNERS_URL=file:///data/mirror zsceval partners fetch zsceval:cramped_room@1/validation
    """
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.evaluation.set_archives import fetch_set

    try:
        entry = fetch_set(name, url=url)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise write_error(exc) from None
    click.echo(f"{entry.full_name}: {_n(entry.partners, 'partner')}, verified -> {entry.folder}")


@partners.command(name="release")
@click.option(
    "--into", "root", default="eval_partners", show_default=True,
    help="The collection folder (index.yaml and the full sets under sets/).",
)  # fmt: skip
@click.option(
    "--out", default="build/partner-sets", show_default=True, type=click.Path(file_okay=False),
    help="Where the archives are written (upload them to the mirror).",
)  # fmt: skip
@click.option("--mirror", default=None, help="A new base URL of the archives to record in the index.")
def release(root, out, mirror) -> None:
    """Make a collection's release: one archive per set (.tar.gz, SHA-256 in index.yaml), the
    acting-only copy of each set's newest test split (installed with the package) and a copy of
    every test split's manifest (training excludes those partners).

    Run it after `zsceval partners export`, commit the index, shipped/ and manifests/, and upload
    the archives to the mirror (docs/partner-sets.md).

    \b
    Examples:
      zsceval partners release
      zsceval partners release --mirror https://example.org/zsceval/partner-sets/
    """
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.evaluation.set_archives import release_sets

    check_writable(root)
    try:
        entries = release_sets(root, out, mirror=mirror)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise write_error(exc) from None
    for e in entries:
        shipped = f", installed acting-only: {e['shipped']['path']}" if "shipped" in e else ""
        size = e["archive"]["size"] / 1e6
        if "replaces" in e["archive"]:
            shipped += f"; its SHA-256 changed (was {e['archive']['replaces'][:12]}): upload it again"
        click.echo(
            f"{e['name']}@{e['version']}/{e['split']}: {out}/{e['archive']['file']} ({size:.1f} MB){shipped}"
        )
