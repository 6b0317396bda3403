"""GPU-ready without a GPU (issue 17, part 3): every trained experiment runs on a stand-in accelerator
that, like CUDA, refuses to mix its tensors with CPU tensors, and the paper tier's training rules ask
Snakemake for a GPU.

The stand-in device. The experiments run with `device: meta`, but no tensor is left on PyTorch's
meta device: `CpuBackedDevice` (a TorchDispatchMode) catches every aten call, runs it on the CPU with
real values and wraps each result that belongs on the device in `OnDevice`, a wrapper tensor that
reports `device='meta'` and holds its CPU values. So the code sees a separate device (`.device`,
`torch.arange(..., device=x.device)` and `model.to(device)` all behave as on a GPU), host-side reads
(`.cpu()`, `.item()`, `float()`, `.tolist()`) return the real numbers, and each run takes exactly
the branches (early stopping, curricula, D_K searches) and gives exactly the numbers of the CPU run
(checked below), instead of the odd branches that meta tensors' made-up values would push it into.

PyTorch's meta device alone would not do (torch 2.13): a CPU tensor meeting a meta tensor raises in
add, eq, cat, stack, where, masked_fill and cross_entropy, but passes silently in matmul, gather,
scatter, embedding, an in-place mul_, and indexing a CPU tensor with a meta index; and meta tensors
have no values for the host side.
So the mode checks devices itself, before each op, following CUDA's rules: all tensor operands on one
device, except 0-dim CPU tensors in pointwise ops (CUDA takes them as scalars), CPU index tensors into
a device tensor (CUDA moves them), cross-device `copy_`/`.to()`, and host reads; a CPU generator
feeding a device tensor is refused too. A refusal raises `DeviceMixError` naming the op and the
devices, and is also recorded, so a mix the experiment's own code catches still fails the test.
Not covered: code that branches on `device == "cuda"`, CUDA-only kernels and torch.compile.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import re

import pandas as pd
import pytest
import torch
import yaml
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from attncap.experiments import aot_memorization, mha_memorization, rgr_capacity, swap_state_tracking
from attncap.experiments.context import RunContext

from conftest import ROOT
from test_pipeline import copy_workflow, snakemake

STAND_IN = torch.device("meta")
aten = torch.ops.aten

# Every experiment that trains models (so runs on the GPU at the paper tier), per claim.
TRAINED = {
    "retrieval_capacity": ("E5",),
    "aot_memorization": aot_memorization.EXPERIMENTS,
    "mha_memorization": mha_memorization.TRAINED,
    "rgr_capacity": ("R1", *rgr_capacity.SEARCH_EXPERIMENTS),
    "swap_state_tracking": swap_state_tracking.EXPERIMENTS,
}


# ---- the stand-in device ---------------------------------------------------------------------------

class DeviceMixError(RuntimeError):
    """A device tensor met a CPU tensor where CUDA would refuse it."""


class OnDevice(torch.Tensor):
    """A tensor on the stand-in device: reports `STAND_IN`, keeps its values in a CPU tensor `elem`."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=STAND_IN, requires_grad=False)
        wrapper.elem = elem.detach()
        return wrapper

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func}: a stand-in device tensor used outside the stand-in device")


def _on_stand_in(device) -> bool:
    return device is not None and torch.device(device) == STAND_IN


def _where(tensor: torch.Tensor) -> str:
    return "device" if isinstance(tensor, OnDevice) else "cpu"


# host reads and explicit transfers, allowed across devices (as on CUDA)
_TRANSFERS = {aten._to_copy, aten.copy_, aten._copy_from, aten._local_scalar_dense, aten.lift_fresh, aten.detach,
              aten.alias}
# advanced indexing: CUDA moves CPU index tensors to the indexed tensor's device
_INDEXING = {aten.index, aten._unsafe_index, aten.index_put, aten.index_put_, aten._index_put_impl_}
# `zeros_like(x, device=...)` and kin take only x's shape (and dtype) when given a device
_FACTORIES_FROM_TENSORS = {aten.empty_like, aten.zeros_like, aten.ones_like, aten.full_like, aten.rand_like,
                           aten.randn_like, aten.randint_like, aten.new_empty, aten.new_zeros, aten.new_ones,
                           aten.new_full, aten.new_empty_strided}
