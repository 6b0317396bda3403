"""The swap task (word problem of S_n): n boxes, object i starts in box i, each step swaps two boxes.

Sequences are token ids for a causal LM. By default swap (a, b) is one token, id a·n + b (ids
0..n²-1; a ≠ b, so ids a·n + a are never used), and its target is the object now in box a. The
two-token form (`tokens_per_swap=2`) writes `a` (ids 0..n-1) then `n + b` (ids n..2n-1) with the target
at the second token; a 2-layer model then spends a layer pairing the two tokens, so it learns more
slowly. An optional final query token (id `query_offset(n) + c`) asks for the object in box c after
the last swap. Targets are object ids 0..n-1, -100 where there is nothing to predict.
"""
from __future__ import annotations

import dataclasses

import torch

IGNORE = -100


def query_offset(n: int, tokens_per_swap: int = 1) -> int:
    """Id of the query token for box 0 (swap tokens come first)."""
    _check_form(tokens_per_swap)
    return n * n if tokens_per_swap == 1 else 2 * n


def vocab_size(n: int, tokens_per_swap: int = 1) -> int:
    """Swap tokens (n² one-token ids, or n a-tokens and n b-tokens) and n query tokens."""
    return query_offset(n, tokens_per_swap) + n


def step_positions(tokens_per_swap: int = 1) -> slice:
    """Where the per-swap targets sit in a token sequence: every token, or every second token."""
    _check_form(tokens_per_swap)
    return slice(tokens_per_swap - 1, None, tokens_per_swap)


def _check_form(tokens_per_swap: int) -> None:
    if tokens_per_swap not in (1, 2):
        raise ValueError(f"tokens_per_swap must be 1 or 2, got {tokens_per_swap}")


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


def dependency_depth(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    """(batch, steps): how many earlier swaps the target of each swap depends on in a chain.

    The target of swap t is what box b_t held before it: if some earlier swap s last touched b_t, that is what
    s's other box held before s, and so on back to an untouched box (whose object is its own index). The chain's
    length is the number of lookups a model must compose; it falls as n grows, since each swap touches a smaller
    share of the boxes. Each box carries the chain length of its content: a swap gives each of its two boxes one
    more than the other box had.
    """
    batch, steps = a.shape
    depth = torch.zeros(batch, n, dtype=torch.long)
    out = torch.empty(batch, steps, dtype=torch.long)
    rows = torch.arange(batch)
    for t in range(steps):
        at_a, at_b = depth[rows, a[:, t]], depth[rows, b[:, t]]
        out[:, t] = at_b
        depth[rows, a[:, t]], depth[rows, b[:, t]] = at_b + 1, at_a + 1
    return out


@dataclasses.dataclass
class SwapBatch:
    tokens: torch.Tensor  # (batch, tokens_per_swap·steps [+1]) token ids
    targets: torch.Tensor  # same shape; object ids at predicted positions, IGNORE elsewhere
    step_targets: torch.Tensor  # (batch, steps): object in box a_t after swap t
    query_target: torch.Tensor | None  # (batch,): object in the queried box after the last swap
    a: torch.Tensor | None = None  # (batch, steps) first box of each swap
    b: torch.Tensor | None = None  # (batch, steps) second box


def swap_tokens(a: torch.Tensor, b: torch.Tensor, n: int, tokens_per_swap: int = 1) -> torch.Tensor:
    """Token ids of swaps (a, b): (batch, steps) one-token ids a·n + b, or (batch, 2·steps) a, n + b."""
    _check_form(tokens_per_swap)
    if tokens_per_swap == 1:
        return a * n + b
    return torch.stack([a, n + b], dim=2).reshape(a.shape[0], 2 * a.shape[1])


def encode(a: torch.Tensor, b: torch.Tensor, n: int, query: torch.Tensor | None = None,
           step_targets: bool = True, tokens_per_swap: int = 1) -> SwapBatch:
    """Token ids and targets for swaps (a, b); `query` (batch,) appends a final-query token."""
    batch, steps = a.shape
    contents = contents_after(a, b, n)
    per_step = contents.gather(2, a[:, :, None])[:, :, 0]
    tokens = swap_tokens(a, b, n, tokens_per_swap)
    targets = torch.full_like(tokens, IGNORE)
    if step_targets:
        targets[:, step_positions(tokens_per_swap)] = per_step
    query_target = None
    if query is not None:
        query_target = contents[torch.arange(batch), -1, query]
        tokens = torch.cat([tokens, (query_offset(n, tokens_per_swap) + query)[:, None]], dim=1)
        targets = torch.cat([targets, query_target[:, None]], dim=1)
    return SwapBatch(tokens, targets, per_step, query_target, a, b)


def sample(n: int, steps: int, batch: int, generator: torch.Generator, *, final_query: bool = True,
           step_targets: bool = True, tokens_per_swap: int = 1) -> SwapBatch:
    """A fresh batch: random swaps, per-step targets, and (optionally) a final query of a random box."""
    a, b = sample_swaps(n, steps, batch, generator)
    query = torch.randint(0, n, (batch,), generator=generator) if final_query else None
    return encode(a, b, n, query, step_targets=step_targets, tokens_per_swap=tokens_per_swap)
