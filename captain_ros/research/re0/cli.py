"""``captain learn re0 --student DIR|SPEC --teacher scripted --task T --out DIR``: one RE-0 generation.

Collect the seat's episodes on training seeds, locate its failures, verify bounded teacher repairs
by paired counterfactual rollouts from the restored decision points (betting gate, alpha shared
over the generation), write the admission ledger, run the verified hybrid mu, write the RE-OPD
corpus, distill it into the next student through ``captain learn sft`` and re-evaluate that
student against its parent on held-out seeds (:mod:`captain_ros.research.re0.generation`).

Students: a model folder (what ``captain learn sft`` writes, run on llama.cpp when its adapter was
exported for the packaged SmolLM2; or a packaged ``student.json`` folder, which runs but has no
weights to distill; corpora cold + refine), or the
testbed's ``scripted-faulty[:NAME=RATE,...,seed=N,offset_m=M]`` (the expert's seeded fault
injection; refine only; nothing to distill). Teachers: ``scripted`` = the clean expert's mid-episode
takeover; for the testbed also ``harmful`` (the takeover making ``HARMFUL_FAULTS``' mistakes, or
``takeover-faulty:FAULTS``) and ``self`` (the student itself, the null control). ``--candidate
TEACHER`` (repeatable) audits further teachers beside it at every failure, for any student: a
sometimes-harmful one makes some audits end rejected, and the ledger names each audit's teacher.
``--teacher openai`` is refused with the reason. Errors: one line on stderr, exit 2 (``--debug`` for a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError, InvalidArgumentError
from captain_ros.harness.episode.profiles import PROFILES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--student",
        required=True,
        help="model folder (a `captain learn sft` folder; an exported adapter runs on llama.cpp) "
        "or scripted-faulty[:NAME=RATE,...]",
    )
    p.add_argument(
        "--teacher",
        default="scripted",
        help="scripted (the expert's takeover); testbed: harmful, takeover-faulty:FAULTS, self",
    )
    p.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="TEACHER",
        help="another candidate teacher audited beside --teacher at every failure (repeatable): "
        "harmful, takeover-faulty:FAULTS (a sometimes-harmful takeover), self, scripted",
    )
    p.add_argument("--task", required=True)
    p.add_argument(
        "--out", required=True, help="generation folder (ledger.jsonl, corpus/, student/, re0.json)"
    )
    p.add_argument("--seeds", default="0-19", help="training seeds 0-999 (default 0-19)")
    p.add_argument(
        "--heldout",
        default="",
        help="held-out seeds 1000-1999 for the re-evaluation (e.g. 1000-1049)",
    )
    p.add_argument(
        "--generation",
        type=int,
        default=0,
        help="k of this generation (event ids g<k>:...; a refine generation from the previous "
        "one's child is k + 1)",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--method", default="betting", choices=("betting", "hoeffding"))
    p.add_argument("--channel", default="success", choices=("success", "return"))
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="verify without the stochastic mode (pairs differ by sampling seeds only)",
    )
    p.add_argument(
        "--segments",
        default="",
        help="contract segment lengths in requests "
        "(default 4,8,16: the takeover needs a setup request)",
    )
    p.add_argument(
        "--max-draws", type=int, default=48, help="cap on M, the paired draws per contract (8..48)"
    )
    p.add_argument(
        "--max-events", type=int, default=None, help="audit at most this many failures per pass"
    )
    p.add_argument(
        "--corpora",
        default="",
        help="cold,refine (default for a model student; refine for the testbed)",
    )
    p.add_argument("--lambda", dest="lam", type=float, default=1.0, help="RE-OPD lambda")
    p.add_argument("--retention", type=float, default=1.0, help="weight of the seat's own turns")
    p.add_argument("--max-requests", type=int, default=None, help="request budget of every episode")
    p.add_argument(
        "--max-new-tokens", type=int, default=None, help="a model student's reply length cap"
    )
    p.add_argument(
        "--temperature", type=float, default=None, help="a model student's sampling temperature"
    )
    p.add_argument(
        "--engine",
        default=None,
        choices=("auto", "llamacpp", "transformers"),
        help="a model student's inference engine (docs/engines.md; default: the policy's auto)",
    )
    p.add_argument(
        "--profile",
        default="auto",
        choices=("auto", *PROFILES),
        help="prompt profile of every seat's episodes (auto: a model student's trained one)",
    )
    p.add_argument("--backend", default="mujoco", choices=("mujoco", "fake"))
    g = p.add_argument_group("distillation (captain learn sft)")
    g.add_argument("--sft-method", dest="method_sft", default="lora", choices=("lora", "full"))
    g.add_argument(
        "--max-steps", type=int, default=-1, help="SFT optimizer steps (overrides --epochs)"
    )
    g.add_argument("--epochs", type=float, default=1.5)
    g.add_argument("--lr", type=float, default=None)
    g.add_argument("--grad-accum", type=int, default=4)
    g.add_argument("--max-length", type=int, default=None)
    g.add_argument("--bf16", default="auto", choices=("auto", "on", "off"))
    g.add_argument("--device", default=None)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the generation in --out: reuse its finished episodes, rollouts and "
        "distillation (same jobs, same inputs); the ledger and re0.json are rebuilt",
    )
    p.add_argument("--json", action="store_true", help="print re0.json instead of a summary")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def _seeds(text: str, flag: str) -> tuple[int, ...]:
    from captain_ros.evaluation.runner import parse_seeds

    try:
        return tuple(parse_seeds(text)) if text else ()
    except ValueError as exc:
        raise InvalidArgumentError(f"bad {flag}: {exc}") from exc


def config(ns: argparse.Namespace) -> tuple[Any, Any]:
    """(LoopConfig, DistillConfig) from the command line, every input checked."""
    from captain_ros.policy.factory import check_spec
    from captain_ros.research.re0.generation import DistillConfig
    from captain_ros.research.re0.loop import LoopConfig
    from captain_ros.research.re0.seats import (
        FAULTY_PREFIX,
        HARMFUL_PREFIX,
        MODEL_PREFIX,
        check_teacher,
        seat_options,
        seat_profile,
    )
    from captain_ros.tasks import get_task

    get_task(ns.task)
    if ns.teacher == "openai":
        raise InvalidArgumentError(
            "--teacher openai: an endpoint teacher needs a repair prompt; not built "
            "yet (use --teacher scripted)"
        )
    student = ns.student
    model = Path(student).is_dir()
    teacher = {"scripted": "takeover", "harmful": HARMFUL_PREFIX}.get(ns.teacher, ns.teacher)
    candidates = tuple(
        {"scripted": "takeover", "harmful": HARMFUL_PREFIX}.get(c, c) for c in ns.candidate
    )
    for c in candidates:
        check_teacher(c)  # a sometimes-harmful candidate is allowed for every seat
    if model:
        if not any((Path(student) / f).is_file() for f in ("config.json", "student.json")):
            raise InvalidArgumentError(
                f"--student {student}: not a model folder (no config.json or student.json)"
            )
        if ns.teacher != "scripted":
            raise InvalidArgumentError(
                f"--teacher {ns.teacher!r}: a model student's teacher is 'scripted' (a harmful "
                "teacher goes beside it: --candidate harmful)"
            )
        seat = MODEL_PREFIX + str(Path(student).resolve())
    elif student == FAULTY_PREFIX or student.startswith(FAULTY_PREFIX + ":"):
        check_spec(student)  # a bad fault spec is refused here, not in every worker
        check_teacher(teacher)
        seat = student
    else:
        raise InvalidArgumentError(
            f"--student {student!r}: expected a model folder or {FAULTY_PREFIX}[:NAME=RATE,...]"
        )
    profile = None if ns.profile == "auto" else ns.profile
    seat_profile(seat, profile)  # a model student run in another format is refused here
    seeds, heldout = _seeds(ns.seeds, "--seeds"), _seeds(ns.heldout, "--heldout")
    if not seeds or max(seeds) >= 1000:
        raise InvalidArgumentError(
            "--seeds: RE-0 collects on training seeds 0-999 (held-out 1000+ are for "
            "evaluation only)"
        )
    if heldout and (min(heldout) < 1000 or max(heldout) > 1999):
        raise InvalidArgumentError("--heldout: held-out seeds are 1000-1999")
    try:
        lengths = tuple(int(x) for x in (ns.segments or "4,8,16").split(",") if x.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"bad --segments: {exc}") from exc
    if not lengths or min(lengths) < 1:
        raise InvalidArgumentError("--segments must list positive request counts")
    schedule = tuple(m for m in (8, 12, 16, 24, 32, 48) if m <= ns.max_draws)
    if not schedule:
        raise InvalidArgumentError("--max-draws must be >= 8 (the first look)")
    corpora = tuple(
        c.strip()
        for c in (ns.corpora or ("cold,refine" if model else "refine")).split(",")
        if c.strip()
    )
    if not model and "cold" in corpora:
        raise InvalidArgumentError(
            "--corpora cold: the cold corpus trains a model student; the testbed has none"
        )
    options = seat_options(ns.max_new_tokens, ns.temperature, ns.device, ns.engine)
    sft = {
        "method": ns.method_sft,
        "max_steps": ns.max_steps,
        "epochs": ns.epochs,
        "learning_rate": ns.lr,
        "grad_accum": ns.grad_accum,
        "max_length": ns.max_length,
        "bf16": ns.bf16,
        "device": ns.device,
    }
    try:
        dcfg = DistillConfig(
            corpora=corpora, lam=ns.lam, retention=ns.retention, heldout=heldout, sft=sft
        )
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from exc
    if (
        ns.lam < 0
        or ns.retention < 0
        or ns.generation < 0
        or (ns.max_events is not None and ns.max_events < 0)
    ):
        raise InvalidArgumentError(
            "--lambda, --retention, --generation and --max-events must be >= 0"
        )
    cfg = LoopConfig(
        task=ns.task,
        seeds=seeds,
        student=seat,
        teacher=teacher,
        candidates=candidates,
        out=ns.out,
        workers=ns.workers,
        method=ns.method,
        channel=ns.channel,
        noise=None if ns.deterministic or ns.backend == "fake" else {},
        segment_lengths=lengths,
        schedule=schedule,
        generation=ns.generation,
        backend=ns.backend,
        seat_options=options,
        max_events=ns.max_events,
        budgets={"max_requests": ns.max_requests} if ns.max_requests else None,
        profile=profile,
        resume=ns.resume,
    )
    return cfg, dcfg


def summary(report: dict[str, Any]) -> list[str]:
    lines = []
    for name, p in report.get("passes", {}).items():
        s = p["seat_success"]
        lines.append(
            f"{name}: {p['seat']}: {s['successes']}/{s['n']} strict successes; {p['decision']}"
        )
        for e in p.get("events", []):
            audited = ", ".join(
                f"{a.get('teacher', '')} kappa {a['kappa']:.2f}: {a['verdict']} "
                f"(Delta-hat {a['delta_hat']:+.2f}, "
                f"{a['rollouts']} rollouts)"
                for a in e.get("audited", [])
            )
            lines.append(
                f"  seed {e['seed']}: boundary {e['boundary_t']} - {audited or e['reason']}"
            )
        if "gate" in p:
            lines.append(f"  {p['gate']}; {p.get('rollouts_spent', 0)} rollouts")
        r = p.get("reused") or {}
        if r.get("episodes") or r.get("rollouts"):
            lines.append(
                f"  resumed: {r['episodes']} finished episodes and {r['rollouts']} rollouts reused"
            )
        if "hybrid_success" in p:
            h, m = p["hybrid_success"], p["mcnemar"]
            lines.append(f"  hybrid mu: {h['successes']}/{h['n']} (McNemar p = {m['p_value']:.3g})")
    c = report.get("corpus", {})
    lines.append(
        f"corpus: {c.get('rows', 0)} rows {c.get('by_corpus', {})}, weight sum {c.get('weight_sum', 0):.3g}"
    )
    d = report.get("distill", {})
    lines.append(
        f"distill: {'student in ' + d['folder'] if d.get('ran') else 'not run: ' + d.get('reason', '')}"
    )
    if report.get("child", {}).get("stacked_rank"):
        ch = report["child"]
        lines.append(
            f"child: {ch['folder']} (one adapter of rank {ch['stacked_rank']} on the base; "
            f"{'exported, ' if ch.get('exported') else ''}runs on {ch.get('engine')})"
        )
    h = report.get("heldout", {})
    if h.get("ran"):
        lines.append(
            f"held-out: parent {h['parent']['successes']}/{h['parent']['n']}, child "
            f"{h['child']['successes']}/{h['child']['n']} (McNemar p = {h['mcnemar']['p_value']:.3g})"
        )
    else:
        lines.append(f"held-out: not run: {h.get('reason', '')}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="captain learn re0", description=__doc__.split("\n")[0])
    add_arguments(p)
    ns = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        from captain_ros.research.re0.generation import run_loop

        report = run_loop(*config(ns))
    except (CaptainError, OSError, ValueError) as exc:
        if ns.debug:
            raise
        print(f"captain learn re0: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, default=str) if ns.json else "\n".join(summary(report)))
    if not ns.json:
        print(f"wrote {Path(ns.out) / 're0.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
