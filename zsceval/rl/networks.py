"""Actor and critic networks of the MAPPO core (ZSC-Eval's architecture, docs/reference-protocol.md "Training
settings").

Encoders take the environment's uint8 observation ``[N, H, W, C]``, cast it to float32 and
multiply by ``obs_scale`` (1.0 by default: the raw 0/1 planes, counts and cook times; ZSC-Eval
multiplies by 255 in the env and divides by 255 in its CNN, which is the same input).

* ``mlp``: flatten -> ``mlp_layers`` x (Linear(hidden) -> ReLU).
* ``cnn``: Conv 32 3x3 -> Conv 64 3x3 -> Conv 32 3x3 (stride 1, padding 1, ReLU) -> flatten ->
  Linear(hidden) -> ReLU -> ``mlp_layers`` x (Linear(hidden) -> ReLU) (ZSC-Eval: 1 layer).
* optional GRU(hidden) whose state is zeroed at episode starts.
* heads: policy Linear(hidden -> A) with orthogonal gain 0.01; value Linear(hidden -> 1), gain 1.

Hidden layers use orthogonal init with gain sqrt(2) (ReLU) and zero biases, as MAPPO.

Other architectures are **model plug-ins** (``model.kind`` other than ``mlp`` and ``cnn``): a
class registered with :func:`register_model`, or declared in the entry-point group
``zsceval.models`` (:mod:`zsceval.plugins`; the built-in ones in ``setup.py``), whose classmethods
``actor(obs_shape, num_actions, model)`` and ``critic(critic_obs_shape, model)`` return modules
with the interface of :class:`ActorNet` and :class:`CriticNet`: a ``trunk`` (``step``,
``sequence``, ``gru`` (None when feed-forward), ``hidden_size``, ``out_size``) and ``out``.
:func:`build_networks` builds either kind from a policy's spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from zsceval.plugins import Registry, UnknownPluginError

__all__ = [
    "ENCODER_KINDS",
    "MODEL_GROUP",
    "ActorNet",
    "CriticNet",
    "Encoder",
    "UnknownModelError",
    "build_networks",
    "model_kinds",
    "register_model",
    "ObsColumns",
    "cast_observation",
    "compress_observation",
    "observation_columns",
    "columns_of_range",
    "cast_shared",
    "input_dtype",
    "masked_logits",
]

_NEG = -1e9

_BF16_128 = 0x4300
"""Bit pattern of bfloat16 128.0: ``_BF16_128 | v`` is bfloat16 ``128 + v`` exactly for ``v`` in 0..127."""


FAST_CAST_MIN_ELEMENTS = 16 * 2**20
"""Smallest observation (elements) cast through numpy. Below it torch's cast is faster (it is
vectorized and uses every intra-op thread); a bf16 result of at least 32 MiB is above glibc's
largest mmap threshold, so torch gets fresh pages for it on every call and pays ~10 ms of page
faults per 40 MiB, while numpy's allocations of that size use huge pages."""


def input_dtype(obs: torch.Tensor) -> torch.dtype:
    """The dtype encoders cast ``obs`` to: the autocast dtype where autocast is on for its device
    (uint8 straight to bf16: uint8 -> float32 is several times slower on CPU than the cast to
    bf16, and the matmul would cast to bf16 anyway), else float32."""
    if torch.is_autocast_enabled(obs.device.type):
        return torch.get_autocast_dtype(obs.device.type)
    return torch.float32


