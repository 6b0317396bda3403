"""Helpers the Snakemake rule files share: config → JSON params and the commands every claim runs.

Kept in the package (not in a .smk file) so rule files hold only rules and the helpers are testable.
"""
from __future__ import annotations

import json
import os
import re
import shlex

JOB = "python -m attncap.jobrun --log {log:q}"
"""Every job runs under attncap.jobrun: its stderr goes to the log, and a job ended by a signal (the OOM
killer's SIGKILL) says so in the log and on stderr instead of leaving an empty log."""


def shell_arg(value: str) -> str:
    """A shell word: a Snakemake placeholder such as '{wildcards.part}' becomes '{wildcards.part:q}' (quoted
    when the command is formatted), any literal is quoted now."""
    match = re.fullmatch(r"\{([A-Za-z_][\w.]*)\}", value)
    if match:
        return "{" + match.group(1) + ":q}"
    return shlex.quote(value).replace("{", "{{").replace("}", "}}")


def report_if_built(path: str, **report_args):
    """`path` flagged for the Snakemake report only when it exists (checked read-only when the Snakefile is
    parsed), so `snakemake --report` works after any run (one claim, one target, the smoke tier) and
    includes whatever that run built; the flag changes nothing about running jobs."""
    if not os.path.exists(path):
        return path
    from snakemake.io import report

    return report(path, **report_args)


def alternation(values) -> str:
    """A regex matching exactly the given strings (a wildcard constraint built from the config); one
    that matches nothing when there are none."""
    values = sorted({str(v) for v in values})
    return "|".join(re.escape(v) for v in values) if values else "(?!)"


class Rules:
    """Bound to one workflow's config; `common.smk` exposes its methods under short names."""

    def __init__(self, config: dict):
        self.config = config
        self.tier = config["tier"]
        self.final_targets: dict[str, list[str]] = {}
        self.headlines: dict[str, str] = {}  # claim -> its headline figure (see register_claim)

    def spec_json(self, claim: str, experiment: str, part: str = "") -> str:
        """The config section a job of the experiment gets, as JSON; a change to it reruns just that experiment.
        Claim 3's trained jobs (the experiments run in parts) also get the M7 saturation settings they measure."""
        spec = self.config[claim][experiment]
        if claim == "mha_memorization" and part:
            spec = {**spec, "saturation": self.config[claim]["M7"]}
        return json.dumps(spec, sort_keys=True)

    def run_tables(self, claim: str) -> list[str]:
        """Every run CSV of a claim, from the one list its experiment module keeps (the keys of
        `expected_cells`): what the verdicts and the notebook read, and what the training jobs make."""
        import importlib

        if claim not in self.config.get("claims", []) or claim not in self.config:
            return []
        module = importlib.import_module(f"attncap.experiments.{claim}")
        return [f"results/{claim}/runs/{name}.csv" for name in module.expected_cells(self.config[claim])]

    def table_parts(self, claim: str) -> dict[str, list[str]]:
        """Experiment id → its job parts, read off the run-table names ('A1_p0' → A1: [p0]; a table
        without a part, 'M1', gives M1: []): the values the rules' wildcards may take."""
        parts: dict[str, list[str]] = {}
        for path in self.run_tables(claim):
            experiment, _, part = path.rsplit("/", 1)[1].removesuffix(".csv").partition("_")
            parts.setdefault(experiment, [])
            if part:
                parts[experiment].append(part)
        return parts

    def claim_json(self, claim: str) -> str:
        """The claim's whole config section as JSON: the analysis checks the run tables cover its grid."""
        return json.dumps(self.config.get(claim, {}), sort_keys=True)

    def experiment_command(self, claim: str, experiment: str, part: str = "all") -> str:
        """Shell command of a job running `attncap.experiments.<claim>.run(experiment, ...)`."""
        return (
            f"{JOB} -- python scripts/run_experiment.py {shell_arg(claim)} {shell_arg(experiment)} "
            f"--part {shell_arg(part)} --spec {{params.spec:q}} --seed {shell_arg(str(self.config['seed']))} "
            f"--device {shell_arg(self.config['device'])} --threads {{threads}} --tier {shell_arg(self.tier)} "
            + ("--compile " if claim in self.config.get("compile", []) else "")
            + "--out {output:q}"
        )

    def notebook_files(self, claim: str, figures, tables, captioned: bool = False) -> list:
        """A claim notebook's outputs: figures (captioned for the report when asked), tables, notebook, HTML."""
        figure_paths = [f"results/figures/{claim}_{name}.png" for name in figures]
        html = f"results/notebooks/{claim}.html"
        if captioned:
            figure_paths = [report_if_built(path, caption=f"../report/{claim}/{name}.rst", category=claim)
                            for path, name in zip(figure_paths, figures)]
            html = report_if_built(html, caption="../report/notebook.rst", category=claim)
        return (figure_paths + [f"results/tables/{claim}_{name}.csv" for name in tables]
                + [f"results/notebooks/{claim}.ipynb", html])

    def notebook_outputs(self, claim: str, figures, tables) -> list:
        return self.notebook_files(claim, figures, tables, captioned=True)

    def register_claim(self, claim: str, figures, tables) -> None:
        """Declare what `rule all` builds for a claim: its verdict JSON and every notebook output. The first
        figure is the claim's headline (the one a reference run keeps)."""
        self.final_targets[claim] = [f"results/claims/{claim}.json"] + self.notebook_files(claim, figures, tables)
        self.headlines[claim] = f"results/figures/{claim}_{figures[0]}.png"

    def notebook_command(self, claim: str) -> str:
        """Run the claim's percent-format source (input `source`) on exactly the rule's run tables."""
        return (
            f"{JOB} --merge-stdout -- python scripts/run_notebook.py {{input.source:q}} "
            f"--executed results/notebooks/{claim}.ipynb --html results/notebooks/{claim}.html "
            f"-p results_dir results -p tier {shell_arg(self.tier)} -p runs {{params.runs:q}}"
        )

    def analyze_command(self, claim: str) -> str:
        # results/claims.md is removed first: while this claim's verdicts are recomputed (or after they
        # failed to be), the table over all verdicts must not go on showing the old ones
        return (
            f"rm -f results/claims.md results/claims_landing.rst results/claims.html && "
            f"{JOB} -- python scripts/evaluate_claim.py {claim} {{input:q}} --spec {{params.spec:q}} "
            f"--tier {shell_arg(self.tier)} --json {{output.claims:q}} --summary {{output.summary:q}}"
        )
