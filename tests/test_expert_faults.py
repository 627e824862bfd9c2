"""Seeded fault injection: specs, rates, determinism (no simulator), and each fault changing a
real MuJoCo episode the way it is meant to (slow)."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path
from typing import Any

import pytest

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.episode import build_robot
from captain_ros.evaluation.stats import wilson_interval
from captain_ros.harness.episode.loop import run_episode
from captain_ros.harness.episode.observers import CallEvent, EpisodeObserver
from captain_ros.harness.record.backend_source import BackendPrivileged
from captain_ros.policy.expert import ScriptedExpert, parse_notes
from captain_ros.policy.expert.faults import FAULTS, HANDLE_SHIFTS, FaultInjector, FaultSpec
from captain_ros.policy.expert.plans import open_drawer
from captain_ros.policy.factory import make_policy
from captain_ros.policy.scripted import FaultyScriptedPolicy

# what a session answers each call with on the way to success (the expert reads only notes)
HAPPY: dict[str, dict[str, Any]] = {
    "start": {"ready": True, "poses": {"arm": [[0.23, 0.0, 0.12], [0.0, 0.0, -1.0, 0.0]]}},
    "perceive": {"found": {"red_cube": True, "plate": True, "blue_cube": True, "green_cube": True}},
    "descend": {"down_ok": True},
    "close_lift": {"held": True},
    "place": {"placed": True},
    "verify": {"dist": 0.004, "resting": True, "gap": 0.001},
    "finish": {"accepted": False},
    "other_object": {"wrong": "blue_cylinder"},
    "skew": {"skewed": "plate"},
    "let_go": {"released": True, "held": False},
    "free_spot": {"free": [0.3, 0.1]},
}


def drive(expert: ScriptedExpert, limit: int = 60) -> list[str]:
    """Answer every cell from HAPPY by the function its last line calls; returns the cells' code."""
    cells, out = [], None
    while len(cells) < limit:
        cell = expert.next_cell(out)
        if cell is None:
            break
        cells.append(cell.code)
        last = cell.code.strip().splitlines()[-1]
        name = last.split("(")[1].lstrip("*") if last.startswith("note(") else ""
        out = "NOTE " + json.dumps(HAPPY.get(name, {"ok": True}))
    return cells


def faulty(task: str, seed: int, spec: FaultSpec) -> tuple[FaultInjector, list[str]]:
    inj = FaultInjector(spec, task, seed)
    return inj, drive(ScriptedExpert(task, "", wrap=inj.wrap))


def test_specs_parse_and_refuse_nonsense():
    spec = FaultSpec.parse("grasp_offset=0.3,early_finish=0.1,seed=7,offset_m=0.02")
    assert (
        spec.rates == {"grasp_offset": 0.3, "early_finish": 0.1}
        and spec.seed == 7
        and spec.offset_m == 0.02
    )
    assert FaultSpec.parse(spec.to_text()) == spec
    assert set(FaultSpec.parse("").rates) == set(FAULTS)
    for bad in (
        "grasp_offset",
        "teleport=0.2",
        "grasp_offset=1.5",
        "grasp_offset=x",
        "seed=1.5",
        "offset_m=0",
        "offset_m=0.5",
    ):
        with pytest.raises(InvalidArgumentError):
            FaultSpec.parse(bad)
    pol = make_policy("scripted-faulty:skip_verify=1,seed=3")
    assert isinstance(pol, FaultyScriptedPolicy) and pol.spec.rates == {"skip_verify": 1.0}
    assert isinstance(make_policy("scripted-faulty"), FaultyScriptedPolicy)
    # the drawer's grasp shifts are those grab_handle uses by default
    assert inspect.signature(open_drawer.grab_handle).parameters["shifts"].default == HANDLE_SHIFTS


def test_the_clean_expert_never_sends_fault_code():
    cells = drive(ScriptedExpert("pick_place"))
    assert not any(n in c for c in cells for n in ("other_object", "skew(", "let_go", "aim=("))
    assert sum("finish(S" in c for c in cells) == 2  # the gate rejects (HAPPY): one retry


