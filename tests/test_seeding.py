"""The one seed helper: same keys, same stream; any different key, a different stream."""
import numpy as np
import pytest
import torch

from attncap.seeding import numpy_rng, seed_of, torch_generator


def test_same_keys_same_stream():
    assert seed_of(3, 1, 7) == seed_of(3, 1, 7)
    torch.testing.assert_close(torch.randn(5, generator=torch_generator(3, "init")),
                               torch.randn(5, generator=torch_generator(3, "init")), rtol=0, atol=0)
    np.testing.assert_array_equal(numpy_rng(2, "data").random(4), numpy_rng(2, "data").random(4))


def test_keys_are_ordered_and_distinct():
    seeds = {seed_of(*k) for k in [(1, 2), (2, 1), (1, 2, 0), (1,), ("R2",), ("R3",), (12,), (1, 2, "x")]}
    assert len(seeds) == 8
    assert all(0 <= s < 2**63 for s in seeds)  # torch.manual_seed accepts it


def test_negative_keys_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        seed_of(-1)
