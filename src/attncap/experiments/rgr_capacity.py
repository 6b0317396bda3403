"""Claim 4 experiments R1–R5: train multi-head key-query scorers on RGR and search the key budget D_K*.

R1 trains a fixed D_K grid (F1–D_K curves); R2–R5 run a D_K* search (halving/doubling from a start,
then bisection over multiples of h, per head count and seed) on cells (m, d_model, graph). Every
trained model and every constructed reference model becomes one `eval` row; every search its
`dkstar` row.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch

from attncap.models.rgr_capacity import (BalancedLogisticLoss, ScorerBank, constructed_weights, f1_per_model,
                                         head_scores)
from attncap.seeding import numpy_rng
from attncap.tasks import rgr_capacity as tasks
from attncap.train import TrainSettings, train_batched

SEARCH_EXPERIMENTS = ("R2", "R3", "R4", "R5")


# ---- cells and parts ------------------------------------------------------------------------------

def cells(experiment: str, spec: dict) -> list[dict]:
    """The (m, d_model, graph, k) cells an experiment covers, in a fixed order."""
    if experiment == "R1":
        return [dict(m=spec["m"], d_model=spec["d_model"], graph=spec["graph"], k=spec.get("out_degree", 1))]
    if experiment == "R2":
        return [dict(m=m, d_model=d, graph="permutation", k=1) for m in spec["m"] for d in spec["d_model"]]
    if experiment == "R3":
        return [dict(m=m, d_model=d, graph="out_degree", k=k)
                for k in spec["out_degree"] for m in spec["m"] for d in spec["d_model"]]
    if experiment == "R4":
        return [dict(m=spec["ratio"] * d, d_model=d, graph="permutation", k=1) for d in spec["d_model"]]
    if experiment == "R5":
        return [dict(m=d, d_model=d, graph="permutation", k=1) for d in spec["d_model"]]
    raise ValueError(f"unknown experiment {experiment!r}")


def cell_name(cell: dict) -> str:
    return f"m{cell['m']}-d{cell['d_model']}-k{cell['k'] if cell['graph'] == 'out_degree' else 0}"


SHARED_KEYS = ("heads", "seeds", "train", "contexts", "search", "construct")


def parts(experiment: str, spec: dict, section: dict | None = None) -> list[str]:
    """Job names: R1 splits its D_K grid into `jobs` interleaved slices; searches run one cell per job.

    Given the whole claim `section`, a search cell already covered by an earlier search experiment
    (R2 < R3 < R4 < R5) with identical search settings is left out: it would reproduce the same numbers
    (data and initial weights depend only on cell and seed), and the verdicts read every search together.
    """
    if experiment == "R1":
        return [f"p{i}" for i in range(min(spec["jobs"], len(spec["d_k_total"])))]
    names = [cell_name(c) for c in cells(experiment, spec)]
    if section is not None:
        settings = {key: spec[key] for key in SHARED_KEYS}
        for earlier in SEARCH_EXPERIMENTS[:SEARCH_EXPERIMENTS.index(experiment)]:
            other = section.get(earlier)
            if other and all(other.get(key) == value for key, value in settings.items()):
                covered = {cell_name(c) for c in cells(earlier, other)}
                names = [n for n in names if n not in covered]
    return names


def expected_cells(section: dict) -> dict[str, list[dict]]:
    """Run table (file stem) -> the cells the config asks it to hold ({column: value} dicts some row must
    match): R1 parts one eval row per (kind, h, D_K, seed) of their D_K slices; each search cell one
    `dkstar` row per (kind, h, seed). attncap.claims.evaluate refuses verdicts from tables lacking one."""
    out = {}
    r1 = section.get("R1")
    if r1:
        names = parts("R1", r1)
        for index, part in enumerate(names):
            out[f"R1_{part}"] = (
                [{"row_type": "eval", "kind": "trained", "h": h, "d_k_total": dk, "seed": s}
                 for dk in r1["d_k_total"][index::len(names)] for h in r1["heads"] for s in r1["seeds"]]
                + [{"row_type": "eval", "kind": "constructed", "h": h, "d_k_total": dk, "seed": s}
                   for dk in r1["construct_d_k_total"][index::len(names)] for h in r1["heads"] if dk % h == 0
                   for s in r1["seeds"]])
    for experiment in SEARCH_EXPERIMENTS:
        spec = section.get(experiment)
        if not spec:
            continue
        kinds = ["trained"] + (["constructed"] if spec["construct"] else [])
        for part in parts(experiment, spec, section):
            out[f"{experiment}_{part}"] = [{"row_type": "dkstar", "cell": part, "kind": k, "h": h, "seed": s}
                                           for k in kinds for h in spec["heads"] for s in spec["seeds"]]
    return out


# ---- config checks --------------------------------------------------------------------------------

def check_config(section: dict) -> list[str]:
    """Shapes JSON Schema cannot express: divisibility, compression direction, out-degree range."""
    problems = []
    for experiment, spec in section.items():
        if not isinstance(spec, dict):
            continue
        train = spec.get("train")
        if isinstance(train, dict) and train.get("max_steps") is not None and train.get("steps") is not None \
                and train["max_steps"] < train["steps"]:
            problems.append(f"{experiment}.train.max_steps: max_steps={train['max_steps']} < steps={train['steps']}; "
                            "the cap of a continued training is at least its budget")
        for h in spec.get("heads", []):
            for dk in spec.get("d_k_total", []):
                if dk % h:
                    problems.append(f"{experiment}.d_k_total: h={h} does not divide D_K={dk} "
                                    "(D_K = h·d_k must split into equal heads)")
        try:
            grid = cells(experiment, spec)
        except (KeyError, TypeError, ValueError):
            continue
        for cell in grid:
            if cell["d_model"] > cell["m"]:
                problems.append(f"{experiment}.d_model: d_model={cell['d_model']} > m={cell['m']}; "
                                "embeddings are one-hot (m = d_model) or compressed (m > d_model)")
            if cell["graph"] == "out_degree" and cell["k"] >= cell["m"]:
                problems.append(f"{experiment}.out_degree: out-degree k={cell['k']} >= m={cell['m']}; "
                                "an item has at most m-1 other targets")
    return problems


# ---- data -----------------------------------------------------------------------------------------

def cell_data(cell: dict, seed: int, spec: dict) -> dict:
    """Embeddings, graph and evaluation contexts of one (cell, seed), from that pair's own generator."""
    rng = tasks.task_rng(seed, cell["m"], cell["d_model"], cell["graph"], cell["k"])
    x = tasks.embeddings(cell["m"], cell["d_model"], rng)
    adj = tasks.make_graph(cell["graph"], cell["m"], cell["k"], rng)
    ctx_rng = tasks.task_rng(seed, cell["m"], cell["d_model"], cell["graph"], cell["k"], salt=1)
    contexts = {size: tasks.sample_contexts(adj, size, spec["contexts"]["n_contexts"], ctx_rng,
                                            spec["contexts"]["p_target"])
                for size in spec["contexts"]["sizes"] if size <= cell["m"]}
    return {"x": x, "adj": adj, "contexts": contexts}


