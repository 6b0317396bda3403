"""Claim 2 experiments (A1–A3, A5, A6): train stacks of one-layer attention-only transformers on random
look-up tables and record running and full-table accuracy; A4 is derived from A1 by the analysis.
Every model gives two rows from one training (`train_stack`): the `protocol` arm at the authors' 64-epoch
budget and the `converged` arm, trained on at the final learning rate until certified or to the cap.

An experiment is cut into *stacks* (models sharing N, d, d_h and layout, trained in one batched loop)
and the stacks are dealt to `jobs` parts of similar estimated cost, so Snakemake can run parts side by side.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time

import pandas as pd
import torch

from attncap.claims.aot_memorization import CONVERGED_ARM, PROTOCOL_ARM, SATURATION, run_status
from attncap.experiments.context import RunContext
from attncap.models.aot_memorization import AoTStack, per_model_accuracy, per_model_cross_entropy
from attncap.tasks.aot_memorization import EpochShuffler, all_pairs, make_block
from attncap.theory import associations_from_accuracy
from attncap.train import (TrainSettings, generators, loss_curve, plateau_certified, plateau_drop, tail_lr_fraction,
                           train_batched)

EXPERIMENTS = ("A1", "A2", "A3", "A5", "A6")
_BLOCK_SALT = {"A1": 1, "A2": 2, "A3": 3, "A5": 5, "A6": 6}  # one table+sample per experiment block
_SHUFFLE_OFFSET = 17  # data-order generators are seeded by the model seed only (same order for every H)
ARMS = (PROTOCOL_ARM, CONVERGED_ARM)  # two rows per trained model, from one training (train_stack)


@dataclasses.dataclass
class Stack:
    """Models trained together: shared shape, per-model head count, MLP width and seed."""
    kind: str  # aot | mlp
    d: int
    d_head: int
    layout: str
    heads: list[int]
    widths: list[int]
    seeds: list[int]
    final_lr: float

    def cost(self, spec: dict) -> float:
        """Estimated CPU nanoseconds, used only to balance the parts: a fixed ~1 ms per step plus, per
        example, ~4(30 + d_h) ns per (padded) head and ~0.27 ns per multiply-add of unembedding and MLP
        (calibrated on one core; on a CPU the cost grows with Σ H·examples, barely with d), over the steps
        the stack may run: to the cap for a layout that is continued (at the default tier most stacks with
        large models reach it, and the whole stack steps until its last model stops), the budget otherwise."""
        per_example = (max(self.heads) * 4 * (30 + self.d_head)
                       + 0.27 * (spec["N"] * self.d + 2 * max(self.widths) * self.d))
        return self.cap(spec) * (1e6 + len(self.seeds) * spec["batch"] * per_example)

    def cap(self, spec: dict) -> int:
        """The most steps this stack trains: only runs a check reads are continued past the budget (the
        per-head layout is an ablation no check is gated on)."""
        return cap_steps(spec) if self.layout == "shared" else steps_of(spec)


def steps_of(spec: dict) -> int:
    return spec["epochs"] * -(-spec["n_sequences"] // spec["batch"])


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def stacks(experiment: str, spec: dict) -> list[Stack]:
    """Every stack of an experiment, in a fixed order. With group_heads, all head counts (and MLP
    widths) of one shape share a stack (padded to the largest); otherwise each gets its own stack,
    which wastes no compute on padding (the better choice on a CPU, where cost grows with Σ H)."""
    seeds = spec["seeds"]

    def aot(d, d_head, layout, heads, final_lr):
        groups = [heads] if spec["group_heads"] else [[h] for h in heads]
        return [Stack("aot", d, d_head, layout, [h for h in g for _ in seeds], [0] * len(g) * len(seeds),
                      [s for _ in g for s in seeds], final_lr) for g in groups]

    out = []
    if experiment in ("A1", "A6"):
        for d in _as_list(spec["d"]):
            out += aot(d, d, "shared", spec["heads"], spec["final_lr"])
    elif experiment == "A2":
        for layout, d_head in itertools.product(spec["layouts"], spec["d_head"]):
            out += aot(spec["d"], d_head, layout, [spec["heads"]], spec["final_lr"])
    elif experiment == "A3":
        for layout, d in itertools.product(spec["layouts"], spec["d"]):
            out += aot(d, spec["d_head"], layout, [spec["heads"]], spec["final_lr"])
    elif experiment == "A5":
        for d in _as_list(spec["d"]):
            out += aot(d, d, "shared", spec["heads"], spec["final_lr"])
            # equal non-embedding parameters: 4d² (one head) + 2dw = 4d²H  ⇔  w = 2d(H − 1)
            widths = [2 * d * (h - 1) for h in spec["heads"]]
            groups = [widths] if spec["group_heads"] else [[w] for w in widths]
            out += [Stack("mlp", d, d, "shared", [1] * len(g) * len(seeds), [w for w in g for _ in seeds],
                          [s for _ in g for s in seeds], spec["mlp_final_lr"]) for g in groups]
    else:
        raise ValueError(f"unknown experiment {experiment!r}; known: {EXPERIMENTS}")
    return out


def job_parts(experiment: str, spec: dict) -> dict[str, list[Stack]]:
    """Deal the stacks to at most `jobs` parts p0, p1, … (largest first onto the cheapest part)."""
    items = stacks(experiment, spec)
    n_parts = max(1, min(spec["jobs"], len(items)))
    parts: list[list[Stack]] = [[] for _ in range(n_parts)]
    loads = [0.0] * n_parts
    for stack in sorted(items, key=lambda s: -s.cost(spec)):
        i = loads.index(min(loads))
        parts[i].append(stack)
        loads[i] += stack.cost(spec)
    return {f"p{i}": sorted(part, key=items.index) for i, part in enumerate(parts)}


def part_names(experiment: str, spec: dict) -> list[str]:
    return list(job_parts(experiment, spec))


def expected_cells(section: dict) -> dict[str, list[dict]]:
    """Run table (file stem, e.g. A1_p0) -> one cell per trained model of that part's stacks and arm, as the
    {column: value} its row must carry; attncap.claims.evaluate refuses verdicts from tables lacking one."""
    out = {}
    for experiment in EXPERIMENTS:
        if experiment not in section:
            continue
        for part, part_stacks in job_parts(experiment, section[experiment]).items():
            out[f"{experiment}_{part}"] = [
                {"arm": arm, "model": st.kind, "layout": st.layout, "d": st.d, "d_head": st.d_head, "heads": h,
                 "mlp_width": w, "seed": seed}
                for st in part_stacks for h, w, seed in zip(st.heads, st.widths, st.seeds) for arm in ARMS]
    return out


def check_config(section: dict) -> list[str]:
    """Shapes JSON Schema cannot express: per-head layout with d_h > d, batches larger than the sample."""
    problems = []
    for name, spec in section.items():
        if spec["batch"] > spec["n_sequences"]:
            problems.append(f"{name}.batch: batch={spec['batch']} > n_sequences={spec['n_sequences']}; "
                            "an epoch would not hold one batch")
        if spec["last_batches"] > steps_of(spec):
            problems.append(f"{name}.last_batches: {spec['last_batches']} > the {steps_of(spec)} training steps")
        if spec["final_lr"] > spec["lr"] or spec.get("mlp_final_lr", 0) > spec["lr"]:
            problems.append(f"{name}.final_lr: the learning rate must decay (final_lr <= lr={spec['lr']})")
        if "per_head" in spec.get("layouts", []):
            d_heads, dims = _as_list(spec["d_head"]), _as_list(spec["d"])
            bad = sorted({(h, d) for h in d_heads for d in dims if h > d})
            for h, d in bad:
                key = "d_head" if isinstance(spec["d_head"], list) else "d"
                problems.append(f"{name}.{key}: d_h={h} > d={d} is impossible in the per_head layout "
                                "(W_O^h W_V^h has rank <= d; the paper's formalism needs d_h <= d)")
    return problems


def run(experiment: str, spec: dict, context: RunContext) -> pd.DataFrame:
    parts = job_parts(experiment, spec)
    if context.part not in parts and context.part != "all":
        raise ValueError(f"{experiment}: unknown part {context.part!r}; this config has {list(parts)}")
    todo = [s for name, part in parts.items() if context.part in (name, "all") for s in part]
    table, sample = make_block(spec["N"], spec["n_sequences"], context.seed, _BLOCK_SALT[experiment])
    frames = [context.resumable(("stack", spec, stack), lambda checkpoint, stack=stack: train_stack(
        stack, spec, table, sample, context.device, checkpoint=checkpoint)) for stack in todo]
    frame = pd.concat(frames, ignore_index=True)
    frame.insert(0, "part", context.part)
    return frame


def cap_steps(spec: dict) -> int:
    """The converged arm's cap: `continue_cap` times the protocol's budget (1 = no continuation). Stacks of the
    per-head layout (an ablation drawn in A2, on which no check is gated) are not continued."""
    return math.ceil(spec["continue_cap"] * steps_of(spec))


def train_stack(stack: Stack, spec: dict, table: torch.Tensor, sample: torch.Tensor, device: str = "cpu",
                desc: str | None = None, checkpoint=None, certify: bool = True,
                history: dict | None = None) -> pd.DataFrame:
    """Train one stack with Adam and the reference code's per-epoch linear decay; two rows per model.

    One training serves both arms. The `protocol` row is read at the authors' budget (64 epochs): running
    accuracy and loss over the last `last_batches` batches before it, full-table accuracy of the parameters
    at exactly that step. Training then goes on only for the models still uncertified there, at the
    schedule's final learning rate (`train_batched(until_certified=...)`), until each is certified by the
    claim's own rule (`run_status`: plateau per unit of learning rate, or saturated) or reaches the cap
    (`continue_cap` × the budget); the `converged` row is read at the end of each model's own steps. A model
    certified at the budget is frozen there, so its two rows agree. Continuation never touches the first
    `budget` steps (the schedule, data order and updates up to it are those of a run without it), so the
    protocol rows are bitwise those of a run that stops at the budget (tests check this).

    `checkpoint(every, generators, stateful)` -> `attncap.train.Checkpoint` or None (`RunContext.checkpoint`):
    the training's state, data order and metric buffers are saved every tenth of the budget, so a killed job
    resumes mid-training, bitwise as one run.

    For budget studies (`scripts/budget_drift.py`): `certify=False` trains every model to the cap, certified or
    not, and a `history` dict receives the per-step training accuracies and losses (steps run, models) and the
    `TrainSettings` they were trained with."""
    started = time.perf_counter()
    model = AoTStack(stack.seeds, stack.heads, n_tokens=spec["N"], d=stack.d, d_head=stack.d_head,
                     layout=stack.layout, mlp_widths=stack.widths).to(device)
    shuffle = EpochShuffler(sample, spec["batch"], generators(stack.seeds, offset=_SHUFFLE_OFFSET))
    settings = TrainSettings(
        steps=steps_of(spec), lr=spec["lr"], optimizer="adam", schedule="linear",
        schedule_every=shuffle.batches_per_epoch, final_lr_fraction=stack.final_lr / spec["lr"],
        schedule_span=spec["epochs"], foreach=True)  # multi-tensor Adam: same numbers, fewer ops
    cap = stack.cap(spec)
    budget, cap, last = settings.steps, max(cap, settings.steps), spec["last_batches"]
    # per-step metrics go into preallocated rows (no per-step tensors kept alive between the large
    # temporaries, which would fragment the heap); only the last `last_batches` of a model's steps are read
    accuracies = torch.zeros(cap, model.n_models, dtype=torch.float64, device=device)
    losses = torch.zeros(cap, model.n_models, dtype=model.embed.weight.dtype, device=device)
    counter = [0]
    at_budget = {}

    def loss_fn(net, batch):
        logits = net(batch)
        accuracies[counter[0]] = per_model_accuracy(logits.detach(), batch[..., 2])
        return per_model_cross_entropy(logits, batch[..., 2])

    def on_step(step, step_losses, batch):
        losses[step] = step_losses
        counter[0] = step + 1
        if step + 1 == budget:  # the parameters after the budget's last update: the protocol arm's table
            at_budget["hits"] = table_hits(model, table, device)

    def tail_mean(values: torch.Tensor, model_steps) -> torch.Tensor:
        """Per model: mean of `values` (steps, M) over the last `last` of its own steps (one reduction over
        the step axis when every model ran the same steps, as a run without continuation computes it)."""
        ends = [int(n) for n in model_steps]
        if len(set(ends)) == 1:
            return values[:ends[0]][-last:].mean(0)
        return torch.stack([values[:n, m][-last:].mean() for m, n in enumerate(ends)])

    def running(model_steps) -> torch.Tensor:
        return tail_mean(accuracies, model_steps)

    settled = plateau_certified(settings)
    buffers = _Buffers(accuracies=accuracies, losses=losses, counter=counter, at_budget=at_budget)
    saving = checkpoint(math.ceil(budget / 10), shuffle.generators, [shuffle, buffers]) if checkpoint else None

    def until_certified(losses_so_far, model_steps):
        if not certify:
            return torch.zeros(model.n_models, dtype=torch.bool)
        # the claim's rule (run_status): a plateau per unit of learning rate, or a saturated running accuracy
        return settled(losses_so_far, model_steps) | (running(model_steps).cpu() >= SATURATION)

    result = train_batched(model, lambda step: shuffle(step).to(device), loss_fn, settings,
                           desc=desc or f"{stack.kind} d={stack.d} d_h={stack.d_head}", on_step=on_step,
                           until_certified=until_certified if cap > budget else None,
                           max_steps=cap if cap > budget else None, checkpoint=saving)
    ran = counter[0]
    if history is not None:
        history.update(accuracies=accuracies[:ran].cpu(), losses=losses[:ran].cpu(), settings=settings)
    model_steps = result["model_steps"] if cap > budget else [ran] * model.n_models
    capped = result["capped"]
    protocol_steps = [min(budget, ran)] * model.n_models
    hits = {CONVERGED_ARM: table_hits(model, table, device)}
    hits[PROTOCOL_ARM] = at_budget.get("hits", hits[CONVERGED_ARM])  # the loop always reaches the budget
    wall = time.perf_counter() - started
    n = spec["N"]
    rows = []
    for arm, steps_per_model in ((PROTOCOL_ARM, protocol_steps), (CONVERGED_ARM, model_steps)):
        acc = running(steps_per_model).cpu()
        final_losses = tail_mean(losses.double(), steps_per_model).cpu()
        for i, counts in enumerate(model.parameter_counts()):
            h, steps_i = stack.heads[i], int(steps_per_model[i])
            own = losses[:steps_i, i].double().cpu()  # this run's own history (a frozen run's later losses are not)
            final = float(final_losses[i])
            drop, lr_tail = plateau_drop(own), tail_lr_fraction(settings, steps_i)  # lr factor of the plateau window
            correct = int(hits[arm][i])
            rows.append({
                "arm": arm, "model": stack.kind, "layout": stack.layout, "N": n, "d": stack.d, "d_head": stack.d_head,
                "heads": h, "mlp_width": stack.widths[i], "seed": stack.seeds[i],
                "n_sequences": spec["n_sequences"], "batch": spec["batch"], "epochs": spec["epochs"],
                "steps": budget, "steps_run": steps_i, "continued_steps": steps_i - budget if arm == CONVERGED_ARM else 0,
                "cap_steps": cap, "capped": bool(capped[i]) if arm == CONVERGED_ARM else False,
                "lr": spec["lr"], "final_lr": stack.final_lr,
                "acc_running": float(acc[i]), "acc_table": correct / n**2,
                "X_running": float(associations_from_accuracy(float(acc[i]), n)),
                "X_table": correct,
                "X_table_chance_corrected": float(associations_from_accuracy(correct / n**2, n)),
                "bound_X": h * stack.d_head + stack.d, "previous_bound_X": h * (stack.d_head - 1) + 1,
                "final_loss": final,
                # learning certificate: capacity is read off a converged run only (accuracy < 1 is the result);
                # the plateau is judged per unit of learning rate (lr_last10), so the decay cannot fake it
                "loss_curve": loss_curve(own), "loss_drop_last10": drop, "lr_last10": lr_tail,
                "status": run_status(final, float(acc[i]), drop, lr_tail),
                **counts,
                "params_nonembedding": counts["params_attention"] + counts["params_mlp"],
                "models_in_stack": len(stack.seeds), "wall_time_s": wall,
            })
    return pd.DataFrame(rows)


@dataclasses.dataclass
class _Buffers:
    """train_stack's per-step metrics, in place: saved with a checkpoint (state_dict) and restored into the same
    tensors, list and dict that its loss_fn and on_step closures hold."""
    accuracies: torch.Tensor
    losses: torch.Tensor
    counter: list
    at_budget: dict

    def state_dict(self) -> dict:
        return {"accuracies": self.accuracies, "losses": self.losses, "counter": list(self.counter),
                "at_budget": dict(self.at_budget)}

    def load_state_dict(self, state: dict) -> None:
        self.accuracies.copy_(state["accuracies"])
        self.losses.copy_(state["losses"])
        self.counter[:] = state["counter"]
        self.at_budget.clear()
        self.at_budget.update(state["at_budget"])


@torch.no_grad()
def table_hits(model: AoTStack, table: torch.Tensor, device: str = "cpu") -> torch.Tensor:
    """Number of the N² pairs whose argmax prediction is f(t1, t2), per model."""
    pairs = all_pairs(table).to(device)
    hits = torch.zeros(model.n_models, dtype=torch.long)
    for chunk in pairs.split(4096):
        tokens = chunk.unsqueeze(0).expand(model.n_models, -1, -1)
        hits += (model(tokens).argmax(-1) == tokens[..., 2]).sum(1).cpu()
    return hits
