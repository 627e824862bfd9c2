"""captain_ros: a ROS 2 stack for code-as-policy robot agents.

Layers, top to bottom (imports point down only; ``tests/test_layering.py`` checks it)::

    research/     not the product (nothing below imports it): CoEvolve, RE-0/RE-OPD, their node
    cli/          captain run | eval | compare | report | bag | hw | up | coevolve | learn
    ros/          thin rclpy nodes, `captain up` (rclpy is imported here and in research/ros/ only)
    evaluation/   in-process episodes, parallel/Ray evaluation, Wilson / McNemar, plots
    report/       report.html per episode
    learn/        datasets, SFT, critic, credit, RL update (torch, transformers, peft, trl)
    harness/      episode loop and record, sandboxed session, gate, budgets, context, trajectory
    policy/       scripted expert, OpenAI-compatible client, transformers (lazy), replay
    api/          the policy-facing robot API: capability registry, client, TASK.md, RobotService
    tasks/        the task suite
    perception/ motion/
    bags/         rosbag2 MCAP bags without ROS
    backends/     one Backend interface: mujoco, fake, piper (CAN), ros_arm; safety; cameras;
                  the humanoid pair behind its own bridge
    core/ data/   typed data contracts shared by every layer; URDF/MJCF and config files
"""

__version__ = "0.3.0"
