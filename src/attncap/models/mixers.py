"""Every sequence mixer in one place: out = A·U, with the attention matrix A and transformed values U.

Tensors are (..., T, d): any leading axes (model, batch, head) broadcast through. Causal masking
is on by default. Mixers are registered by name in `MIXERS` so configs can pick them: softmax and
linear attention (U = V), DeltaNet and DeltaFormer (U from one triangular solve, see `delta_values`).

Adding a mixer (docs/adding-a-mixer.md): its function here, its step-by-step form in `models.reference`
(the tests hold every registered mixer to it), and one `register(...)` call, which also records whether it
takes β, whether its scores are softmax logits and which retrieval kernel its read is. The mixer lists of
claim 1's E5 and claim 5's S1-S4 then accept its name, and the mixer card (attncap.mixer_card) shows it.
"""
from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=64)
def _causal_bias(length: int, dtype: torch.dtype, device: torch.device, strict: bool,
                 window: int = 0) -> torch.Tensor:
    """Additive mask: 0 where position s may be attended from t, -inf elsewhere.

    strict=True allows only s < t, except that row 0 sees itself (a softmax over no position is NaN;
    callers of the strict form ignore the diagonal). window = w > 0 also forbids s ≤ t − w (t sees its
    last w positions, itself included).
    """
    allowed = causal_mask(length, device, strict=strict)
    if window > 0:
        allowed &= ~causal_mask(length, device).tril(-window)
    allowed[0, 0] = True
    return torch.zeros(length, length, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))


def masked_scores(q, k, scale: float, strict: bool = False, window: int = 0) -> torch.Tensor:
    """scale·q·kᵀ + causal bias (limited to the last `window` positions when > 0) as (..., T, T), in one
    fused batched multiply-add."""
    length, dim = q.shape[-2], q.shape[-1]
    # cached per device, except on "meta": a meta tensor has no values worth keeping, and the name is shared by
    # FLOP counting (benchmarks/paper_cost.py) and the tests' stand-in accelerator, which must not get its tensors
    bias = (_causal_bias.__wrapped__ if q.device.type == "meta" else _causal_bias)(length, q.dtype, q.device, strict,
                                                                                  window)
    scores = torch.baddbmm(bias.expand(q.shape[:-2].numel(), length, length), q.reshape(-1, length, dim),
                           k.reshape(-1, length, dim).transpose(1, 2), alpha=scale)
    return scores.view(*q.shape[:-1], length)


def softmax_attention(q, k, v, *, causal: bool = True, scale: float | None = None):
    """Causal softmax(q·k·scale)·v; scale defaults to 1/sqrt(d).

    The causal mask is added inside the score product (baddbmm with a cached -inf bias). On a CPU
    core this is about 2× faster than masked_fill after the product, and faster than torch's
    scaled_dot_product_attention, whose tiling does not pay off at head sizes of 8-64.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if causal:
        weights = masked_scores(q, k, scale).softmax(-1)
    else:
        weights = (torch.einsum("...td,...sd->...ts", q, k) * scale).softmax(-1)
    return weights @ v


def sliding_window_softmax(q, k, v, *, window: int, scale: float | None = None):
    """Causal softmax attention over the last `window` positions only (s ∈ (t − window, t]), as in
    Longformer/Mistral's local attention: the Transformer's read with a memory that forgets by position.

    The worked example of docs/adding-a-mixer.md. The window enters as the additive -inf bias of
    `masked_scores`, so the cost and the kernel are softmax's; only what t can see changes.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return masked_scores(q, k, scale, window=window).softmax(-1) @ v


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


