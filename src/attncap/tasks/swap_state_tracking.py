"""The swap task (word problem of S_n): n boxes, object i starts in box i, each step swaps two boxes.

Sequences are token ids for a causal LM: swap (a, b) is written as two tokens, `a` (ids 0..n-1) then
`n + b` (ids n..2n-1), so the first and second box of a swap are distinguishable without positions.
After each swap the target (at the second token) is the object now in box a; an optional final query
token `2n + c` asks for the object in box c after the last swap. Targets are object ids 0..n-1, -100
where there is nothing to predict.
"""
from __future__ import annotations

import dataclasses

import torch

IGNORE = -100


def vocab_size(n: int) -> int:
    """a-tokens, b-tokens and query tokens."""
    return 3 * n


def sample_swaps(n: int, steps: int, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, b) of shape (batch, steps): uniformly random ordered pairs with a ≠ b."""
    if n < 2:
        raise ValueError(f"a swap needs n >= 2 boxes, got n={n}")
    a = torch.randint(0, n, (batch, steps), generator=generator)
    # b uniform over the other n-1 boxes: shift a draw from 0..n-2 past a.
    b = torch.randint(0, n - 1, (batch, steps), generator=generator)
    b = b + (b >= a).long()
    return a, b


def contents_after(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    """(batch, steps, n): which object is in each box after each swap (the ground truth)."""
    batch, steps = a.shape
    boxes = torch.arange(n).expand(batch, n).clone()
    out = torch.empty(batch, steps, n, dtype=torch.long)
    rows = torch.arange(batch)
    for t in range(steps):
        in_a, in_b = boxes[rows, a[:, t]], boxes[rows, b[:, t]]
        boxes[rows, a[:, t]], boxes[rows, b[:, t]] = in_b, in_a
        out[:, t] = boxes
    return out


@dataclasses.dataclass
class SwapBatch:
    tokens: torch.Tensor  # (batch, 2·steps [+1]) token ids
    targets: torch.Tensor  # same shape; object ids at predicted positions, IGNORE elsewhere
    step_targets: torch.Tensor  # (batch, steps): object in box a_t after swap t
    query_target: torch.Tensor | None  # (batch,): object in the queried box after the last swap


def encode(a: torch.Tensor, b: torch.Tensor, n: int, query: torch.Tensor | None = None,
           step_targets: bool = True) -> SwapBatch:
    """Token ids and targets for swaps (a, b); `query` (batch,) appends a final-query token."""
    batch, steps = a.shape
    contents = contents_after(a, b, n)
    per_step = contents.gather(2, a[:, :, None])[:, :, 0]
    tokens = torch.stack([a, n + b], dim=2).reshape(batch, 2 * steps)
    targets = torch.full_like(tokens, IGNORE)
    if step_targets:
        targets[:, 1::2] = per_step
    query_target = None
    if query is not None:
        query_target = contents[torch.arange(batch), -1, query]
        tokens = torch.cat([tokens, (2 * n + query)[:, None]], dim=1)
        targets = torch.cat([targets, query_target[:, None]], dim=1)
    return SwapBatch(tokens, targets, per_step, query_target)


def sample(n: int, steps: int, batch: int, generator: torch.Generator, *, final_query: bool = True,
           step_targets: bool = True) -> SwapBatch:
    """A fresh batch: random swaps, per-step targets, and (optionally) a final query of a random box."""
    a, b = sample_swaps(n, steps, batch, generator)
    query = torch.randint(0, n, (batch,), generator=generator) if final_query else None
    return encode(a, b, n, query, step_targets=step_targets)
