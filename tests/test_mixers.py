"""Every registered mixer against its step-by-step definition in float64, plus causality and gradients."""
import math

import pytest
import torch

from attncap.models.mixers import BETA_MAX, MIXERS, SOFTMAX_MIXERS, deltaformer, deltanet, mix, softmax_attention

TOL = 1e-10


def _inputs(seed=0, shape=(2, 3, 7, 5)):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=g, dtype=torch.float64) for _ in range(3))
    beta = torch.rand(*shape[:-1], generator=g, dtype=torch.float64)
    return q, k, v, beta


def naive_softmax(q, k, v):
    out = torch.zeros_like(v)
    for t in range(q.shape[-2]):
        w = torch.softmax(torch.einsum("...d,...sd->...s", q[..., t, :], k[..., : t + 1, :]) / math.sqrt(q.shape[-1]), -1)
        out[..., t, :] = torch.einsum("...s,...sd->...d", w, v[..., : t + 1, :])
    return out


def naive_linear(q, k, v, feature):
    phi = (lambda x: x) if feature == "identity" else (lambda x: torch.nn.functional.elu(x) + 1)
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


def naive_deltanet(q, k, v, beta):
    """The recurrent form: S_t = S_{t-1}(I - β k kᵀ) + β v kᵀ, o_t = S_t q_t (normalised q, k)."""
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


def naive_deltaformer(q, k, v, beta, kernel):
    """u_t = v_t − β_t Σ_{i<t} κ1(k_i, k_t) u_i one step at a time, then causal softmax attention over u."""
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
            correction = torch.einsum("...s,...sd->...d", w, u[..., :t, :])
        u[..., t, :] = v[..., t, :] - beta[..., t, None] * correction
    return naive_softmax(q, k, u)


def reference(name, q, k, v, beta):
    if name == "softmax":
        return naive_softmax(q, k, v)
    if name.startswith("linear_"):
        return naive_linear(q, k, v, name.split("_")[1])
    if name.startswith("deltanet"):
        return naive_deltanet(q, k, v, beta)
    return naive_deltaformer(q, k, v, beta, name.split("_")[1])


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_mixer_matches_recurrence(name):
    q, k, v, beta = _inputs()
    if name in BETA_MAX:
        beta = BETA_MAX[name] * beta  # the whole allowed range, including β > 1 for deltanet_02
    got = mix(name, q, k, v, beta=beta)
    torch.testing.assert_close(got, reference(name, q, k, v, beta), atol=TOL, rtol=0)


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_mixer_is_causal(name):
    q, k, v, beta = _inputs(1)
    base = mix(name, q, k, v, beta=beta)
    t = 3
    q2, k2, v2, b2 = (x.clone() for x in (q, k, v, beta))
    for x in (q2, k2, v2):
        x[..., t + 1 :, :] += 5.0
    b2[..., t + 1 :] = 0.9
    changed = mix(name, q2, k2, v2, beta=b2)
    torch.testing.assert_close(changed[..., : t + 1, :], base[..., : t + 1, :], atol=TOL, rtol=0)
    assert not torch.allclose(changed[..., t + 1 :, :], base[..., t + 1 :, :])


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_mixer_gradients_finite(name):
    q, k, v, beta = (x.float().requires_grad_() for x in _inputs(2))
    out, values = mix(name, q, k, v, beta=beta * 1.5, return_values=True)
    (out.square().sum() + values.sum()).backward()
    for x in (q, k, v):
        assert torch.isfinite(x.grad).all()
    if name in BETA_MAX and name != "deltaformer_zero":
        assert torch.isfinite(beta.grad).all() and beta.grad.abs().sum() > 0


def test_deltaformer_zero_kernel_is_the_transformer():
    q, k, v, beta = _inputs(3)
    torch.testing.assert_close(deltaformer(q, k, v, beta, kernel="zero"), softmax_attention(q, k, v), atol=0, rtol=0)


def test_registry_keeps_claim1_entries_and_rotary_set():
    assert {"softmax", "linear_identity", "linear_elu"} <= set(MIXERS)
    assert set(BETA_MAX) <= set(MIXERS) and SOFTMAX_MIXERS <= set(MIXERS)
    q, k, v, _ = _inputs(4)
    torch.testing.assert_close(MIXERS["softmax"](q, k, v), naive_softmax(q, k, v), atol=TOL, rtol=0)
    with pytest.raises(ValueError, match="unknown mixer"):
        mix("nope", q, k, v)
