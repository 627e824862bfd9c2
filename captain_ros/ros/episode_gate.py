"""The robot node's episode gate (:class:`EpisodeGate`): robot calls are served only for the
episode named by its ``active_episode`` parameter, which the policy node sets for a goal's
duration (:func:`~captain_ros.ros.access.episode_refusal`). The gate closes by itself when the
policy process dies (:class:`~captain_ros.ros.liveness.Liveness`): no further robot calls; a call
in flight finishes, guarded, and the arm then holds where it left it."""

from __future__ import annotations

from rclpy.node import Node
from rclpy.parameter import Parameter

from captain_ros.core.result import Result
from captain_ros.ros.access import episode_refusal


class EpisodeGate:
    """The gate of ``node`` (its ``active_episode`` parameter); ``required`` False serves every
    caller (the ``require_episode`` parameter: in-process tests, a bench without a policy node)."""

    def __init__(self, node: Node, required: bool) -> None:
        self.node = node
        self.required = required

    @property
    def active(self) -> str:
        """The episode whose robot calls are served ("" = none)."""
        return str(self.node.get_parameter("active_episode").value)

    def refusal(self, episode_id: str, capability: str) -> Result | None:
        """A refusal of a call outside the active episode; None: serve it."""
        if not self.required:
            return None
        return episode_refusal(self.active, episode_id, capability)

    def on_policy_lost(self, instance: str) -> None:
        """The policy process ``instance`` died: its episode's gate closes."""
        active = self.active
        if active:
            self.node.set_parameters([Parameter("active_episode", Parameter.Type.STRING, "")])
            self.node.get_logger().warning(
                f"the policy process {instance} died during episode "
                f"{active}: robot calls are refused until the next goal; "
                "the arm holds"
            )