@pytest.mark.parametrize("task", ["pick_place", "stack"])
def test_each_fault_strikes_at_its_rate_per_opportunity(task):
    rate = 0.3
    spec = FaultSpec(rates=dict.fromkeys(FAULTS, rate), seed=11)
    opportunities = dict.fromkeys(FAULTS, 0)
    fired = dict.fromkeys(FAULTS, 0)
    for seed in range(300):
        inj, _ = faulty(task, seed, spec)
        for f in FAULTS:
            opportunities[f] += inj.opportunities[f]
            fired[f] += sum(e.fault == f for e in inj.events)
    for f in FAULTS:
        p = wilson_interval(fired[f], opportunities[f], confidence=0.999)
        assert opportunities[f] >= 150, (f, opportunities[f])
        assert p.low <= rate <= p.high, (f, fired[f], opportunities[f])


def test_faults_are_deterministic_given_task_seed_and_fault_seed():
    spec = FaultSpec(seed=5)
    a = [faulty("stack", s, spec) for s in range(20)]
    b = [faulty("stack", s, spec) for s in range(20)]
    assert [(x.events, c) for x, c in a] == [(x.events, c) for x, c in b]
    other = [faulty("stack", s, FaultSpec(seed=6)) for s in range(20)]
    assert [x.events for x, _ in a] != [x.events for x, _ in other]
    assert any(x.events for x, _ in a) and any(not x.events for x, _ in a)  # a mix


def test_each_fault_shows_in_the_cells_where_it_strikes():
    def only(name: str) -> tuple[FaultInjector, list[str]]:
        return faulty("pick_place", 0, FaultSpec(rates={name: 1.0}, offset_m=0.03))

    inj, cells = only("grasp_offset")
    first = next(c for c in cells if "descend(S" in c)
    dx, dy = inj.events[0].detail["dx"], inj.events[0].detail["dy"]
    assert f"aim=({dx}, {dy})" in first and math.hypot(dx, dy) == pytest.approx(0.03, abs=1e-3)
    inj, cells = only("wrong_object")
    i = next(i for i, c in enumerate(cells) if "descend(S" in c)
    assert "other_object(S, 'red_cube'" in cells[i - 1] and "'plate'" in cells[i - 1]
    inj, cells = only("premature_release")
    i = next(i for i, c in enumerate(cells) if "close_lift(S" in c)
    assert cells[i + 1].rstrip().endswith("note(**let_go(S))")
    inj, cells = only("place_offset")
    i = next(i for i, c in enumerate(cells) if "place(S" in c)
    assert "skew(S, 'plate'" in cells[i - 1]
    inj, cells = only("skip_verify")
    i = next(i for i, c in enumerate(cells) if "place(S" in c)
    assert "finish(S" in cells[i + 1] and not any("verify(S" in c for c in cells[: i + 2])
    inj, cells = only("early_finish")
    i = next(i for i, c in enumerate(cells) if "close_lift(S" in c)
    assert "finish(S, 'done')" in cells[i + 1]
    assert [e.request for e in inj.events] == [
        None
    ]  # numbered by the policy, which counts requests


def test_the_policy_numbers_the_requests_that_carry_faults():
    pol = FaultyScriptedPolicy(FaultSpec(rates={"premature_release": 1.0}))
    pol.reset("pick_place", 0)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "## Instruction\n\nput the red cube on the plate\n"}
    ]
    infos = []
    for _ in range(7):
        reply = pol.act(messages, [])
        infos.append(reply.info["faults"])
        code = json.loads(reply.tool_calls[0]["function"]["arguments"])["code"]
        last = code.strip().splitlines()[-1]
        name = last.split("(")[1].lstrip("*")
        messages += [
            {"role": "assistant", "content": "", "tool_calls": list(reply.tool_calls)},
            {"role": "tool", "content": "NOTE " + json.dumps(HAPPY.get(name, {}))},
        ]
    fired = [i + 1 for i, f in enumerate(infos) if f]
    assert (
        fired == [5] and infos[4][0]["fault"] == "premature_release" and infos[4][0]["request"] == 5
    )
    assert pol.events[0].request == 5 and json.loads(json.dumps(infos))  # JSON for the record


