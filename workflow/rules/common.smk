# Helpers shared by every claim's rules: config → JSON params, the experiment and notebook commands.
import json

TIER = config["tier"]
FINAL_TARGETS = {}  # claim -> files `rule all` asks for (figures, tables, notebooks, verdict JSON)


def spec_json(claim, experiment):
    """The experiment's config section as JSON; a change to it reruns just that experiment."""
    return json.dumps(config[claim][experiment], sort_keys=True)


def experiment_command(claim, experiment, part="all"):
    """Shell command of a job running `attncap.experiments.<claim>.run(experiment, ...)`."""
    return (
        f"python scripts/run_experiment.py {claim} {experiment} --part {part} "
        f"--spec {{params.spec:q}} --seed {config['seed']} --device {config['device']} "
        f"--threads {{threads}} --tier {TIER} --out {{output}} 2> {{log}}"
    )


def notebook_files(claim, figures, tables, captioned=False):
    """A claim notebook's outputs: figures (captioned for the report when asked), tables, notebook, HTML."""
    figure_paths = [f"results/figures/{claim}_{name}.png" for name in figures]
    if captioned:
        figure_paths = [report(path, caption=f"../report/{claim}/{name}.rst", category=claim)
                        for path, name in zip(figure_paths, figures)]
    return (
        figure_paths
        + [f"results/tables/{claim}_{name}.csv" for name in tables]
        + [f"results/notebooks/{claim}.ipynb", f"results/notebooks/{claim}.html"]
    )


def notebook_outputs(claim, figures, tables):
    return notebook_files(claim, figures, tables, captioned=True)


def register_claim(claim, figures, tables):
    """Declare what `rule all` builds for a claim: its verdict JSON and every notebook output."""
    FINAL_TARGETS[claim] = [f"results/claims/{claim}.json"] + notebook_files(claim, figures, tables)


def notebook_command(claim):
    return (
        f"python scripts/run_notebook.py notebooks/{claim}.ipynb "
        f"--executed results/notebooks/{claim}.ipynb --html results/notebooks/{claim}.html "
        f"-p results_dir results -p tier {TIER} > {{log}} 2>&1"
    )


def analyze_command(claim):
    return (
        f"python scripts/evaluate_claim.py {claim} {{input}} --tier {TIER} "
        f"--json {{output.claims}} --summary {{output.summary}} 2> {{log}}"
    )
