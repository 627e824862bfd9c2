"""Build a policy from its command-line spec: ``scripted``, ``scripted-faulty[:FAULTS]``,
``openai``, ``transformers``, ``student[:NAME]`` (a student shipped in the package,
:mod:`captain_ros.policy.students`), ``replay:FILE``."""

from __future__ import annotations

import os

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.base import Policy
from captain_ros.policy.config import PolicyConfig

POLICY_KINDS = (
    "scripted",
    "scripted-faulty[:NAME=RATE,...,seed=N]",
    "openai",
    "transformers",
    "student[:NAME]",
    "replay:FILE",
)


def make_policy(config: PolicyConfig | str) -> Policy:
    """The policy of ``config`` (a bare string: that spec with default options).

    ``scripted-faulty:grasp_offset=0.3,early_finish=0.1,seed=7`` is the expert with those faults
    at those rates (no rates: every fault at the default rate; see
    :mod:`captain_ros.policy.expert.faults`). Options (:class:`PolicyConfig`): ``base_url`` / ``model`` / ``timeout_s`` / ``max_tokens`` (openai; defaults from
    ``$CAPTAIN_BASE_URL`` / ``$CAPTAIN_MODEL``), ``model_folder`` / ``max_new_tokens`` / ``device``
    / ``engine`` (``auto|llamacpp|transformers``) / ``grammar`` / ``threads`` (transformers: a local
    model; :mod:`captain_ros.policy.engines`), ``temperature`` (both).
    """
    from captain_ros.policy.students import expand_policy

    cfg = expand_policy(PolicyConfig(config) if isinstance(config, str) else config)
    spec = cfg.spec
    if spec == "scripted":
        from captain_ros.policy.scripted import ScriptedPolicy

        return ScriptedPolicy()
    if spec == "scripted-faulty" or spec.startswith("scripted-faulty:"):
        from captain_ros.policy.expert.faults import FaultSpec
        from captain_ros.policy.scripted import FaultyScriptedPolicy

        return FaultyScriptedPolicy(FaultSpec.parse(spec.partition(":")[2]))
    if spec == "openai":
        from captain_ros.policy.chat_policies import OpenAIPolicy

        return OpenAIPolicy(
            cfg.base_url or os.environ.get("CAPTAIN_BASE_URL", "http://localhost:8000/v1"),
            cfg.model or os.environ.get("CAPTAIN_MODEL", "default"),
            **cfg.given("timeout_s", "max_tokens", "temperature", "max_retries", "stream"),
        )
    if spec == "transformers":
        from captain_ros.policy.chat_policies import TransformersPolicy

        kw = cfg.given(
            "max_new_tokens",
            "temperature",
            "device",
            "engine",
            "grammar",
            "threads",
            "draft_tokens",
        )
        return TransformersPolicy(cfg.model_folder or "smollm2", **kw)
    if spec.startswith("replay:"):
        from captain_ros.policy.replay import ReplayPolicy

        return ReplayPolicy(spec.split(":", 1)[1])
    raise InvalidArgumentError(f"unknown policy {spec!r}; valid: {', '.join(POLICY_KINDS)}")


def check_spec(spec: str) -> None:
    """Raise (:class:`InvalidArgumentError`, or ``OSError``/``ValueError`` naming the replay file)
    if ``spec`` cannot name a policy; builds nothing, loads no model."""
    if spec in ("scripted", "openai", "transformers"):
        return
    from captain_ros.policy.students import expand_policy, is_student_spec

    if is_student_spec(spec):
        expand_policy(
            PolicyConfig(spec)
        )  # an unknown student is refused here, listing the shipped ones
        return
    if spec == "scripted-faulty" or spec.startswith("scripted-faulty:"):
        from captain_ros.policy.expert.faults import FaultSpec

        FaultSpec.parse(spec.partition(":")[2])  # unknown fault names and bad rates refused here
        return
    if spec.startswith("replay:"):
        from captain_ros.policy.replay import load_requests

        path = spec.split(":", 1)[1]
        if not path:
            raise InvalidArgumentError("replay: needs a file, e.g. --policy replay:requests.jsonl")
        load_requests(path)
        return
    raise InvalidArgumentError(f"unknown policy {spec!r}; valid: {', '.join(POLICY_KINDS)}")
