"""One training loop for every claim: many tiny models stacked on a leading model axis.

A batched model keeps every parameter with shape (M, ...) and returns one loss per model. The
loop minimises the *sum* of those losses; because Adam/AdamW are element-wise, weight decay is
element-wise and gradient clipping here is per model, model m follows exactly the trajectory it
would follow if trained alone (tests check this).
"""
from __future__ import annotations

import dataclasses
import math
import sys
from typing import Callable, Iterable

import torch
from torch import nn
from tqdm import tqdm

from attncap.seeding import torch_generator


@dataclasses.dataclass
class TrainSettings:
    steps: int
    lr: float
    optimizer: str = "adamw"  # adam | adamw
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 0
    schedule: str = "constant"  # constant | cosine | linear
    final_lr_fraction: float = 0.0  # cosine/linear decay to lr * this
    clip_norm: float | None = None
    schedule_every: int = 1  # apply the schedule in units of this many steps (e.g. per epoch)
    # Units over which cosine/linear decay runs. None: the last unit reaches final_lr_fraction. An int
    # T reproduces torch's LinearLR(total_iters=T) stepped once per unit: unit u gets progress u/T, so
    # with T = number of epochs the final epoch stops one step short of the final value.
    schedule_span: int | None = None
    # torch's foreach (multi-tensor) Adam/AdamW; None keeps torch's default (per-tensor loop on CPU)
    foreach: bool | None = None
    # torch.compile the model for this loop (forward and, through AOTAutograd, backward); None follows
    # the process-wide choice of `compile_steps` (set per job from the config's `compile` list)
    compile: bool | None = None


_COMPILE_STEPS = False


def compile_steps(enabled: bool) -> None:
    """Process-wide default of TrainSettings.compile: RunContext sets it once per job for the claims
    that the config's `compile` list names (benchmarks/compile_speed.py measures where it pays)."""
    global _COMPILE_STEPS
    _COMPILE_STEPS = bool(enabled)


def compiled_or_eager(model: nn.Module, enabled: bool) -> nn.Module:
    """torch.compile(model) when enabled (compilation itself happens at the first call), else the model."""
    if not enabled:
        return model
    try:
        return torch.compile(model)
    except Exception as error:  # noqa: BLE001 - any failure to set up compilation means: train eagerly
        _log_fallback(error)
        return model


def _log_fallback(error: BaseException) -> None:
    first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    print(f"attncap.train: torch.compile unavailable ({type(error).__name__}: {first}); training eagerly",
          file=sys.stderr, flush=True)


