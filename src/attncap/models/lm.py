"""A small pre-LayerNorm language-model stack on a model axis, with any registered mixer per model.

Used by the trained associative-recall experiment (claim 1) and the swap task (claim 5). Models that
share a shape share one forward pass; models with different mixers are run slice by slice.
"""
from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

from .layers import BatchedEmbedding, BatchedLayerNorm, BatchedLinear, BatchedShortConv
from .mixers import BETA_MAX, SHORT_CONV_PLACES, SOFTMAX_MIXERS, mix


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding on the last axis of (..., T, d) (d even), rotate-half convention."""
    length, dim = x.shape[-2], x.shape[-1]
    half = dim // 2
    freq = base ** (-torch.arange(half, dtype=x.dtype, device=x.device) / half)
    angle = torch.arange(length, dtype=x.dtype, device=x.device)[:, None] * freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., :half], x[..., half : 2 * half]
    rotated = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return torch.cat([rotated, x[..., 2 * half :]], dim=-1)


def contiguous_groups(names: list[str]) -> list[tuple[str, int, int]]:
    """[(name, start, stop)] for runs of equal names; models must be ordered by mixer."""
    out, start = [], 0
    for name, run in itertools.groupby(names):
        size = len(list(run))
        out.append((name, start, start + size))
        start += size
    if len({g[0] for g in out}) != len(out):
        raise ValueError("models with the same mixer must be adjacent on the model axis")
    return out


class MixerBlock(nn.Module):
    """Pre-LN residual block: x + Mixer(LN(x)), then x + MLP(LN(x)).

    With short_conv = W > 0 a causal depthwise convolution of width W runs on the mixer's input
    (short_conv_on='input') or on q, k and v ('qkv'), for the models marked in `conv_models` (None: all).
    """

    def __init__(self, seeds, mixers, d_model, n_heads, mlp_ratio, positional, salt, short_conv=0,
                 short_conv_on="qkv", conv_models=None, readout_temperature=False):
        super().__init__()
        n = len(seeds)
        self.mixers = list(mixers)
        self.groups = contiguous_groups(self.mixers)
        self.n_heads = n_heads
        self.positional = positional
        self.norm1 = BatchedLayerNorm(n, d_model)
        self.qkv = BatchedLinear(seeds, d_model, 3 * d_model, bias=False, salt=salt + 1)
        self.out = BatchedLinear(seeds, d_model, d_model, bias=False, salt=salt + 2)
        self.mlp_ratio = mlp_ratio
        if mlp_ratio:
            self.norm2 = BatchedLayerNorm(n, d_model)
            self.up = BatchedLinear(seeds, d_model, mlp_ratio * d_model, salt=salt + 3)
            self.down = BatchedLinear(seeds, mlp_ratio * d_model, d_model, salt=salt + 4)
        # Delta mixers read a per-token, per-head β = BETA_MAX·sigmoid(w·x + b); created only when a
        # model in this block needs it, so other claims' models (and their inits) are unchanged.
        if any(name in BETA_MAX for name, _, _ in self.groups):
            self.beta = BatchedLinear(seeds, d_model, n_heads, salt=salt + 5)
        # Likewise the short convolution exists only when asked for (its own salt: other inits unchanged).
        self.conv = None
        if short_conv:
            if short_conv_on not in SHORT_CONV_PLACES:
                raise ValueError(f"short_conv_on={short_conv_on!r}; known: {SHORT_CONV_PLACES}")
            channels = d_model if short_conv_on == "input" else 3 * d_model
            self.conv = BatchedShortConv(seeds, channels, short_conv, salt=salt + 6, active=conv_models)
            self.conv_on = short_conv_on
        # A learned inverse temperature per model and head on the softmax readout: q is multiplied by
        # exp(θ) (θ = 0 at init, the usual 1/√d scale), which scales the logits q·k/√d; q enters the softmax
        # mixers only through that readout, so κ1 of a DeltaFormer is untouched. Created only when asked.
        self.log_temperature = nn.Parameter(torch.zeros(n, n_heads)) if readout_temperature else None
        self.value_norm = None  # (M,) largest ‖u_t‖ of the last forward pass, for logging

    def keep_models(self, rows: torch.Tensor) -> None:
        """Narrow the per-model structure (mixer groups, the convolution's model mask) to the models `rows`
        of the original axis; the parameters are narrowed by the training loop (`train_batched(narrow=...)`)."""
        self.groups = contiguous_groups([self.mixers[i] for i in rows.tolist()])
        if self.conv is not None:
            self.conv.keep_models(rows)

    def betas(self, x: torch.Tensor, name: str, lo: int, hi: int) -> torch.Tensor | None:
        """β of models lo:hi as (m, b, heads, t), or None for mixers without β."""
        if name not in BETA_MAX:
            return None
        logits = torch.einsum("mbtd,mhd->mbht", x[lo:hi], self.beta.weight[lo:hi])
        return BETA_MAX[name] * torch.sigmoid(logits + self.beta.bias[lo:hi, None, :, None])

    def mixer_output(self, x: torch.Tensor) -> torch.Tensor:
        m, b, t, d = x.shape
        if self.conv is not None and self.conv_on == "input":
            x = self.conv(x)
        qkv = self.qkv(x)
        if self.conv is not None and self.conv_on == "qkv":
            qkv = self.conv(qkv)
        q, k, v = qkv.view(m, b, t, 3, self.n_heads, d // self.n_heads).permute(3, 0, 1, 4, 2, 5)
        parts, norms = [], []
        for name, lo, hi in self.groups:
            qs, ks = q[lo:hi], k[lo:hi]
            if self.positional == "rotary_all" or (self.positional == "rotary" and name in SOFTMAX_MIXERS):
                qs, ks = rotary(qs), rotary(ks)
            if self.log_temperature is not None and name in SOFTMAX_MIXERS:
                qs = qs * self.log_temperature[lo:hi].exp()[:, None, :, None, None]
            out, values = mix(name, qs, ks, v[lo:hi], beta=self.betas(x, name, lo, hi), return_values=True)
            parts.append(out)
            with torch.no_grad():
                norms.append(values.norm(dim=-1).flatten(1).amax(1))
        self.value_norm = torch.cat(norms)
        mixed = torch.cat(parts) if len(parts) > 1 else parts[0]
        return self.out(mixed.transpose(2, 3).reshape(m, b, t, d))

    def forward(self, x):
        x = x + self.mixer_output(self.norm1(x))
        if self.mlp_ratio:
            x = x + self.down(F.gelu(self.up(self.norm2(x))))
        return x


class BatchedLM(nn.Module):
    """Token embedding → blocks → LN → unembedding. Positions: 'learned' (added to the embedding),
    'rotary' (rotary q/k in softmax mixers only), 'rotary_all' (rotary q/k in every mixer) or 'none'.
    short_conv = W > 0 adds a width-W causal depthwise convolution to every block (see MixerBlock),
    for the models marked True in `conv_models` (None: every model). readout_temperature=True gives every
    block a learned inverse temperature per model and head on its softmax readout (see MixerBlock). embed_std is
    the standard deviation of the token and position tables (None: 0.02·√d_model)."""

    def __init__(self, seeds, mixers, *, vocab: int, d_model: int, n_layers: int, n_heads: int = 1,
                 max_len: int = 512, mlp_ratio: int = 4, positional: str = "learned", short_conv: int = 0,
                 short_conv_on: str = "qkv", conv_models=None, tie_embeddings: bool = False,
                 readout_temperature: bool = False, embed_std: float | None = None):
        super().__init__()
        if len(mixers) != len(seeds):
            raise ValueError("one mixer name per model")
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        n = len(seeds)
        self.positional = positional
        # Scale of the token and position tables: by default 0.02·√d_model; the swap task's Transformer needs
        # nn.Embedding's N(0, 1) (embed_std=1.0) to learn past 4 swaps (stuck there at 0.02·√d, issue 22).
        std = 0.02 * d_model**0.5 if embed_std is None else float(embed_std)
        self.embed = BatchedEmbedding(seeds, vocab, d_model, salt=11, std=std)
        if positional == "learned":
            self.position = BatchedEmbedding(seeds, max_len, d_model, salt=13, std=std)
        self.blocks = nn.ModuleList(
            MixerBlock(seeds, mixers, d_model, n_heads, mlp_ratio, positional, salt=100 * (i + 1),
                       short_conv=short_conv, short_conv_on=short_conv_on, conv_models=conv_models,
                       readout_temperature=readout_temperature)
            for i in range(n_layers)
        )
        self.norm = BatchedLayerNorm(n, d_model)
        # tie_embeddings: logits read the token table itself (GPT-2 and Zoology's MQAR models), so a value
        # copied by attention is scored by its own embedding; the untied unembedding is then not created.
        self.tied = bool(tie_embeddings)
        if not self.tied:
            self.unembed = BatchedLinear(seeds, d_model, vocab, bias=False, salt=17)

    def keep_models(self, rows: torch.Tensor) -> None:
        """Narrow every block's per-model structure to the models `rows` of the original axis (the training
        loop narrows the parameters): the `narrow` of `train_batched`, with the caller's data."""
        for block in self.blocks:
            block.keep_models(rows)

    def value_norm(self) -> torch.Tensor:
        """(M,) largest ‖u_t‖ over all layers, heads and positions of the last forward pass."""
        return torch.stack([block.value_norm for block in self.blocks]).amax(0)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (M, B, T, V); with `positions` (M, B, P) only at those positions (M, B, P, V),
        which saves the vocabulary projection where no target is scored."""
        x = self.embed(tokens)
        if self.positional == "learned":
            pos = torch.arange(tokens.shape[-1], device=tokens.device).expand_as(tokens)
            x = x + self.position(pos)
        for block in self.blocks:
            x = block(x)
        if positions is not None:
            x = x.gather(2, positions.unsqueeze(-1).expand(*positions.shape, x.shape[-1]))
        if self.tied:
            x = self.norm(x)
            return torch.bmm(x.reshape(x.shape[0], -1, x.shape[-1]), self.embed.weight.transpose(1, 2)).view(
                *x.shape[:-1], -1)
        return self.unembed(self.norm(x))


def masked_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-model mean cross-entropy over positions whose target is not -100; logits (M,B,T,V)."""
    loss = F.cross_entropy(logits.flatten(1, 2).transpose(1, 2), targets.flatten(1), ignore_index=-100,
                           reduction="none")
    mask = (targets.flatten(1) != -100).to(loss.dtype)
    return (loss * mask).sum(1) / mask.sum(1).clamp(min=1)


def masked_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-model accuracy over positions whose target is not -100."""
    mask = targets != -100
    correct = (logits.argmax(-1) == targets) & mask
    return correct.flatten(1).sum(1).double() / mask.flatten(1).sum(1).clamp(min=1).double()


def scored_positions(targets: torch.Tensor, count: int) -> torch.Tensor:
    """Indices (M, B, count) covering every scored position (target != -100) of each row, padded with
    unscored ones; pass to `BatchedLM.forward(positions=...)` and gather the targets the same way."""
    scored = (targets != -100).to(torch.float32)
    ramp = torch.arange(targets.shape[-1], 0, -1, dtype=torch.float32, device=targets.device) / (2 * targets.shape[-1])
    return (scored + ramp).topk(count, dim=-1).indices.sort(-1).values
