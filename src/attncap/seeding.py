"""The one way seeds are derived: numpy's SeedSequence over a tuple of integer keys.

Every random stream in the project (data, initial weights, shuffling) is named by a tuple such as
(run seed, model seed, purpose, cell sizes…). `seed_of` hashes that tuple with `SeedSequence`, so
streams with different keys are statistically independent and a stream never depends on which other
models share its batch. Add a key instead of an arithmetic offset when a new stream is needed.
"""
from __future__ import annotations

import numpy as np
import torch


def _key(keys) -> list[int]:
    """The entropy words for SeedSequence. Each key is preceded by its kind and length, because
    SeedSequence alone treats trailing zeros as absent ((1, 2) and (1, 2, 0) would collide)."""
    out = []
    for key in keys:
        if isinstance(key, str):  # names are hashed by their bytes, so "R2" and "R3" differ
            data = key.encode()
            out.extend([1, len(data), *data])
        else:
            value = int(key)
            if value < 0:
                raise ValueError(f"seed keys must be non-negative integers, got {value}")
            out.extend([0, value])
    return [len(keys), *out]


def seed_of(*keys) -> int:
    """A 63-bit integer seed for the stream named by `keys` (accepted by torch.manual_seed)."""
    state = np.random.SeedSequence(_key(keys)).generate_state(2, np.uint64)
    return int(state[0] >> np.uint64(1))


def numpy_rng(*keys) -> np.random.Generator:
    """A numpy Generator for the stream named by `keys`."""
    return np.random.default_rng(np.random.SeedSequence(_key(keys)))


def torch_generator(*keys, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch Generator for the stream named by `keys`."""
    return torch.Generator(device=device).manual_seed(seed_of(*keys))
