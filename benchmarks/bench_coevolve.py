"""CoEvolve experiment: the conditions on the base layout and the three variants, plus physics speed.

Conditions (scripted roles unless ``--roles`` says otherwise): ``coevolve`` (typed revision and
memory, fresh), ``flat`` (flat reflective repair), ``nomem`` (no dynamic memory), ``bank``
(CoEvolve from a preloaded bank). The bank is collected first from successful CoEvolve runs on
*train* seeds (0-999); every reported run uses *held-out* seeds (1000-1999). Reports SR (Wilson
95 %), VP, EA, PAUC (horizon 80 on the base layout, a retrospective 160 on the variants, as the
paper), mean transactions, termination labels, wall time, paired exact McNemar of SR against
``coevolve``, and the physics step rate of a run against raw ``mj_step`` of the same scene.

With ``--roles openai --base-url URL --model NAME`` the same conditions run with model roles over
the OpenAI-compatible client; without a reachable endpoint that variant is reported as skipped.

Usage: ``nice .venv/bin/python benchmarks/bench_coevolve.py --n-base 10 --n-variant 3 --out runs/bench_coevolve``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")


def physics_rates(seconds: float = 4.0) -> dict[str, float]:
    """Raw ``mj_step`` of the base scene vs the bridge (controllers, monitor) vs a skill transaction."""
    import mujoco

    from captain_ros.backends.humanoid.sim import MujocoHumanoidPair
    from captain_ros.backends.humanoid.support import posture
    from captain_ros.backends.humanoid.types import BaseVelocity

    b = MujocoHumanoidPair("base", seed=0)
    for r in b.spec.robot_names:
        b.command_arms(r, posture("support"), 6.0)
    b.advance(6.0)
    for r in b.spec.robot_names:
        b.command_height(r, 0.0)
    b.advance(1.0)  # carrying: the contacts of a real transport
    snap = b.snapshot()
    n = int(seconds / b.spec.physics_dt_s)
    t0 = time.perf_counter()
    for _ in range(n):
        mujoco.mj_step(b.model, b.data)
    raw = n / (time.perf_counter() - t0)
    b.restore(snap)
    ticks0, t0 = b.ticks, time.perf_counter()
    for _ in range(int(seconds / 0.1)):
        b.command_velocity("robot_a", BaseVelocity(0.0, -0.2, 0.0))
        b.command_velocity("robot_b", BaseVelocity(0.0, 0.2, 0.0))
        b.advance(0.1)
    bridge = (b.ticks - ticks0) * 10 / (time.perf_counter() - t0)
    return {
        "raw_mj_step_per_s": round(raw),
        "bridge_steps_per_s": round(bridge),
        "bridge_real_time_factor": round(bridge * b.spec.physics_dt_s, 1),
        "nv": int(b.model.nv),
        "ngeom": int(b.model.ngeom),
    }


def collect_bank(out: Path, roles: str, options: dict, tries: int = 6) -> Path | None:
    """A bank from the first successful CoEvolve run on train seeds 0.. (None if none succeeds)."""
    from captain_ros.research.coevolve.evaluate import run_one
    from captain_ros.research.coevolve.records import RunConfig

    for seed in range(tries):
        run_dir = out / "bank_source" / f"base_{seed}"
        s = run_one(RunConfig(layout="base", seed=seed), roles, str(run_dir), options)
        print(
            f"  bank source seed {seed}: {s.label} ({s.outcome.accepted}/{s.outcome.charged})",
            flush=True,
        )
        if s.outcome.success:
            bank = out / "bank"
            shutil.rmtree(bank, ignore_errors=True)
            shutil.copytree(run_dir / "memory", bank)
            return bank
    return None


def endpoint_ok(base_url: str) -> bool:
    import httpx

    try:
        return httpx.get(base_url.rstrip("/") + "/models", timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> None:
    from captain_ros.evaluation.stats import mcnemar
    from captain_ros.research.coevolve.evaluate import evaluate, table
    from captain_ros.research.coevolve.records import RunConfig

    ap = argparse.ArgumentParser()
    ap.add_argument("--n-base", type=int, default=10)
    ap.add_argument("--n-variant", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--conditions", default="coevolve,flat,nomem,bank")
    ap.add_argument("--variants", default="l2,l3,l4")
    ap.add_argument("--variant-conditions", default="coevolve,flat,nomem,bank")
    ap.add_argument("--roles", default="scripted")
    ap.add_argument("--base-url", default=os.environ.get("CAPTAIN_BASE_URL", ""))
    ap.add_argument("--model", default=os.environ.get("CAPTAIN_MODEL", ""))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default="runs/bench_coevolve")
    ns = ap.parse_args()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    options = {k: v for k, v in (("base_url", ns.base_url), ("model", ns.model)) if v}
    if ns.roles == "openai" and not (ns.base_url and endpoint_ok(ns.base_url)):
        print(
            json.dumps({"roles": "openai", "skipped": f"no reachable endpoint at {ns.base_url!r}"})
        )
        return
    t_start = time.perf_counter()
    rates = physics_rates()
    print("physics:", json.dumps(rates), flush=True)
    conds = [c for c in ns.conditions.split(",") if c]
    bank = (
        collect_bank(out, ns.roles, options)
        if ("bank" in conds or "bank" in ns.variant_conditions)
        else None
    )
    rows, per_seed = [], {}
    plan = [("base", conds, ns.n_base)] + [
        (v, [c for c in ns.variant_conditions.split(",") if c], ns.n_variant)
        for v in ns.variants.split(",")
        if v
    ]
    for layout, cs, n in plan:
        seeds = list(range(ns.first_seed, ns.first_seed + n))
        for c in cs:
            if c == "bank" and bank is None:
                rows.append(
                    {"condition": c, "layout": layout, "skipped": "no successful source run"}
                )
                continue
            res = evaluate(
                RunConfig(layout=layout),
                c,
                seeds,
                ns.roles,
                out,
                str(bank or ""),
                ns.workers,
                options,
                lambda s, c=c: print(
                    f"  {c:<9} {s.config.layout:<5} seed {s.config.seed} "
                    f"{s.label:<8} {s.outcome.accepted}/{s.outcome.charged} "
                    f"{s.wall_s:.1f}s",
                    flush=True,
                ),
            )
            rows.append(res.row())
            per_seed[(layout, c)] = [r.outcome.success for r in res.runs]
    for r in rows:
        ref = per_seed.get((r["layout"], "coevolve"))
        mine = per_seed.get((r["layout"], r["condition"]))
        if ref and mine and r["condition"] != "coevolve":
            m = mcnemar(ref, mine)
            r["mcnemar_vs_coevolve"] = {
                "only_coevolve": m.only_a,
                "only_this": m.only_b,
                "p_value": round(m.p_value, 4),
            }
    report = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "roles": ns.roles,
        "physics": rates,
        "bank": str(bank or ""),
        "rows": rows,
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    (out / "bench_coevolve.json").write_text(json.dumps(report, indent=1, default=str))
    print(table([r for r in rows if "skipped" not in r]))
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, default=str))


if __name__ == "__main__":
    main()
