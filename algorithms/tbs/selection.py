"""Online selection rules of TBS and its baselines: pure tensor functions, batched over rows.

A *row* is one game seen from the ego's seat. Every function here is stateless: the caller (a
composite agent in :mod:`zsceval.algorithms.tbs.agents`) carries the accumulators between steps.

**TBS (TBS paper, Sec. 3.3, Eq. 8; window: App. A.1, Eq. 9).** At step t each cluster ToM model
``ToM_Ci`` and the global model predict M Bernoulli concept probabilities; the per-step distance of
cluster i is ``d_i(t) = sum_j KL(Bern(c^i_t[j]) || Bern(c^g_t[j]))`` and the accumulated distance
``D_i(t)`` sums ``d_i`` over every step of the episode so far (Eq. 8) or over the ``w`` most recent
steps (Eq. 9, a ring buffer ``[N, w, k]``). The agent plays the best response of ``argmin_i D_i``.
*Reading of "at the beginning of each episode the agent randomly selects one policy"*: the random
best response acts at t = 0 (its ToM outputs already enter ``D``), and the KL rule decides from
t = 1 on; with ``reselect_every = n`` (App. A.2) the choice is re-made at t = n, 2n, ..., so
``n >= horizon`` degenerates to Random Selection, which is what the ablation's monotone decline
suggests. ``first_step_random=False`` uses the KL rule already at t = 0.
*Window*: Eq. 9 sums ``t' = max(0, t-w) .. t`` (w + 1 terms); App. A.1's text says "the most recent
w timesteps"; we follow the text (w terms) -- see docs/differences.md ("TBS selection").

**CBPR (docs/reference-protocol.md "TBS baselines").** Queue of the last L = 20 (partner obs, partner action)
pairs kept as per-type log-probabilities ``[N, L, K]``; likelihood ``lambda = exp(sum of the
queue)``; ``p = (lambda + eps) / (sum lambda + K eps)``; intra-episode belief ``xi <- clip(norm_eps(p
xi))``; integrated belief ``zeta = rho^t beta + (1 - rho^t) xi`` with beta uniform (single-episode
zero-shot evaluation); act with ``argmax zeta``; then ``xi <- clip(zeta)``; clip range [1e-4, 0.9999].

**CEM (docs/reference-protocol.md "TBS baselines", "CEM", inferred reading of TSF).** Per pool pair j, the
mean cross entropy of the observed partner actions under pair j's partner-seat policy over the observed
steps (all, or the w most recent observed ones); act with the ego-seat agent of ``argmin_j CE_j``.
"""

from __future__ import annotations

import torch

__all__ = [
    "CBPR_CLIP",
    "accumulate_distances",
    "argmax_random_ties",
    "bernoulli_kl",
    "cbpr_integrate",
    "cbpr_likelihood",
    "cbpr_update",
    "cem_scores",
    "cluster_distances",
    "kl_select",
    "push_ring",
]

CBPR_CLIP = (1e-4, 0.9999)
"""Entrywise clip of CBPR's beliefs after every update (CBPR ``zsceval/algorithms/cbpr.py``)."""


def bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Elementwise ``KL(Bern(p) || Bern(q)) = p log(p/q) + (1-p) log((1-p)/(1-q))``.

    Args:
        p, q: probabilities of the same (broadcastable) shape; both clamped to ``[eps, 1 - eps]``
            so the result is finite.
        eps: clamp margin.

    Returns:
        ``float32`` tensor of the broadcast shape, >= 0 (nats).
    """
    p = p.float().clamp(eps, 1 - eps)
    q = q.float().clamp(eps, 1 - eps)
    return p * (p.log() - q.log()) + (1 - p) * ((1 - p).log() - (1 - q).log())


def cluster_distances(c_clusters: torch.Tensor, c_global: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Per-step TBS distance of every cluster: ``d_i = sum_j KL(Bern(c^i[j]) || Bern(c^g[j]))``.

    Args:
        c_clusters: ``float32 [N, k, M]`` concept probabilities of the k cluster ToM models.
        c_global: ``float32 [N, M]`` concept probabilities of the global ToM model.

    Returns:
        ``float32 [N, k]`` (the summand of Eq. 8 at one step).
    """
    return bernoulli_kl(c_clusters, c_global[:, None, :], eps).sum(-1)


def push_ring(ring: torch.Tensor, values: torch.Tensor, slot: torch.Tensor, mask: torch.Tensor | None = None):
    """Write ``values [N, ...]`` into ``ring [N, w, ...]`` at ``slot int64 [N]`` (rows in ``mask`` only).

    Returns:
        the new ring (a new tensor; the input is not modified).
    """
    w = ring.shape[1]
    onehot = torch.nn.functional.one_hot(slot.long() % w, w).to(torch.bool)  # [N, w]
    if mask is not None:
        onehot &= mask[:, None]
    onehot = onehot.view(*onehot.shape, *([1] * (ring.dim() - 2)))
    return torch.where(onehot, values[:, None], ring)


