"""The one plotting helper every notebook uses: seaborn style, consistent sizes, atomic PNG saving."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from attncap.runtime import atomic_path  # noqa: E402


def setup() -> None:
    # seaborn's strip-plot jitter draws from numpy's global generator: seeded, a notebook re-run on the same
    # tables draws the same image (the M1 residual panel moved its points on every render)
    np.random.seed(0)
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.2, height: float = 3.9, **kwargs):
    """A grid of axes sized per panel; returns (fig, axes) with axes always an array when >1 panel."""
    kwargs.setdefault("layout", "constrained")  # keeps suptitles, colorbars and legends from overlapping
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=True, **kwargs)
    return fig, axes


def save(fig, figures_dir: str | Path, claim: str, name: str) -> Path:
    """Write `<figures_dir>/<claim>_<name>.png` atomically and close the figure."""
    path = Path(figures_dir) / f"{claim}_{name}.png"
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path


def save_table(frame, tables_dir: str | Path, claim: str, name: str) -> Path:
    from attncap.runtime import write_csv

    path = Path(tables_dir) / f"{claim}_{name}.csv"
    write_csv(frame, path)
    return path


def label(ax, title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False, legend_title=None,
          legend_loc: str = "best", legend_columns: int = 1):
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if ax.get_legend_handles_labels()[0]:
        # "below": under the axes, outside the data (savefig's tight bounding box keeps it in the file)
        where = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2)) if legend_loc == "below" else dict(loc=legend_loc)
        ax.legend(title=legend_title, fontsize="small", title_fontsize="small", ncol=legend_columns, **where)
    return ax
