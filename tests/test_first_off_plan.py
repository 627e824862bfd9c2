"""benchmarks/first_off_plan.py: each failure's first request off the successes' plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from first_off_plan import main  # noqa: E402

PLAN = ["S = State(robot, 1)", "perceive(S, {'a': 'a'})", "free_spot(S)", "finish(S, 'done')"]


def _episode(root: Path, seed: int, codes: list[str | None], ok: bool) -> None:
    folder = root / "restack" / f"seed_{seed:05d}"
    folder.mkdir(parents=True)
    summary = {"task": "restack", "seed": seed, "strict_success": ok,
               "outcome": "success_with_finish" if ok else "false_finish"}  # fmt: skip
    (folder / "summary.json").write_text(json.dumps(summary))
    lines = [json.dumps({"type": "episode_start"})]
    for t, code in enumerate(codes, 1):
        calls = [] if code is None else [{"code": code}]
        lines.append(json.dumps({"type": "request", "t": t, "calls": calls}))
    (folder / "trajectory.jsonl").write_text("\n".join(lines) + "\n")


def test_failures_are_placed_at_their_first_request_off_the_plan(tmp_path: Path, capsys) -> None:
    _episode(tmp_path, 1, PLAN, True)
    # object names differ: still on the plan
    _episode(tmp_path, 2, [c.replace("'a'", "'b'") for c in PLAN], True)
    _episode(tmp_path, 3, [*PLAN[:2], "perceive(S, {'a': 'a'}, keep=True)", PLAN[3]], False)
    _episode(tmp_path, 4, [*PLAN[:3], None], False)  # no tool call at the finish
    _episode(tmp_path, 5, [*PLAN, "finish(S, 'again')"], False)  # on plan, then more
    out = tmp_path / "rows.json"
    assert main([str(tmp_path), "--json", str(out)]) == 0
    rows = {r["seed"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {3, 4, 5}
    assert rows[3]["first_off_plan"] == 3 and "keep=True" in rows[3]["wrote"]
    assert rows[3]["plan"] == "free_spot(S)"
    assert rows[4]["first_off_plan"] == 4 and rows[4]["wrote"] == "<no tool call>"
    assert rows[5]["first_off_plan"] == 5 and rows[5]["plan"] is None
    assert "plan of 4 requests, followed by 2 of 2 successes" in capsys.readouterr().out
    assert main([str(tmp_path / "empty")]) == 2