# ops that take a 0-dim value tensor as a scalar besides the pointwise ones
_SCALAR_VALUE = {aten.masked_fill, aten.masked_fill_}


class CpuBackedDevice(TorchDispatchMode):
    """Runs every aten op on the CPU; results of ops on the stand-in device come back as `OnDevice`."""

    def __init__(self):
        super().__init__()
        self.violations: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if any(t.device == STAND_IN and not isinstance(t, OnDevice) for t in tensors):
            self._refuse(f"{func}: a meta tensor without values (made by a path the stand-in does not "
                         "intercept; see HostSide)")
        target = kwargs.get("device")
        if packet in _INDEXING:
            self._check_indexing(func, args)
        elif packet not in _TRANSFERS and not (target is not None and packet in _FACTORIES_FROM_TENSORS):
            self._check_one_device(func, tensors, target)
        if target is not None:
            out_on_device = _on_stand_in(target)
        elif packet is aten._local_scalar_dense:
            out_on_device = False
        elif packet is aten.copy_:
            out_on_device = isinstance(args[0], OnDevice)
        else:
            out_on_device = any(isinstance(t, OnDevice) for t in tensors)
        generator = kwargs.get("generator")
        if generator is not None and out_on_device != _on_stand_in(generator.device):
            self._refuse(f"{func}: a {generator.device} generator draws a "
                         f"{'device' if out_on_device else 'cpu'} tensor")

        inputs = {}  # id of each CPU tensor passed to the op -> what the caller passed (in-place results)

        def unwrap(x):
            if isinstance(x, OnDevice):
                inputs[id(x.elem)] = x
                return x.elem
            if isinstance(x, torch.Tensor):
                inputs[id(x)] = x
            elif isinstance(x, torch.device) and x == STAND_IN:
                return torch.device("cpu")
            return x

        def wrap(x):
            if not isinstance(x, torch.Tensor):
                return x
            if id(x) in inputs:
                return inputs[id(x)]
            return OnDevice(x) if out_on_device else x

        cpu_args, cpu_kwargs = tree_map(unwrap, (args, kwargs))
        return tree_map(wrap, func(*cpu_args, **cpu_kwargs))

    def _refuse(self, message: str):
        self.violations.append(message)
        raise DeviceMixError(message)

    def _check_one_device(self, func, tensors, target):
        scalars_ok = torch.Tag.pointwise in func.tags or func.overloadpacket in _SCALAR_VALUE
        placed = {_where(t) for t in tensors if isinstance(t, OnDevice) or t.dim() > 0 or not scalars_ok}
        if target is not None and placed:
            placed.add("device" if _on_stand_in(target) else "cpu")
        if len(placed) > 1:
            shapes = ", ".join(f"{_where(t)}{tuple(t.shape)}" for t in tensors)
            self._refuse(f"{func}: tensors on the device and on the CPU meet ({shapes})")

    def _check_indexing(self, func, args):
        where = _where(args[0])
        if where == "cpu" and any(isinstance(i, OnDevice) for i in args[1] if i is not None):
            self._refuse(f"{func}: a device index into a CPU tensor")
        if len(args) > 2 and isinstance(args[2], torch.Tensor):
            values = args[2]
            if _where(values) != where and not (where == "device" and values.dim() == 0):
                self._refuse(f"{func}: {_where(values)} values put into a {where} tensor")


