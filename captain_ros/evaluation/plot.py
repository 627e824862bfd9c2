"""PNG plots of evaluation results (matplotlib, Agg backend; no display needed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def plot_eval(
    per_task: Mapping[str, Mapping[str, Any]], path: str | Path, title: str = "captain eval"
) -> Path:
    """Bar chart of host and strict success per task with Wilson 95% error bars, plus requests.

    Args:
        per_task: ``{task: aggregate(...)}`` as from :func:`captain_ros.evaluation.summary.by_task`.
        path: Output PNG path.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    tasks = list(per_task)
    fig, (ax, ax2) = plt.subplots(
        1, 2, figsize=(max(6.0, 1.6 * len(tasks) + 4), 4.0), gridspec_kw={"width_ratios": [2, 1]}
    )
    width = 0.38
    for k, (metric, colour) in enumerate(
        (("host_success", "#4c72b0"), ("strict_success", "#55a868"))
    ):
        rates = [per_task[t][metric]["rate"] for t in tasks]
        lows = [per_task[t][metric]["rate"] - per_task[t][metric]["ci_low"] for t in tasks]
        highs = [per_task[t][metric]["ci_high"] - per_task[t][metric]["rate"] for t in tasks]
        xs = [i + (k - 0.5) * width for i in range(len(tasks))]
        ax.bar(
            xs,
            rates,
            width,
            yerr=[lows, highs],
            capsize=3,
            color=colour,
            label=metric.replace("_", " "),
        )
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels(tasks, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (Wilson 95% CI)")
    ax.set_title(title)
    ax.legend(loc="lower left")
    req = [per_task[t]["requests_per_episode"]["mean"] for t in tasks]
    act = [per_task[t]["physical_actions_per_episode"]["mean"] for t in tasks]
    slots = range(len(tasks))
    ax2.bar([x - 0.2 for x in slots], req, 0.4, label="requests", color="#8172b2")
    ax2.bar([x + 0.2 for x in slots], act, 0.4, label="physical actions", color="#c44e52")
    ax2.set_xticks(list(slots))
    ax2.set_xticklabels(tasks, rotation=20, ha="right")
    ax2.set_ylabel("mean per episode")
    ax2.legend()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