def delta_values(scores: torch.Tensor, beta: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """U = (I + diag(β)·strict(scores))⁻¹ · rhs by one unit-lower-triangular solve per head.

    The matrix is unit lower triangular, so the solve is exact forward substitution, i.e. the
    delta-rule recurrence u_t = rhs_t − β_t Σ_{i<t} scores[t, i] u_i computed in parallel.
    A unitriangular solve reads only the strictly lower triangle (and its gradient is zero
    elsewhere), so `scores` need no masking and no identity is added: whatever lies on or above
    the diagonal is ignored.
    """
    return torch.linalg.solve_triangular(beta[..., :, None] * scores, rhs, upper=False, unitriangular=True)


def _beta_like(q: torch.Tensor, beta) -> torch.Tensor:
    """β per position (..., T); a scalar or None (β = 1) is broadcast."""
    if beta is None:
        beta = 1.0
    beta = torch.as_tensor(beta, dtype=q.dtype, device=q.device)
    return beta.expand(q.shape[:-1])


def deltanet(q, k, v, beta=None, *, eps: float = 1e-6, return_values: bool = False):
    """DeltaNet (Schlag et al.; Yang et al. 2024): S_t = S_{t-1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ, o_t = S_t q_t.

    In the A·U template: q and k L2-normalised, U = (I + diag(β)·strict(KKᵀ))⁻¹ diag(β) V and
    A = causal(QKᵀ). β ∈ (0, 2) allows the transition I − 2kkᵀ (a reflection, e.g. a swap).
    """
    q, k = F.normalize(q, dim=-1, eps=eps), F.normalize(k, dim=-1, eps=eps)
    beta = _beta_like(q, beta)
    values = delta_values(torch.einsum("...td,...sd->...ts", k, k), beta, beta[..., None] * v)
    out = linear_attention(q, k, values)
    return (out, values) if return_values else out


def kernel_scores(kernel: str, k: torch.Tensor, eps: float = 1e-6) -> torch.Tensor | None:
    """κ1(k_i, k_t) as a (..., T, T) matrix [t, i]; only i < t is meaningful (None for the zero kernel).

    Entries on and above the diagonal are left as they fall: `delta_values` never reads them.
    exp: row-softmax of k_t·k_i/√d over the strictly earlier positions (the first row has none);
    linear: k̂_t·k̂_i on L2-normalised keys; round: the paper's rounded linear kernel, round(k̂_t·k̂_i) ∈ {-1, 0, 1}
    in the forward pass with the linear kernel's gradient (straight-through; rounding to the nearest integer,
    since the floor of a unit-key product is 0 for every key but an exact copy); zero: no correction,
    DeltaFormer is the plain Transformer.
    """
    if kernel == "zero":
        return None
    if kernel == "linear":
        unit = F.normalize(k, dim=-1, eps=eps)
        return torch.einsum("...td,...sd->...ts", unit, unit)
    if kernel == "round":
        # Straight-through rounding: the forward pass uses round(k̂_t·k̂_i) ∈ {-1, 0, 1}, the backward pass
        # the gradient of the linear kernel (the rounding's own gradient is zero almost everywhere).
        unit = F.normalize(k, dim=-1, eps=eps)
        linear = torch.einsum("...td,...sd->...ts", unit, unit)
        return linear + (torch.round(linear) - linear).detach()
    if kernel == "exp":
        # Row 0 has no earlier key; the strict bias lets it see itself, on the diagonal the solve ignores.
        return masked_scores(k, k, 1.0 / math.sqrt(k.shape[-1]), strict=True).softmax(-1)
    raise ValueError(f"unknown DeltaFormer kernel {kernel!r}; known: exp, linear, round, zero")


def deltaformer(q, k, v, beta=None, *, kernel: str = "exp", return_values: bool = False):
    """DeltaFormer (Zhong et al. 2025): u_t = v_t − β_t Σ_{i<t} κ1(k_i, k_t) u_i, o_t = Σ_{i≤t} softmax_i(q_t·k_i/√d) u_i.

    U = (I + diag(β)·P)⁻¹ V with P = κ1 scores (one triangular solve), then causal softmax attention
    reads U instead of V. kernel='zero' gives U = V exactly (the Transformer). The mixers registered
    as deltaformer_* pass β ∈ (0, 2) (a swap needs β = 2), deltaformer_*_01 β ∈ (0, 1) (see BETA_MAX).
    """
    scores = kernel_scores(kernel, k)
    values = v if scores is None else delta_values(scores, _beta_like(q, beta), v)
    out = softmax_attention(q, k, values)
    return (out, values) if return_values else out


def _conv_taps(weight: torch.Tensor, x: torch.Tensor) -> list[torch.Tensor]:
    """weight (M, C, W)'s taps, each shaped to broadcast over x (M, ..., T, C)."""
    view = (weight.shape[0],) + (1,) * (x.dim() - 2) + (weight.shape[1],)
    return [weight[..., j].reshape(view) for j in range(weight.shape[-1])]


class _ShortConvolution(torch.autograd.Function):
    """The causal depthwise convolution with its own backward, computed in place on time-shifted views.

    The plain form (a zero-padded copy of x per tap, then multiply and add) let autograd build the same
    sums from full-size padded tensors: on the CPU the memory traffic of those copies was 43% of an MQAR
    step (E5, d = 64). Every sum here is the one autograd formed, in the same order, so values and
    gradients are bitwise those of the plain form (tests/test_short_conv.py checks it): each product is the
    same, adding a padded zero leaves a sum as it was, and the gradient of each tap is reduced from the
    same full-size product (zeros where the tap reads before position 0)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        taps, width = _conv_taps(weight, x), weight.shape[-1]
        out = x * taps[width - 1]
        for lag in range(1, min(width, x.shape[-2])):
            out[..., lag:, :] += x[..., :-lag, :] * taps[width - 1 - lag]
        ctx.save_for_backward(x, weight)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        taps, width = _conv_taps(weight, x), weight.shape[-1]
        lags = range(1, min(width, x.shape[-2]))
        grad_x = grad_weight = None
        if ctx.needs_input_grad[0]:
            # autograd summed the taps' contributions latest-created first, the current position's last
            grad_x = torch.zeros_like(x)
            for lag in reversed(lags):
                grad_x[..., :-lag, :] += grad[..., lag:, :] * taps[width - 1 - lag]
            grad_x += grad * taps[width - 1]
        if ctx.needs_input_grad[1]:
            over = list(range(1, x.dim() - 1))  # batch and time: what a tap is broadcast over
            grad_weight = torch.zeros_like(weight)
            grad_weight[..., width - 1] = (grad * x).sum(over, keepdim=True).reshape(weight.shape[:2])
            product = torch.empty_like(x)
            for lag in lags:
                product[..., :lag, :] = 0
                torch.mul(grad[..., lag:, :], x[..., :-lag, :], out=product[..., lag:, :])
                grad_weight[..., width - 1 - lag] = product.sum(over, keepdim=True).reshape(weight.shape[:2])
        return grad_x, grad_weight


def short_convolution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Causal depthwise convolution over time: out[t, c] = Σ_j weight[c, j] · x[t − (W−1) + j, c].

    x is (M, ..., T, C) and weight (M, C, W) (one filter per model and channel; the last tap reads the
    current position, earlier taps earlier positions, positions before 0 are zero). This is the short
    convolution that recall models put before the mixer (Zoology's BaseConv, the ShortConvolution of
    flash-linear-attention's GLA/DeltaNet/Mamba-2 layers): with it, position t can carry the token
    before it, so the previous-token head of the recall circuit need not be learned from positions.
    Computed as W shifted multiply-adds (W is 2-4), which is cheaper than a grouped conv1d on a CPU core,
    in place on shifted views (`_ShortConvolution`).
    """
    return _ShortConvolution.apply(x, weight)


def padded_short_convolution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`short_convolution` in its plain form, one zero-padded copy of x per tap, differentiated by autograd:
    the reference its fast form is tested against, bit for bit."""
    taps, width = _conv_taps(weight, x), weight.shape[-1]
    out = x * taps[width - 1]
    for lag in range(1, min(width, x.shape[-2])):
        out = out + F.pad(x[..., :-lag, :], (0, 0, lag, 0)) * taps[width - 1 - lag]
    return out


SHORT_CONV_PLACES = ("input", "qkv")
"""Where a block applies its short convolution: on the mixer's input (after the LayerNorm, before the
q/k/v projection) or on q, k and v separately after it (flash-linear-attention's choice)."""


MIXERS = {
    "softmax": lambda q, k, v: softmax_attention(q, k, v),
    "linear_identity": lambda q, k, v: linear_attention(q, k, v, feature="identity", normalize=False),
    "linear_elu": lambda q, k, v: linear_attention(q, k, v, feature="elu", normalize=True),
    "deltanet_01": lambda q, k, v, beta=None, **kw: deltanet(q, k, v, beta, **kw),
    "deltanet_02": lambda q, k, v, beta=None, **kw: deltanet(q, k, v, beta, **kw),
    "deltaformer_exp": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="exp", **kw),
    "deltaformer_linear": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="linear", **kw),
    "deltaformer_zero": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="zero", **kw),
    "deltaformer_round": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="round", **kw),
    # β ∈ (0, 1) ablation rows of DeltaFormer (the default DeltaFormer mixers have β ∈ (0, 2))
    "deltaformer_exp_01": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="exp", **kw),
    "deltaformer_linear_01": lambda q, k, v, beta=None, **kw: deltaformer(q, k, v, beta, kernel="linear", **kw),
}
"""Name → function(q, k, v); delta mixers also take a per-position β (..., T) and return_values=True
(which also returns U, for logging its norm)."""

