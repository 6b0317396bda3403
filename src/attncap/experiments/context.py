"""What every experiment job knows about itself: seed, device, threads, tier, how to stamp rows, and where
to keep the state that lets a killed job resume (`checkpoint`, `memo`)."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pickle
import shutil
import time
from pathlib import Path

import pandas as pd

from attncap.runtime import atomic_path, configure_torch, git_revision, provenance, resolve_device
from attncap.train import Checkpoint, compile_steps


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
    scratch: Path | None = None  # where this job keeps resumable state; None: nothing is saved
    started: float = dataclasses.field(default_factory=time.perf_counter)

    @classmethod
    def create(cls, *, claim, experiment, seed=0, device="auto", threads=1, tier="unknown", part="all",
               compile=False, scratch=None):
        configure_torch(threads, seed)
        compile_steps(compile)
        return cls(claim=claim, experiment=experiment, seed=seed, device=resolve_device(device),
                   threads=threads, tier=tier, part=part, compile=bool(compile),
                   scratch=Path(scratch) if scratch is not None else None)

    @functools.cached_property
    def _revision(self) -> str:
        return git_revision()  # once per job: a subprocess, and the code does not change under a running job

    def _state_path(self, key, suffix: str) -> Path:
        """A file in `scratch` named by a hash of `key` together with everything else that fixes the numbers
        (experiment, part, base seed, device, code revision): a changed config or code never resumes from
        another run's state, it starts afresh beside it."""
        identity = [self.claim, self.experiment, self.part, self.seed, self.device, self._revision, key]
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=repr).encode()).hexdigest()[:20]
        return self.scratch / f"{digest}{suffix}"

    def checkpoint(self, key, every: int, generators=(), stateful=()) -> Checkpoint | None:
        """The `attncap.train.Checkpoint` of the training identified by `key` (None without `scratch`): a job
        killed during it continues from its last saved step when it is run again."""
        if self.scratch is None:
            return None
        return Checkpoint(self._state_path(key, ".pt"), every=max(1, int(every)), generators=list(generators),
                          stateful=list(stateful))

    def memo(self, key, compute):
        """`compute()`, saved under `key` in `scratch` (atomically) and read back instead of recomputed when the
        job is run again after being killed: the finished trainings of a long job are not redone."""
        if self.scratch is None:
            return compute()
        path = self._state_path(key, ".pkl")
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        with atomic_path(path) as tmp:
            tmp.write_bytes(pickle.dumps(value))
        return value

    def resumable(self, key, train):
        """`train(checkpoint)` made resumable under `key`: its result is kept (`memo`) and the training it runs is
        checkpointed (`checkpoint`, passed to it as the factory `checkpoint(every, generators, stateful)`), so a
        job killed during it continues that training and reads back the ones that finished."""
        return self.memo(key, lambda: train(lambda every, generators, stateful: self.checkpoint(
            key, every, generators, stateful)))

    def clear_scratch(self) -> None:
        """Drop the resumable state once the job's output is written."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            try:
                self.scratch.parent.rmdir()  # the shared parent, once no other job keeps state in it
            except OSError:
                pass

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
