"""Prefix caching off vs on: a load scenario's figures per way, and the ratios between them."""

from backend.bench.figures import WAY_ORDER, figures, pooled, ratio


def scenario_results(scenario: str, results: list[dict]) -> dict:
    """`results`: worker outputs that ran this scenario. Headline `on`/`off` from the first way."""
    ways: dict[str, dict[str, dict]] = {}
    by_rate: dict[float, dict] = {}
    for result in results:
        runs = [run for run in result["runs"] if run["scenario"] == scenario]
        if not runs:
            continue
        mode = "on" if result["caching"] else "off"
        ways.setdefault(result["way"], {})[mode] = figures(
            pooled(runs), engine_load_s=result["engine_load_s"]
        )
        if len(runs) == 1 and runs[0].get("costs"):  # per turn: bench/costs.py
            ways[result["way"]][mode]["costs"] = runs[0]["costs"]
        for run in runs:
            if run["rate"] is not None:
                row = by_rate.setdefault(run["rate"], {"rate": run["rate"], "way": result["way"]})
                row[mode] = figures(run)
                if run.get("costs"):  # the support arrivals' cost per turn at each rate
                    row[mode]["costs"] = run["costs"]
    headline = next(way for way in WAY_ORDER if way in ways)
    out: dict = {"way": headline, **ways[headline], "ways": ways}
    on, off = out.get("on"), out.get("off")
    if on and off:
        out["speedup_total_time"] = ratio(off["total_s"], on["total_s"], 2)
        out["speedup_qps"] = ratio(on["qps"], off["qps"], 2)
        out["caching_cost_total_time"] = round(on["total_s"] / off["total_s"] - 1, 4)
        out["identical_replies"] = on["replies_sha256"] == off["replies_sha256"]
    for way in WAY_ORDER:
        if "on" in ways.get(way, {}):
            out[f"{way}_qps"] = ways[way]["on"]["qps"]
    if "app_qps" in out and "engine_qps" in out:
        out["app_vs_engine_qps"] = ratio(out["app_qps"], out["engine_qps"])
        app, engine = ways["app"]["on"], ways["engine"]["on"]
        out["app_vs_engine_ttft"] = ratio(app["ttft_ms_p50"], engine["ttft_ms_p50"])
        # The app shows a held reply's first word once its first sentence is checked: its
        # first token against the bare engine's first whole sentence is what the checks cost.
        out["app_shown_vs_engine_sentence"] = ratio(app["ttft_ms_p50"], engine.get("first_sentence_ms_p50"))
    if "peer_qps" in out and "engine_qps" in out:
        out["peer_vs_engine_qps"] = ratio(out["peer_qps"], out["engine_qps"])
    if by_rate:
        out["by_rate"] = [by_rate[rate] for rate in sorted(by_rate)]
    return out
