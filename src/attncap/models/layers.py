"""Batched building blocks: linear maps, embeddings and LayerNorm whose weights carry a model axis.

Inputs are (M, ..., features); weights are initialised one model at a time with PyTorch's own
initialisers (seeded per model), so a model's start does not depend on its batch mates.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attncap.seeding import seed_of

from .mixers import short_convolution


def _per_model(keys, shape, init) -> torch.Tensor:
    """One tensor per model, initialised by `init` under torch's global generator seeded from that
    model's key (a tuple, see attncap.seeding), stacked on axis 0; the global state is restored."""
    out = []
    state = torch.random.get_rng_state()
    for key in keys:
        torch.manual_seed(seed_of(*(key if isinstance(key, tuple) else (key,))))
        tensor = torch.empty(shape)
        init(tensor)
        out.append(tensor)
    torch.random.set_rng_state(state)
    return torch.stack(out)


def kaiming_uniform(tensor: torch.Tensor) -> None:
    """nn.Linear's default weight init."""
    nn.init.kaiming_uniform_(tensor, a=math.sqrt(5))


class BatchedLinear(nn.Module):
    """y[m] = x[m] @ W[m]^T (+ b[m]); W: (M, out, in), nn.Linear's default init per model."""

    def __init__(self, seeds, d_in: int, d_out: int, bias: bool = True, salt: int = 0):
        super().__init__()
        seeds = [(int(s), salt) for s in seeds]
        self.weight = nn.Parameter(_per_model(seeds, (d_out, d_in), kaiming_uniform))
        bound = 1 / math.sqrt(d_in) if d_in > 0 else 0.0
        self.bias = (
            nn.Parameter(_per_model([(*s, "bias") for s in seeds], (d_out,), lambda t: nn.init.uniform_(t, -bound, bound)))
            if bias
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(shape[0], -1, shape[-1])
        y = torch.bmm(flat, self.weight.transpose(1, 2))
        if self.bias is not None:
            y = y + self.bias[:, None, :]
        return y.reshape(*shape[:-1], -1)


class BatchedEmbedding(nn.Module):
    """Token table per model, N(0, 1) init like nn.Embedding; index (M, ...) → (M, ..., d)."""

    def __init__(self, seeds, vocab: int, d: int, salt: int = 0, std: float = 1.0):
        super().__init__()
        seeds = [(int(s), salt) for s in seeds]
        self.weight = nn.Parameter(_per_model(seeds, (vocab, d), lambda t: nn.init.normal_(t, 0.0, std)))

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        m = torch.arange(index.shape[0], device=index.device).view(-1, *([1] * (index.dim() - 1)))
        return self.weight[m, index]


class BatchedShortConv(nn.Module):
    """Causal depthwise convolution over time per model: (M, ..., T, C) → same shape.

    Weight (M, C, width), nn.Conv1d(C, C, width, groups=C, bias=False)'s default init per model;
    `active` (M,) bool (None: all) marks the models that use it, the others pass x through unchanged.
    """

    def __init__(self, seeds, channels: int, width: int, salt: int = 0, active=None):
        super().__init__()
        seeds = [(int(s), salt) for s in seeds]
        self.weight = nn.Parameter(_per_model(seeds, (channels, width), kaiming_uniform))
        mask = None if active is None or all(active) else torch.as_tensor([bool(a) for a in active])
        self.register_buffer("active", mask, persistent=False)
        self.all_active = mask  # the original axis's mask, for keep_models

    def keep_models(self, rows: torch.Tensor) -> None:
        """The mask of the models `rows` of the original axis (the loop narrows the weight)."""
        if self.all_active is not None:
            self.active = self.all_active[rows.to(self.all_active.device)].to(self.weight.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = short_convolution(x, self.weight)
        if self.active is None:
            return out
        return torch.where(self.active.view(-1, *([1] * (x.dim() - 1))), out, x)


class BatchedLayerNorm(nn.Module):
    def __init__(self, n_models: int, d: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n_models, d))
        self.bias = nn.Parameter(torch.zeros(n_models, d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.layer_norm(x, x.shape[-1:], eps=self.eps)
        view = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
        return x * self.weight.view(view) + self.bias.view(view)
