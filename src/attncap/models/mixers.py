"""Every sequence mixer in one place: out = A·U, with the attention matrix A and transformed values U.

Tensors are (..., T, d): any leading axes (model, batch, head) broadcast through. Causal masking
is on by default. Mixers are registered by name in `MIXERS` so configs can pick them.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def feature_map(name: str, x: torch.Tensor) -> torch.Tensor:
    """Positive (or identity) feature maps for linear attention."""
    if name == "identity":
        return x
    if name == "elu":
        return F.elu(x) + 1.0
    raise ValueError(f"unknown feature map {name!r}")


def causal_mask(length: int, device=None, strict: bool = False) -> torch.Tensor:
    return torch.ones(length, length, dtype=torch.bool, device=device).tril(-1 if strict else 0)


def softmax_attention(q, k, v, *, causal: bool = True, scale: float | None = None):
    """Causal softmax(q·k·scale)·v; scale defaults to 1/sqrt(d)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.einsum("...td,...sd->...ts", q, k) * scale
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2], q.device), float("-inf"))
    return torch.einsum("...ts,...sd->...td", scores.softmax(-1), v)


def linear_attention(q, k, v, *, feature: str = "identity", normalize: bool = False, causal: bool = True,
                     eps: float = 1e-6):
    """Σ_{s≤t} (φ(q_t)·φ(k_s)) v_s, optionally divided by Σ_{s≤t} φ(q_t)·φ(k_s) (Katharopoulos et al.)."""
    fq, fk = feature_map(feature, q), feature_map(feature, k)
    weights = torch.einsum("...td,...sd->...ts", fq, fk)
    if causal:
        weights = weights * causal_mask(q.shape[-2], q.device)
    out = torch.einsum("...ts,...sd->...td", weights, v)
    if normalize:
        out = out / (weights.sum(-1, keepdim=True) + eps)
    return out


MIXERS = {
    "softmax": lambda q, k, v: softmax_attention(q, k, v),
    "linear_identity": lambda q, k, v: linear_attention(q, k, v, feature="identity", normalize=False),
    "linear_elu": lambda q, k, v: linear_attention(q, k, v, feature="elu", normalize=True),
}
"""Name → function(q, k, v); extra mixers (DeltaNet, DeltaFormer) register here too."""

SOFTMAX_MIXERS = {"softmax"}
"""Mixers whose scores are softmax logits (rotary embeddings apply to these)."""


def mix(name: str, q, k, v):
    try:
        return MIXERS[name](q, k, v)
    except KeyError:
        raise ValueError(f"unknown mixer {name!r}; known: {sorted(MIXERS)}") from None
