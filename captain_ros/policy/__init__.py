"""Policy backends behind one interface (:class:`~captain_ros.policy.base.Policy`).

- ``scripted``: the per-task scripted expert (:mod:`captain_ros.policy.expert`), no model;
- ``scripted-faulty[:NAME=RATE,...]``: the same expert with seeded faults (a policy mix);
- ``openai``: any OpenAI-compatible chat endpoint, e.g. vLLM (:mod:`captain_ros.policy.openai_client`);
- ``transformers``: a local model folder in-process (:mod:`captain_ros.policy.transformers_chat`);
- ``replay:FILE``: requests replayed from JSON lines (:mod:`captain_ros.policy.replay`).

Build one with :func:`captain_ros.policy.factory.make_policy`. Model outputs are parsed by
:func:`captain_ros.policy.toolcalls.parse_reply`. Nothing here imports torch at import time.
"""

from captain_ros.policy.base import Policy, PolicyReply, python_call
from captain_ros.policy.factory import POLICY_KINDS, make_policy
from captain_ros.policy.toolcalls import ParsedReply, parse_reply

__all__ = [
    "POLICY_KINDS",
    "ParsedReply",
    "Policy",
    "PolicyReply",
    "make_policy",
    "parse_reply",
    "python_call",
]