def lr_factor(step: int, s: TrainSettings) -> float:
    """Multiplier of the base learning rate at optimizer step `step` (0-based)."""
    if s.warmup_steps and step < s.warmup_steps:
        return (step + 1) / s.warmup_steps
    if s.schedule == "constant":
        return 1.0
    unit = step // s.schedule_every
    if s.schedule_span is not None:
        total = max(1, s.schedule_span)
    else:
        total = max(1, math.ceil(s.steps / s.schedule_every) - 1 - s.warmup_steps // s.schedule_every)
    progress = min(1.0, max(0.0, (unit - s.warmup_steps // s.schedule_every) / total))
    if s.schedule == "cosine":
        return s.final_lr_fraction + (1 - s.final_lr_fraction) * 0.5 * (1 + math.cos(math.pi * progress))
    if s.schedule == "linear":
        return 1.0 + (s.final_lr_fraction - 1.0) * progress
    raise ValueError(f"unknown schedule {s.schedule!r}")


def clip_per_model(parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each model's gradient (slice m of every parameter) to global norm `max_norm`."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.zeros(0)
    squared = sum(g.reshape(g.shape[0], -1).pow(2).sum(1) for g in grads)
    norms = squared.sqrt()
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms


def make_optimizer(model: nn.Module, s: TrainSettings) -> torch.optim.Optimizer:
    if s.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=s.lr, betas=s.betas, weight_decay=s.weight_decay,
                                foreach=s.foreach)
    if s.optimizer == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=s.lr, betas=s.betas, weight_decay=s.weight_decay,
                                 foreach=s.foreach)
    raise ValueError(f"unknown optimizer {s.optimizer!r}")


def train_batched(
    model: nn.Module,
    next_batch: Callable[[int], object],
    loss_fn: Callable[[nn.Module, object], torch.Tensor],
    settings: TrainSettings,
    *,
    desc: str = "train",
    on_step: Callable[[int, torch.Tensor, object], bool | torch.Tensor | None] | None = None,
) -> dict:
    """Train a batched model; `loss_fn` returns one loss per model (shape (M,)).

    `next_batch(step)` supplies the data (each model's slice drawn from its own generator);
    `on_step(step, losses, batch)` may record metrics and return True to stop every model, or a
    bool tensor (M,) marking models that are done (early stopping per model): from then on their
    parameters are held fixed, so each stops exactly where it would stop alone, while the others
    keep training. The loop ends when every model is done.
    Returns the per-step mean loss history, the per-model history (steps, M), the number of steps
    run and the steps each model was updated (`model_steps`).
    """
    optimizer = make_optimizer(model, settings)
    net = compiled_or_eager(model, _COMPILE_STEPS if settings.compile is None else settings.compile)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, settings))
    params = [p for p in model.parameters() if p.requires_grad]
    history = []
    frozen = None  # (M,) bool, models whose parameters are held fixed
    snapshot: list[torch.Tensor] = []
    model_steps = None
    step = 0
    bar = tqdm(range(settings.steps), desc=desc, file=sys.stderr, mininterval=5.0, ascii=True)
    for step in bar:
        batch = next_batch(step)

        def forward_backward(module):
            optimizer.zero_grad(set_to_none=True)
            out = loss_fn(module, batch)
            out.sum().backward()
            return out

        try:
            losses = forward_backward(net)
        except Exception as error:  # noqa: BLE001 - compilation is lazy: a missing compiler fails here
            if net is model:
                raise
            _log_fallback(error)
            net = model
            losses = forward_backward(net)
        if model_steps is None:
            model_steps = torch.zeros(losses.shape[0], dtype=torch.long)
        if settings.clip_norm is not None:
            clip_per_model(params, settings.clip_norm)
        optimizer.step()
        scheduler.step()
        if frozen is not None:
            with torch.no_grad():
                for p, saved in zip(params, snapshot):
                    p.copy_(torch.where(frozen.view(-1, *([1] * (p.dim() - 1))), saved, p))
            model_steps += (~frozen).long().cpu()
        else:
            model_steps += 1
        detached = losses.detach()
        # Kept as tensors and converted once at the end: a float() per step would make a GPU wait.
        history.append(detached)
        if step % 50 == 0:
            bar.set_postfix(loss=f"{float(detached.mean()):.4f}")
        if on_step is not None:
            verdict = on_step(step, detached, batch)
            if isinstance(verdict, torch.Tensor):
                done = verdict.to(torch.bool).to(detached.device)
                if frozen is None or bool((done & ~frozen).any()):
                    frozen = done if frozen is None else (frozen | done)
                    snapshot = [p.detach().clone() for p in params]
                if bool(frozen.all()):
                    break
            elif verdict:
                break
    bar.close()
    per_model = torch.stack(history).float().cpu() if history else torch.zeros(0, 0)
    return {"loss_history": per_model.mean(1).tolist() if history else [], "model_loss_history": per_model,
            "steps_run": step + 1, "model_steps": model_steps.tolist() if model_steps is not None else []}


def loss_curve(losses, points: int = 6) -> str:
    """A few (step: loss) checkpoints of one model's loss history, evenly spaced and ending at the
    last step, e.g. '0:6.24 400:3.10 … 1999:0.01', so a plateau is visible in the CSV."""
    losses = [float(x) for x in losses]
    if not losses:
        return ""
    last = len(losses) - 1
    steps = sorted({round(last * i / (points - 1)) for i in range(points)}) if last else [0]
    return " ".join(f"{s}:{losses[s]:.4g}" for s in steps)


def plateau_drop(losses, fraction: float = 0.1) -> float:
    """Relative fall of the mean loss from the second-to-last to the last `fraction` of training:
    near 0 on a plateau, large while the model is still learning (NaN if the history is too short)."""
    losses = [float(x) for x in losses]
    window = max(1, int(len(losses) * fraction))
    if len(losses) < 2 * window:
        return math.nan
    before = sum(losses[-2 * window:-window]) / window
    last = sum(losses[-window:]) / window
    return (before - last) / abs(before) if before else 0.0


def tail_lr_fraction(settings: TrainSettings, steps: int, fraction: float = 0.1) -> float:
    """Mean learning-rate factor (peak = 1) over the last `fraction` of `steps` optimizer steps, the window
    `plateau_drop` compares: the certificate divides the loss drop by it, so a schedule that decayed to
    almost nothing cannot pass for a plateau (`attncap.claims.certify`)."""
    steps = int(steps)
    window = max(1, int(steps * fraction))
    if steps < 1:
        return math.nan
    return sum(lr_factor(step, settings) for step in range(steps - window, steps)) / window


def final_loss(losses, window: int = 10) -> float:
    """Mean of the last `window` losses of one model (NaN/inf propagate: a diverged run stays visible)."""
    losses = [float(x) for x in losses][-window:]
    return sum(losses) / len(losses) if losses else math.nan


def generators(seeds: Iterable[int], offset: int = 0) -> list[torch.Generator]:
    """One torch.Generator per model, for data that depends on that model's seed (and the stream
    `offset`) only."""
    return [torch_generator(int(seed), offset) for seed in seeds]
