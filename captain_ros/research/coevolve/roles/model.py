"""Orchestrator, Coder and Reviser as prompts over any policy backend.

One :class:`~captain_ros.policy.base.Policy` (the OpenAI-compatible client, e.g. vLLM or
``transformers serve``; or the in-process transformers model) serves all three roles through
different prompts and output schemas (:mod:`captain_ros.research.coevolve.roles.prompts`). Replies are
untrusted: the first JSON object is parsed and checked against the role's schema; an invalid reply
is retried with the reason (each try is one model call) and, if it stays invalid, returned as an
error, which the loop counts as a pre-dispatch failure (no physical transaction).
"""

from __future__ import annotations

from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.policy.base import Policy
from captain_ros.research.coevolve.roles.base import ProgramPair, RoleContext, RoleOutput, RoleSet
from captain_ros.research.coevolve.roles.prompts import SYSTEM, context_message, extract_json
from captain_ros.research.coevolve.strategy import ROBOTS, Coordination, Revision, Strategy


class ModelRole:
    """Shared plumbing: render, call, parse, retry.

    Args:
        policy: The backbone.
        role: ``orchestrator``, ``coder`` or ``reviser``.
        retries: Extra tries after an invalid reply.
    """

    def __init__(self, policy: Policy, role: str, retries: int = 1) -> None:
        self.policy = policy
        self.role = role
        self.retries = retries

    def _ask(self, ctx: RoleContext, parse: Any) -> RoleOutput[Any]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM[self.role]},
            {"role": "user", "content": context_message(self.role, ctx)},
        ]
        calls = pt = ct = 0
        error, raw = "", ""
        for _ in range(self.retries + 1):
            calls += 1
            try:
                reply = self.policy.act(messages, [])
            except Exception as exc:  # noqa: BLE001 - endpoint down, timeouts, a model crash: refused
                return RoleOutput(
                    None, f"{self.role}: the model call failed ({exc})"[:500], raw, calls, pt, ct
                )
            pt += reply.prompt_tokens
            ct += reply.completion_tokens
            raw = reply.content or ""
            try:
                value = parse(extract_json(raw))
            except (ValueError, TypeError, KeyError, CaptainError) as exc:
                error = f"{self.role}: invalid reply ({exc})"[:500]
                messages += [
                    {"role": "assistant", "content": raw[:4000]},
                    {
                        "role": "user",
                        "content": f"That reply was invalid: {exc}. Reply with one "
                        "JSON object that follows the schema exactly.",
                    },
                ]
                continue
            return RoleOutput(value, "", raw, calls, pt, ct)
        return RoleOutput(None, error, raw, calls, pt, ct)


class ModelOrchestrator(ModelRole):
    def __init__(self, policy: Policy, retries: int = 1) -> None:
        super().__init__(policy, "orchestrator", retries)

    def commit(self, ctx: RoleContext) -> RoleOutput[Coordination]:
        return self._ask(ctx, Coordination.from_dict)


class ModelCoder(ModelRole):
    def __init__(self, policy: Policy, retries: int = 1) -> None:
        super().__init__(policy, "coder", retries)

    def implement(self, ctx: RoleContext) -> RoleOutput[ProgramPair]:
        def parse(d: dict[str, Any]) -> ProgramPair:
            progs = {r: d.get(r) for r in ROBOTS}
            if not all(isinstance(p, str) and p.strip() for p in progs.values()):
                raise ValueError("robot_a and robot_b must be program strings")
            return ProgramPair({r: str(p) for r, p in progs.items()}, str(d.get("note", ""))[:300])

        return self._ask(ctx, parse)


class ModelReviser(ModelRole):
    def __init__(self, policy: Policy, retries: int = 1) -> None:
        super().__init__(policy, "reviser", retries)

    def revise(self, ctx: RoleContext) -> RoleOutput[Revision]:
        def parse(d: dict[str, Any]) -> Revision:
            child = d.get("child")
            if not isinstance(child, dict):
                raise ValueError("child must be an object")
            theta = child.get("theta") or {}
            if not isinstance(theta, dict) or not all(isinstance(v, dict) for v in theta.values()):
                raise ValueError("child.theta must map robot names to argument objects")
            changes = d.get("changes") or []
            if not isinstance(changes, list):
                raise ValueError("changes must be a list of strings")
            return Revision(
                str(d.get("scope")),
                Strategy(
                    Coordination.from_dict(child), {str(k): dict(v) for k, v in theta.items()}
                ),
                str(d.get("rationale", ""))[:400],
                tuple(str(c)[:60] for c in changes[:6]),
            )

        return self._ask(ctx, parse)


def model_roles(kind: str, typed_revision: bool, options: dict[str, Any]) -> RoleSet:
    """Roles over one backbone: ``openai`` (options: base_url, model, timeout_s, max_tokens,
    temperature, transport) or ``transformers`` (model_folder, max_new_tokens, device)."""
    from captain_ros.policy.factory import make_policy

    opts = dict(options)
    transport = opts.pop("transport", None)
    retries = int(opts.pop("retries", 1))
    if kind == "openai" and transport is not None:
        import os

        from captain_ros.policy.chat_policies import OpenAIPolicy

        kw = {
            k: opts[k]
            for k in ("timeout_s", "max_tokens", "temperature", "max_retries", "backoff_s")
            if k in opts
        }
        policy: Policy = OpenAIPolicy(
            opts.get("base_url") or os.environ.get("CAPTAIN_BASE_URL", "http://localhost:8000/v1"),
            opts.get("model") or os.environ.get("CAPTAIN_MODEL", "default"),
            transport=transport,
            stream=False,
            **kw,
        )
    else:
        from dataclasses import fields

        from captain_ros.policy.config import PolicyConfig

        known = {f.name for f in fields(PolicyConfig)} - {"spec"}  # the roles' own keys aside
        policy = make_policy(PolicyConfig(kind, **{k: v for k, v in opts.items() if k in known}))
    return RoleSet(
        ModelOrchestrator(policy, retries),
        ModelCoder(policy, retries),
        ModelReviser(policy, retries) if typed_revision else None,
        kind,
        [policy],
    )
