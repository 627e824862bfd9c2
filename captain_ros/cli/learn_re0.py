"""``captain learn re0 --student SPEC --teacher scripted --task T --out DIR``: one RE-0 generation.

Collect the student's episodes on training seeds, locate its failures, verify bounded teacher
repairs by paired counterfactual rollouts from the restored decision points (betting gate, alpha
shared over the generation), write the admission ledger, run the verified hybrid mu on the same
seeds (J(mu) against J(pi), paired McNemar) and write its RE-OPD rows
(:mod:`captain_ros.learn.re0.loop`).

Students: the testbed's ``re0-faulty[:place=R,grasp=R,offset_m=M,seed=N]`` (``scripted-faulty``
means its defaults until the expert branch's fault injector lands). Teachers: ``scripted`` (the
clean expert) or ``harmful`` (the control). A learned student folder and an ``openai`` teacher
need Learning I and a takeover-capable teacher, which this branch does not have: they are refused
with that reason. Errors: one line on stderr, exit 2 (``--debug`` for a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from captain_ros.core.errors import CaptainError, InvalidArgumentError

TEACHERS = {"scripted": "clean", "clean": "clean", "harmful": "harmful"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--student", required=True, help="re0-faulty[:place=R,...] or scripted-faulty")
    p.add_argument("--teacher", default="scripted", help="scripted (clean expert) or harmful (control)")
    p.add_argument("--task", required=True)
    p.add_argument("--out", required=True, help="generation folder (ledger.jsonl, corpus.jsonl, re0.json)")
    p.add_argument("--seeds", default="0-19", help="training seeds 0-999 (default 0-19)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--method", default="betting", choices=("betting", "hoeffding"))
    p.add_argument("--channel", default="success", choices=("success", "return"))
    p.add_argument("--deterministic", action="store_true",
                   help="verify without the stochastic mode (pairs differ by sampling seeds only)")
    p.add_argument("--segments", default="1,2,4", help="contract segment lengths in requests")
    p.add_argument("--json", action="store_true", help="print re0.json instead of a summary")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def config(ns: argparse.Namespace) -> object:
    from captain_ros.evaluation.runner import parse_seeds
    from captain_ros.learn.re0.faulty import SPEC_PREFIX, make_faulty
    from captain_ros.learn.re0.loop import LoopConfig
    from captain_ros.tasks import get_task

    get_task(ns.task)
    student = ns.student
    if student == "scripted-faulty":
        student = SPEC_PREFIX
    if Path(student).is_dir():
        raise InvalidArgumentError(f"--student {student}: learned students need Learning I's SFT and "
                                   "model serving, which this branch does not have yet")
    if not student.startswith(SPEC_PREFIX):
        raise InvalidArgumentError(f"--student {student!r}: expected {SPEC_PREFIX}[:place=R,grasp=R,...], "
                                   "scripted-faulty or a student folder")
    make_faulty(student)  # a bad fault spec is refused here, not in every worker
    if ns.teacher == "openai":
        raise InvalidArgumentError("--teacher openai: an endpoint teacher needs a repair prompt and a "
                                   "student that continues after a foreign segment; not built yet")
    if ns.teacher not in TEACHERS:
        raise InvalidArgumentError(f"--teacher {ns.teacher!r}; valid: scripted, harmful, openai")
    try:
        seeds = parse_seeds(ns.seeds)
        lengths = tuple(int(x) for x in ns.segments.split(",") if x.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"bad --seeds or --segments: {exc}") from exc
    if max(seeds) >= 1000:
        raise InvalidArgumentError("--seeds: RE-0 collects on training seeds 0-999 (held-out 1000+ "
                                   "are for evaluation only)")
    if not lengths or min(lengths) < 1:
        raise InvalidArgumentError("--segments must list positive request counts")
    return LoopConfig(task=ns.task, seeds=tuple(seeds), student=student, teacher=TEACHERS[ns.teacher],
                      out=ns.out, workers=ns.workers, method=ns.method, channel=ns.channel,
                      noise=None if ns.deterministic else {}, segment_lengths=lengths)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="captain learn re0", description=__doc__.split("\n")[0])
    add_arguments(p)
    ns = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        from captain_ros.learn.re0.loop import run_generation

        report = run_generation(config(ns))  # type: ignore[arg-type]
    except (CaptainError, OSError) as exc:
        if ns.debug:
            raise
        print(f"captain learn re0: error: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    s = report["student_success"]
    print(f"student: {s['successes']}/{s['n']} strict successes; {report['decision']}")
    for e in report.get("events", []):
        audited = ", ".join(f"kappa {a['kappa']:.2f}: {a['verdict']} (Delta-hat {a['delta_hat']:+.2f}, "
                            f"{a['rollouts']} rollouts)" for a in e.get("audited", []))
        print(f"  seed {e['seed']}: boundary {e['boundary_t']} - {audited or e['reason']}")
    if "gate" in report:
        print(report["gate"] + f"; {report.get('rollouts_spent', 0)} rollouts")
    if "hybrid_success" in report:
        h, m = report["hybrid_success"], report["mcnemar"]
        print(f"hybrid mu: {h['successes']}/{h['n']} strict successes (McNemar p = {m['p_value']:.3g})")
        print(report["distill"])
    print(f"wrote {Path(ns.out) / 're0.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
