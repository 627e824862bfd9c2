"""What a lifecycle transition created on a node, and releasing it again.

``configure`` creates a node's publishers, subscriptions and services; ``cleanup`` (and a
``configure`` that failed halfway) destroys exactly those, so that ``configure`` can run again
without a name served twice. Timers are the ``activate`` transition's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.service import Service
from rclpy.subscription import Subscription


def node_entities(node: Node) -> list[Any]:
    """The publishers, subscriptions and services ``node`` has now."""
    return [*node.publishers, *node.subscriptions, *node.services]


def created_since(node: Node, before: list[Any]) -> list[Any]:
    """What ``node`` has now that it did not have in ``before`` (:func:`node_entities`)."""
    return [e for e in node_entities(node) if e not in before]


def destroy_entities(node: Node, entities: Iterable[Any]) -> None:
    """Destroy ``entities`` of ``node`` (each by its kind)."""
    for e in entities:
        if isinstance(e, Publisher):
            node.destroy_publisher(e)
        elif isinstance(e, Service):
            node.destroy_service(e)
        elif isinstance(e, Subscription):
            node.destroy_subscription(e)
