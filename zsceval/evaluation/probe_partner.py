"""The scripted probe of Biswas et al. ("Who is Helping Whom?") saved as a partner checkpoint (``zsceval
partners probe``).

The probe (:class:`zsceval.interdependence.ScriptedProbe`) acts from observations by a fixed role;
saved as a one-agent checkpoint (agent name ``probe``, the ego) it is a partner that
``zsceval eval --partner FOLDER --interdependence`` plays like any trained agent.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_probe_dir", "save_probe_partner"]


def default_probe_dir(layout: str, role: str) -> Path:
    """``eval_partners/<layout>/probe-<role>`` (relative to the working directory; canonical layout name)."""
    return Path("eval_partners") / layout / f"probe-{role}"


def save_probe_partner(layout: str, role: str = "onion_passer", out: str | Path | None = None) -> Path:
    """Save the scripted probe of ``role`` for ``layout`` as a checkpoint (step 0) under ``out``.

    Args:
        layout: layout name or alias; the probe reads its observation encoding.
        role: ``onion_passer`` (Biswas et al.'s probe), ``supplier`` or ``cook``
            (:data:`zsceval.interdependence.probe.ROLES`).
        out: the partner's run folder (default :func:`default_probe_dir`); the checkpoint is
            written to ``out/checkpoints/step_000000000000``.

    Returns:
        The checkpoint directory.

    Raises:
        ValueError: an unknown layout or role.
        OSError: ``out`` cannot be written.
    """
    from zsceval.envs.overcooked import OvercookedEnv, load_layout
    from zsceval.interdependence import ScriptedProbe
    from zsceval.rl.checkpoint import save_checkpoint

    lay = load_layout(layout)
    folder = Path(out) if out else default_probe_dir(lay.name, role)
    env = OvercookedEnv(lay, num_envs=1)
    agent = ScriptedProbe(env.obs_channels, role)
    config = {"env": {"name": "overcooked", "layout": lay.name}, "probe": {"role": role}}
    meta = {
        "algo": "interdep_probe",
        "layout": lay.name,
        "ego": "probe",
        "env_spec": env.spec_dict(),
        "config": config,
    }
    return save_checkpoint(folder / "checkpoints", 0, {"probe": agent}, meta)
