"""Run-time plumbing shared by every script: atomic writes, provenance, device and thread selection.

Everything a job writes goes through `atomic_path`, so an interrupted job never leaves a file that
Snakemake (or a reader) could mistake for a finished one.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path

import pandas as pd

_PACKAGES = ("torch", "numpy", "scipy", "pandas", "snakemake")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; the output follows the umask like any file
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def current_umask() -> int:
    """The process umask, read without changing it (Linux /proc), else by the set-and-restore idiom."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_csv(frame: pd.DataFrame, path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.10g")


def write_json(obj, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def git_revision(default: str = "unknown") -> str:
    """The checkout's commit (with '+dirty' when tracked files outside reference/ have changes: a reference being
    rewritten is not a change to the code that made it), or `default` outside git."""
    try:
        root = Path(__file__).resolve().parents[2]
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)reference"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return default


def package_versions() -> dict[str, str]:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def resolve_device(requested: str = "auto") -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("config asks for device 'cuda' but torch sees no CUDA device")
    return requested


def steady_allocator(size: int = 32 * 1024 * 1024) -> None:
    """Pin glibc's mmap and trim thresholds (allocation only: no effect on numbers).

    By default glibc moves its mmap threshold after large frees, which let per-step tensors fragment
    the heap (RSS crept to 8 GB in a claim-2 job), while a low fixed threshold mmaps every temporary so
    each step page-faults its working set in again (about half a claim-2 step). With both thresholds
    pinned high, training temporaries of up to 32 MB are reused from the heap step after step.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, size)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 2 * size)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


FLUSH_DENORMAL = True
"""Every job computes with subnormal floats (|x| < 1.2e-38 in float32) read and written as zero on the CPU (x86
FTZ/DAZ, `torch.set_flush_denormal`; a CPU without them keeps IEEE subnormals). A sharpening softmax leaves
attention weights and their gradients in that range, and some Intel cores handle them in slow microcode: there
claim 3's costliest group trains 1.6–2.2× slower with them (two runs of `benchmarks/contention.py`), while on the machine of the
first reference they cost nothing. Values that small carry no information a training step could use, so the
flush changes only the last bits of runs that produce them (chaotic trainings then drift within their seed
spread) and leaves every other computation bit for bit as it was. The setting is per thread: jobs run on one."""


def configure_torch(threads: int, seed: int | None = None) -> None:
    """Make torch use exactly the threads Snakemake granted this job, deterministically, with a
    steady allocator, and with subnormal floats flushed to zero on the CPU (`FLUSH_DENORMAL`)."""
    import torch

    steady_allocator()

    torch.set_num_threads(max(1, int(threads)))
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    # the same switch as use_deterministic_algorithms(True, warn_only=True), without that call's import of the
    # compiler's config (torch._inductor pulls in torch._dynamo: 1.0 s of every job's 4 s start-up); a job that
    # compiles sets the compiler's flag where it compiles (attncap.train.compiled_or_eager)
    torch.set_deterministic_debug_mode("warn")
    torch.set_flush_denormal(FLUSH_DENORMAL)
    if seed is not None:
        torch.manual_seed(seed)


PROVENANCE_TEXT = ("tier", "device", "git_revision", "python")
"""The text columns `provenance` stamps on every run row, besides one version_<package> per package."""


def read_run_csv(path):
    """A run table as pandas reads it, except that the provenance columns stay text: a revision such as
    '92862176e600' would otherwise be read as the float 9.3e607 (inf), and a version '1.10' as 1.1."""
    import pandas as pd

    header = pd.read_csv(path, nrows=0).columns
    text = {c: str for c in header if c in PROVENANCE_TEXT or str(c).startswith("version_")}
    return pd.read_csv(path, dtype=text)


def provenance(device: str = "cpu", tier: str = "unknown") -> dict[str, str]:
    """Columns stamped on every run row: where, with what, from which revision."""
    versions = package_versions()
    return {
        "tier": tier,
        "device": device,
        "git_revision": git_revision(),
        "python": platform.python_version(),
        **{f"version_{k}": v for k, v in versions.items()},
    }



def matmul_gflops(size: int = 1024, repeats: int = 5, dtype=None) -> float:
    """The dense matrix-multiply rate (GFLOP/s) at the current torch thread count: the best of `repeats`
    products of two size × size matrices (float64 unless `dtype` says otherwise)."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def machine_rates(repeats: int = 5) -> dict:
    """This machine's own yardsticks, on one thread: dense float32 and float64 matmul rates (GFLOP/s) and
    the memory copy bandwidth (GB/s, a 256 MB tensor copied, read + write counted). Timings are stated
    beside these so a reader can tell a slower machine from slower code (a job bound by arithmetic moves
    with the matmul rate; one bound by memory traffic, with the bandwidth)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = {"matmul_f32_gflops": round(matmul_gflops(repeats=repeats, dtype=torch.float32), 1),
               "matmul_f64_gflops": round(matmul_gflops(repeats=repeats), 1)}
        source = torch.ones(64 * 2**20)  # 256 MB of float32
        target = torch.empty_like(source)
        target.copy_(source)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            target.copy_(source)
            best = min(best, time.perf_counter() - start)
        out["copy_gbs"] = round(2 * source.numel() * 4 / best / 1e9, 1)
        return out
    finally:
        torch.set_num_threads(threads)


def machine_rates_line(repeats: int = 5) -> str:
    """`machine_rates` measured now, as the one line a benchmark prints beside its timings."""
    rates = machine_rates(repeats)
    return (f"this machine now, one thread: float32 matmul {rates['matmul_f32_gflops']} GFLOP/s, float64 "
            f"{rates['matmul_f64_gflops']} GFLOP/s, memory copy {rates['copy_gbs']} GB/s (state timings beside these)")
