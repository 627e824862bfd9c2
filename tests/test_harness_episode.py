"""The episode loop end to end: FakeBackend + real Motion/PerceptionService + replay policy."""

from __future__ import annotations

import json

import pytest
from harness_helpers import SOLVE_RED_ON_BLUE, RedOnBlueTask, make_stack

from captain_ros.core.result import Result
from captain_ros.harness import (
    Budgets,
    ContextConfig,
    EpisodeRecord,
    load_history,
    messages_sha256,
    read_records,
    render,
    run_episode,
)
from captain_ros.policy.base import Policy, PolicyReply
from captain_ros.policy.replay import ReplayPolicy, load_requests


def run(tmp_path, requests, budgets=None, **kw) -> tuple[EpisodeRecord, list[dict]]:
    backend, robot = make_stack()
    s = run_episode(
        RedOnBlueTask(),
        0,
        robot,
        ReplayPolicy(requests),
        budgets or Budgets(),
        tmp_path / "ep",
        **kw,
    )
    return s, read_records(tmp_path / "ep" / "trajectory.jsonl")


def test_success_with_finish_and_a_complete_log(tmp_path):
    s, recs = run(tmp_path, SOLVE_RED_ON_BLUE)
    assert s.outcome == "success_with_finish" and s.host_success and s.strict_success and s.finished
    assert s.end_reason == "finish" and s.requests == 4 and s.physical_actions == 8
    assert s.gate_rejections == 0 and s.sandbox_violations == 0 and s.session_restarts == 0
    assert s.wall_s == pytest.approx(s.model_s + s.backend_s + s.harness_s, rel=1e-6)
    assert [r["type"] for r in recs] == ["episode_start"] + ["request"] * 4 + ["episode_end"]
    ep = tmp_path / "ep"
    assert (ep / "TASK.md").read_text().startswith("# TASK: red_on_blue") and (
        ep / "workspace" / "TASK.md"
    ).exists()
    assert recs[0]["initial_images"] and all(
        (ep / i["path"]).exists() for i in recs[0]["initial_images"]
    )
    req = recs[2]
    call = req["calls"][0]
    assert [c["name"] for c in call["robot_calls"]] == ["move_to"] * 5
    assert call["receipts_total"] == 5 and "[receipt] move_to" in call["output"]
    assert req["budget"]["physical_actions_used"] == 5
    assert call["robot_calls"][0]["result"]["budget"]["physical_actions_left"] == 149
    assert (
        recs[-2]["gate"][0]["accepted"] and recs[-1]["summary"]["outcome"] == "success_with_finish"
    )
    assert all(r["model_s"] >= 0 and r["harness_s"] >= 0 for r in recs[1:-1])


def test_every_history_h_t_is_rebuilt_exactly_from_the_log(tmp_path):
    ctx = ContextConfig(
        compact_at_tokens=1500, max_images=2
    )  # exercise compaction and image limits
    s, recs = run(tmp_path, SOLVE_RED_ON_BLUE, context_config=ctx)
    history = load_history(tmp_path / "ep" / "trajectory.jsonl")
    requests = [r for r in recs if r["type"] == "request"]
    assert len(history.turns) == len(requests) == s.requests
    for r in requests:
        assert messages_sha256(render(history.upto(r["t"]), ctx)) == r["context_sha256"]
    assert any("Context compacted" in str(m["content"]) for m in render(history, ctx))


def test_the_record_keeps_the_gates_measured_words_apart_from_the_policys_claim(tmp_path):
    import io

    from captain_ros.cli.display import print_summary

    s, _ = run(tmp_path, SOLVE_RED_ON_BLUE)
    assert s.gate_reason == "the last measurement shows the object on the destination"
    assert s.finish_summary == "red on blue"
    assert EpisodeRecord.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    out = io.StringIO()
    print_summary(s, out)
    text = out.getvalue()
    assert "gate             accepted: the last measurement shows the object" in text
    assert "policy's words   'red on blue' (its claim, not checked)" in text
    rejected, _ = run(tmp_path / "r", [{"code": "finish('all done')"}], Budgets(max_requests=1))
    assert not rejected.finished and rejected.finish_summary == "all done"
    assert rejected.gate_reason == "no measure_object_geometry record yet"
    out = io.StringIO()
    print_summary(rejected, out)
    assert "gate             rejected 1x: no measure_object_geometry record yet" in out.getvalue()
    none, _ = run(tmp_path / "n", SOLVE_RED_ON_BLUE[:1], Budgets(max_requests=1))
    assert none.gate_reason == none.finish_summary == ""
    out = io.StringIO()
    print_summary(none, out)
    assert "finish()         never called" in out.getvalue()


def test_missed_finish(tmp_path):
    s, _ = run(tmp_path, SOLVE_RED_ON_BLUE[:3])
    assert s.outcome == "missed_finish" and s.host_success and not s.strict_success
    assert s.end_reason == "no_tool_call" and s.requests == 4  # the 4th reply had no tool call


