"""Data for claim 1: random unit / Gaussian key-value memories, Beta-law dot-product streams, and
multi-query associative recall (MQAR) token sequences."""
from __future__ import annotations

import numpy as np
import torch

from attncap.theory import unit_dot_beta_shape


def unit_vectors(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Independent uniform vectors on S^{d-1}, float64, shape (*shape, d)."""
    x = rng.standard_normal((*shape, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def sample_unit_dots(rng: np.random.Generator, size, d: int) -> np.ndarray:
    """Dot products of independent uniform unit vectors in R^d, sampled from the exact Beta law."""
    a = unit_dot_beta_shape(d)
    return 2.0 * rng.beta(a, a, size=size) - 1.0


class DotStream:
    """Nested Beta-law crosstalk samples for Q queries, generated chunk by chunk on demand.

    Query q's first m samples are the same whatever m is asked for (common random numbers), so the
    retrieval error is evaluated at any N by summing cached chunk totals plus one partial chunk —
    a capacity search then costs O(largest N) samples, never O(N) per bisection step.
    """

    def __init__(self, d: int, betas: list[float], queries: int, seed: int, chunk: int = 1 << 17, block: int = 0):
        self.d, self.betas, self.queries, self.seed, self.chunk = d, np.asarray(betas, float), queries, seed, chunk
        self.block = block  # which block of queries (GrowingDotStream): its own random stream
        self._sums: list[np.ndarray] = []  # per chunk: (2, n_betas, Q) sums of x and x² with x = e^{β(t−1)}
        self._cached = (-1, None)
        self.samples_drawn = 0

    def _chunk_dots(self, index: int) -> np.ndarray:
        if self._cached[0] != index:
            key = [self.seed, self.d, index] if self.block == 0 else [self.seed, self.d, index, self.block]
            rng = np.random.default_rng(key)
            self._cached = (index, sample_unit_dots(rng, (self.queries, self.chunk), self.d))
            self.samples_drawn += self.queries * self.chunk
        return self._cached[1]

    def _powers(self, dots: np.ndarray) -> np.ndarray:
        x = np.exp(self.betas[:, None, None] * (dots[None] - 1.0))  # (B, Q, m)
        return np.stack([x.sum(-1), (x * x).sum(-1)])

    def sums(self, n_minus_one: int) -> np.ndarray:
        """(2, n_betas, Q): Σ x_j and Σ x_j² over each query's first `n_minus_one` samples."""
        full, rest = divmod(n_minus_one, self.chunk)
        while len(self._sums) < full:
            self._sums.append(self._powers(self._chunk_dots(len(self._sums))))
        total = np.sum(self._sums[:full], axis=0) if full else np.zeros((2, len(self.betas), self.queries))
        if rest:
            total = total + self._powers(self._chunk_dots(full)[:, :rest])
        return total

    def error2(self, n: int) -> np.ndarray:
        """(n_betas, Q) exact-given-dots mean squared retrieval error with N = n stored pairs."""
        s1, s2 = self.sums(n - 1)
        return (s1 * s1 + s2) / (1.0 + s1) ** 2


class GrowingDotStream:
    """DotStream with a number of queries that grows on demand (a sequential test asks for more).

    Queries come in blocks, each its own nested DotStream: sizes first, first, 2·first, 4·first, …
    up to `max_block`, then `max_block` each, so the first q queries are the same whatever is asked for
    later. Each block's chunk holds ≈ `elements` samples, bounding memory by (samples drawn)/chunk.
    """

    def __init__(self, d: int, betas: list[float], seed: int, first: int, max_block: int = 4096,
                 elements: int = 1 << 17):
        self.d, self.betas, self.seed, self.first, self.max_block, self.elements = d, betas, seed, first, max_block, elements
        self.blocks: list[DotStream] = []

    @property
    def samples_drawn(self) -> int:
        return sum(b.samples_drawn for b in self.blocks)

    def _grow(self, queries: int) -> None:
        while sum(b.queries for b in self.blocks) < queries:
            k = len(self.blocks)
            size = min(self.max_block, self.first if k == 0 else self.first * 2 ** (k - 1))
            chunk = 1 << max(6, min(17, (self.elements // size).bit_length() - 1))
            self.blocks.append(DotStream(self.d, self.betas, size, self.seed, chunk=chunk, block=k))

    def error2(self, n: int, queries: int) -> np.ndarray:
        """(n_betas, Q ≥ queries): per-query mean squared error at N = n over the first Q queries
        (whole blocks; Q is the smallest block boundary ≥ queries)."""
        self._grow(queries)
        out, total = [], 0
        for block in self.blocks:
            if total >= queries:
                break
            out.append(block.error2(n))
            total += block.queries
        return np.concatenate(out, axis=1)


def mqar_batch(generator: torch.Generator, batch: int, seq_len: int, vocab: int, kv_pairs: int):
    """Multi-query associative recall sequences: (tokens, targets), both (batch, seq_len) long.

    The sequence opens with kv (key, value) pairs, keys drawn without replacement from
    [1, vocab/2) and values from [vocab/2, vocab); each key is queried once at a random later
    position, whose target is its value. Token 0 fills the rest; unqueried targets are −100.
    """
    half = vocab // 2
    keys = torch.rand(batch, half - 1, generator=generator).argsort(-1)[:, :kv_pairs] + 1
    values = torch.randint(half, vocab, (batch, kv_pairs), generator=generator)
    tokens = torch.zeros(batch, seq_len, dtype=torch.long)
    tokens[:, 0 : 2 * kv_pairs : 2] = keys
    tokens[:, 1 : 2 * kv_pairs : 2] = values
    free = seq_len - 2 * kv_pairs
    slots = torch.rand(batch, free, generator=generator).argsort(-1)[:, :kv_pairs] + 2 * kv_pairs
    order = torch.rand(batch, kv_pairs, generator=generator).argsort(-1)
    rows = torch.arange(batch)[:, None]
    tokens[rows, slots] = keys.gather(1, order)
    targets = torch.full((batch, seq_len), -100, dtype=torch.long)
    targets[rows, slots] = values.gather(1, order)
    return tokens, targets


def mqar_curriculum_batch(generator: torch.Generator, batch: int, seq_len: int, vocab: int, kv_pairs: int):
    """A training batch mixing kv, kv/2, kv/4, … ≥ 1 pairs in equal parts (as Zoology mixes MQAR
    configurations): the easy sequences let the recall circuit form; evaluation uses kv only."""
    sizes = [kv_pairs >> i for i in range(kv_pairs.bit_length()) if kv_pairs >> i >= 1]
    parts = [batch // len(sizes) + (i < batch % len(sizes)) for i in range(len(sizes))]
    pieces = [mqar_batch(generator, rows, seq_len, vocab, kv) for kv, rows in zip(sizes, parts) if rows]
    return torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])