def cast_observation(obs: torch.Tensor, dtype: torch.dtype, contiguous: bool = False) -> torch.Tensor:
    """``obs`` cast to ``dtype``: the same values as ``obs.to(dtype)``.

    On CPU, a uint8 observation of at least :data:`FAST_CAST_MIN_ELEMENTS` cast to bfloat16 (the
    bf16 training path: PPO minibatches) goes through numpy instead of torch's cast, whose fresh
    pages for a result that large cost more than the cast itself (measured on the 2-core machine:
    25,600 x 800 elements in 6.5 ms against 10.9 ms, 2 threads): numpy widens to int16, the bits
    of bfloat16 ``128 + v`` are ``0x4300 | v`` for ``v <= 127``, and 128 is subtracted in bfloat16
    (exact). Smaller observations, values above 127, tensors inside ``torch.func`` transforms or
    ``torch.compile``, other devices and other dtypes use ``obs.to(dtype)``.

    Args:
        obs: observation tensor, any shape (``uint8 [N, H, W, C]`` in Overcooked).
        dtype: target dtype.
        contiguous: return the result in C order, so that a flattening ``reshape`` needs no
            second copy (Overcooked's observations are channel-major in memory); otherwise the
            layout of ``obs`` is kept.

    Returns:
        a tensor of ``dtype`` and ``obs``'s shape (``obs`` itself when it already has ``dtype``).
    """
    if (
        dtype != torch.bfloat16
        or obs.dtype != torch.uint8
        or obs.device.type != "cpu"
        or obs.numel() < FAST_CAST_MIN_ELEMENTS
        or torch.compiler.is_compiling()  # (torch 2.11's dynamo cannot trace the next check)
        or torch._C._functorch.is_functorch_wrapped_tensor(obs)
    ):
        if contiguous and obs.dtype == torch.uint8 and obs.device.type == "cpu" and not obs.is_contiguous():
            # reorder the 1-byte values first: one strided uint8 copy and one contiguous cast take
            # about 0.6x the time of a strided cast followed by the flattening copy (CPU, 1 thread)
            obs = obs.contiguous()
        return obs.to(dtype)
    a = obs.numpy()
    if a.max() > 127:
        return (obs.contiguous() if contiguous else obs).to(dtype)
    bits = a.astype(np.int16, order="C" if contiguous else "K")
    bits |= _BF16_128
    return torch.from_numpy(bits).view(torch.bfloat16).sub_(128)


