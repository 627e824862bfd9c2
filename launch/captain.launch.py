"""Launch the captain_ros graph: robot + perception, policy, recorder.

    ros2 launch captain_ros captain.launch.py backend:=mujoco task:=pick_place policy:=scripted

Arguments: ``backend`` (mujoco | fake | piper | ros_arm | xr1 | humanoid), ``task``, ``seed``,
``policy``, ``params_file`` (default: the package's config/captain.yaml), ``record`` (true |
false), ``bag_dir``. Hardware: ``backend_config`` (piper: config/piper.yaml, piper_dual.yaml for
the dual rig; ros_arm: config/xr1.yaml), ``can`` (piper: can0 or can0,can1), ``emulate`` (piper:
the CAN emulator). Perception models: ``segmenter`` (default | sam), ``sam_folder``, ``pointer``
(default | vlm_local | vlm_endpoint), ``vlm_folder``, ``vlm_url``, ``vlm_model``; empty = the
params file's value (the simulator's weight-free models). ``backend:=humanoid`` starts the
humanoid controller node, the CoEvolve node and the recorder (``layout``: base | l2 | l3 | l4;
send ``RunEpisode "{task: base, seed: 1000, policy: scripted}"``). A backend that is not
implemented yet stops the launch at once with a message naming the implemented ones. The robot
and perception nodes share one process (the perception service
reads the backend's cameras in-process); the policy and recorder nodes run in their own.
Send an episode with ``ros2 action send_goal /captain/run_episode
captain_ros_interfaces/action/RunEpisode "{task: pick_place, seed: 1000}" --feedback``.
Without the launch tools, ``captain up`` composes the same nodes from the same YAML.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

IMPLEMENTED_BACKENDS = ("mujoco", "fake", "piper", "ros_arm")
HUMANOID_BACKENDS = ("humanoid",)  # the humanoid pair: its own controller node and CoEvolve node
KNOWN_BACKENDS = ("mujoco", "fake", "piper", "ros_arm", "xr1", "humanoid")
PASS_THROUGH = ("backend_config", "can", "segmenter", "sam_folder", "pointer", "vlm_folder",
                "vlm_url", "vlm_model")
"""Launch arguments passed to the robot process's nodes when not empty."""


def _default_params_file():
    try:
        from ament_index_python.packages import get_package_share_directory

        return os.path.join(get_package_share_directory("captain_ros"), "config", "captain.yaml")
    except Exception:  # noqa: BLE001 - no ament index entry: the copy inside the package
        from captain_ros.data import data_path

        return str(data_path("config", "captain.yaml"))


def _humanoid_nodes(context):
    """Humanoid controller (the bridge at fixed rates) + CoEvolve node (RunEpisode) + recorder."""
    params_file = LaunchConfiguration("params_file").perform(context)
    bag_dir = LaunchConfiguration("bag_dir").perform(context)
    layout = LaunchConfiguration("layout").perform(context)
    seed = int(LaunchConfiguration("seed").perform(context))
    return [
        Node(package="captain_ros", executable="captain_humanoid", name="captain_humanoid",
             output="screen", parameters=[params_file, {"layout": layout, "seed": seed}],
             on_exit=Shutdown(reason="humanoid controller exited")),
        Node(package="captain_ros", executable="captain_coevolve", name="captain_coevolve",
             output="screen", parameters=[params_file]),
        # respawned when it dies: the new recorder recovers the crashed bag and takes the next one
        Node(package="captain_ros", executable="captain_recorder", name="captain_recorder",
             output="screen", parameters=[params_file, {"output_dir": bag_dir}],
             respawn=True, respawn_delay=1.0,
             condition=IfCondition(LaunchConfiguration("record"))),
    ]


def _nodes(context, *args, **kwargs):
    backend = LaunchConfiguration("backend").perform(context)
    seed_text = LaunchConfiguration("seed").perform(context)
    if not seed_text.isdigit():
        raise RuntimeError(f"seed:={seed_text} must be a non-negative integer")
    params_file = LaunchConfiguration("params_file").perform(context)
    if not os.path.isfile(params_file):
        raise RuntimeError(f"params_file:={params_file} does not exist")
    if backend in HUMANOID_BACKENDS:
        return _humanoid_nodes(context)
    if backend not in IMPLEMENTED_BACKENDS:
        known = "known" if backend in KNOWN_BACKENDS else "unknown"
        raise RuntimeError(
            f"backend:={backend} ({known}) is not implemented yet; implemented backends: "
            f"{', '.join(IMPLEMENTED_BACKENDS)}")
    task = LaunchConfiguration("task").perform(context)
    seed = int(seed_text)
    policy = LaunchConfiguration("policy").perform(context)
    bag_dir = LaunchConfiguration("bag_dir").perform(context)
    robot = {"backend": backend, "task": task, "seed": seed}
    robot.update({k: v for k in PASS_THROUGH if (v := LaunchConfiguration(k).perform(context))})
    if LaunchConfiguration("emulate").perform(context).lower() in ("true", "1"):
        robot["emulate"] = True
    return [
        # two nodes (captain_robot, captain_perception) in one process: no name= remap here
        Node(package="captain_ros", executable="captain_robot_stack", output="screen",
             parameters=[params_file, robot],
             on_exit=Shutdown(reason="robot process exited")),
        Node(package="captain_ros", executable="captain_policy", name="captain_policy",
             output="screen", parameters=[params_file, {"policy": policy}]),
        # respawned when it dies: the new recorder recovers the crashed bag and takes the next one
        Node(package="captain_ros", executable="captain_recorder", name="captain_recorder",
             output="screen", parameters=[params_file, {"output_dir": bag_dir}],
             respawn=True, respawn_delay=1.0,
             condition=IfCondition(LaunchConfiguration("record"))),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("backend", default_value="mujoco",
                              description=f"robot backend: {' | '.join(KNOWN_BACKENDS)}"),
        DeclareLaunchArgument("task", default_value="pick_place", description="task of the scene"),
        DeclareLaunchArgument("seed", default_value="1000", description="scene seed"),
        DeclareLaunchArgument("policy", default_value="scripted",
                              description="scripted | openai | transformers | replay:FILE"),
        DeclareLaunchArgument("layout", default_value="base",
                              description="humanoid backend: corridor layout base | l2 | l3 | l4"),
        DeclareLaunchArgument("params_file", default_value=_default_params_file(),
                              description="ROS 2 params file of the nodes"),
        DeclareLaunchArgument("record", default_value="true", description="start the recorder"),
        DeclareLaunchArgument("bag_dir", default_value="runs/bags", description="bag directory"),
        DeclareLaunchArgument("backend_config", default_value="",
                              description="hardware rig config ('' = the backend's default)"),
        DeclareLaunchArgument("can", default_value="", description="piper: can0 or can0,can1"),
        DeclareLaunchArgument("emulate", default_value="false",
                              description="piper: the CAN emulator instead of hardware"),
        DeclareLaunchArgument("segmenter", default_value="", description="default | sam"),
        DeclareLaunchArgument("sam_folder", default_value="", description="SAM checkpoint folder"),
        DeclareLaunchArgument("pointer", default_value="",
                              description="default | vlm_local | vlm_endpoint"),
        DeclareLaunchArgument("vlm_folder", default_value="", description="local VLM folder"),
        DeclareLaunchArgument("vlm_url", default_value="",
                              description="OpenAI-compatible pointing endpoint"),
        DeclareLaunchArgument("vlm_model", default_value="", description="served pointing model"),
        OpaqueFunction(function=_nodes),
    ])