def test_false_finish_after_two_rejections(tmp_path):
    s, recs = run(tmp_path, [{"code": "print(robot.finish('done').message)"}] * 3)
    assert (
        s.outcome == "false_finish" and s.gate_rejections == 2 and s.finished and not s.host_success
    )
    outputs = [r["calls"][0]["output"] for r in recs if r["type"] == "request"]
    assert "rejected" in outputs[0] and "rejected" in outputs[1] and "accepted" in outputs[2]


def test_request_budget(tmp_path):
    s, _ = run(tmp_path, [{"code": "robot.get_robot_state()"}] * 5, Budgets(max_requests=2))
    assert s.outcome == "budget_exhausted" and s.budget_exhausted == "requests" and s.requests == 2


def test_physical_action_budget_ends_the_episode(tmp_path):
    s, recs = run(
        tmp_path,
        [
            {
                "code": [
                    "for _ in range(3):\n    print(robot.hold(0.1).failure_category)",
                    "robot.hold(0.1)",
                ]
            },
            {"code": "print('never')"},
        ],
        Budgets(max_physical_actions=2),
    )
    assert s.outcome == "budget_exhausted" and s.budget_exhausted == "physical_actions"
    assert s.physical_actions == 2 and s.requests == 1
    req = recs[1]
    assert req["calls"][0]["output"].splitlines()[:3] == ["None", "None", "budget_exhausted"]
    assert req["calls"][1]["skipped"] and "budget is spent" in req["notice"]


def test_wall_time_budget(tmp_path):
    now = [0.0]

    class SlowPolicy(ReplayPolicy):
        def act(self, messages, tools):
            now[0] += 0.4  # the model "takes" 0.4 s on the episode clock
            return super().act(messages, tools)

    backend, robot = make_stack()
    s = run_episode(
        RedOnBlueTask(),
        0,
        robot,
        SlowPolicy([{"code": "1"}] * 10),
        Budgets(max_wall_s=1.0),
        tmp_path / "ep",
        clock=lambda: now[0],
    )
    assert s.outcome == "budget_exhausted" and s.budget_exhausted == "wall_time" and s.requests == 3
    assert s.model_s == pytest.approx(1.2) and s.wall_s == pytest.approx(1.2)


def test_malformed_output_becomes_an_observation_and_counts(tmp_path):
    lines = [
        {
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "python", "arguments": "{not json"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"code": "ls"}'},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "python", "arguments": '{"code": "  "}'},
                }
            ]
        },
        {"code": "def f(:\n    pass"},
        {"code": "print('still alive')"},
    ]
    s, recs = run(tmp_path, lines)
    reqs = [r for r in recs if r["type"] == "request"]
    assert s.requests == 6 and s.malformed_replies == 4 and s.outcome == "other_failure"
    assert "could not be parsed" in reqs[0]["notice"]
    assert "unknown tool 'bash'" in reqs[1]["notice"]
    assert "empty code" in reqs[2]["notice"]
    assert (
        reqs[3]["calls"][0]["output"].startswith("SyntaxError")
        and "not run" in reqs[3]["calls"][0]["output"]
    )
    assert reqs[4]["calls"][0]["output"] == "still alive"
    history = load_history(tmp_path / "ep" / "trajectory.jsonl")
    assert "[harness] Malformed tool call" in json.dumps(render(history))


def test_policy_exception_ends_the_episode_cleanly(tmp_path):
    class Broken(Policy):
        def act(self, messages, tools):
            raise RuntimeError("model server down")

    backend, robot = make_stack()
    s = run_episode(RedOnBlueTask(), 0, robot, Broken(), Budgets(), tmp_path / "ep")
    assert s.end_reason == "policy_error" and s.outcome == "other_failure" and s.requests == 1


def test_swappable_robot_caller_and_host_success(tmp_path):
    backend, service = make_stack()

    class Forwarding:
        """What a ROS-service-backed client looks like to the harness."""

        def __init__(self):
            self.names = []

        def call(self, name, kwargs):
            self.names.append(name)
            return Result.from_dict(service.call(name, kwargs).to_dict())  # through plain data

        def image(self, handle, camera):
            return service.image(handle, camera)

    caller = Forwarding()
    s = run_episode(
        RedOnBlueTask(),
        0,
        caller,
        ReplayPolicy(SOLVE_RED_ON_BLUE),
        Budgets(),
        tmp_path / "ep",
        host_success=lambda: RedOnBlueTask().success(backend.privileged_state()),
    )
    assert (
        s.outcome == "success_with_finish"
        and "finish" not in caller.names
        and "move_to" in caller.names
    )


