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
            per_head = [_per_model([s * 7919 + salt + 101 * h for s in seeds], (d, d_out), _xavier) for h in range(heads)]
            return nn.Parameter(torch.stack(per_head, 1))  # (M, H, d, d_out)

        self.w_query = head_stack(2, d_head)
        self.w_key = head_stack(3, d_head)
        self.w_value = head_stack(4, d_value)
        self.w_out = nn.Parameter(_per_model([s * 7919 + 5 for s in seeds], (heads * d_value, d), _xavier))
        self.readout = BatchedLinear(seeds, d, out_dim, salt=6)
        self.register_buffer("positions", sinusoidal_encoding(n + 1, d) if positional else torch.zeros(n + 1, d))

    def embed(self, query, context):
        shared = context.dim() == 3
        q = self.embedding(query) + self.positions[0]
        c = self.embedding(context) + self.positions[1:]
        return q, c, shared

    def _qkv(self, query, context):
        q, c, shared = self.embed(query, context)
        # (M, T, H, 1, d_head): one query per example and head
        qh = torch.einsum("mtd,mhde->mthe", q, self.w_query).unsqueeze(-2)
        if shared:  # keys/values once per model, broadcast over the T examples
            kh = torch.einsum("mnd,mhde->mhne", c, self.w_key).unsqueeze(1)
            vh = torch.einsum("mnd,mhde->mhne", c, self.w_value).unsqueeze(1)
        else:
            kh = torch.einsum("mtnd,mhde->mthne", c, self.w_key)
            vh = torch.einsum("mtnd,mhde->mthne", c, self.w_value)
        return qh, kh, vh

    def forward(self, query, context):
        qh, kh, vh = self._qkv(query, context)
        heads = softmax_attention(qh, kh, vh, causal=False, scale=1.0 / math.sqrt(self.d))
        heads = heads.squeeze(-2).flatten(-2)  # (M, T, H·d_v)
        return self.readout(torch.einsum("mtk,mkd->mtd", heads, self.w_out))

    @torch.no_grad()
    def attention(self, query, context) -> torch.Tensor:
        """Attention weights (M, T, H, n): the same mixer applied to one-hot values."""
        qh, kh, _ = self._qkv(query, context)
        n = kh.shape[-2]
        eye = torch.eye(n, dtype=qh.dtype).expand(*kh.shape[:-1], n)
        return softmax_attention(qh, kh, eye, causal=False, scale=1.0 / math.sqrt(self.d)).squeeze(-2)


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
