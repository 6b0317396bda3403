"""One training loop for every claim: many tiny models stacked on a leading model axis.

A batched model keeps every parameter with shape (M, ...) and returns one loss per model. The
loop minimises the *sum* of those losses; because Adam/AdamW are element-wise, weight decay is
element-wise and gradient clipping here is per model, model m follows the trajectory it would follow
if trained alone, up to float rounding (tests check this to 1e-4; the batched kernels round differently with
the number of models, which a chaotic run can amplify over thousands of steps: docs/reliability.md).
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path
from typing import Callable, Iterable, Sequence

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
    # Learning-rate factor of the steps beyond the budget (a run continued until certified, `train_batched`).
    # None: the schedule's final value held. A schedule that decays to 0 needs a non-vanishing rate here, or
    # a continued run could neither learn nor be judged settled (the certificate refuses a vanishing rate).
    # The in-budget schedule is untouched, so a run certified within its budget is the same bit for bit.
    continue_lr_fraction: float | None = None


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
        torch.use_deterministic_algorithms(True, warn_only=True)  # also makes the compiled kernels deterministic
        return torch.compile(model)
    except Exception as error:  # noqa: BLE001 - any failure to set up compilation means: train eagerly
        _log_fallback(error)
        return model


def _log_fallback(error: BaseException) -> None:
    first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    print(f"attncap.train: torch.compile unavailable ({type(error).__name__}: {first}); training eagerly",
          file=sys.stderr, flush=True)


def lr_factor(step: int, s: TrainSettings) -> float:
    """Multiplier of the base learning rate at optimizer step `step` (0-based).

    Beyond the budget (step >= s.steps, i.e. a run continued until certified) the factor is the one of
    step s.steps held constant: the schedule's final value (cosine/linear progress is clipped to 1), and
    never a warm-up still rising or a decay still running past its `schedule_span` (or, when set,
    `continue_lr_fraction`)."""
    if step >= s.steps and s.continue_lr_fraction is not None:
        return s.continue_lr_fraction
    step = min(step, s.steps)  # in-budget steps are unchanged
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


@dataclasses.dataclass
class Checkpoint:
    """Where and how often `train_batched` saves its exact state, and the data-stream state it must save too.

    `generators`: the torch.Generators that feed next_batch (their states are saved and restored).
    `stateful`: other objects next_batch or on_step keep state in, each with state_dict() and
    load_state_dict(state) (e.g. a shuffler's current epoch permutation, metric buffers of on_step).
    Every `every` steps the model, optimizer, scheduler, step, frozen mask and its snapshot, model_steps,
    the loss history, these states and torch's global RNG state are written atomically to `path` (a
    temporary file in the same directory, then os.replace); a later call with the same checkpoint continues
    from there, bitwise as if never interrupted. The file is deleted when training finishes normally."""
    path: str | os.PathLike
    every: int
    generators: Sequence[torch.Generator] = ()
    stateful: Sequence[object] = ()


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
    until_certified: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    max_steps: int | None = None,
    check_every: int | None = None,
    checkpoint: Checkpoint | None = None,
    narrow: Callable[[torch.Tensor], None] | None = None,
) -> dict:
    """Train a batched model; `loss_fn` returns one loss per model (shape (M,)).

    `next_batch(step)` supplies the data (each model's slice drawn from its own generator);
    `on_step(step, losses, batch)` may record metrics and return True to stop every model, or a
    bool tensor (M,) marking models that are done (early stopping per model): from then on their
    parameters are held fixed, so each stops exactly where it would stop alone, while the others
    keep training. The loop ends when every model is done.

    Continuation (optional): with `until_certified(history, model_steps)` -> bool (M,) (history: the
    per-model losses so far, (steps, M); model_steps: (M,) steps each model was updated, so model m's own
    history is history[:model_steps[m], m]; e.g. `plateau_certified(settings)`), models still uncertified
    when the budget `settings.steps` is reached keep training at the schedule's final learning rate (or at
    `settings.continue_lr_fraction`), in chunks of `check_every` steps (default 10% of the budget), while the
    certified ones are frozen like early-stopped models, until every model is certified or frozen or
    `max_steps` (the cap, required) is reached. With `checkpoint` the exact state is saved every
    `checkpoint.every` steps and a call that finds the file resumes from it (on_step is not replayed for the
    steps before; see `Checkpoint`).

    Dropping stopped models (optional): with `narrow`, a model that stops is taken off the model axis instead
    of being held there and stepped with the others, so it costs nothing more (`_ModelAxis`). The loop narrows
    every parameter and its optimizer state itself; `narrow(rows)` is then called with the original indices
    of the models left (sorted, on the CPU) and must narrow what else the caller keeps per model (the
    model's per-model structure, next_batch's data streams, on_step's inputs), so that loss_fn returns one
    loss per model left. The losses, on_step's `losses` and the history stay on the original axis, NaN for a
    dropped model. At the end the full axis is restored (a dropped model's parameters as they were when it
    stopped) and narrow is called with every index. Each model's numbers are those of the held-model loop
    wherever its computation does not depend on its batch mates (tests check it for the E5 and swap models).

    Returns the per-step mean loss history, the per-model history (steps, M), the number of steps
    run, the steps each model was updated (`model_steps`), the budget (`budget` = settings.steps) and
    `capped` (per model: it ran to the cap without being certified; all False without until_certified);
    with until_certified also `certified` (the predicate's verdict per model at the end).
    """
    if until_certified is not None and max_steps is None:
        raise ValueError("train_batched: until_certified needs max_steps, the stated cap of a continued run")
    cap = settings.steps if until_certified is None else max(int(max_steps), settings.steps)
    chunk = max(1, int(check_every) if check_every is not None else math.ceil(settings.steps / 10))
    if checkpoint is not None and checkpoint.every < 1:
        raise ValueError(f"train_batched: checkpoint.every must be >= 1, not {checkpoint.every}")
    if narrow is not None and checkpoint is not None:
        raise ValueError("train_batched: narrow and checkpoint together are not supported (a checkpoint holds the full axis)")
    optimizer = make_optimizer(model, settings)
    net = compiled_or_eager(model, _COMPILE_STEPS if settings.compile is None else settings.compile)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, settings))
    params = [p for p in model.parameters() if p.requires_grad]
    history = []
    frozen = None  # (M,) bool, models whose parameters are held fixed
    snapshot: list[torch.Tensor] = []
    model_steps = None
    axis: _ModelAxis | None = None  # with `narrow`: the models still on the axis
    limit = settings.steps  # grows by `chunk` while uncertified models continue, up to `cap`
    start = 0
    if checkpoint is not None and os.path.exists(checkpoint.path):
        saved = _load_checkpoint(checkpoint, model, optimizer, scheduler, settings, cap, chunk)
        start, limit = saved["step"], saved["limit"]
        device = params[0].device if params else torch.device("cpu")
        history = list(saved["history"].to(device).unbind(0)) if saved["history"] is not None else []
        frozen = saved["frozen"].to(device) if saved["frozen"] is not None else None
        snapshot = [t.to(p.device) for t, p in zip(saved["snapshot"], params)]
        model_steps = saved["model_steps"]
    step = start
    ran = start  # steps run so far

    def stop(done: torch.Tensor) -> None:
        """Models `done` (on the original axis) stop: held at their parameters, or dropped with `narrow`."""
        nonlocal frozen, snapshot, axis
        if frozen is not None and not bool((done & ~frozen).any()):
            return
        frozen = done.clone() if frozen is None else frozen | done
        if narrow is None:
            snapshot = [p.detach().clone() for p in params]
        elif not bool(frozen.all()):  # all stopped: the loop ends, nothing to narrow
            axis = axis or _ModelAxis(model, params, optimizer, narrow, len(frozen))
            axis.keep(~frozen.cpu())

    bar = tqdm(total=limit, initial=start, desc=desc, file=sys.stderr, mininterval=5.0, ascii=True)
    while True:
        if step >= limit:
            if until_certified is None or limit >= cap or model_steps is None:
                break
            # budget (or a continuation chunk) spent: certified models stop, the others go on
            done = _certified(until_certified, history, model_steps).to(history[-1].device)
            if frozen is None:
                frozen = torch.zeros_like(done)
            stop(done)
            if bool(frozen.all()):
                break
            limit = min(cap, limit + chunk)
            bar.total = limit
            bar.refresh()
        if checkpoint is not None and step % checkpoint.every == 0 and step > start:
            _save_checkpoint(checkpoint, dict(
                step=step, limit=limit, model=model.state_dict(), optimizer=optimizer.state_dict(),
                scheduler=scheduler.state_dict(), frozen=frozen, snapshot=snapshot, model_steps=model_steps,
                history=torch.stack(history) if history else None), settings, cap, chunk)
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
        if axis is not None:
            model_steps[axis.alive] += 1
        elif frozen is not None:
            with torch.no_grad():
                for p, saved_p in zip(params, snapshot):
                    p.copy_(torch.where(_model_rows(frozen, p).view(-1, *([1] * (p.dim() - 1))), saved_p, p))
            model_steps += (~frozen).long().cpu()
        else:
            model_steps += 1
        detached = losses.detach() if axis is None else axis.widen(losses.detach())
        # Kept as tensors and converted once at the end: a float() per step would make a GPU wait.
        history.append(detached)
        ran = step + 1
        bar.update(1)
        if step % 50 == 0:
            bar.set_postfix(loss=f"{float(detached.nanmean()):.4f}")
        if on_step is not None:
            verdict = on_step(step, detached, batch)
            if isinstance(verdict, torch.Tensor):
                stop(verdict.to(torch.bool).to(detached.device))
                if bool(frozen.all()):
                    break
            elif verdict:
                break
        step += 1
    bar.close()
    if axis is not None:
        axis.restore()
    if checkpoint is not None and os.path.exists(checkpoint.path):
        os.remove(checkpoint.path)  # finished: the caller's results are the record now
    per_model = torch.stack(history).float().cpu() if history else torch.zeros(0, 0)
    n_models = model_steps.shape[0] if model_steps is not None else 0
    mean = per_model.nanmean(1) if axis is not None else per_model.mean(1)  # dropped models' steps are NaN
    out = {"loss_history": mean.tolist() if history else [], "model_loss_history": per_model,
           "steps_run": max(ran, 1),  # 1 for a zero-step budget, as this loop always reported
           "model_steps": model_steps.tolist() if model_steps is not None else [],
           "budget": settings.steps, "capped": [False] * n_models}
    if until_certified is not None:
        certified = (_certified(until_certified, history, model_steps).cpu() if history
                     else torch.zeros(n_models, dtype=torch.bool))
        out["certified"] = certified.tolist()
        out["capped"] = [bool(n >= cap and not c) for n, c in zip(out["model_steps"], out["certified"])]
    return out


class _ModelAxis:
    """The models still on the axis of a loop that drops stopped ones (`train_batched(narrow=...)`).

    `alive`: their original indices, in order. Dropping replaces each parameter by its rows of the models left
    (a new Parameter in the model, the optimizer's groups and `params`, the list the loop steps; its optimizer
    state narrowed alike), keeps the dropped rows aside and calls the caller's `narrow`; `restore` puts the
    full axis back at the end. New Parameters rather than `p.data = ...`: that also works for tensor subclasses."""

    def __init__(self, model: nn.Module, params: list[torch.Tensor], optimizer: torch.optim.Optimizer, narrow,
                 size: int):
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        same = len(named) == len(params) and all(p is q for (_, p), q in zip(named, params))  # identity, not ==
        if not same or any(
                getattr(p, "model_rows", None) is not None or p.dim() == 0 or p.shape[0] != size for p in params):
            raise ValueError("train_batched(narrow=...): every parameter needs the model axis first, "
                             f"{size} models long (no parameter stacking a subset of them)")
        self.model, self.params, self.optimizer, self.narrow, self.size = model, params, optimizer, narrow, size
        self.names = [name for name, _ in named]
        self.alive = torch.arange(size)
        self.kept: list[torch.Tensor] = [p.detach().clone() for p in params]  # full axis; dropped rows frozen here

    def _replace(self, i: int, tensor: torch.Tensor, rows: torch.Tensor | None) -> None:
        """Parameter i becomes `tensor`; its optimizer state is cut to `rows` (None: state dropped)."""
        old = self.params[i]
        new = nn.Parameter(tensor, requires_grad=True)
        path, _, attribute = self.names[i].rpartition(".")
        setattr(self.model.get_submodule(path), attribute, new)
        for group in self.optimizer.param_groups:
            group["params"] = [new if q is old else q for q in group["params"]]
        state = self.optimizer.state.pop(old, None)
        if state and rows is not None:
            self.optimizer.state[new] = {key: value[rows.to(value.device)] if torch.is_tensor(value) and value.dim() > 0
                                         and value.shape[0] == len(self.alive) else value for key, value in state.items()}
        self.params[i] = new

    def keep(self, mask: torch.Tensor) -> None:
        """Keep the models with mask[original index] True (mask on the original axis, on the CPU)."""
        positions = torch.nonzero(mask[self.alive]).flatten()
        if len(positions) == len(self.alive):
            return
        with torch.no_grad():
            for i, full in enumerate(self.kept):
                p = self.params[i].detach()
                full[self.alive.to(full.device)] = p  # the leaving rows as they stop
                self._replace(i, p[positions.to(p.device)], positions)  # indexing copies
        self.alive = self.alive[positions]
        self.narrow(self.alive.clone())

    def widen(self, losses: torch.Tensor) -> torch.Tensor:
        """Per-model values of the models left, on the original axis (NaN for the dropped ones)."""
        full = torch.full((self.size,), math.nan, dtype=losses.dtype, device=losses.device)
        full[self.alive.to(losses.device)] = losses
        return full

    def restore(self) -> None:
        with torch.no_grad():
            for i, full in enumerate(self.kept):
                full[self.alive.to(full.device)] = self.params[i].detach()
                self._replace(i, full, None)
        self.alive = torch.arange(self.size)
        self.narrow(self.alive.clone())


def _model_rows(frozen: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """`frozen` per leading row of parameter p: the model axis itself, or, for a parameter that stacks a subset
    of the models in another order (e.g. one group of equal shapes), frozen[p.model_rows], its rows' models."""
    rows = getattr(p, "model_rows", None)
    return frozen if rows is None else frozen[rows.to(frozen.device)]


def _certified(predicate, history: list[torch.Tensor], model_steps: torch.Tensor) -> torch.Tensor:
    verdict = predicate(torch.stack(history), model_steps.clone())
    return torch.as_tensor(verdict).to(torch.bool)


def _fingerprint(settings: TrainSettings, cap: int, chunk: int) -> dict:
    return {"settings": dataclasses.asdict(settings), "cap": cap, "chunk": chunk}


def _save_checkpoint(checkpoint: Checkpoint, state: dict, settings: TrainSettings, cap: int, chunk: int) -> None:
    """Write the loop's state, the data stream's and torch's RNG state atomically to checkpoint.path."""
    state = dict(state, fingerprint=_fingerprint(settings, cap, chunk),
                 generators=[g.get_state() for g in checkpoint.generators],
                 stateful=[o.state_dict() for o in checkpoint.stateful],
                 rng=torch.get_rng_state(),
                 cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None)
    path = Path(checkpoint.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    try:
        with open(temporary, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def _load_checkpoint(checkpoint: Checkpoint, model, optimizer, scheduler, settings, cap, chunk) -> dict:
    """Restore model, optimizer, scheduler, data-stream and RNG state; return the loop's own state."""
    saved = torch.load(checkpoint.path, map_location="cpu", weights_only=False)
    if saved["fingerprint"] != _fingerprint(settings, cap, chunk):
        raise ValueError(f"checkpoint {checkpoint.path} was written by a run with other settings "
                         f"({saved['fingerprint']} vs {_fingerprint(settings, cap, chunk)}); delete it to start afresh")
    if len(saved["generators"]) != len(checkpoint.generators) or len(saved["stateful"]) != len(checkpoint.stateful):
        raise ValueError(f"checkpoint {checkpoint.path} holds {len(saved['generators'])} generators and "
                         f"{len(saved['stateful'])} stateful objects, this run has {len(checkpoint.generators)} "
                         f"and {len(checkpoint.stateful)}")
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    for generator, state in zip(checkpoint.generators, saved["generators"]):
        generator.set_state(state)
    for obj, state in zip(checkpoint.stateful, saved["stateful"]):
        obj.load_state_dict(state)
    torch.set_rng_state(saved["rng"])
    if saved["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(saved["cuda_rng"])
    return saved


def plateau_certified(settings: TrainSettings, fraction: float = 0.1, drop: float | None = None,
                      min_lr_fraction: float | None = None) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """`until_certified` predicate applying the memorization certificate of `attncap.claims.certify` to
    each model's own history (its first model_steps[m] losses): settled when the loss fell by at most
    `drop` (default PLATEAU_DROP) over the last `fraction` of training per unit of learning rate
    (`plateau_drop` / `tail_lr_fraction` over the steps actually run, continuation included), with that
    rate at least `min_lr_fraction` (default MIN_LR_FRACTION) of its peak. At the budget that is one read,
    the certificate itself; a model continued past it (a first read said still moving) must read settled
    twice, on the last two windows and on the two before them (`plateau_settled`), so the continuation's
    repeated looks do not stop it on one lucky window. A model whose last losses are not finite is settled
    too: it diverged (certify reports DIVERGED), and more steps cannot certify it."""
    tail_lr: dict[tuple[int, int], float] = {}

    def rate(end: int, window: int) -> float:
        if (end, window) not in tail_lr:
            tail_lr[end, window] = tail_lr_fraction(settings, end, window=window)
        return tail_lr[end, window]

    def certified(history: torch.Tensor, model_steps: torch.Tensor) -> torch.Tensor:
        history = history.detach().cpu()
        out = torch.zeros(history.shape[1], dtype=torch.bool)
        for m in range(history.shape[1]):
            n = int(model_steps[m])
            own = history[:n, m].tolist()
            if not math.isfinite(final_loss(own)):
                out[m] = True
                continue
            out[m] = plateau_settled(own, rate, reads=1 if n <= settings.steps else 2, fraction=fraction,
                                     drop=drop, min_lr_fraction=min_lr_fraction)
        return out

    return certified


def plateau_settled(losses, lr_of_window: Callable[[int, int], float], reads: int = 1, fraction: float = 0.1,
                    drop: float | None = None, min_lr_fraction: float | None = None) -> bool:
    """The certificate's plateau rule (`attncap.claims.still_moving`) read `reads` times: on the last two
    windows of `fraction` of the history (read 1: `plateau_drop`'s windows) and on the pairs ending one,
    two, ... windows earlier. `lr_of_window(end, window)`: the mean learning-rate factor over
    losses[end - window:end], which the change is divided by.

    Why more than one read where a loop looks again and again (a continuation, the swap task's length
    budget): each look is another chance for batch noise to make one pair of windows look flat while the
    loss still falls. A swap run read 'settled' at 30 450 steps whose loss then fell 11% over 6000 more;
    two adjacent pairs must both be flat, i.e. no fall above the rule's rate over the last three windows.
    One read is the certificate itself, for a single look."""
    from attncap.claims import MIN_LR_FRACTION, PLATEAU_DROP, still_moving  # at call time: claims never imports train

    drop = PLATEAU_DROP if drop is None else drop
    min_lr_fraction = MIN_LR_FRACTION if min_lr_fraction is None else min_lr_fraction
    losses = [float(x) for x in losses]
    window = max(1, int(len(losses) * fraction))
    for k in range(reads):
        end = len(losses) - k * window  # too short to read: plateau_drop's NaN, which still_moving calls moving
        if still_moving(plateau_drop(losses[:end], window=window), lr_of_window(end, window), drop, min_lr_fraction):
            return False
    return True


def loss_curve(losses, points: int = 6) -> str:
    """A few (step: loss) checkpoints of one model's loss history, evenly spaced and ending at the
    last step, e.g. '0:6.24 400:3.10 … 1999:0.01', so a plateau is visible in the CSV."""
    losses = [float(x) for x in losses]
    if not losses:
        return ""
    last = len(losses) - 1
    steps = sorted({round(last * i / (points - 1)) for i in range(points)}) if last else [0]
    return " ".join(f"{s}:{losses[s]:.4g}" for s in steps)


def plateau_drop(losses, fraction: float = 0.1, window: int | None = None) -> float:
    """Relative fall of the mean loss from the second-to-last to the last `fraction` of training (or the
    last two `window`s of steps): near 0 on a plateau, large while the model is still learning (NaN if the
    history is too short)."""
    losses = [float(x) for x in losses]
    window = max(1, int(len(losses) * fraction)) if window is None else int(window)
    if len(losses) < 2 * window:
        return math.nan
    before = sum(losses[-2 * window:-window]) / window
    last = sum(losses[-window:]) / window
    return (before - last) / abs(before) if before else 0.0


def tail_lr_fraction(settings: TrainSettings, steps: int, fraction: float = 0.1, window: int | None = None) -> float:
    """Mean learning-rate factor (peak = 1) over the last `fraction` of `steps` optimizer steps (or the last
    `window` steps), the window `plateau_drop` compares: the certificate divides the loss drop by it, so a
    schedule that decayed to almost nothing cannot pass for a plateau (`attncap.claims.certify`)."""
    steps = int(steps)
    window = max(1, min(steps, int(window)) if window is not None else int(steps * fraction))
    if steps < 1:
        return math.nan
    # fsum: a constant final rate equal to MIN_LR_FRACTION must not land below it by rounding
    return math.fsum(lr_factor(step, settings) for step in range(steps - window, steps)) / window


def final_loss(losses, window: int = 10) -> float:
    """Mean of the last `window` losses of one model (NaN/inf propagate: a diverged run stays visible)."""
    losses = [float(x) for x in losses][-window:]
    return sum(losses) / len(losses) if losses else math.nan


def generators(seeds: Iterable[int], offset: int = 0) -> list[torch.Generator]:
    """One torch.Generator per model, for data that depends on that model's seed (and the stream
    `offset`) only."""
    return [torch_generator(int(seed), offset) for seed in seeds]
