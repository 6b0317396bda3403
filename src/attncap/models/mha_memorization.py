"""One multi-head attention layer read at a query token, batched over a leading model axis.

The layout of Mahdavi et al.'s reference model: linear input embedding, sinusoidal positional
encodings (query at position 0, context at 1..n), per-head softmax attention of the query over the
context tokens only (the query is masked out of the keys), scores scaled by 1/√d, value size d_v
per head, output projection W_O, linear readout. No skip, LayerNorm or MLP.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attncap.models.layers import BatchedLinear, _per_model
from attncap.models.mixers import softmax_attention
from attncap.tasks.mha_memorization import sinusoidal_encoding


def _xavier(tensor: torch.Tensor) -> None:
    nn.init.xavier_uniform_(tensor)


class BatchedMHAMemorizer(nn.Module):
    """M independent single-layer MHA models; `forward(query, context)` → (M, T, out_dim).

    query: (M, T, d_in); context: (M, n, d_in) when shared by all T examples, (M, T, n, d_in) otherwise.
    """

    def __init__(self, seeds, *, d_in: int, d: int, heads: int, d_head: int, n: int, out_dim: int,
                 d_value: int = 1, positional: bool = True):
        super().__init__()
        seeds = [int(s) for s in seeds]
        self.heads, self.d, self.d_head, self.d_value = heads, d, d_head, d_value
        self.embedding = BatchedLinear(seeds, d_in, d, salt=1)
        # Heads are initialised one at a time (seeded by model and head), like the reference's loop.
        def head_stack(salt, d_out):
            per_head = [_per_model([(s, salt, h) for s in seeds], (d, d_out), _xavier) for h in range(heads)]
            return nn.Parameter(torch.stack(per_head, 1))  # (M, H, d, d_out)

        self.w_query = head_stack(2, d_head)
        self.w_key = head_stack(3, d_head)
        self.w_value = head_stack(4, d_value)
        self.w_out = nn.Parameter(_per_model([(s, 5) for s in seeds], (heads * d_value, d), _xavier))
        self.readout = BatchedLinear(seeds, d, out_dim, salt=6)
        self.register_buffer("positions", sinusoidal_encoding(n + 1, d) if positional else torch.zeros(n + 1, d))

    def embed(self, query, context):
        shared = context.dim() == 3
        q = self.embedding(query) + self.positions[0]
        c = self.embedding(context) + self.positions[1:]
        return q, c, shared

    # Layout: the softmax runs over the n context tokens on axis -2, never -1. torch's CPU softmax over a
    # short last axis (n <= 24) is ~40x slower than over an inner axis, and it was half of a step.

    def _weights(self, query, context):
        """Attention weights over the context tokens (axis -2): (M, H, n, T) shared, (M, T, n, H) non-shared."""
        q, c, shared = self.embed(query, context)
        scale = 1.0 / math.sqrt(self.d)
        if shared:
            # keys once per model, one (n × d_head)·(d_head × T) product per model and head
            qh = torch.einsum("mtd,mhde->mhte", q, self.w_query)
            kh = torch.einsum("mnd,mhde->mhne", c, self.w_key)
            scores = kh @ qh.transpose(-1, -2)
        else:
            # q·(c_j W_K) = (q W_K^T)·c_j: map each query back to R^d once instead of projecting all
            # n context tokens of every example to keys (d_head times fewer multiply-adds)
            qh = torch.einsum("mtd,mhde->mthe", q, self.w_query)
            u = torch.einsum("mthe,mhde->mthd", qh, self.w_key)
            scores = c @ u.transpose(-1, -2)
        return (scores * scale).softmax(-2), c, shared

    def forward(self, query, context):
        weights, c, shared = self._weights(query, context)
        if shared:
            vh = torch.einsum("mnd,mhde->mhen", c, self.w_value)
            heads = (vh @ weights).permute(0, 3, 1, 2).flatten(-2)  # (M, T, H·d_v)
        else:
            vh = torch.einsum("mtnd,mhde->mthne", c, self.w_value)
            heads = torch.einsum("mtnh,mthne->mthe", weights, vh).flatten(-2)
        return self.readout(torch.einsum("mtk,mkd->mtd", heads, self.w_out))

    @torch.no_grad()
    def attention(self, query, context) -> torch.Tensor:
        """Attention weights (M, T, H, n)."""
        weights, _, shared = self._weights(query, context)
        return weights.permute(0, 3, 1, 2) if shared else weights.transpose(-1, -2)


def frozen_features(query, contexts, w_query, w_key, scale: float) -> torch.Tensor:
    """Φ of the frozen-attention identity f = Σ_h a_hᵀ E c_h (float64 for exact ranks).

    query (T, d); contexts (n, d) shared or (T, n, d); w_query/w_key (H, d, d_h). Row t of Φ is
    [E_tᵀ a_1; …; E_tᵀ a_H], i.e. the heads' outputs with the context itself as values.
    """
    shared = contexts.dim() == 2
    qh = torch.einsum("td,hde->the", query, w_query).unsqueeze(-2)  # (T, H, 1, d_h)
    if shared:
        kh = torch.einsum("nd,hde->hne", contexts, w_key).unsqueeze(0)  # (1, H, n, d_h)
        values = contexts.expand(1, w_key.shape[0], *contexts.shape)
    else:
        kh = torch.einsum("tnd,hde->thne", contexts, w_key)
        values = contexts.unsqueeze(1).expand(-1, w_key.shape[0], -1, -1)
    rows = softmax_attention(qh, kh, values, causal=False, scale=scale).squeeze(-2)  # (T, H, d)
    return rows.reshape(rows.shape[0], -1)
