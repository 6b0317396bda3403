"""Every registered mixer against its step-by-step definition (models.reference) in float64, plus causality
and gradients."""

import pytest
import torch

from attncap.models.mixers import BETA_MAX, MIXERS, SOFTMAX_MIXERS, deltaformer, mix, softmax_attention
from attncap.models.reference import reference
from attncap.models.reference import softmax_attention as naive_softmax

TOL = 1e-10


def _inputs(seed=0, shape=(2, 3, 7, 5)):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=g, dtype=torch.float64) for _ in range(3))
    beta = torch.rand(*shape[:-1], generator=g, dtype=torch.float64)
    return q, k, v, beta


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


def test_round_kernel_is_rounded_linear_with_straight_through_gradient():
    from attncap.models.mixers import kernel_scores
    k = torch.randn(2, 7, 4, dtype=torch.float64, requires_grad=True)
    rounded = kernel_scores("round", k)
    linear = kernel_scores("linear", k)
    assert set(rounded.detach().unique().tolist()) <= {-1.0, 0.0, 1.0}
    torch.testing.assert_close(rounded.detach(), torch.round(linear.detach()), atol=0, rtol=0)
    weights = torch.randn(2, 7, 7, dtype=torch.float64)
    grad_round, = torch.autograd.grad((rounded * weights).sum(), k)
    grad_linear, = torch.autograd.grad((kernel_scores("linear", k) * weights).sum(), k)
    torch.testing.assert_close(grad_round, grad_linear, atol=1e-12, rtol=0)
    # falsification: the rounded forward pass differs from the linear one (else the test proves nothing)
    assert not torch.allclose(rounded.detach(), linear.detach())


def test_sliding_window_softmax_forgets_beyond_its_window():
    """The worked example of docs/adding-a-mixer.md at T > window: equal to its step-by-step form, equal to
    softmax while t < window, and different after (else the window would not bind)."""
    from attncap.models.mixers import sliding_window_softmax
    from attncap.models.reference import sliding_window_softmax as naive_window

    q, k, v, _ = _inputs(5, shape=(2, 3, 20, 5))
    got = mix("softmax_window8", q, k, v)
    torch.testing.assert_close(got, naive_window(q, k, v, 8), atol=TOL, rtol=0)
    torch.testing.assert_close(got, sliding_window_softmax(q, k, v, window=8), atol=0, rtol=0)
    full = softmax_attention(q, k, v)
    torch.testing.assert_close(got[..., :8, :], full[..., :8, :], atol=TOL, rtol=0)
    assert not torch.allclose(got[..., 8:, :], full[..., 8:, :])
    # moving a value more than 8 positions back changes softmax's output but not the window's
    v2 = v.clone()
    v2[..., 3, :] += 1.0
    torch.testing.assert_close(mix("softmax_window8", q, k, v2)[..., 11:, :], got[..., 11:, :], atol=TOL, rtol=0)
    assert not torch.allclose(softmax_attention(q, k, v2)[..., 11:, :], full[..., 11:, :])


def test_register_fills_every_registry_and_refuses_bad_names(monkeypatch):
    from attncap.models import mixers

    for table in ("MIXERS", "BETA_MAX", "RETRIEVAL_KERNELS"):
        monkeypatch.setattr(mixers, table, dict(getattr(mixers, table)))
    monkeypatch.setattr(mixers, "SOFTMAX_MIXERS", set(mixers.SOFTMAX_MIXERS))
    mixers.register("toy_delta", mixers.MIXERS["deltanet_02"], beta_max=2.0, softmax_scores=True, kernel="linear")
    assert mixers.BETA_MAX["toy_delta"] == 2.0 and "toy_delta" in mixers.SOFTMAX_MIXERS
    assert mixers.RETRIEVAL_KERNELS["toy_delta"] == "linear"
    q, k, v, beta = _inputs(6)
    torch.testing.assert_close(mixers.mix("toy_delta", q, k, v, beta=beta), mixers.mix("deltanet_02", q, k, v, beta=beta))
    with pytest.raises(ValueError, match="already registered"):
        mixers.register("softmax", mixers.softmax_attention)
    with pytest.raises(ValueError, match="letters, digits"):
        mixers.register("n5-bad", mixers.softmax_attention)
    with pytest.raises(ValueError, match="no reference"):
        reference("toy_delta", q, k, v, beta)  # registered without a step-by-step form: test_mixers fails