def accumulate_distances(
    total: torch.Tensor, ring: torch.Tensor, d: torch.Tensor, t: torch.Tensor, window: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Add the step-t distances to a row's accumulator (Eq. 8) or window ring buffer (Eq. 9).

    Rows must already be reset at their episode start (``total`` and ``ring`` zero).

    Args:
        total: ``float32 [N, k]`` sum over all steps so far (used when ``window`` is None).
        ring: ``float32 [N, w, k]`` per-step distances of the last w steps (``w = window``; any
            shape when ``window`` is None, returned unchanged).
        d: ``float32 [N, k]`` distances of step t.
        t: ``int64 [N]`` step index in the episode (0 at the first step).
        window: w, or None for the whole episode.

    Returns:
        ``(total, ring, D)``: the new accumulators and ``D float32 [N, k]``, the distances to
        minimize (``total`` for Eq. 8, the ring's sum for Eq. 9).
    """
    if window is None:
        total = total + d
        return total, ring, total
    ring = push_ring(ring, d, t)
    return total, ring, ring.sum(1)


def kl_select(
    D: torch.Tensor,
    t: torch.Tensor,
    choice: torch.Tensor,
    random_choice: torch.Tensor,
    reselect_every: int = 1,
    first_step_random: bool = True,
) -> torch.Tensor:
    """TBS's choice at step t: ``argmin_i D_i`` (first index on ties) at selection steps.

    Selection steps are t = 0 (random pick when ``first_step_random``) and every t with
    ``t % reselect_every == 0``; in between the previous choice is kept.

    Args:
        D: ``float32 [N, k]`` accumulated distances including step t.
        t: ``int64 [N]`` step index in the episode.
        choice: ``int64 [N]`` choice of step t - 1 (ignored where t = 0).
        random_choice: ``int64 [N]`` uniform draws in 0..k-1 for rows at t = 0.
        reselect_every: steps per selection n >= 1 (App. A.2).
        first_step_random: random best response at t = 0 (the paper) instead of the KL rule.

    Returns:
        ``int64 [N]``.
    """
    t = t.long()
    kl_choice = D.argmin(-1)
    select = (t % reselect_every) == 0
    new = torch.where(select, kl_choice, choice.long())
    if first_step_random:
        new = torch.where(t == 0, random_choice.long(), new)
    return new


def argmax_random_ties(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """``argmax`` over the last dim of ``x [N, k]`` with exact ties broken uniformly at random.

    One ``[N, k]`` uniform draw is taken from ``generator`` on every call.

    Returns:
        ``int64 [N]``.
    """
    u = torch.rand(x.shape, generator=generator, device=x.device)
    best = x == x.max(-1, keepdim=True).values
    return torch.where(best, u, -1.0).argmax(-1)


def cbpr_likelihood(log_probs: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """CBPR's normalized queue likelihood ``p(tau) = (lambda + eps) / (sum lambda + K eps)``.

    Args:
        log_probs: ``float [N, L, K]`` log-probability of each queued partner action under each
            type's action model; empty slots hold 0 (probability 1).
        eps: smoothing (CBPR: 1e-7).

    Returns:
        ``float64 [N, K]`` (computed in float64 like the reference's numpy, so a 20-step product
        of small probabilities does not underflow to 0 as early).
    """
    lam = log_probs.double().sum(1).exp()
    K = lam.shape[-1]
    return (lam + eps) / (lam.sum(-1, keepdim=True) + K * eps)


def cbpr_update(
    xi: torch.Tensor, likelihood: torch.Tensor, eps: float = 1e-7, clip: tuple[float, float] = CBPR_CLIP
) -> torch.Tensor:
    """CBPR's intra-episode belief update ``xi <- clip(norm_eps(p * xi))``.

    ``norm_eps(x)_tau = (x_tau + eps) / (sum x + K eps)``; the clip is applied after
    normalization (so the result may not sum to exactly 1, as in the reference).

    Args:
        xi: ``float [N, K]`` belief before the update.
        likelihood: ``float [N, K]`` from :func:`cbpr_likelihood`.

    Returns:
        ``float32 [N, K]``.
    """
    x = likelihood.double() * xi.double()
    K = x.shape[-1]
    x = (x + eps) / (x.sum(-1, keepdim=True) + K * eps)
    return x.clamp(*clip).float()


def cbpr_integrate(xi: torch.Tensor, beta: torch.Tensor, t: torch.Tensor, rho: float = 0.1) -> torch.Tensor:
    """CBPR's integrated belief ``zeta = rho^t beta + (1 - rho^t) xi``.

    Args:
        xi: ``float [N, K]`` intra-episode belief; beta ``float [N, K]`` inter-episode belief.
        t: ``int64 [N]`` step index in the episode (0 at the first step, where zeta = beta).
        rho: weight decay of the inter-episode belief (CBPR default 0.1).

    Returns:
        ``float32 [N, K]``.
    """
    r = torch.pow(torch.tensor(rho, dtype=torch.float64, device=xi.device), t.double())[:, None]
    return (r * beta.double() + (1 - r) * xi.double()).float()


def cem_scores(sum_nll: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Mean cross entropy ``CE_j = sum_nll_j / count`` of each pool pair (inf where count = 0).

    Args:
        sum_nll: ``float32 [N, J]`` summed ``-log pi_j(a^p_t | o^p_t)`` over the observed steps.
        count: ``[N]`` number of observed steps.

    Returns:
        ``float32 [N, J]``.
    """
    c = count.float()[:, None]
    return torch.where(c > 0, sum_nll / c.clamp(min=1), torch.full_like(sum_nll, float("inf")))
