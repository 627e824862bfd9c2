"""Orchestrator, Coder and Reviser as prompts over the OpenAI-compatible client (an in-process fake
chat server speaking /v1/chat/completions through httpx.MockTransport)."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from captain_ros.research.coevolve.loop import CoEvolveRun
from captain_ros.research.coevolve.records import RunConfig
from captain_ros.research.coevolve.roles import make_roles
from captain_ros.research.coevolve.roles.prompts import SYSTEM, extract_json


class RuleModel:
    """A fake endpoint that answers each role's schema from the context in the prompt."""

    def __init__(self, garbage: bool = False) -> None:
        self.garbage = garbage
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        ctx = json.loads(user.split("\n", 1)[1])
        if self.garbage:
            answer = "I think the robots should move forward carefully."
        elif system == SYSTEM["orchestrator"]:
            answer = "```json\n" + json.dumps(self._commit(ctx)) + "\n```"
        elif system == SYSTEM["coder"]:
            answer = json.dumps(self._code(ctx))
        else:
            answer = json.dumps(
                {
                    "scope": "parameter",
                    "child": {
                        **ctx["failed_strategy"]["z"],
                        "theta": {
                            r: {**v, "speed_m_s": 0.1}
                            for r, v in ctx["failed_strategy"]["theta"].items()
                        },
                    },
                    "rationale": "slower",
                    "changes": ["speed:decrease"],
                }
            )
        msg = {"role": "assistant", "content": answer}
        return httpx.Response(
            200,
            json={
                "choices": [{"message": msg, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            },
        )

    @staticmethod
    def _commit(ctx):
        if ctx["active_phase"]["kind"] == "initialize":
            return {
                "primitive": "initialization",
                "objective": {"kind": "initialize"},
                "mode": "synchronous",
                "roles": {"robot_a": "peer", "robot_b": "peer"},
            }
        gate = ctx["observation"]["route"]["next_gate"]["name"]
        return {
            "primitive": "coordinated_linear_transport",
            "objective": {"kind": "reach_gate", "target": gate},
            "mode": "synchronous",
            "roles": {"robot_a": "peer", "robot_b": "peer"},
            "intent": "step sideways along the corridor",
        }

    @staticmethod
    def _code(ctx):
        z = ctx["committed_coordination"]
        if z["primitive"] == "initialization":
            return {r: f"{r}.initialization()\n{r}.stop()" for r in ("robot_a", "robot_b")}
        h = ctx["observation"]["route"]["segment_heading_rad"]
        d = [round(math.cos(h), 4), round(math.sin(h), 4)]
        return {
            r: f"dist = 0.6\n{r}.coordinated_linear_transport(direction_xy={d}, distance_m=dist, "
            f"speed_m_s=0.2)\n{r}.stop()"
            for r in ("robot_a", "robot_b")
        }


def test_model_roles_drive_a_run_through_the_openai_client(tmp_path):
    server = RuleModel()
    roles = make_roles(
        "openai",
        True,
        {"base_url": "http://fake/v1", "model": "tiny", "transport": httpx.MockTransport(server)},
    )
    s = CoEvolveRun(RunConfig(seed=5, budget=3), roles, tmp_path).run()
    roles.close()
    assert s.label == "B" and s.outcome.charged == 3 and s.outcome.accepted == 3
    assert s.model_calls == 6 and len(server.bodies) == 6  # orchestrator + coder per transaction
    first = server.bodies[0]
    assert first["model"] == "tiny" and first["messages"][0]["content"].startswith(
        "You are the Orchestrator"
    )
    assert (
        "coordinated_pivot" in server.bodies[1]["messages"][0]["content"]
    )  # the Coder sees the catalog
    ctx = json.loads(server.bodies[2]["messages"][1]["content"].split("\n", 1)[1])
    assert (
        ctx["observation"]["route"]["next_gate"]["name"] == "gate_1"
        and ctx["plan"][0]["status"] == "done"
    )


def test_invalid_model_output_is_refused_before_dispatch_and_stalls(tmp_path):
    server = RuleModel(garbage=True)
    roles = make_roles(
        "openai",
        True,
        {
            "base_url": "http://fake/v1",
            "model": "tiny",
            "retries": 1,
            "transport": httpx.MockTransport(server),
        },
    )
    s = CoEvolveRun(RunConfig(seed=5, stall_limit=3), roles, tmp_path).run()
    assert s.label == "G" and s.outcome.charged == 0 and s.prevalidation_failures == 3
    assert s.model_calls == 6  # each refusal: the reply and one retry with the reason
    retry = server.bodies[1]["messages"]
    assert retry[-1]["role"] == "user" and "invalid" in retry[-1]["content"]


def test_an_unreachable_endpoint_is_a_clear_prevalidation_failure(tmp_path):
    def down(request):
        raise httpx.ConnectError("connection refused")

    roles = make_roles(
        "openai",
        True,
        {
            "base_url": "http://fake/v1",
            "model": "tiny",
            "max_retries": 0,
            "transport": httpx.MockTransport(down),
        },
    )
    s = CoEvolveRun(RunConfig(seed=5, stall_limit=2), roles, tmp_path).run()
    assert s.label == "G" and s.outcome.charged == 0


def test_extract_json_ignores_prose_and_fences():
    assert extract_json('Sure! ```json\n{"a": {"b": 1}}\n``` done') == {"a": {"b": 1}}
    assert extract_json('{bad} then {"ok": true}') == {"ok": True}
    with pytest.raises(ValueError):
        extract_json("no json here [1, 2]")