# --- real episodes -----------------------------------------------------------------------
def _episode(
    spec: str, tmp: Path, task: str = "pick_place", seed: int = 0
) -> tuple[Any, list[dict[str, Any]], Any]:
    t, backend, service = build_robot(task, seed)
    states: list[dict[str, Any]] = []

    class AfterMotion(EpisodeObserver):  # the ground truth after each motion (test-only read)
        def on_call(self, event: CallEvent) -> None:
            if event.name in ("move_to", "release"):
                states.append(
                    {
                        "call": event.name,
                        "jaw": event.kwargs.get("jaw"),
                        **backend.privileged_state().to_dict(),
                    }
                )

    pol = make_policy(spec)
    try:
        hs = run_episode(
            t,
            seed,
            service,
            pol,
            None,
            tmp / spec.replace(":", "_"),
            observers=[AfterMotion()],
            privileged=BackendPrivileged(backend),
        )
    finally:
        backend.close()
    return hs, states, pol


def _cells(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for line in (folder / "trajectory.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for c in rec.get("calls", []) if rec.get("type") == "request" else []:
            out.append((c["code"].strip().splitlines()[-1], parse_notes(c["output"])))
    return out


def _xy_dist(a, b) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


@pytest.mark.slow
def test_faults_change_real_episodes_as_intended(tmp_path):
    """pick_place, train seed 0 (the clean expert succeeds on it in 8 requests)."""
    hs, states, pol = _episode("scripted-faulty:wrong_object=1", tmp_path)
    assert pol.events[0].detail["effect"] is True
    assert any(
        o["held"] for s in states for n, o in s["objects"].items() if n not in ("red_cube", "plate")
    )

    hs, states, pol = _episode("scripted-faulty:grasp_offset=1,offset_m=0.03", tmp_path)
    first_close = next(s for s in states if s["jaw"] == "close")
    tool = first_close["arms"]["arm"]["tcp_position_m"]
    assert _xy_dist(tool, first_close["objects"]["red_cube"]["position_m"]) > 0.02

    hs, states, pol = _episode("scripted-faulty:premature_release=1", tmp_path)
    i = next(i for i, s in enumerate(states) if s["objects"]["red_cube"]["held"])
    dropped = next(s for s in states[i:] if not s["objects"]["red_cube"]["held"])
    assert (
        dropped["call"] == "release"
        and _xy_dist(
            dropped["objects"]["red_cube"]["position_m"], dropped["objects"]["plate"]["position_m"]
        )
        > 0.1
    )

    hs, states, pol = _episode("scripted-faulty:place_offset=1,offset_m=0.05", tmp_path)
    put = next(s for s in states if s["call"] == "release")
    assert (
        _xy_dist(put["objects"]["red_cube"]["position_m"], put["objects"]["plate"]["position_m"])
        > 0.035
    )

    hs, states, pol = _episode("scripted-faulty:early_finish=1", tmp_path)
    cells = _cells(tmp_path / "scripted-faulty_early_finish=1")
    first_finish = next(i for i, (line, _) in enumerate(cells) if "finish(S" in line)
    assert first_finish < next(i for i, (line, _) in enumerate(cells) if "place(S" in line)
    assert (
        cells[first_finish][1]["accepted"] is False
    )  # no measurement of the cube on the plate yet

    hs, states, pol = _episode("scripted-faulty:skip_verify=1", tmp_path)
    cells = _cells(tmp_path / "scripted-faulty_skip_verify=1")
    i = next(i for i, (line, _) in enumerate(cells) if "place(S" in line)
    assert "finish(S" in cells[i + 1][0]
    assert pol.events[0].fault == "skip_verify" and pol.events[0].request == i + 2