BETA_MAX = {
    "deltanet_01": 1.0,
    "deltanet_02": 2.0,
    "deltaformer_exp": 2.0,
    "deltaformer_linear": 2.0,
    "deltaformer_zero": 2.0,
    "deltaformer_round": 2.0,
    "deltaformer_exp_01": 1.0,
    "deltaformer_linear_01": 1.0,
}
"""Mixers that take a per-token β, and its upper bound: β = BETA_MAX·sigmoid(·) ∈ (0, BETA_MAX).
DeltaNet and DeltaFormer both get β ∈ (0, 2) by default: a swap is a reflection I − 2kkᵀ (eigenvalue
−1), which the delta rule applies only with β up to 2; β ∈ (0, 1) keeps every transition's eigenvalues
in [0, 1] and cannot (the `_01` mixers are that ablation). The price: where a row of DeltaFormer's
κ1 scores puts all its weight on one earlier u, β > 1 lets ‖u_t‖ grow like β^t, so U is kept in
float32 and its largest norm is logged (`value_norm`); a run whose loss turns non-finite is recorded
as diverged. (κ1 = zero ignores β: it is the Transformer.)"""

SOFTMAX_MIXERS = {"softmax", "deltaformer_exp", "deltaformer_linear", "deltaformer_zero", "deltaformer_round",
                  "deltaformer_exp_01", "deltaformer_linear_01"}
