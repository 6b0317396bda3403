"""Random look-up tables f: [N]² → [N] and the fixed i.i.d. training samples drawn from them (claim 2).

A block of runs (one experiment) shares one table and one sample; each model reshuffles that sample
every epoch with its own generator, as a DataLoader with shuffle=True would.
"""
from __future__ import annotations

import torch

from attncap.seeding import torch_generator


def random_table(n_tokens: int, generator: torch.Generator) -> torch.Tensor:
    """f[t1, t2] uniform over [N], independently for each of the N² pairs; shape (N, N), int64."""
    if n_tokens < 2:
        raise ValueError(f"N={n_tokens}: the vocabulary needs at least 2 tokens")
    return torch.randint(0, n_tokens, (n_tokens, n_tokens), generator=generator)


def sample_sequences(table: torch.Tensor, n_sequences: int, generator: torch.Generator) -> torch.Tensor:
    """n i.i.d. sequences (t1, t2, f(t1, t2)) with t1, t2 uniform; shape (n, 3), int64."""
    n_tokens = table.shape[0]
    pairs = torch.randint(0, n_tokens, (n_sequences, 2), generator=generator)
    return torch.cat([pairs, table[pairs[:, 0], pairs[:, 1]].unsqueeze(1)], dim=1)


def all_pairs(table: torch.Tensor) -> torch.Tensor:
    """Every sequence (t1, t2, f(t1, t2)) of the table, row-major; shape (N², 3)."""
    n_tokens = table.shape[0]
    grid = torch.cartesian_prod(torch.arange(n_tokens), torch.arange(n_tokens))
    return torch.cat([grid, table.reshape(-1, 1)], dim=1)


def make_block(n_tokens: int, n_sequences: int, *keys) -> tuple[torch.Tensor, torch.Tensor]:
    """The (table, sample) every config and model seed of one experiment block trains on; `keys` name
    the block's random stream (attncap.seeding)."""
    generator = torch_generator(*keys)
    table = random_table(n_tokens, generator)
    return table, sample_sequences(table, n_sequences, generator)


class EpochShuffler:
    """Serves batches of a fixed sample to M models, each reshuffling it every epoch with its own
    generator; batch b of an epoch is slice b of that model's permutation (the last partial batch is
    kept, like DataLoader(drop_last=False))."""

    def __init__(self, sample: torch.Tensor, batch_size: int, generators: list[torch.Generator]):
        self.sample = sample
        self.batch_size = int(batch_size)
        self.generators = generators
        self.batches_per_epoch = -(-len(sample) // self.batch_size)
        self._order: torch.Tensor | None = None
        self._epoch = -1

    def __call__(self, step: int) -> torch.Tensor:
        """Tokens (M, B, 3) for optimizer step `step` (0-based)."""
        epoch, index = divmod(step, self.batches_per_epoch)
        if epoch != self._epoch:
            # one permutation per model per epoch, drawn in step order so resuming is not needed
            self._order = torch.stack([torch.randperm(len(self.sample), generator=g) for g in self.generators])
            self._epoch = epoch
        rows = self._order[:, index * self.batch_size:(index + 1) * self.batch_size]
        return self.sample[rows]

    def state_dict(self) -> dict:
        """The current epoch's permutation (the generators are saved apart): a run resumed mid-epoch serves
        the same batches (`attncap.train.Checkpoint.stateful`)."""
        return {"order": self._order, "epoch": self._epoch}

    def load_state_dict(self, state: dict) -> None:
        self._order, self._epoch = state["order"], state["epoch"]

