"""One-layer attention-only transformers (and the one-head + MLP baseline) stacked on a model axis.

Models in one stack share N, d, d_h and the head layout but may differ in head count H and MLP
width w: heads and hidden units are padded to the largest H / w of the stack and the padding is
multiplied by a 0/1 mask, so padded weights receive exactly zero gradient and never move under Adam.
Model m therefore trains as it would alone (tests check this against single-model stacks).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attncap.seeding import torch_generator

from .layers import BatchedLinear

LAYOUTS = ("shared", "per_head")
"""shared: the reference code's layout. Heads act on d_h-dim vectors; when d ≠ d_h one shared matrix
projects the input d → d_h and one shared matrix maps the summed head outputs d_h → d (so the
attention update has rank ≤ min(d, d_h)). per_head: the paper's formalism, W_{Q,K,V}^h ∈ R^{d_h×d}
and W_O^h ∈ R^{d×d_h} for every head (an ablation)."""

QUERY = 1  # 0-based position of t2, the only position whose prediction (t3) is scored


def _uniform(shape, bound: float, generator: torch.Generator) -> torch.Tensor:
    return torch.empty(shape).uniform_(-bound, bound, generator=generator)


def _xavier_bound(fan_out: int, fan_in: int) -> float:
    return math.sqrt(6.0 / (fan_in + fan_out))


class AoTStack(nn.Module):
    """M one-layer attention-only transformers on (t1, t2) → t3, optionally with an MLP after attention.

    Per model: token table E (N×d), positions P (2×d, added to the attention input only), H heads,
    untied unembedding U (N×d); residual r = E[t2] + Σ_h head_h (+ W2·GELU(W1·r + b1)); logits = U·r.
    Initialisation is PyTorch's default for the corresponding modules (nn.Linear for E, P, U and the
    projections; nn.MultiheadAttention's Xavier in-projection and Linear out-projection per head),
    drawn from a generator seeded by the model's own seed.
    """

    def __init__(self, seeds, heads, *, n_tokens: int, d: int, d_head: int, layout: str = "shared",
                 mlp_widths=None):
        super().__init__()
        seeds = [int(s) for s in seeds]
        heads = [int(h) for h in heads]
        if len(heads) != len(seeds):
            raise ValueError("one head count per model")
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; choose one of {LAYOUTS}")
        if min(heads) < 1:
            raise ValueError("every model needs at least one head")
        widths = [0] * len(seeds) if mlp_widths is None else [int(w) for w in mlp_widths]
        if len(widths) != len(seeds):
            raise ValueError("one MLP width per model")
        self.n_models, self.n_tokens, self.d, self.d_head, self.layout = len(seeds), n_tokens, d, d_head, layout
        self.heads, self.widths = heads, widths
        self.project = layout == "shared" and d != d_head
        inner = d_head if layout == "shared" else d  # width of the vectors the heads read and write
        h_max, w_max = max(heads), max(widths)

        # nn.Linear(d, N).weight-style tables (uniform ±1/sqrt(d)), as the reference code builds E and U
        self.embed = BatchedLinear(seeds, d, n_tokens, bias=False, salt=21)
        self.position = BatchedLinear(seeds, d, 2, bias=False, salt=22)
        self.unembed = BatchedLinear(seeds, d, n_tokens, bias=False, salt=23)
        if self.project:
            self.down = BatchedLinear(seeds, d, d_head, bias=False, salt=24)
            self.up = BatchedLinear(seeds, d_head, d, bias=False, salt=25)

        in_proj, out_proj, w1, b1, w2 = [], [], [], [], []
        for seed, h, w in zip(seeds, heads, widths):
            g = torch_generator(seed, 26)
            qkv = torch.zeros(h_max, 3 * d_head, inner)
            out = torch.zeros(h_max, inner, d_head)
            for j in range(h):
                qkv[j] = _uniform((3 * d_head, inner), _xavier_bound(3 * d_head, inner), g)
                out[j] = _uniform((inner, d_head), 1 / math.sqrt(d_head), g)
            in_proj.append(qkv)
            out_proj.append(out)
            hidden_w, hidden_b, back = torch.zeros(w_max, d), torch.zeros(w_max), torch.zeros(d, w_max)
            if w:
                hidden_w[:w] = _uniform((w, d), 1 / math.sqrt(d), g)
                hidden_b[:w] = _uniform((w,), 1 / math.sqrt(d), g)
                back[:, :w] = _uniform((d, w), 1 / math.sqrt(w), g)
            w1.append(hidden_w)
            b1.append(hidden_b)
            w2.append(back)
        self.in_proj = nn.Parameter(torch.stack(in_proj))  # (M, H, 3 d_h, inner): rows q | k | v
        self.out_proj = nn.Parameter(torch.stack(out_proj))  # (M, H, inner, d_h)
        self.register_buffer("head_mask", (torch.arange(h_max)[None, :] < torch.tensor(heads)[:, None]).float())
        self._padded_heads = min(heads) < h_max
        self._padded_hidden = min(widths) < w_max
        if w_max:
            self.mlp_in = nn.Parameter(torch.stack(w1))  # (M, w, d)
            self.mlp_bias = nn.Parameter(torch.stack(b1))  # (M, w)
            self.mlp_out = nn.Parameter(torch.stack(w2))  # (M, d, w)
            self.register_buffer("hidden_mask",
                                 (torch.arange(w_max)[None, :] < torch.tensor(widths)[:, None]).float())

    def attention_update(self, tokens: torch.Tensor) -> torch.Tensor:
        """Σ_h head_h at the query position (t2), in the residual width d; tokens (M, B, ≥2)."""
        return self._attention(self._embed_pair(tokens))

    def _embed_pair(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token embeddings of (t1, t2), position-major: (M, 2, B, d). One gather serves both the
        attention input and the residual stream (so the embedding gradient is one scatter)."""
        m = torch.arange(tokens.shape[0], device=tokens.device)[:, None, None]
        return self.embed.weight[m, tokens[..., :2].transpose(1, 2)]

    def _attention(self, emb: torch.Tensor) -> torch.Tensor:
        """Σ_h head_h at t2 from position-major embeddings emb (M, 2, B, d); returns (M, B, inner).

        With one query and two keys, softmax([s0, s1]) = (1 − a, a) with a = sigmoid(s1 − s0), so
        head_h = v0 + a·(v1 − v0), and by linearity s1 − s0 = q·W_K(x1 − x0) and v1 − v0 = W_V(x1 − x0).
        Every projection is then one matmul per model over all heads (layout (M, B, head, feature)) and
        the rest is element-wise: no per-head matmuls, no head-major copies.
        """
        n_models, _, batch, _ = emb.shape
        h_max, dh = self.in_proj.shape[1], self.d_head
        x = emb + self.position.weight[:, :, None, :]  # (M, 2, B, d)
        if self.project:
            x = self.down(x)
        x0, x1 = x.unbind(1)
        xd = x1 - x0
        inner = x.shape[-1]

        def project(rows: slice, inputs: torch.Tensor) -> torch.Tensor:  # (M, B, inner) → (M, B, H, d_h)
            weight = self.in_proj[:, :, rows].reshape(n_models, h_max * dh, inner)
            return torch.bmm(inputs, weight.transpose(1, 2)).view(n_models, batch, h_max, dh)

        q, k_diff = project(slice(0, dh), x1), project(slice(dh, 2 * dh), xd)
        # the query is the last position, so it sees both keys (causal masking is moot); scale 1/sqrt(d_h)
        a = torch.sigmoid((q * k_diff).sum(-1) * (1.0 / math.sqrt(dh)))  # weight of key t2, (M, B, H)
        if inner <= dh:
            # Σ_h W_O^h (v0 + a·(v1 − v0)) = (Σ_h OV_h) x0 + Σ_h a_h OV_h (x1 − x0) with OV_h = W_O^h W_V^h
            # (inner × inner, never wider than the heads): no per-example values are materialised
            ov = torch.matmul(self.out_proj, self.in_proj[:, :, 2 * dh:])  # (M, H, inner, inner)
            if self._padded_heads:
                ov = ov * self.head_mask[:, :, None, None]
            scaled = (a.unsqueeze(-1) * xd.unsqueeze(2)).reshape(n_models, batch, h_max * inner)
            update = torch.baddbmm(torch.bmm(x0, ov.sum(1).transpose(1, 2)), scaled,
                                   ov.transpose(2, 3).reshape(n_models, h_max * inner, inner))
            return self.up(update) if self.project else update
        v0, v_diff = project(slice(2 * dh, 3 * dh), x0), project(slice(2 * dh, 3 * dh), xd)
        mixed = torch.addcmul(v0, a.unsqueeze(-1), v_diff)  # (M, B, H, d_h)
        if self._padded_heads:  # padded heads are zeroed; an all-ones mask is skipped (same numbers)
            mixed = mixed * self.head_mask[:, None, :, None]
        out = self.out_proj.transpose(2, 3).reshape(n_models, h_max * dh, -1)  # Σ_h W_O^h · head_h
        update = torch.bmm(mixed.reshape(n_models, batch, h_max * dh), out)  # (M, B, inner)
        return self.up(update) if self.project else update

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (M, B, N) for t3 given tokens (M, B, ≥2)."""
        emb = self._embed_pair(tokens)
        r = emb[:, QUERY] + self._attention(emb)
        if hasattr(self, "mlp_in"):
            hidden = F.gelu(torch.baddbmm(self.mlp_bias[:, None, :], r, self.mlp_in.transpose(1, 2)))
            if self._padded_hidden:
                hidden = hidden * self.hidden_mask[:, None, :]
            r = r + torch.bmm(hidden, self.mlp_out.transpose(1, 2))
        return self.unembed(r)

    def parameter_counts(self) -> list[dict[str, int]]:
        """Per model: attention (heads + shared projections), MLP and embedding parameter counts."""
        out = []
        inner = self.d_head if self.layout == "shared" else self.d
        for h, w in zip(self.heads, self.widths):
            attention = h * (3 * self.d_head * inner + inner * self.d_head)
            if self.project:
                attention += 2 * self.d * self.d_head
            mlp = 2 * self.d * w + w
            out.append({"params_attention": attention, "params_mlp": mlp,
                        "params_embedding": 2 * self.n_tokens * self.d + 2 * self.d})
        return out


def per_model_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per model; logits (M, B, N), targets (M, B) → (M,)."""
    m, b, n = logits.shape
    return F.cross_entropy(logits.reshape(m * b, n), targets.reshape(m * b), reduction="none").view(m, b).mean(1)


def per_model_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Fraction of argmax hits per model; (M,)."""
    return (logits.argmax(-1) == targets).double().mean(1)