"""Mixers whose scores are softmax logits (rotary embeddings apply to these)."""


RETRIEVAL_KERNELS = {"softmax": "exp", "linear_identity": "linear", "deltaformer_zero": "exp"}
"""Mixers whose read is a plain kernel-weighted sum of the stored values, and that kernel as claim 1's E2
names it (linear, relu, exp): E2's retrieval SNR⁻¹ of that kernel is the mixer's (the mixer card's SNR
column). Normalised linear attention (elu features) has no E2 kernel; DeltaNet and DeltaFormer transform
the values first, so the Gaussian-key SNR of a kernel sum is not theirs."""


def register(name: str, fn, *, beta_max: float | None = None, softmax_scores: bool = False,
             kernel: str | None = None) -> None:
    """The one registry entry of a new mixer: `fn(q, k, v)` (with `beta_max`: `fn(q, k, v, beta, **kw)`
    taking β ∈ (0, beta_max) per position and return_values=True, as the delta mixers do); `softmax_scores`:
    its scores are softmax logits (rotary embeddings apply to them); `kernel`: the E2 kernel of its read
    (see RETRIEVAL_KERNELS). Its step-by-step form goes in `models.reference.REFERENCES`."""
    if name in MIXERS:
        raise ValueError(f"mixer {name!r} is already registered")
    if not name or "-" in name or name != name.strip():
        # part names of claim 5's jobs are "n<n>-<mixer>[-L<depth>]": a '-' in a mixer name would be ambiguous
        raise ValueError(f"mixer name {name!r}: use letters, digits and '_' only")
    MIXERS[name] = fn
    if beta_max is not None:
        BETA_MAX[name] = float(beta_max)
    if softmax_scores:
        SOFTMAX_MIXERS.add(name)
    if kernel is not None:
        RETRIEVAL_KERNELS[name] = kernel


# The worked example of docs/adding-a-mixer.md: local (sliding-window) softmax attention, window 8. No
# tier config lists it; E5 and S1 take it by name (`mixers: [softmax, softmax_window8]`). No kernel: its
# read is exp, but it never holds more than 8 memories, so E2's SNR⁻¹ at N stored items is not its.
register("softmax_window8", functools.partial(sliding_window_softmax, window=8), softmax_scores=True)


def mix(name: str, q, k, v, beta=None, return_values: bool = False):
    """Run mixer `name`; β (per position, or None for β = 1) only reaches mixers in BETA_MAX.

    With return_values=True returns (out, U); U is V itself for mixers that do not transform values.
    """
    try:
        fn = MIXERS[name]
    except KeyError:
        raise ValueError(f"unknown mixer {name!r}; known: {sorted(MIXERS)}") from None
    if name in BETA_MAX:
        result = fn(q, k, v, beta, return_values=return_values)
        return result
    out = fn(q, k, v)
    return (out, v) if return_values else out
