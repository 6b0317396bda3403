"""Helpers the Snakemake rule files share: config → JSON params and the commands every claim runs.

Kept in the package (not in a .smk file) so rule files hold only rules and the helpers are testable.
"""
from __future__ import annotations

import json


class Rules:
    """Bound to one workflow's config; `common.smk` exposes its methods under short names."""

    def __init__(self, config: dict):
        self.config = config
        self.tier = config["tier"]
        self.final_targets: dict[str, list[str]] = {}

    def spec_json(self, claim: str, experiment: str) -> str:
        """The experiment's config section as JSON; a change to it reruns just that experiment."""
        return json.dumps(self.config[claim][experiment], sort_keys=True)

    def experiment_command(self, claim: str, experiment: str, part: str = "all") -> str:
        """Shell command of a job running `attncap.experiments.<claim>.run(experiment, ...)`."""
        return (
            f"python scripts/run_experiment.py {claim} {experiment} --part {part} "
            f"--spec {{params.spec:q}} --seed {self.config['seed']} --device {self.config['device']} "
            f"--threads {{threads}} --tier {self.tier} --out {{output}} 2> {{log}}"
        )

    def notebook_files(self, claim: str, figures, tables, captioned: bool = False) -> list:
        """A claim notebook's outputs: figures (captioned for the report when asked), tables, notebook, HTML."""
        figure_paths = [f"results/figures/{claim}_{name}.png" for name in figures]
        if captioned:
            from snakemake.io import report

            figure_paths = [report(path, caption=f"../report/{claim}/{name}.rst", category=claim)
                            for path, name in zip(figure_paths, figures)]
        return (figure_paths + [f"results/tables/{claim}_{name}.csv" for name in tables]
                + [f"results/notebooks/{claim}.ipynb", f"results/notebooks/{claim}.html"])

    def notebook_outputs(self, claim: str, figures, tables) -> list:
        return self.notebook_files(claim, figures, tables, captioned=True)

    def register_claim(self, claim: str, figures, tables) -> None:
        """Declare what `rule all` builds for a claim: its verdict JSON and every notebook output."""
        self.final_targets[claim] = [f"results/claims/{claim}.json"] + self.notebook_files(claim, figures, tables)

    def notebook_command(self, claim: str) -> str:
        return (
            f"python scripts/run_notebook.py notebooks/{claim}.ipynb "
            f"--executed results/notebooks/{claim}.ipynb --html results/notebooks/{claim}.html "
            f"-p results_dir results -p tier {self.tier} > {{log}} 2>&1"
        )

    def analyze_command(self, claim: str) -> str:
        return (
            f"python scripts/evaluate_claim.py {claim} {{input}} --tier {self.tier} "
            f"--json {{output.claims}} --summary {{output.summary}} 2> {{log}}"
        )