def test_replay_file_and_reasoning(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text(
        '{"code": "x = 2", "reasoning": "set x"}\n\n{"code": ["print(x * 21)", "print(x)"]}\n'
    )
    assert len(load_requests(path)) == 2
    backend, robot = make_stack()
    s = run_episode(RedOnBlueTask(), 0, robot, ReplayPolicy(path), Budgets(), tmp_path / "ep")
    recs = read_records(tmp_path / "ep" / "trajectory.jsonl")
    assert recs[1]["reasoning"] == "set x" and [c["output"] for c in recs[2]["calls"]] == [
        "42",
        "2",
    ]
    assert s.requests == 3 and s.end_reason == "no_tool_call"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_requests(bad)


def test_images_attached_by_policy_are_logged_and_rendered(tmp_path):
    s, recs = run(
        tmp_path,
        [
            {
                "code": "o = robot.observe()\nfor c in ['head', 'wrist', 'head', 'wrist', 'head']:\n"
                "    print(image(o.value['handle'], c))"
            }
        ],
    )
    call = recs[1]["calls"][0]
    assert len(call["images"]) == 4 and "at most 4" in call["output"]
    assert all(
        i["path"].startswith("images/") and (tmp_path / "ep" / i["path"]).is_file()
        for i in call["images"]
    )
    history = load_history(tmp_path / "ep" / "trajectory.jsonl")
    parts = [p for m in render(history) if isinstance(m["content"], list) for p in m["content"]]
    assert sum(p["type"] == "image" for p in parts) == 6  # 2 initial + 4 attached


def test_policy_sees_growing_history(tmp_path):
    backend, robot = make_stack()
    policy = ReplayPolicy([{"code": "1"}, {"code": "2"}])
    run_episode(RedOnBlueTask(), 0, robot, policy, Budgets(), tmp_path / "ep")
    assert policy.seen_messages == [2, 4, 6]


def test_summary_is_json_serialisable(tmp_path):
    s, _ = run(tmp_path, [{"code": "1"}])
    assert json.loads(json.dumps(s.to_dict()))["outcome"] == "other_failure"
    assert isinstance(PolicyReply().to_dict(), dict)


@pytest.mark.slow
def test_real_task_and_scripted_expert_on_the_fake_backend(tmp_path):
    """Cross-layer: captain_ros.tasks (scene, TASK.md, gate, predicate) + the scripted expert."""
    from captain_ros.api.service import RobotService
    from captain_ros.backends.fake import FakeBackend
    from captain_ros.motion.service import MotionService
    from captain_ros.perception.service import PerceptionService
    from captain_ros.policy.scripted import ScriptedPolicy
    from captain_ros.tasks import get_task

    task = get_task("pick_place")
    backend = FakeBackend(scene=task.sample(0))
    robot = RobotService(backend, MotionService(backend), PerceptionService(backend))
    s = run_episode(task, 0, robot, ScriptedPolicy(), Budgets(), tmp_path / "ep")
    assert s.outcome == "success_with_finish", s
    assert task.instruction(0) in (tmp_path / "ep" / "TASK.md").read_text()
    assert task.success(backend.privileged_state())


def test_broken_policy_reply_and_broken_caller_do_not_crash(tmp_path):
    class Weird(Policy):
        def act(self, messages, tools):
            return {"content": "not a PolicyReply"}

    class Exploding:
        def call(self, name, kwargs):
            raise RuntimeError("transport down")

        def image(self, handle, camera):
            raise RuntimeError("transport down")

    s = run_episode(RedOnBlueTask(), 0, Exploding(), Weird(), Budgets(), tmp_path / "ep")
    assert s.end_reason == "policy_error" and s.outcome == "other_failure"
    assert (
        json.loads((tmp_path / "ep" / "summary.json").read_text())["end_reason"] == "policy_error"
    )
    # a caller that raises inside a cell becomes an internal_error Result for the policy
    s2 = run_episode(
        RedOnBlueTask(),
        0,
        Exploding(),
        ReplayPolicy([{"code": "print(robot.observe().failure_category)"}]),
        Budgets(),
        tmp_path / "ep2",
    )
    out = read_records(tmp_path / "ep2" / "trajectory.jsonl")[1]["calls"][0]["output"]
    assert out.startswith("internal_error") and s2.requests == 2


def test_a_history_that_cannot_fit_the_window_ends_the_episode_on_a_budget(tmp_path):
    """Compaction keeps the last turn; when even it does not fit below the reply reserve, the
    episode ends before the request (``budget:context_tokens``) instead of sending the model a
    prompt longer than its window (which a local engine refuses: ``policy_error``)."""
    from captain_ros.harness.sandbox.contract import SessionConfig

    asked: list[int] = []

    class Counting(ReplayPolicy):
        def act(self, messages, tools):  # noqa: ANN001, ANN201 - Policy.act
            asked.append(len(messages))
            return super().act(messages, tools)

    flood = [{"reasoning": "Print a lot.", "code": "print('0.1234 ' * 12000)"}]  # 21k tokens
    ctx = ContextConfig(
        max_tool_output_tokens=30000,
        context_limit_tokens=16000,
        compact_at_tokens=12000,
        reply_reserve_tokens=1000,
    )
    backend, robot = make_stack()
    s = run_episode(
        RedOnBlueTask(),
        0,
        robot,
        Counting(flood + SOLVE_RED_ON_BLUE),
        Budgets(),
        tmp_path / "ep",
        context_config=ctx,
        session_config=SessionConfig(max_output_chars=100_000),
    )
    assert s.end_reason == "budget:context_tokens" and s.budget_exhausted == "context_tokens"
    assert s.outcome == "budget_exhausted" and s.requests == 1 and len(asked) == 1
    history = load_history(tmp_path / "ep" / "trajectory.jsonl")
    assert render(history, ctx) and len(history.turns) == 1
