"""Orchestrator, Coder and Reviser roles: scripted rule sets or prompts over a policy backend."""

from __future__ import annotations

from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.coevolve.roles.base import ProgramPair, RoleContext, RoleOutput, RoleSet

ROLE_KINDS = ("scripted", "openai", "transformers")


def make_roles(
    kind: str = "scripted", typed_revision: bool = True, options: dict[str, Any] | None = None
) -> RoleSet:
    """The roles of a run.

    Args:
        kind: ``scripted`` (rule-based baselines), ``openai`` (an OpenAI-compatible endpoint:
            ``base_url``, ``model``, ``timeout_s``, ``max_tokens``, ``temperature``, ``transport``) or
            ``transformers`` (an in-process model: ``model_folder``, ``max_new_tokens``, ``device``).
        typed_revision: Include the Reviser; ``False`` = flat reflective repair.
        options: Backend options.
    """
    if kind == "scripted":
        from captain_ros.research.coevolve.roles.scripted import ScriptedCoder, ScriptedOrchestrator
        from captain_ros.research.coevolve.roles.scripted_reviser import ScriptedReviser

        return RoleSet(
            ScriptedOrchestrator(),
            ScriptedCoder(),
            ScriptedReviser() if typed_revision else None,
            "scripted",
        )
    if kind in ("openai", "transformers"):
        from captain_ros.research.coevolve.roles.model import model_roles

        return model_roles(kind, typed_revision, options or {})
    raise InvalidArgumentError(f"unknown roles {kind!r}; valid: {', '.join(ROLE_KINDS)}")


__all__ = ["ROLE_KINDS", "ProgramPair", "RoleContext", "RoleOutput", "RoleSet", "make_roles"]