def _metrics(scores: np.ndarray, tau: float, data: dict) -> dict:
    out = {"f1_all": tasks.all_pairs_f1(scores, tau, data["adj"])}
    for size, ctx in data["contexts"].items():
        out[f"f1_ctx{size}"] = tasks.context_f1(scores, tau, data["adj"], ctx)
    _, out["f1_best_tau"] = tasks.best_threshold(scores, data["adj"])
    return out


# ---- trained models -------------------------------------------------------------------------------

def train_settings(spec: dict) -> TrainSettings:
    t = spec["train"]
    return TrainSettings(steps=t["steps"], lr=t["lr"], optimizer="adam")


def step_cap(spec: dict) -> int:
    """The stated cap of a training continued past its budget (`train.max_steps`, at least the budget;
    without it, the budget: no continuation)."""
    t = spec["train"]
    return max(int(t["steps"]), int(t.get("max_steps") or t["steps"]))


class PatienceRule:
    """Claim 4's learning certificate, one per model: settled at the first evaluation with F1 >= target, or once
    the best F1 has not risen by `min_delta` for `patience` steps; `diverged` at the first evaluation where its loss
    or threshold is not finite (its stop reasons: attncap.claims.rgr_capacity.STOP_REASONS). `train_requests` stops (freezes) a model when
    it settles, and passes `until_certified` to the training loop, so a model still improving at the budget is
    continued by the same rule (at the same constant learning rate) until it settles or reaches the cap."""

    def __init__(self, n: int, target: float, patience: int, min_delta: float):
        self.target, self.patience, self.min_delta = target, patience, min_delta
        self.best = np.full(n, -1.0)  # best F1 so far (its weights are the snapshot)
        self.ref = np.full(n, -np.inf)  # F1 at the last improvement by >= min_delta, and its step
        self.ref_step = np.zeros(n, dtype=int)
        self.done = np.zeros(n, dtype=bool)
        self.done_step = np.full(n, -1)
        self.stopped = np.full(n, "", dtype=object)

    def observe(self, steps: int, f1: np.ndarray, models: np.ndarray, end: str | None = None,
                finite: np.ndarray | None = None) -> list[int]:
        """Record F1 (one value per index in `models`) after `steps` steps; return the models whose best F1
        rose (their weights are the new snapshot). `end`: the reason given to models still unsettled because
        training ends here ("budget" or "cap"). `finite`: per index, whether the model's loss and threshold are
        finite; one that is not has diverged (its F1 reads 0 on non-finite scores, which is no measurement)."""
        improved = []
        for j, (i, value) in enumerate(zip(models, f1)):
            if self.done[i]:
                continue
            if finite is not None and not finite[j]:
                self.done[i], self.done_step[i], self.stopped[i] = True, steps, "diverged"
                continue
            if value > self.best[i]:
                self.best[i] = value
                improved.append(int(i))
            if value >= self.ref[i] + self.min_delta:
                self.ref[i], self.ref_step[i] = value, steps
            reason = ("target" if value >= self.target else
                      "plateau" if steps - self.ref_step[i] >= self.patience else end or "")
            if reason:
                self.done[i], self.done_step[i], self.stopped[i] = True, steps, reason
        return improved

    def state_dict(self) -> dict:
        """Everything the rule has seen (saved with a training's checkpoint, `attncap.train.Checkpoint`)."""
        return {k: getattr(self, k).copy() for k in ("best", "ref", "ref_step", "done", "done_step", "stopped")}

    def load_state_dict(self, state: dict) -> None:
        for key, value in state.items():
            getattr(self, key)[...] = value

    def certified(self, history=None, model_steps=None) -> torch.Tensor:
        """The `until_certified` predicate of `attncap.train.train_batched`: settled by this rule (target or
        plateau). The loss history is not what claim 4 certifies (its certificate is this F1 rule)."""
        return torch.as_tensor(self.done & np.isin(self.stopped, ("target", "plateau")))


