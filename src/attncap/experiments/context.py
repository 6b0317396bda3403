"""What every experiment job knows about itself: seed, device, threads, tier, and how to stamp rows."""
from __future__ import annotations

import dataclasses
import time

import pandas as pd

from attncap.runtime import configure_torch, provenance, resolve_device
from attncap.train import compile_steps


@dataclasses.dataclass
class RunContext:
    claim: str
    experiment: str
    seed: int
    device: str
    threads: int
    tier: str
    part: str = "all"
    compile: bool = False  # torch.compile the training steps (attncap.train.compile_steps)
    started: float = dataclasses.field(default_factory=time.perf_counter)

    @classmethod
    def create(cls, *, claim, experiment, seed=0, device="auto", threads=1, tier="unknown", part="all",
               compile=False):
        configure_torch(threads, seed)
        compile_steps(compile)
        return cls(claim=claim, experiment=experiment, seed=seed, device=resolve_device(device),
                   threads=threads, tier=tier, part=part, compile=bool(compile))

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def stamp(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Add claim, experiment, base seed and provenance columns (rows keep their own wall time)."""
        frame = frame.copy()
        frame.insert(0, "claim", self.claim)
        frame.insert(1, "experiment", self.experiment)
        if "seed" not in frame:
            frame["seed"] = self.seed
        if "wall_time_s" not in frame:
            frame["wall_time_s"] = self.elapsed()
        frame["job_wall_time_s"] = self.elapsed()
        frame["threads"] = self.threads
        frame["compiled"] = self.compile
        for key, value in provenance(self.device, self.tier).items():
            frame[key] = value
        return frame
