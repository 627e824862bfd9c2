"""RE-0 verification on synthetic paired returns: false admissions, power, pairs per admission.

Every simulated event is one audited history: shared-randomness draws xi_m produce a teacher-arm
and a student-arm return; the verifier (betting e-process or two-layer Hoeffding, both with the
8 / 12 / 16 / 24 / 32 / 48 escalation) admits, rejects or runs out of pairs. The true Delta is set
by construction, so the false-admission rate (Delta <= 0) and the power (Delta > 0) are known.

Returns:
- ``bernoulli``: success 0/1 per arm (R_bar = 1). Shared randomness: with probability ``rho``
  the two arms read the same uniform, which is what pairing under a shared xi does to the noise;
- ``bounded``: CaPtain-style returns in [-0.75, 1] (R_bar = 1.75): success 1, missed finish 0.25,
  failure 0, budget -0.1, false finish -0.3, minus a cost in [0, 0.45].

Usage: ``python benchmarks/bench_bounds.py [--events 1000] [--alpha 0.05] [--seed 0] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from captain_ros.evaluation.stats import wilson_interval
from captain_ros.research.re0 import PairedDraw, VerifierConfig, verify

BOUNDED_LEVELS = np.array([1.0, 0.25, 0.0, -0.1, -0.3])


def bernoulli_arms(p_t: float, p_s: float, rho: float) -> Callable[[np.random.Generator], tuple]:
    def draw(rng: np.random.Generator) -> tuple[float, float]:
        u = rng.uniform()
        u2 = u if rng.uniform() < rho else rng.uniform()
        return float(u < p_t), float(u2 < p_s)

    return draw


def bounded_arms(shift: float, rho: float) -> Callable[[np.random.Generator], tuple]:
    """Outcome distributions over BOUNDED_LEVELS; the teacher moves ``shift`` mass failure -> success."""
    base = np.array([0.35, 0.1, 0.35, 0.1, 0.1])
    teacher = base.copy()
    teacher[0] += shift
    teacher[2] -= shift
    cum_s, cum_t = np.cumsum(base), np.cumsum(teacher)

    def draw(rng: np.random.Generator) -> tuple[float, float]:
        u = rng.uniform()
        u2 = u if rng.uniform() < rho else rng.uniform()
        cost_u = rng.uniform()
        cost_u2 = cost_u if rng.uniform() < rho else rng.uniform()
        t = BOUNDED_LEVELS[min(int(np.searchsorted(cum_t, u)), 4)] - 0.45 * cost_u**4
        s = BOUNDED_LEVELS[min(int(np.searchsorted(cum_s, u2)), 4)] - 0.45 * cost_u2**4
        return float(t), float(s)

    return draw


def true_delta_bounded(shift: float) -> float:
    return shift * (BOUNDED_LEVELS[0] - BOUNDED_LEVELS[2])


def run_setting(
    arms, bound: float, method: str, events: int, alpha: float, rng: np.random.Generator
) -> dict[str, object]:
    cfg = VerifierConfig(method=method, return_bound=bound)
    admitted, rejected, pairs_adm, rollouts, rollouts_adm = 0, 0, [], 0, 0
    t0 = time.perf_counter()
    for _ in range(events):

        def sample(first: int, count: int) -> list[PairedDraw]:
            return [PairedDraw("teacher", xi, *arms(rng)) for xi in range(first, first + count)]

        v = verify(sample, alpha, cfg)
        rollouts += v.rollouts_spent
        if v.admitted:
            admitted += 1
            pairs_adm.append(len(v.draws))
            rollouts_adm += v.rollouts_spent
        rejected += v.verdict == "rejected"
    w = wilson_interval(admitted, events)
    return {
        "method": method,
        "events": events,
        "admitted": admitted,
        "rate": w.rate,
        "ci_low": w.low,
        "ci_high": w.high,
        "rejected": rejected,
        "mean_pairs_when_admitted": float(np.mean(pairs_adm)) if pairs_adm else None,
        "rollouts_per_admitted_event": rollouts / admitted if admitted else None,
        "rollouts_per_event": rollouts / events,
        "wall_s": time.perf_counter() - t0,
    }


def settings() -> list[tuple[str, float, float, Callable]]:
    """(name, true Delta, R_bar, arms)."""
    out: list[tuple[str, float, float, Callable]] = []
    for p in (0.1, 0.5, 0.9):
        for rho in (0.0, 0.7):
            out.append((f"bernoulli null p={p} rho={rho}", 0.0, 1.0, bernoulli_arms(p, p, rho)))
    out.append(("bernoulli harmful 0.6 -> 0.3", -0.3, 1.0, bernoulli_arms(0.3, 0.6, 0.7)))
    for d in (0.1, 0.2, 0.3, 0.5):
        out.append((f"bernoulli 0.3 -> {0.3 + d:.1f}", d, 1.0, bernoulli_arms(0.3 + d, 0.3, 0.7)))
    out.append(("bounded null rho=0.7", 0.0, 1.75, bounded_arms(0.0, 0.7)))
    for s in (0.15, 0.3):
        out.append((f"bounded shift {s}", true_delta_bounded(s), 1.75, bounded_arms(s, 0.7)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    rng = np.random.default_rng(ns.seed)
    rows = []
    print(
        f"{'setting':<32} {'Delta':>6} {'method':<9} {'admit rate [95% CI]':<24} "
        f"{'pairs|adm':>9} {'rollouts/adm':>12}"
    )
    for name, delta, bound, arms in settings():
        for method in ("betting", "hoeffding"):
            r = run_setting(arms, bound, method, ns.events, ns.alpha, rng)
            r.update(setting=name, true_delta=delta, return_bound=bound)
            rows.append(r)
            mp = f"{r['mean_pairs_when_admitted']:.1f}" if r["mean_pairs_when_admitted"] else "-"
            ra = (
                f"{r['rollouts_per_admitted_event']:.0f}"
                if r["rollouts_per_admitted_event"]
                else "-"
            )
            print(
                f"{name:<32} {delta:>6.3f} {method:<9} {r['rate']:6.3f} [{r['ci_low']:.3f}, "
                f"{r['ci_high']:.3f}]{'':<6} {mp:>9} {ra:>12}",
                flush=True,
            )
    nulls = [r for r in rows if r["true_delta"] <= 0]
    for method in ("betting", "hoeffding"):
        worst = max((r for r in nulls if r["method"] == method), key=lambda r: r["rate"])
        print(
            f"{method}: worst false-admission rate {worst['rate']:.4f} "
            f"(alpha {ns.alpha}) in '{worst['setting']}'"
        )
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(
                {"alpha": ns.alpha, "events": ns.events, "seed": ns.seed, "rows": rows}, f, indent=2
            )


if __name__ == "__main__":
    main()