class _Snapshots(list):
    """Each model's best weights so far (None until its F1 is first finite), saved with a checkpoint."""

    def state_dict(self) -> dict:
        return {"weights": list(self)}

    def load_state_dict(self, state: dict) -> None:
        self[:] = state["weights"]


def train_requests(cell: dict, requests: list[tuple[int, int, int]], spec: dict, datas: dict, device: str,
                   checkpoint=None) -> list[dict]:
    """Train one scorer per request (h, D_K, seed) on one model axis; return one result dict each.

    A model is *done* when `PatienceRule` settles it (F1 >= target: its weights are kept; or no gain for
    `patience` steps: its best weights are kept); from then on it is frozen and costs nothing. Models still
    improving at the budget `steps` are continued at the same constant learning rate by the same rule, up to
    the cap `max_steps` (`step_cap`); those still improving there stop with reason `cap` (or `budget` when no
    continuation is configured). Both rules look at the model alone, so its result does not depend on its
    batch mates. `checkpoint(every, generators, stateful)` -> `attncap.train.Checkpoint` or None
    (`RunContext.checkpoint`): the training and the rule's state are saved every tenth of the budget.
    """
    t = spec["train"]
    m = cell["m"]
    heads = [h for h, _, _ in requests]
    d_k = [dk // h for h, dk, _ in requests]
    init_seeds = [seed for _, _, seed in requests]
    bank = ScorerBank(heads, d_k, init_seeds, cell["d_model"], init_scale=t["init_scale"]).to(device)
    x = torch.tensor(np.stack([datas[s]["x"] for _, _, s in requests]), dtype=torch.float32, device=device)
    adj = torch.tensor(np.stack([datas[s]["adj"] for _, _, s in requests]), device=device)
    valid = ~torch.eye(m, dtype=torch.bool, device=device).expand_as(adj)
    n = len(requests)
    settings = train_settings(spec)
    cap = step_cap(spec)
    rule = PatienceRule(n, t["target_f1"], t["patience"], t["min_delta"])
    snapshots = _Snapshots([None] * n)
    temperature = t["temperature"]

    loss = BalancedLogisticLoss(adj, valid, t["pos_weight"], dtype=x.dtype)

    def loss_fn(model, _batch):
        # only the models still training are computed; the frozen ones get loss 0 and no gradient
        active = np.flatnonzero(~rule.done)
        if len(active) == n:
            return loss(model(x, temperature), model.tau)
        index = torch.as_tensor(active, device=device)
        own = loss(model.scores_of(active, x, temperature), model.tau[index], active)
        return torch.zeros(n, dtype=own.dtype, device=device).index_copy(0, index, own)

    def on_step(step, losses, _batch):
        end = "cap" if step + 1 == cap and cap > t["steps"] else "budget" if step + 1 == cap else None
        if step % t["eval_every"] and end is None and step + 1 != t["steps"]:
            return None
        active = np.flatnonzero(~rule.done)
        with torch.no_grad():
            index = torch.as_tensor(active, device=device)
            f1 = f1_per_model(bank.scores_of(active, x), bank.tau[index], adj[index], valid[index]).cpu().numpy()
            finite = (torch.isfinite(losses[index]) & torch.isfinite(bank.tau[index])).cpu().numpy()
        for i in rule.observe(step + 1, f1, active, end, finite):
            snapshots[i] = bank.model_weights(i)
        return torch.as_tensor(rule.done.copy())

    start = time.perf_counter()
    saving = checkpoint(math.ceil(t["steps"] / 10), (), [rule, snapshots]) if checkpoint else None
    result = train_batched(bank, lambda step: None, loss_fn, settings, desc=f"R {cell_name(cell)}", on_step=on_step,
                           checkpoint=saving, **(dict(until_certified=rule.certified, max_steps=cap,
                                                      check_every=t["eval_every"]) if cap > t["steps"] else {}))
    seconds = time.perf_counter() - start
    # a model's share of the wall time: proportional to the steps it was trained (frozen models cost nothing)
    shares = np.asarray(result["model_steps"], dtype=float)
    shares = seconds * shares / shares.sum() if shares.sum() > 0 else np.full(n, seconds / n)
    results = []
    for i, (h, dk, seed) in enumerate(requests):
        common = dict(kind="trained", h=h, d_k=dk // h, d_k_total=dk, seed=seed, steps_run=int(rule.done_step[i]),
                      budget=int(t["steps"]), max_steps=cap, wall_time_s=float(shares[i]))
        if snapshots[i] is None:  # F1 was never finite: the run diverged; recorded as such, not as F1 = 0
            results.append(dict(common, tau=math.nan, stopped="diverged", f1_all=math.nan))
            continue
        wq, wk, tau = snapshots[i]
        with torch.no_grad():
            scores = head_scores(torch.tensor(datas[seed]["x"]), wq.double().cpu(), wk.double().cpu()).amax(0)
        row = dict(common, tau=tau,
                   stopped="target" if rule.best[i] >= t["target_f1"] else (
                       "diverged" if rule.stopped[i] == "diverged" or not np.isfinite(rule.best[i])
                       or not math.isfinite(float(tau)) else rule.stopped[i]))
        row.update(_metrics(scores.numpy(), tau, datas[seed]))
        results.append(row)
    return results


def construct_requests(cell: dict, requests: list[tuple[int, int, int]], datas: dict) -> list[dict]:
    """Constructed reference scorer per request; its one scalar τ is the all-pairs-F1-optimal threshold."""
    results = []
    for h, dk, seed in requests:
        start = time.perf_counter()
        rng = numpy_rng(seed, cell["m"], cell["d_model"], cell["k"], h, dk, "construct")
        data = datas[seed]
        wq, wk = constructed_weights(data["x"], data["adj"], h, dk // h, rng)
        scores = head_scores(torch.tensor(data["x"]), torch.tensor(wq), torch.tensor(wk)).amax(0).numpy()
        tau, _ = tasks.best_threshold(scores, data["adj"])
        row = dict(kind="constructed", h=h, d_k=dk // h, d_k_total=dk, seed=seed, tau=tau, steps_run=0,
                   stopped="", wall_time_s=time.perf_counter() - start)
        row.update(_metrics(scores, tau, data))
        results.append(row)
    return results


# ---- the D_K* search ------------------------------------------------------------------------------

class Search:
    """D_K* for one (h, seed): from a start on the multiples of h, halve while passing / double while
    failing, then bisect the bracket (lo fails, hi passes) until hi - lo <= max(h, rel_tol·lo).

    D_K never exceeds h·d_model: beyond d_k = d_model a head's bilinear form W_Q^T W_K cannot gain rank,
    so a search that still fails there is reported as censored (D_K* > h·d_model).
    """

    def __init__(self, h: int, seed: int, start: int, cap: int, rel_tol: float):
        self.h, self.seed, self.cap, self.rel_tol = h, seed, cap, rel_tol
        self.lo, self.hi = 0, None  # lo: largest failing D_K seen (0 = none); hi: smallest passing
        self.next = min(cap, h * max(1, math.ceil(start / h)))
        self.evaluations = 0

    def record(self, dk: int, passed: bool) -> None:
        self.evaluations += 1
        if passed:
            self.hi = dk if self.hi is None else min(self.hi, dk)
        else:
            self.lo = max(self.lo, dk)
        self.next = self._propose()

    def _propose(self):
        h = self.h
        if self.hi is None:  # still failing: double, up to the cap
            return None if self.lo >= self.cap else min(self.cap, 2 * self.lo)
        if self.lo == 0:  # still passing: halve, down to one dimension per head
            return None if self.hi <= h else max(h, h * (self.hi // (2 * h)))
        if self.hi - self.lo <= max(h, self.rel_tol * self.lo):
            return None
        mid = h * round((self.lo + self.hi) / (2 * h))
        return mid if self.lo < mid < self.hi else None

    @property
    def finished(self) -> bool:
        return self.next is None

    @property
    def dk_star(self) -> float:
        return float(self.hi) if self.hi is not None else math.nan


def run_search(cell: dict, spec: dict, evaluate, kind: str) -> tuple[list[dict], list[dict]]:
    """Run the searches of every (h, seed) together: each round evaluates all pending D_K at once."""
    target = spec["train"]["target_f1"]
    searches = [Search(h, seed, spec["search"]["start_d_k_total"], h * cell["d_model"], spec["search"]["rel_tol"])
                for h in spec["heads"] for seed in spec["seeds"]]
    evals = []
    round_index = 0
    while True:
        pending = [s for s in searches if not s.finished]
        if not pending:
            break
        rows = evaluate([(s.h, s.next, s.seed) for s in pending])
        for s, row in zip(pending, rows):
            row["round"] = round_index
            evals.append(row)
            s.record(row["d_k_total"], row["f1_all"] >= target)
        round_index += 1
    stars = [dict(kind=kind, h=s.h, seed=s.seed, dk_star=s.dk_star, dk_fail=float(s.lo), censored=s.hi is None,
                  d_k_cap=s.cap, evaluations=s.evaluations) for s in searches]
    return evals, stars


# ---- entry point ----------------------------------------------------------------------------------

def _cell_columns(cell: dict) -> dict:
    m_edges = tasks.n_edges(cell["graph"], cell["m"], cell["k"])
    return dict(cell=cell_name(cell), m=cell["m"], d_model=cell["d_model"], graph=cell["graph"], out_degree=cell["k"],
                m_edges=m_edges, compression=cell["m"] / cell["d_model"], law_x=tasks.law_x(m_edges, cell["d_model"]))


def _trained(context, cell: dict, spec: dict, datas: dict):
    """Evaluate a list of requests by training them, resumable: a finished training's rows are kept
    (`RunContext.memo`) and an unfinished one checkpointed, so a killed job redoes neither."""
    def evaluate(requests):
        return context.resumable(("trained", spec, cell, requests), lambda checkpoint: train_requests(
            cell, requests, spec, datas, context.device, checkpoint=checkpoint))
    return evaluate


def run(experiment: str, spec: dict, context) -> pd.DataFrame:
    rows = []
    if experiment == "R1":
        cell = cells("R1", spec)[0]
        datas = {s: cell_data(cell, s, spec) for s in spec["seeds"]}
        index = int(context.part[1:]) if context.part.startswith("p") else 0
        n_jobs = len(parts("R1", spec)) if context.part != "all" else 1
        trained_grid = spec["d_k_total"][index::n_jobs] if context.part != "all" else spec["d_k_total"]
        built_grid = spec["construct_d_k_total"][index::n_jobs] if context.part != "all" else spec["construct_d_k_total"]
        for dk in trained_grid:
            requests = [(h, dk, s) for h in spec["heads"] for s in spec["seeds"]]
            rows += [dict(row_type="eval", round=0, **r) for r in _trained(context, cell, spec, datas)(requests)]
        for dk in built_grid:
            requests = [(h, dk, s) for h in spec["heads"] if dk % h == 0 for s in spec["seeds"]]
            rows += [dict(row_type="eval", round=0, **r) for r in construct_requests(cell, requests, datas)]
        frame = pd.DataFrame(rows)
        for key, value in reversed(_cell_columns(cell).items()):
            frame.insert(0, key, value)
        frame.insert(0, "part", context.part)
        return frame

    if experiment not in SEARCH_EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}")
    grid = cells(experiment, spec)
    if context.part != "all":
        grid = [c for c in grid if cell_name(c) == context.part]
        if not grid:
            raise ValueError(f"{experiment}: no cell named {context.part!r}; parts are {parts(experiment, spec)}")
    frames = []
    for cell in grid:
        datas = {s: cell_data(cell, s, spec) for s in spec["seeds"]}
        evals, stars = run_search(cell, spec, _trained(context, cell, spec, datas), "trained")
        if spec["construct"]:
            more_evals, more_stars = run_search(cell, spec, lambda req: construct_requests(cell, req, datas),
                                                "constructed")
            evals, stars = evals + more_evals, stars + more_stars
        frame = pd.concat([pd.DataFrame(evals).assign(row_type="eval"),
                           pd.DataFrame(stars).assign(row_type="dkstar")], ignore_index=True)
        for key, value in reversed(_cell_columns(cell).items()):
            frame.insert(0, key, value)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    frame.insert(0, "part", context.part)
    return frame