class HostSide(TorchFunctionMode):
    """What happens above aten: torch.tensor(data, device=...) builds its tensor with Python dispatch
    turned off (so it would be a real meta tensor without values); .tolist() and .numpy() are refused
    for tensor subclasses. Here they behave as on CUDA."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.tensor, torch.as_tensor, torch.asarray) and _on_stand_in(kwargs.get("device")):
            if isinstance(args[0], OnDevice):
                return func(*args, **kwargs)
            return func(*args, **{**kwargs, "device": "cpu"}).to(STAND_IN)
        if func is torch.Tensor.tolist and isinstance(args[0], OnDevice):
            return args[0].cpu().tolist()
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and isinstance(args[0], OnDevice):
            raise TypeError("can't convert a device tensor to numpy: use Tensor.cpu() first")
        return func(*args, **kwargs)


@contextlib.contextmanager
def stand_in_device():
    """Within: device "meta" is the CPU-backed stand-in accelerator; yields its CpuBackedDevice."""
    with HostSide(), CpuBackedDevice() as mode:
        yield mode


# ---- the stand-in behaves like CUDA -------------------------------------------------------------------

MIXES = {
    "add": lambda d, c: d + c,
    "matmul": lambda d, c: d @ c,
    "cat": lambda d, c: torch.cat([d, c]),
    "stack of 0-dim": lambda d, c: torch.stack([d[0, 0], c[0, 0]]),
    "where": lambda d, c: torch.where(c > 0, d, d),
    "in-place": lambda d, c: d.mul_(c),
    "gather": lambda d, c: d.gather(1, torch.zeros(4, 1, dtype=torch.long)),
    "embedding": lambda d, c: torch.nn.functional.embedding(torch.tensor([0, 1]), d),
    "device index into a cpu tensor": lambda d, c: c[torch.tensor([0, 1], device=STAND_IN)],
    "cpu values put into a device tensor": lambda d, c: d.index_put_((torch.tensor([0, 1]),), c[:2]),
    "cpu generator": lambda d, c: torch.randn(3, device=STAND_IN, generator=torch.Generator().manual_seed(0)),
    "numpy": lambda d, c: d.numpy(),
}


@pytest.mark.parametrize("mix", MIXES)
def test_stand_in_refuses_what_cuda_refuses(mix):
    with stand_in_device():
        device, cpu = torch.randn(4, 4, device=STAND_IN), torch.randn(4, 4)
        with pytest.raises(TypeError if mix == "numpy" else DeviceMixError):
            MIXES[mix](device, cpu)


def test_stand_in_allows_what_cuda_allows_with_real_values():
    with stand_in_device() as mode:
        cpu = torch.arange(12.0).view(3, 4)
        x = cpu.to(STAND_IN)
        layer = torch.nn.Linear(4, 2).to(STAND_IN)
        assert isinstance(x, OnDevice) and x.device == STAND_IN and layer.weight.device == STAND_IN
        y = x * torch.tensor(2.0) + 1  # a 0-dim CPU tensor is a scalar
        assert y[torch.tensor([2])].tolist() == [[17.0, 19.0, 21.0, 23.0]]  # CPU index into a device tensor
        y[torch.tensor([0])] = torch.tensor(0.0)
        assert float(y.sum()) == 128.0 and y[1, 1].item() == 11.0
        out = torch.zeros(3, 4)
        out.copy_(y)  # a device-to-host copy
        assert torch.equal(out, y.cpu()) and not isinstance(y.cpu(), OnDevice)
        layer(x).pow(2).sum().backward()
        assert isinstance(layer.weight.grad, OnDevice)
        torch.optim.AdamW(layer.parameters(), lr=0.1).step()
    assert not mode.violations


# ---- every trained experiment on the stand-in ------------------------------------------------------

def _categorical(value) -> bool:
    return isinstance(value, (str, bool)) or (isinstance(value, list) and bool(value)
                                             and all(isinstance(v, (str, bool)) for v in value))


def tiny_spec(claim: str, experiment: str) -> tuple[dict, str]:
    """The smoke spec with the paper tier's choices of code path (its keys whose values are names or
    flags: mixers, models, layouts, labels, construct, ...), cut to a few steps; and the part to run."""
    smoke = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())[claim][experiment]
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())[claim][experiment]
    spec = copy.deepcopy(smoke)
    spec.update({k: v for k, v in paper.items() if _categorical(v) and k in smoke})
    if claim == "retrieval_capacity":
        spec.update(steps=4, eval_every=2, plateau_steps=2, warmup_steps=1, batch=4, eval_batches=1, check_batches=1)
        return spec, f"d{spec['d_model'][0]}"
    if claim == "aot_memorization":
        spec.update(epochs=1, n_sequences=16, batch=8, last_batches=1, jobs=1)
        return spec, "p0"
    if claim == "mha_memorization":
        spec.update(steps=3, warmup_steps=1, parts=1)
        if "T" in spec:
            spec["T"] = sorted({spec["T"][0], spec["T"][-1]})
        return spec, "p0"
    if claim == "rgr_capacity":
        spec["train"] = {**spec["train"], "steps": 3, "eval_every": 1}
        if experiment == "R1":
            spec["jobs"] = 1
        return spec, rgr_capacity.parts(experiment, spec)[0]
    if claim == "swap_state_tracking":
        spec.update(steps=4, check_every=2, batch=4, eval_batches=1, warmup_steps=1)
        return spec, f"n{spec['n_objects'][0]}"  # every mixer of that n in one job
    raise ValueError(claim)


@pytest.mark.parametrize("claim,experiment", [(c, e) for c, exps in TRAINED.items() for e in exps],
                         ids=lambda value: value)
def test_trained_experiment_runs_on_a_device_that_refuses_mixing(claim, experiment, monkeypatch):
    module = importlib.import_module(f"attncap.experiments.{claim}")
    spec, part = tiny_spec(claim, experiment)
    trained_on = []  # per trained model: the devices of its parameters and of its first batch

    def checked(model, next_batch, *args, **kwargs):
        devices = {p.device for p in model.parameters()}
        trained_on.append(devices)

        def watched(step):
            batch = next_batch(step)
            if step == 0:
                devices.update(t.device for t in tree_flatten(batch)[0] if isinstance(t, torch.Tensor))
            return batch

        return train_batched(model, watched, *args, **kwargs)

    train_batched = module.train_batched
    frames = {"cpu": module.run(experiment, copy.deepcopy(spec), RunContext.create(
        claim=claim, experiment=experiment, device="cpu", part=part, tier="test"))}
    monkeypatch.setattr(module, "train_batched", checked)
    context = RunContext.create(claim=claim, experiment=experiment, device="meta", part=part, tier="test")
    with stand_in_device() as mode:
        frames["meta"] = module.run(experiment, copy.deepcopy(spec), context)
    assert not mode.violations, mode.violations
    assert trained_on, "no model was trained"
    assert all(devices == {STAND_IN} for devices in trained_on), \
        f"models or batches left on the host, not on the device ({STAND_IN}): {trained_on}"
    # the stand-in moves tensors, nothing else: same rows, same numbers as on the CPU
    columns = [c for c in frames["cpu"].columns if "time" not in c]
    pd.testing.assert_frame_equal(frames["meta"][columns], frames["cpu"][columns])


# ---- the paper tier's training jobs ask for a GPU -------------------------------------------------------

@pytest.fixture(scope="module")
def scratch_workflow(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("device"))


@pytest.mark.parametrize("config_name,gpu", [("paper.yaml", 1), ("smoke.yaml", 0)])
def test_training_jobs_request_a_gpu_exactly_when_the_config_runs_on_cuda(scratch_workflow, config_name, gpu):
    config = yaml.safe_load((ROOT / "config" / config_name).read_text())
    assert (config["device"] == "cuda") == bool(gpu)
    result = snakemake("-n", "--cores", "1", "--configfile", f"config/{config_name}", cwd=scratch_workflow)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    pieces = re.split(r"^(?:local)?rule (\w+):$", result.stdout + result.stderr, flags=re.M)
    seen, wrong = set(), []
    for rule, job in zip(pieces[1::2], pieces[2::2]):
        run = re.search(r"^\s+output: results/(\w+)/runs/([A-Z]\d+)[_.]", job, flags=re.M)
        requested = re.search(r"^\s+resources: .*\bgpu=(\d+)", job, flags=re.M)
        requested = int(requested.group(1)) if requested else 0
        trained = bool(run) and run.group(2) in TRAINED.get(run.group(1), ())
        if trained:
            seen.add(run.groups())
        if requested != (gpu if trained else 0):
            wrong.append(f"{rule} {run.groups() if run else ''}: gpu={requested}")
    assert not wrong, wrong
    # not vacuous: training jobs of every claim were planned, and only of configured trained experiments
    assert {claim for claim, _ in seen} == set(config["claims"]), seen
    assert seen <= {(c, e) for c in config["claims"] for e in TRAINED[c] if e in config[c]}, seen