def cast_shared(
    obs: torch.Tensor, critic_obs: torch.Tensor, dtype: torch.dtype, contiguous: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(obs, critic_obs)`` for actor and critic: when they are one tensor (``model.critic_obs:
    own``), that tensor cast once (:func:`cast_observation`) and returned twice, so neither encoder
    casts it again; otherwise both unchanged (each encoder casts its own input).

    Args:
        obs, critic_obs: observation tensors of the actor and the critic (any shape).
        dtype, contiguous: as :func:`cast_observation`.

    Returns:
        ``(actor input, critic input)``: one tensor of ``dtype`` and ``obs``'s shape twice when
        ``critic_obs is obs``, else ``obs`` and ``critic_obs`` as given.
    """
    if critic_obs is not obs:
        return obs, critic_obs
    x = cast_observation(obs, dtype, contiguous)
    return x, x


@dataclass(frozen=True)
class ObsColumns:
    """Which entries of a batch's flattened observations an MLP's first layer needs.

    In a rollout most entries of Overcooked's lossless encoding are zero in every row, and a few
    (the layout's counters, pots and dispensers) are the same non-zero value in every row. The
    first layer ``W x + b`` of a batch then equals ``W[:, varying] x[varying] + (b + W[:, constant]
    c)`` with the constant part computed once, and the columns of ``W`` outside both sets get a
    zero gradient either way. On counter_circuit 150-200 of 800 entries vary (measured on random
    and trained play), so the first layer's forward and weight gradient, two thirds of a quick
    PPO update, shrink about 4x (docs/performance.md).

    Attributes:
        varying: ``int64 [S]`` flattened indices whose value differs between rows of the batch.
        constant: ``int64 [S0]`` flattened indices with the same non-zero value in every row.
        constant_values: ``float32 [S0]`` that value, times the encoder's ``obs_scale``.
        width: the flattened observation's width D (``H * W * C``).
    """

    varying: torch.Tensor
    constant: torch.Tensor
    constant_values: torch.Tensor
    width: int


def observation_columns(obs: torch.Tensor, obs_scale: float = 1.0) -> ObsColumns:
    """The varying and constant non-zero entries of a batch of observations (one host sync).

    Args:
        obs: ``[M, D]`` flattened observations (rows, width), any dtype.
        obs_scale: the encoder's ``obs_scale`` (applied to ``constant_values``).

    Returns:
        :class:`ObsColumns` of the batch.

    Raises:
        ValueError: ``obs`` is not 2-D.
    """
    if obs.dim() != 2:
        raise ValueError(f"observation_columns takes [rows, width] observations, got shape {list(obs.shape)}")
    return columns_of_range(obs.amax(0), obs.amin(0), obs_scale)


def columns_of_range(hi: torch.Tensor, lo: torch.Tensor, obs_scale: float = 1.0) -> ObsColumns:
    """:class:`ObsColumns` of a batch whose entries range over ``[lo, hi]`` (``[D]`` each: the
    batch's column-wise maximum and minimum; several batches' ranges combine by ``max`` / ``min``)."""
    varying = (hi != lo).nonzero().squeeze(-1)
    constant = ((hi == lo) & (hi != 0)).nonzero().squeeze(-1)
    values = hi.index_select(0, constant).to(torch.float32)
    if obs_scale != 1.0:
        values = values * obs_scale
    return ObsColumns(varying, constant, values, int(hi.shape[0]))


def compress_observation(obs: torch.Tensor, columns: ObsColumns, obs_scale: float = 1.0) -> torch.Tensor:
    """The varying entries of observations as float32, scaled like the encoder scales its input.

    Args:
        obs: ``[..., D]`` flattened observations (any dtype).
        columns: from :func:`observation_columns`.
        obs_scale: the encoder's ``obs_scale``.

    Returns:
        ``float32 [..., S]``: ``obs[..., columns.varying] * obs_scale``.
    """
    x = obs.index_select(-1, columns.varying).to(torch.float32)
    return x * obs_scale if obs_scale != 1.0 else x


def _init(layer: nn.Module, gain: float) -> nn.Module:
    nn.init.orthogonal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)
    return layer


def masked_logits(logits: torch.Tensor, avail: torch.Tensor | None) -> torch.Tensor:
    """Logits with unavailable actions set to -1e9 (probability 0 after softmax).

    Args:
        logits: ``float32 [N, A]``.
        avail: ``bool [N, A]`` available actions, or None (all available).
    """
    if avail is None:
        return logits
    return logits.masked_fill(~avail, _NEG)


_EXP_ZERO = -110.0
"""At or below this ``exp`` in float32 gives 0 (it underflows below ``-103.97``; a margin for rounding)."""


class _Exp(torch.autograd.Function):
    """``exp(x)``, bit for bit, without sending the inputs whose result is 0 through ``exp``.

    torch's CPU ``exp`` leaves its fast vector path for inputs whose result underflows: on the
    project's AVX2 CPU an ``exp`` of a ``[2048, 1068]`` tensor takes 1.3 ms, and 16 ms when most
    entries are masked log-probabilities (about ``-1e9``). Here those entries get the 0 that ``exp``
    gives them directly; the others, subnormal results included, go through ``exp`` where they are
    (no host synchronization: the graph stays free of data-dependent ops). The backward is
    ``ExpBackward``'s ``grad * result``.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        zero = x <= _EXP_ZERO  # NaN is not: exp(NaN) is NaN
        out = torch.where(zero, 0.0, x).exp().masked_fill_(zero, 0.0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: D102
        (out,) = ctx.saved_tensors
        return grad * out


def categorical_entropy(logp_all: torch.Tensor) -> torch.Tensor:
    """Entropy of categorical distributions from their log-probabilities, ``-sum_a p_a log p_a``.

    Equal bit for bit (values and gradients) to ``-(logp_all.exp() * logp_all).sum(-1)``, and as fast
    with masked actions (:func:`masked_logits`) as without (:class:`_Exp`; eager on CPU only; on
    other devices and inside ``torch.compile`` the plain ``exp``).

    Args:
        logp_all: ``float32 [..., A]`` log-probabilities (``log_softmax`` of masked logits).

    Returns:
        ``float32 [...]``.
    """
    eager_cpu = logp_all.device.type == "cpu" and not torch.compiler.is_compiling()
    p = _Exp.apply(logp_all) if eager_cpu else logp_all.exp()
    return -(p * logp_all).sum(-1)


class Encoder(nn.Module):
    """Observation encoder: ``uint8 [N, H, W, C] -> float32 [N, hidden]`` (``mlp`` also takes any
    other observation shape, e.g. Football's ``float32 [N, 58]``, and flattens it).

    Args:
        obs_shape: ``(H, W, C)`` (``cnn``); any shape for ``mlp``.
        kind: ``mlp`` or ``cnn``.
        hidden_size: output width.
        mlp_layers: Linear+ReLU layers (after the CNN projection for ``cnn``).
        cnn_channels: conv output channels (``cnn`` only).
        obs_scale: multiplier applied after casting to float32.
        extra: width of extra float features joined to the flattened observation (after the convs
            for ``cnn``), e.g. the partners' policy ids a stage-2 critic sees.
        layer_norm: LayerNorm between every hidden Linear layer and its ReLU (PQN's networks).
    """

    def __init__(
        self,
        obs_shape: tuple[int, int, int],
        kind: str,
        hidden_size: int,
        mlp_layers: int,
        cnn_channels: tuple[int, ...],
        obs_scale: float,
        extra: int = 0,
        layer_norm: bool = False,
    ) -> None:
        super().__init__()
        if kind == "cnn" and len(obs_shape) != 3:
            raise ValueError(
                f"model.kind 'cnn' needs grid observations (H, W, C); this env's are {tuple(obs_shape)}: "
                "use model.kind=mlp"
            )
        self.kind, self.obs_scale, self.extra = kind, obs_scale, extra
        relu_gain = math.sqrt(2)
        layers: list[nn.Module] = []
        self.split = 0
        """Index in ``net`` where the extra features are joined."""
        if kind == "cnn":
            H, W, in_ch = obs_shape
            for out_ch in cnn_channels:
                layers += [_init(nn.Conv2d(in_ch, out_ch, 3, stride=1, padding=1), relu_gain), nn.ReLU()]
                in_ch = out_ch
            layers += [nn.Flatten()]
            self.split = len(layers)
            layers += [_init(nn.Linear(in_ch * H * W + extra, hidden_size), relu_gain)]
            layers += [nn.LayerNorm(hidden_size)] if layer_norm else []
            layers += [nn.ReLU()]
            width = hidden_size
        elif kind == "mlp":
            width = math.prod(obs_shape) + extra
        else:
            raise ValueError(f"unknown encoder kind '{kind}' (expected 'mlp' or 'cnn')")
        for _ in range(mlp_layers):
            layers += [_init(nn.Linear(width, hidden_size), relu_gain)]
            layers += [nn.LayerNorm(hidden_size)] if layer_norm else []
            layers += [nn.ReLU()]
            width = hidden_size
        self.net = nn.Sequential(*layers)
        self.out_size = width

    def forward(
        self, obs: torch.Tensor, extra: torch.Tensor | None = None, columns: ObsColumns | None = None
    ) -> torch.Tensor:
        """``obs``: uint8 ``[N, H, W, C]`` (and ``extra float32 [N, extra]`` when the encoder has
        extra features) -> float32 ``[N, out_size]``.

        With ``columns`` (``mlp`` only), ``obs`` is ``float32 [N, S]``, the varying entries from
        :func:`compress_observation`, and the first layer multiplies only those (:class:`ObsColumns`);
        the result equals the dense one up to float rounding.

        Raises:
            ValueError: extra features missing for an encoder that has them; ``columns`` for a
                ``cnn`` encoder, one without hidden layers, or of another width.
        """
        if columns is not None:
            return self._forward_columns(obs, extra, columns)
        x = cast_observation(obs, input_dtype(obs), contiguous=self.kind == "mlp")
        if self.obs_scale != 1.0:
            x = x * self.obs_scale
        x = x.permute(0, 3, 1, 2) if self.kind == "cnn" else x.reshape(x.shape[0], -1)
        if not self.extra:
            return self.net(x)
        if extra is None:
            raise ValueError(f"this encoder takes {self.extra} extra features; none were given")
        for layer in self.net[: self.split]:
            x = layer(x)
        x = torch.cat([x, extra.to(x.dtype)], -1)
        for layer in self.net[self.split :]:
            x = layer(x)
        return x

    def _forward_columns(
        self, x: torch.Tensor, extra: torch.Tensor | None, columns: ObsColumns
    ) -> torch.Tensor:
        if self.kind != "mlp" or not len(self.net):
            raise ValueError("column-compressed observations need an mlp encoder with at least one layer")
        first: nn.Linear = self.net[0]
        D = first.in_features - self.extra
        if columns.width != D:
            raise ValueError(f"columns of width {columns.width} for an encoder of input width {D}")
        if self.extra and extra is None:
            raise ValueError(f"this encoder takes {self.extra} extra features; none were given")
        W = first.weight
        bias = first.bias
        if columns.constant.numel():
            const = W.index_select(1, columns.constant) @ columns.constant_values.to(W.dtype)
            bias = const if bias is None else bias + const
        index = columns.varying
        if self.extra:
            x = torch.cat([x, extra.to(x.dtype)], -1)
            index = torch.cat([index, torch.arange(D, D + self.extra, device=index.device)])
        x = F.linear(x, W.index_select(1, index), bias)
        for layer in self.net[1:]:
            x = layer(x)
        return x


class _Trunk(nn.Module):
    """Encoder plus optional GRU; shared structure of actor and critic."""

    def __init__(self, obs_shape: tuple[int, int, int], model: dict[str, Any], extra: int = 0) -> None:
        super().__init__()
        self.encoder = Encoder(
            obs_shape,
            model["kind"],
            model["hidden_size"],
            model["mlp_layers"],
            tuple(model["cnn_channels"]),
            model["obs_scale"],
            extra,
            bool(model.get("layer_norm", False)),
        )
        self.out_size = self.encoder.out_size
        self.gru: nn.GRUCell | None = None
        if model["recurrent"]:
            self.gru = nn.GRUCell(self.out_size, model["hidden_size"])
            for name, p in self.gru.named_parameters():
                if "weight" in name:
                    nn.init.orthogonal_(p)
                else:
                    nn.init.zeros_(p)
            self.out_size = model["hidden_size"]

    @property
    def hidden_size(self) -> int:
        """GRU state width, 0 for a feed-forward trunk."""
        return 0 if self.gru is None else self.gru.hidden_size

    def step(
        self, obs: torch.Tensor, h: torch.Tensor | None, starts: torch.Tensor | None,
        extra: torch.Tensor | None = None, columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """One env step. ``obs [N, ...]``, ``h [N, hidden]``, ``starts bool [N]`` (zero h first),
        ``extra float32 [N, E]`` (encoders with extra features). With ``columns``, ``obs`` is
        ``float32 [N, S]`` (:meth:`Encoder.forward`)."""
        x = self.encoder(obs, extra, columns)
        if self.gru is None:
            return x, h
        h = h * (~starts).unsqueeze(-1).to(h.dtype)
        h = self.gru(x, h)
        return h, h

    def sequence(
        self, obs: torch.Tensor, h0: torch.Tensor | None, starts: torch.Tensor | None,
        extra: torch.Tensor | None = None, columns: ObsColumns | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """A chunk of L steps for N sequences: ``obs [L, N, ...]``, ``h0 [N, hidden]``,
        ``starts bool [L, N]``, ``extra float32 [L, N, E]`` -> features ``[L, N, out]`` (truncated
        BPTT through the chunk). With ``columns``, ``obs`` is ``float32 [L, N, S]``
        (:meth:`Encoder.forward`)."""
        L, N = obs.shape[:2]
        flat_extra = None if extra is None else extra.reshape(L * N, -1)
        x = self.encoder(obs.reshape(L * N, *obs.shape[2:]), flat_extra, columns)
        if self.gru is None:
            return x.reshape(L, N, -1)
        x = x.reshape(L, N, -1)
        keep = (~starts).unsqueeze(-1).to(x.dtype)
        h, outs = h0, []
        for t in range(L):
            h = self.gru(x[t], h * keep[t])
            outs.append(h)
        return torch.stack(outs)


class ActorNet(nn.Module):
    """Policy network: observation -> action logits ``[N, A]`` (final layer gain 0.01).

    With ``model["partner_model"] = A_p`` > 0 the actor also predicts the partner's next action:
    ``partner`` maps the trunk features to ``A_p`` logits, and the action head sees the features
    joined with the predicted distribution (gradient-stopped: the predictor is trained by its own
    loss; E3T's partner-modelling module, Yan et al. 2023).
    """

    def __init__(self, obs_shape: tuple[int, int, int], num_actions: int, model: dict[str, Any]) -> None:
        super().__init__()
        self.trunk = _Trunk(obs_shape, model)
        predicted = int(model.get("partner_model", 0))
        self.partner: nn.Linear | None = None
        if predicted:
            self.partner = _init(nn.Linear(self.trunk.out_size, predicted), 0.01)
        self.head = _init(nn.Linear(self.trunk.out_size + predicted, num_actions), 0.01)

    def out(self, feats: torch.Tensor) -> torch.Tensor:
        """Action logits ``[..., A]`` from trunk features ``[..., out]``."""
        if self.partner is None:
            return self.head(feats)
        predicted = torch.softmax(self.partner(feats).float(), -1).detach().to(feats.dtype)
        return self.head(torch.cat([feats, predicted], -1))


class CriticNet(nn.Module):
    """Centralized value network: critic observation -> normalized value ``[N]``."""

    def __init__(self, critic_obs_shape: tuple[int, int, int], model: dict[str, Any]) -> None:
        super().__init__()
        self.trunk = _Trunk(critic_obs_shape, model, int(model.get("critic_extra", 0)))
        self.head = _init(nn.Linear(self.trunk.out_size, 1), 1.0)

    def out(self, feats: torch.Tensor) -> torch.Tensor:
        """Normalized value ``[..., 1]`` from trunk features."""
        return self.head(feats)


# -- registry of model plug-ins -------------------------------------------------------------------
ENCODER_KINDS = ("mlp", "cnn")
"""The built-in kinds: :class:`ActorNet` and :class:`CriticNet` with an :class:`Encoder` of this kind."""

MODEL_GROUP = "zsceval.models"


class UnknownModelError(UnknownPluginError, ValueError):
    """``model.kind`` names no built-in encoder and no model plug-in (the message lists them)."""


def _not_built_in(name: str, cls: type, description: str) -> None:
    if name in ENCODER_KINDS:
        raise ValueError(f"model kind '{name}' is built in")


MODELS = Registry(
    MODEL_GROUP,
    "model.kind",
    plural="model kinds",
    kind="class",
    on_register=_not_built_in,
    unknown_error=UnknownModelError,
    advice=f"Install the plug-in that declares it in the entry-point group '{MODEL_GROUP}'.",
)
"""The model plug-ins, ``model.kind`` -> class (the built-in kinds are not in it)."""


def register_model(name: str):
    """Class decorator: register a model plug-in as ``model.kind = name``.

    The class provides the classmethods ``actor(obs_shape, num_actions, model) -> nn.Module`` and
    ``critic(critic_obs_shape, model) -> nn.Module`` (see the module docstring for their interface;
    ``model`` is the spec's ``model`` dict).

    Raises:
        ValueError: ``name`` is a built-in kind; DuplicatePluginError (a ``ValueError``): ``name``
            is registered by another class.
    """
    return MODELS.register(name)


def model_kinds() -> list[str]:
    """Every valid ``model.kind``: the built-in encoders, then the registered and declared plug-ins
    (sorted; none imported)."""
    return [*ENCODER_KINDS, *sorted(set(MODELS.names()) - set(ENCODER_KINDS))]


def model_class(kind: str) -> type:
    """The model plug-in class of ``kind``, loading its entry point (only) if needed.

    Raises:
        UnknownModelError: unknown kind (the valid ones listed, the closest suggested).
        zsceval.plugins.PluginLoadError: the entry point of ``kind`` could not be loaded.
    """
    return MODELS.get(kind)


def build_networks(spec: dict[str, Any]) -> tuple[nn.Module, nn.Module]:
    """``(actor, critic)`` of a policy spec (:func:`zsceval.rl.policy.network_spec`): the built-in
    :class:`ActorNet` / :class:`CriticNet` for ``model.kind`` in :data:`ENCODER_KINDS`, else the
    plug-in's (:func:`model_class`).

    Raises:
        UnknownModelError: unknown ``model.kind``.
    """
    model = spec["model"]
    obs_shape, critic_shape = tuple(spec["obs_shape"]), tuple(spec["critic_obs_shape"])
    if model["kind"] in ENCODER_KINDS:
        return ActorNet(obs_shape, spec["num_actions"], model), CriticNet(critic_shape, model)
    cls = model_class(model["kind"])
    return cls.actor(obs_shape, spec["num_actions"], model), cls.critic(critic_shape, model)
