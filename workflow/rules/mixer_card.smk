# The mixer card (attncap.mixer_card, issue 23 §3): one row per attention mixer, read off claim 1's E5 (MQAR)
# and E2 (retrieval SNR⁻¹) run tables and claim 5's S1 (swap) run tables: whichever of the two claims are
# enabled; a claim that is not leaves its columns empty. `rule all` builds it when either claim is enabled.
MIXER_CARD_CLAIMS = [c for c in ("retrieval_capacity", "swap_state_tracking") if c in config["claims"]]
MIXER_CARD = ["results/tables/mixer_card.csv", "results/figures/mixer_card.png"]
if MIXER_CARD_CLAIMS:
    # added to the first enabled claim's targets only, so `rule all` asks for the card once
    FINAL_TARGETS[MIXER_CARD_CLAIMS[0]] = FINAL_TARGETS[MIXER_CARD_CLAIMS[0]] + MIXER_CARD


rule mixer_card:
    input:
        # run_tables lists a claim's tables only when the claim is enabled (empty otherwise)
        e5=[path for path in run_tables("retrieval_capacity") if "runs/E5_" in path],
        e2=[path for path in run_tables("retrieval_capacity") if path.endswith("runs/E2.csv")],
        s1=[path for path in run_tables("swap_state_tracking") if "runs/S1_" in path],
    output:
        table=MIXER_CARD[0],
        figure=report_if_built(MIXER_CARD[1], caption="../report/mixer_card/card.rst", category="mixer card"),
    conda:
        "../../envs/attncap.yaml"
    log:
        "results/logs/mixer_card.log",
    shell:
        "python -m attncap.jobrun --log {log:q} -- python -m attncap.mixer_card --results results "
        "--e5 {input.e5:q} --e2 {input.e2:q} --s1 {input.s1:q}"
