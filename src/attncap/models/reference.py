"""The definition of every mixer, written one time step at a time (the readable reference).

`models.mixers` computes the same outputs in parallel (one score product, one triangular solve); the
tests hold the fast forms to these loops in float64. Read these to know what a mixer *is*; read
`mixers` to see how it is computed fast. Shapes are (..., T, d) as in `mixers`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def softmax_attention(q, k, v):
    """o_t = Σ_{s≤t} softmax_s(q_t·k_s/√d) v_s."""
    out = torch.zeros_like(v)
    for t in range(q.shape[-2]):
        w = torch.softmax(torch.einsum("...d,...sd->...s", q[..., t, :], k[..., : t + 1, :]) / math.sqrt(q.shape[-1]), -1)
        out[..., t, :] = torch.einsum("...s,...sd->...d", w, v[..., : t + 1, :])
    return out


def sliding_window_softmax(q, k, v, window: int):
    """o_t = Σ_{t−window<s≤t} softmax_s(q_t·k_s/√d) v_s: softmax over the last `window` positions only."""
    out = torch.zeros_like(v)
    for t in range(q.shape[-2]):
        lo = max(0, t - window + 1)
        w = torch.softmax(torch.einsum("...d,...sd->...s", q[..., t, :], k[..., lo : t + 1, :]) / math.sqrt(q.shape[-1]), -1)
        out[..., t, :] = torch.einsum("...s,...sd->...d", w, v[..., lo : t + 1, :])
    return out


def linear_attention(q, k, v, feature: str):
    """o_t = Σ_{s≤t} (φ(q_t)·φ(k_s)) v_s; with φ = elu+1 divided by Σ_{s≤t} φ(q_t)·φ(k_s) (+1e-6)."""
    phi = (lambda x: x) if feature == "identity" else (lambda x: F.elu(x) + 1)
    out = torch.zeros_like(v)
    for t in range(q.shape[-2]):
        num = torch.zeros_like(v[..., 0, :])
        den = torch.zeros_like(v[..., 0, :1])
        for s in range(t + 1):
            w = (phi(q[..., t, :]) * phi(k[..., s, :])).sum(-1, keepdim=True)
            num = num + w * v[..., s, :]
            den = den + w
        out[..., t, :] = num if feature == "identity" else num / (den + 1e-6)
    return out


def deltanet(q, k, v, beta):
    """The delta rule as a recurrence on a d_v×d_k state (q, k L2-normalised):
    S_t = S_{t-1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ, o_t = S_t q_t."""
    q = q / q.norm(dim=-1, keepdim=True)
    k = k / k.norm(dim=-1, keepdim=True)
    d_k, d_v = k.shape[-1], v.shape[-1]
    state = torch.zeros(*q.shape[:-2], d_v, d_k, dtype=q.dtype)
    eye = torch.eye(d_k, dtype=q.dtype)
    out = torch.zeros_like(v)
    for t in range(q.shape[-2]):
        kt, vt, bt = k[..., t, :], v[..., t, :], beta[..., t, None, None]
        state = state @ (eye - bt * kt[..., :, None] * kt[..., None, :]) + bt * vt[..., :, None] * kt[..., None, :]
        out[..., t, :] = (state @ q[..., t, :, None])[..., 0]
    return out


def deltaformer(q, k, v, beta, kernel: str):
    """u_t = v_t − β_t Σ_{i<t} κ1(k_i, k_t) u_i one step at a time, then causal softmax attention reads u.

    κ1 = exp: softmax over the earlier keys of k_t·k_i/√d; linear: k̂_t·k̂_i; round: round(k̂_t·k̂_i);
    zero: u = v (the Transformer)."""
    length, d = q.shape[-2], q.shape[-1]
    u = torch.zeros_like(v)
    for t in range(length):
        correction = torch.zeros_like(v[..., 0, :])
        if t > 0 and kernel != "zero":
            if kernel == "exp":
                w = torch.softmax(torch.einsum("...d,...sd->...s", k[..., t, :], k[..., :t, :]) / math.sqrt(d), -1)
            else:
                kn = k / k.norm(dim=-1, keepdim=True)
                w = torch.einsum("...d,...sd->...s", kn[..., t, :], kn[..., :t, :])
                if kernel == "round":
                    w = torch.round(w)
            correction = torch.einsum("...s,...sd->...d", w, u[..., :t, :])
        u[..., t, :] = v[..., t, :] - beta[..., t, None] * correction
    return softmax_attention(q, k, u)


REFERENCES = {
    "softmax_window8": lambda q, k, v, beta: sliding_window_softmax(q, k, v, window=8),
}
"""Mixer name → its step-by-step form fn(q, k, v, beta), for mixers added with `mixers.register` (the
original families below are dispatched by name). tests/test_mixers.py holds every name in `MIXERS` to
`reference`, so a mixer registered without an entry here fails the tests."""


def reference(name: str, q, k, v, beta=None):
    """The step-by-step output of registered mixer `name` (β per position for the delta mixers)."""
    if name in REFERENCES:
        return REFERENCES[name](q, k, v, beta)
    if name == "softmax":
        return softmax_attention(q, k, v)
    if name.startswith("linear_"):
        return linear_attention(q, k, v, name.split("_")[1])
    if name.startswith("deltanet"):
        return deltanet(q, k, v, beta)
    if name.startswith("deltaformer"):
        return deltaformer(q, k, v, beta, name.split("_")[1])
    raise ValueError(f"no reference for mixer {name!r}")
