"""captain_ros: a ROS 2 stack for code-as-policy robot agents.

Layers (imports point down only)::

    cli / launch / config
    ros/        thin rclpy nodes (the only place rclpy is imported)
    learn/      datasets, SFT, critic, RL (the only place torch is imported)
    harness/    episode loop, sandboxed session, gate, budgets, context, trajectory log
    policy/     policy backends (scripted expert, OpenAI-compatible, transformers, replay)
    api/        the policy-facing robot API: capability registry, Result, receipts, TASK.md
    perception/ motion/ tasks/
    backends/   one Backend interface: mujoco (sim), fake (kinematic), hardware adapters
    core/       typed data contracts shared by every layer
"""

__version__ = "0.1.0"
