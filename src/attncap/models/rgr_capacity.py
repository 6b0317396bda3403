"""The multi-head key-query scorer of RGR (max over heads, one global threshold), batched over models.

`ScorerBank` holds many scorers on one model axis; models with the same head split (h, d_k) are
stored as one group of shape (n, h, d_k, d_model), so every head split of one D_K budget (and
several budgets) trains in a single call. `constructed_weights` builds the untrained reference
scorer (random-projection associative memories, edges split across heads).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attncap.seeding import torch_generator


def head_scores(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor) -> torch.Tensor:
    """Per-head scores S^(k)_ij = (W_Q^(k) x_i)·(W_K^(k) x_j).

    x: (..., m, d); wq, wk: (..., h, d_k, d) → (..., h, m, m).
    """
    q = torch.einsum("...md,...hcd->...hmc", x, wq)
    k = torch.einsum("...md,...hcd->...hmc", x, wk)
    return q @ k.transpose(-1, -2)


class _HeadMax(torch.autograd.Function):
    """scores.amax(-3) whose backward sends the gradient to the winning head through one mask.

    Same values as amax and, without exact ties between heads (continuous random weights), the same
    gradient; torch's own amax backward (count ties, divide, expand) took ~75% of a CPU training step.
    The mask is written as floats by `eq(out=)` and multiplied in place, the same bits as a boolean mask times
    the gradient (convert, then multiply into a new tensor) with less memory traffic: R4's training step 45.9 →
    33.7 ms (`python benchmarks/compile_speed.py --claims rgr_capacity --steps 150`, eager, docs/performance.md).
    """

    @staticmethod
    def forward(ctx, scores):
        values = scores.amax(-3)
        ctx.save_for_backward(scores, values)
        return values

    @staticmethod
    def backward(ctx, grad):
        scores, values = ctx.saved_tensors
        mask = torch.eq(scores, values.unsqueeze(-3), out=torch.empty_like(scores))
        return mask.mul_(grad.unsqueeze(-3))


def aggregate(scores: torch.Tensor, temperature: float | None = None) -> torch.Tensor:
    """Combine heads (axis -3): hard max, or the smooth max T·logsumexp(S/T) used for training."""
    if temperature is None or scores.shape[-3] == 1:
        if scores.shape[-3] == 1:  # one head: the max is the identity
            return scores.squeeze(-3)
        return _HeadMax.apply(scores) if scores.requires_grad else scores.amax(-3)
    return temperature * torch.logsumexp(scores / temperature, dim=-3)


class ScorerBank(nn.Module):
    """M independent multi-head scorers; model i has heads[i] heads of d_k[i] dims and threshold tau[i].

    Initial weights of model i come from its own generator seeded by init_seeds[i], so a model
    starts (and, under Adam, trains) the same whatever else shares the bank.
    """

    def __init__(self, heads, d_k, init_seeds, d_model: int, init_scale: float = 0.5):
        super().__init__()
        heads, d_k, init_seeds = list(map(int, heads)), list(map(int, d_k)), list(map(int, init_seeds))
        if not len(heads) == len(d_k) == len(init_seeds):
            raise ValueError("heads, d_k and init_seeds need one entry per model")
        self.n_models, self.d_model = len(heads), d_model
        self.splits = sorted(set(zip(heads, d_k)))
        self.members = [[i for i in range(self.n_models) if (heads[i], d_k[i]) == s] for s in self.splits]
        order = [i for group in self.members for i in group]
        # position of model i in the concatenation of groups
        self.register_buffer("inverse", torch.as_tensor(np.argsort(order)), persistent=False)
        self.wq, self.wk = nn.ParameterList(), nn.ParameterList()
        for (h, dk), group in zip(self.splits, self.members):
            # per-head score std ≈ init_scale² at start, whatever d_k is
            std = init_scale * dk ** -0.25
            pairs = [self._init(init_seeds[i], h, dk, d_model, std) for i in group]
            self.wq.append(nn.Parameter(torch.stack([p[0] for p in pairs])))
            self.wk.append(nn.Parameter(torch.stack([p[1] for p in pairs])))
        self.tau = nn.Parameter(torch.zeros(self.n_models))
        self.heads, self.d_k = heads, d_k
        self._tag_rows()

    def _tag_rows(self) -> None:
        # the models of each group's rows: the training loop freezes early-stopped models row by row
        # (attncap.train reads `model_rows`); tagged again whenever .to()/.double() may replace parameters
        for group, wq, wk in zip(self.members, self.wq, self.wk):
            wq.model_rows = wk.model_rows = torch.as_tensor(group)

    def _apply(self, fn, *args, **kwargs):
        out = super()._apply(fn, *args, **kwargs)
        self._tag_rows()
        return out

    @staticmethod
    def _init(seed: int, h: int, dk: int, d: int, std: float):
        gen = torch_generator(seed, h, dk)
        return (torch.randn(h, dk, d, generator=gen) * std, torch.randn(h, dk, d, generator=gen) * std)

    def forward(self, x: torch.Tensor, temperature: float | None = None) -> torch.Tensor:
        """Aggregated scores (M, m, m) for per-model embeddings x (M, m, d)."""
        outs = []
        for group, wq, wk in zip(self.members, self.wq, self.wk):
            index = torch.as_tensor(group, device=x.device)
            outs.append(aggregate(head_scores(x[index], wq, wk), temperature))
        return torch.cat(outs)[self.inverse]

    def scores_of(self, models, x: torch.Tensor, temperature: float | None = None) -> torch.Tensor:
        """Aggregated scores (len(models), m, m) of the listed models only (ascending indices), for
        embeddings x (M, m, d): the models left out cost nothing and get no gradient (a training whose
        early-stopped models are frozen pays for the others only). Each model's scores are computed by the
        same operations as in `forward`, on fewer rows."""
        models = [int(i) for i in models]
        if models == list(range(self.n_models)):
            return self(x, temperature)
        wanted = set(models)
        outs, order = [], []
        for group, wq, wk in zip(self.members, self.wq, self.wk):
            rows = [j for j, i in enumerate(group) if i in wanted]
            if not rows:
                continue
            chosen = [group[j] for j in rows]
            if len(rows) < len(group):
                pick = torch.as_tensor(rows, device=x.device)
                wq, wk = wq[pick], wk[pick]
            outs.append(aggregate(head_scores(x[torch.as_tensor(chosen, device=x.device)], wq, wk), temperature))
            order += chosen
        if not outs:
            return x.new_zeros((0, x.shape[1], x.shape[1]))
        position = {i: p for p, i in enumerate(order)}
        return torch.cat(outs)[torch.as_tensor([position[i] for i in models], device=x.device)]

    def model_weights(self, i: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        """(W_Q, W_K, τ) of model i as (h, d_k, d) tensors, detached."""
        for group, wq, wk in zip(self.members, self.wq, self.wk):
            if i in group:
                j = group.index(i)
                return wq[j].detach().clone(), wk[j].detach().clone(), float(self.tau[i].detach())
        raise IndexError(i)


def balanced_logistic_loss(scores: torch.Tensor, tau: torch.Tensor, adj: torch.Tensor,
                           valid: torch.Tensor, pos_weight: float = 1.0) -> torch.Tensor:
    """Class-balanced pairwise logistic loss per model: mean over edges + mean over non-edges.

    scores (M, m, m), tau (M,), adj/valid (M, m, m) bool (valid excludes i == j). Edges are a 1/m
    fraction of pairs; averaging each class separately keeps the rare class from being ignored.
    """
    return BalancedLogisticLoss(adj, valid, pos_weight)(scores, tau)


class BalancedLogisticLoss:
    """`balanced_logistic_loss` with the class masks and counts built once (they are fixed in training)."""

    def __init__(self, adj: torch.Tensor, valid: torch.Tensor, pos_weight: float = 1.0, dtype=torch.float32):
        pos = adj & valid
        neg = ~adj & valid
        self.pos, self.neg = pos.to(dtype), neg.to(dtype)
        self.n_pos = pos.sum((1, 2)).clamp(min=1)
        self.n_neg = neg.sum((1, 2)).clamp(min=1)
        self.pos_weight = pos_weight

    def __call__(self, scores: torch.Tensor, tau: torch.Tensor, models=None) -> torch.Tensor:
        """Per-model loss; with `models` (indices), scores and tau hold those models only."""
        pos, neg, n_pos, n_neg = self.pos, self.neg, self.n_pos, self.n_neg
        if models is not None:
            pos, neg, n_pos, n_neg = self._subset(tuple(int(i) for i in models))
        margin = scores - tau[:, None, None]
        pos_loss = (F.softplus(-margin) * pos).sum((1, 2)) / n_pos
        neg_loss = (F.softplus(margin) * neg).sum((1, 2)) / n_neg
        return self.pos_weight * pos_loss + neg_loss

    def _subset(self, models: tuple[int, ...]):
        # the set of models still training changes a few times per run: keep the last selection
        if getattr(self, "_cached", (None,))[0] != models:
            pick = torch.as_tensor(models, device=self.pos.device)
            self._cached = (models, (self.pos[pick], self.neg[pick], self.n_pos[pick], self.n_neg[pick]))
        return self._cached[1]


def f1_per_model(scores: torch.Tensor, tau: torch.Tensor, adj: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """All-pairs F1 (M,) of the rule S_ij > τ over the valid pairs."""
    pred = (scores > tau[:, None, None]) & valid
    true = adj & valid
    tp = (pred & true).sum((1, 2)).double()
    fp = (pred & ~true).sum((1, 2)).double()
    fn = (~pred & true).sum((1, 2)).double()
    denominator = 2 * tp + fp + fn
    return torch.where(denominator > 0, 2 * tp / denominator.clamp(min=1), torch.ones_like(tp))


def constructed_weights(x: np.ndarray, adj: np.ndarray, h: int, d_k: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Reference scorer without training: each head stores its share of the edges as a random-projection
    associative memory.

    Edges are dealt round-robin (in a random order) to the h heads. Head k with edges E_k gets one
    Gaussian code g_e ∈ R^{d_k} (entries N(0, 1/d_k)) per edge e = (a, b) and
        W_Q^(k) = Σ_e g_e x_a^T,   W_K^(k) = Σ_e g_e x_b^T,
    so S^(k)_ij = Σ_{e,e'} (x_i·x_a)(g_e·g_e')(x_b'·x_j): ≈ 1 on a stored pair, and noise of order
    √(|E_k|/d_k) from the codes plus interference from non-orthogonal embeddings otherwise.
    With one-hot items and one head this is the "random map to d_k dimensions" of the uncompressed case.
    Returns W_Q, W_K of shape (h, d_k, d_model).
    """
    src, dst = np.nonzero(adj)
    order = rng.permutation(len(src))
    d = x.shape[1]
    wq = np.zeros((h, d_k, d))
    wk = np.zeros((h, d_k, d))
    for head in range(h):
        edges = order[head::h]
        codes = rng.standard_normal((d_k, len(edges))) / math.sqrt(d_k)
        wq[head] = codes @ x[src[edges]]
        wk[head] = codes @ x[dst[edges]]
    return wq, wk
