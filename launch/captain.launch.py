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
``backend:=ros_arm arm_driver:=sim`` also starts the MuJoCo-backed ros2_control-style driver
(``captain_arm_driver``) with the launch's task and seed; it writes the cameras' calibration into
``calibration_dir`` (default build/ros_arm_sim, relative to the working directory, where
config/ros_arm_piper.yaml - the default ``backend_config`` then - reads it) and the robot process
starts once the driver is up. ``backend:=xr1`` is refused with the line to use instead (the XR1
is a ROS 2 arm: ``backend:=ros_arm backend_config:=config/xr1.yaml``).
Send an episode with ``ros2 action send_goal /captain/run_episode
captain_ros_interfaces/action/RunEpisode "{task: pick_place, seed: 1000}" --feedback``.
Without the launch tools, ``captain up`` composes the same nodes from the same YAML.
When a process dies (docs/ros.md, "When a node dies"): the policy and recorder processes are
respawned; the robot process too when its world is simulated (mujoco, fake, an emulated PiPER,
the simulated arm driver), while on a real rig its exit stops the launch with that reason. A
respawned process that cannot start (it refuses, or exits by itself within a minute) stops the
launch instead of looping.
Graph access (docs/ros.md, "Who can command the robot"): every node gets
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (unless the environment sets a range) and
``ROS_DOMAIN_ID`` from ``domain_id`` (default: the environment's, else 42, not the shared 0);
``allowed_root`` confines goals' output folders and ``replay:`` files (default: the params file's
``output_root``). ``secure:=true key_file:=KEY`` secures the graph at the application layer
(SROS2 is unavailable: the Fast DDS wheel has no security plugins): goals, robot calls, the e-stop
reset, snapshot/restore and scene loads need a credential made with the key (``captain ros goal``,
``captain ros estop-reset``).
"""

import os

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    SetEnvironmentVariable,
    Shutdown,
)
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit, OnProcessIO, OnProcessStart
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from captain_ros.backends.registry import BACKENDS, GRAPH_ONLY, REGISTRY, names

# every name from the backend registry (captain_ros/backends/registry.py), none listed here
IMPLEMENTED_BACKENDS = names(launched=True)  # xr1: refused with the ros_arm line
HUMANOID_BACKENDS = (
    "humanoid",
)  # the humanoid pair (GRAPH_ONLY): its own controller node and CoEvolve node
KNOWN_BACKENDS = (*BACKENDS, *GRAPH_ONLY)
NOT_LAUNCHED_BACKENDS = names(launched=False)  # refused with the registry's line (captain run)
POLICY_RESPAWN_DELAY_S = 1.0
ROBOT_RESPAWN_DELAY_S = 1.0
RESPAWN_MIN_UPTIME_S = 60.0
"""A respawned process that exits by itself sooner after its start failed to start: the launch
stops (a crash loop helps nobody); a signal's death is respawned at any time."""
PASS_THROUGH = (
    "backend_config",
    "can",
    "segmenter",
    "sam_folder",
    "pointer",
    "vlm_folder",
    "vlm_url",
    "vlm_model",
)
"""Launch arguments passed to the robot process's nodes when not empty."""


def _default_params_file():
    try:
        from ament_index_python.packages import get_package_share_directory

        return os.path.join(get_package_share_directory("captain_ros"), "config", "captain.yaml")
    except Exception:  # noqa: BLE001 - no ament index entry: the checkout's (core/share.py)
        from captain_ros.core.share import share_path

        return str(share_path("config", "captain.yaml"))


def _humanoid_nodes(context):
    """Humanoid controller (the bridge at fixed rates) + CoEvolve node (RunEpisode) + recorder."""
    params_file = LaunchConfiguration("params_file").perform(context)
    bag_dir = LaunchConfiguration("bag_dir").perform(context)
    layout = LaunchConfiguration("layout").perform(context)
    seed = int(LaunchConfiguration("seed").perform(context))
    return [
        Node(
            package="captain_ros",
            executable="captain_humanoid",
            name="captain_humanoid",
            output="screen",
            parameters=[params_file, {"layout": layout, "seed": seed}],
            on_exit=Shutdown(reason="humanoid controller exited"),
        ),
        Node(
            package="captain_ros",
            executable="captain_coevolve",
            name="captain_coevolve",
            output="screen",
            parameters=[params_file],
        ),
        # respawned when it dies: the new recorder recovers the crashed bag and takes the next one
        Node(
            package="captain_ros",
            executable="captain_recorder",
            name="captain_recorder",
            output="screen",
            parameters=[params_file, {"output_dir": bag_dir}],
            respawn=True,
            respawn_delay=1.0,
            condition=IfCondition(LaunchConfiguration("record")),
        ),
    ]


def _stop_if_refused(process, name):
    """Handlers that stop the launch instead of respawning ``process`` forever when it cannot
    start: it refused (a configuration error: ``EXIT_REFUSED``, its line above), or it exited on
    its own (an import error, an uncaught exception) within ``RESPAWN_MIN_UPTIME_S`` of its start.
    A process killed by a signal, or one that ran longer, is respawned."""
    import time

    from captain_ros.ros.entry import EXIT_REFUSED

    started = []

    def on_start(_event, _context):
        started.append(time.monotonic())

    def on_exit(event, _context):
        uptime = time.monotonic() - started[-1] if started else 0.0
        if event.returncode == EXIT_REFUSED:
            return [Shutdown(reason=f"{name} refused to start (its line above)")]
        if event.returncode > 0 and uptime < RESPAWN_MIN_UPTIME_S:
            return [
                Shutdown(
                    reason=f"{name} exited ({event.returncode}) {uptime:.0f} s after its "
                    "start: not respawned (its output above says why)"
                )
            ]
        return None

    return [
        RegisterEventHandler(OnProcessStart(target_action=process, on_start=on_start)),
        RegisterEventHandler(OnProcessExit(target_action=process, on_exit=on_exit)),
    ]


def _with_sim_driver(context, robot, robot_stack):
    """The simulated ros2_control-style driver, and the robot process once the driver is up (it
    has written the calibration files the robot process reads at configure)."""
    calibration_dir = os.path.abspath(LaunchConfiguration("calibration_dir").perform(context))
    driver = Node(
        package="captain_ros",
        executable="captain_arm_driver",
        name="captain_arm_driver",
        output="screen",
        parameters=[
            {"task": robot["task"], "seed": robot["seed"], "calibration_dir": calibration_dir}
        ],
        on_exit=Shutdown(reason="arm driver exited"),
    )
    started = []

    def on_output(event):
        if not started and b"simulated arm driver:" in event.text:
            started.append(True)
            return [robot_stack]
        return None

    return [
        driver,
        RegisterEventHandler(
            OnProcessIO(target_action=driver, on_stdout=on_output, on_stderr=on_output)
        ),
    ]


NO_SROS2 = (
    "the ROS 2 wheels in the lock ship Fast DDS without its security plugins (a node "
    "with ROS_SECURITY_ENABLE=true fails: \"This Fast DDS version doesn't have the security "
    'libraries"); SROS2 is unavailable. Use secure:=true key_file:=KEY (application-'
    "layer credentials, docs/ros.md)"
)


def _secure_key(context):
    """The key file of ``secure:=true`` (checked here: one line when unusable), or ""."""
    from captain_ros.ros.credential import key_path, load_key

    secure = LaunchConfiguration("secure").perform(context).lower() in ("true", "1")
    if not secure:
        return ""
    path = key_path(LaunchConfiguration("key_file").perform(context))
    if not path:
        raise RuntimeError(
            "secure:=true needs the deployment's key: key_file:=PATH or "
            "CAPTAIN_KEY_FILE (captain ros keygen PATH writes one)"
        )
    load_key(path)  # raises CredentialError with the reason
    return os.path.abspath(path)


def _graph_access(context):
    """Localhost discovery and the graph's domain for every node (a limit on discovery, not
    access control), or a refusal of SROS2, which the middleware cannot provide."""
    from captain_ros.ros.access import graph_environment
    from captain_ros.ros.env import transport_environment

    if os.environ.get("ROS_SECURITY_ENABLE", "").lower() == "true":
        raise RuntimeError(f"ROS_SECURITY_ENABLE=true refused: {NO_SROS2}")
    env = graph_environment(os.environ, LaunchConfiguration("domain_id").perform(context))
    env.update(transport_environment(os.environ))  # not shared memory: see BUILTIN_TRANSPORTS
    return [
        *(SetEnvironmentVariable(k, v) for k, v in env.items()),
        LogInfo(
            msg=f"captain graph on ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}, discovery "
            f"{env['ROS_AUTOMATIC_DISCOVERY_RANGE']} (limits who finds the graph; it "
            f"is not access control: docs/ros.md), transports "
            f"{env['FASTDDS_BUILTIN_TRANSPORTS']}"
        ),
    ]


def _nodes(context, *args, **kwargs):
    access = _graph_access(context)
    return [*access, *_graph_nodes(context)]


def _graph_nodes(context):
    backend = LaunchConfiguration("backend").perform(context)
    seed_text = LaunchConfiguration("seed").perform(context)
    if not seed_text.isdigit():
        raise RuntimeError(f"seed:={seed_text} must be a non-negative integer")
    params_file = LaunchConfiguration("params_file").perform(context)
    if not os.path.isfile(params_file):
        raise RuntimeError(f"params_file:={params_file} does not exist")
    if backend in HUMANOID_BACKENDS:
        if LaunchConfiguration("secure").perform(context).lower() in ("true", "1"):
            raise RuntimeError(
                f"secure:=true covers the arm graph only; backend:={backend} (its "
                "controller and CoEvolve nodes) takes no credentials yet"
            )
        return _humanoid_nodes(context)
    if backend == "xr1":
        raise RuntimeError(f"backend:=xr1 is {GRAPH_ONLY['xr1']}")
    if backend in NOT_LAUNCHED_BACKENDS:
        raise RuntimeError(f"backend:={backend} {REGISTRY[backend].refusal}")
    if backend not in IMPLEMENTED_BACKENDS:
        known = "known" if backend in KNOWN_BACKENDS else "unknown"
        raise RuntimeError(
            f"backend:={backend} ({known}) is not implemented yet; implemented backends: "
            f"{', '.join(IMPLEMENTED_BACKENDS)}"
        )
    task = LaunchConfiguration("task").perform(context)
    seed = int(seed_text)
    policy = LaunchConfiguration("policy").perform(context)
    engine = LaunchConfiguration("engine").perform(context)
    if engine not in ("auto", "llamacpp", "transformers"):
        raise RuntimeError(f"engine:={engine}; valid: auto, llamacpp, transformers")
    bag_dir = LaunchConfiguration("bag_dir").perform(context)
    allowed_root = LaunchConfiguration("allowed_root").perform(context)
    policy_extra = {"allowed_root": os.path.abspath(allowed_root)} if allowed_root else {}
    key_file = _secure_key(context)
    secured = {"key_file": key_file} if key_file else {}
    policy_extra.update(secured)
    record = LaunchConfiguration("record").perform(context).lower() in ("true", "1")
    robot = {"backend": backend, "task": task, "seed": seed, **secured}
    robot.update({k: v for k in PASS_THROUGH if (v := LaunchConfiguration(k).perform(context))})
    if LaunchConfiguration("emulate").perform(context).lower() in ("true", "1"):
        robot["emulate"] = True
    driver = LaunchConfiguration("arm_driver").perform(context)
    if driver not in ("", "sim"):
        raise RuntimeError(f"arm_driver:={driver}; valid: sim (the simulated driver) or empty")
    if driver and backend != "ros_arm":
        raise RuntimeError(f"arm_driver:={driver} applies to backend:=ros_arm only")
    if driver:
        robot.setdefault("backend_config", "config/ros_arm_piper.yaml")
    # two nodes (captain_robot, captain_perception) in one process: no name= remap here.
    # Respawned where its world is a simulation (a fresh scene; the goal it served ended as
    # robot_lost); a real rig's robot process is not restarted behind the operator's back
    simulated = backend in ("mujoco", "fake") or bool(robot.get("emulate")) or bool(driver)
    on_exit = (
        {"respawn": True, "respawn_delay": ROBOT_RESPAWN_DELAY_S}
        if simulated
        else {
            "on_exit": Shutdown(
                reason="the robot process exited on a real rig: the launch stops; "
                "check the arm, then launch again"
            )
        }
    )
    robot_stack = Node(
        package="captain_ros",
        executable="captain_robot_stack",
        output="screen",
        parameters=[params_file, robot],
        **on_exit,
    )
    robot_side = [robot_stack] if not driver else _with_sim_driver(context, robot, robot_stack)
    # respawned when it dies: the goal it ran is lost with it (`captain ros goal` says so at
    # once); the robot node closes its episode gate and the recorder its bag
    policy_node = Node(
        package="captain_ros",
        executable="captain_policy",
        name="captain_policy",
        output="screen",
        parameters=[
            params_file,
            {"policy": policy, "expect_recorder": record, "engine": engine, **policy_extra},
        ],
        respawn=True,
        respawn_delay=POLICY_RESPAWN_DELAY_S,
    )
    # respawned when it dies: the new recorder recovers the crashed bag and takes the next one
    recorder = Node(
        package="captain_ros",
        executable="captain_recorder",
        name="captain_recorder",
        output="screen",
        parameters=[params_file, {"output_dir": bag_dir}],
        respawn=True,
        respawn_delay=1.0,
        condition=IfCondition(LaunchConfiguration("record")),
    )
    respawned = [(policy_node, "the policy process"), (recorder, "the recorder")]
    if simulated:
        respawned.append((robot_stack, "the robot process"))
    return [
        *robot_side,
        policy_node,
        recorder,
        *(h for action, name in respawned for h in _stop_if_refused(action, name)),
    ]


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "backend",
                default_value="mujoco",
                description=f"robot backend: {' | '.join(KNOWN_BACKENDS)}",
            ),
            DeclareLaunchArgument(
                "task", default_value="pick_place", description="task of the scene"
            ),
            DeclareLaunchArgument("seed", default_value="1000", description="scene seed"),
            DeclareLaunchArgument(
                "policy",
                default_value="scripted",
                description="scripted | openai | transformers | replay:FILE",
            ),
            DeclareLaunchArgument(
                "engine",
                default_value="auto",
                description="inference engine of policy:=transformers (auto | "
                "llamacpp | transformers)",
            ),
            DeclareLaunchArgument(
                "layout",
                default_value="base",
                description="humanoid backend: corridor layout base | l2 | l3 | l4",
            ),
            DeclareLaunchArgument(
                "params_file",
                default_value=_default_params_file(),
                description="ROS 2 params file of the nodes",
            ),
            DeclareLaunchArgument("record", default_value="true", description="start the recorder"),
            DeclareLaunchArgument(
                "bag_dir", default_value="runs/bags", description="bag directory"
            ),
            DeclareLaunchArgument(
                "backend_config",
                default_value="",
                description="hardware rig config ('' = the backend's default)",
            ),
            DeclareLaunchArgument("can", default_value="", description="piper: can0 or can0,can1"),
            DeclareLaunchArgument(
                "emulate",
                default_value="false",
                description="piper: the CAN emulator instead of hardware",
            ),
            DeclareLaunchArgument(
                "arm_driver",
                default_value="",
                description="ros_arm: 'sim' starts the simulated arm driver",
            ),
            DeclareLaunchArgument(
                "calibration_dir",
                default_value="build/ros_arm_sim",
                description="arm_driver:=sim: where it writes the camera calibration",
            ),
            DeclareLaunchArgument(
                "allowed_root",
                default_value="",
                description="folder that goals' output_dir and replay: files must "
                "lie under ('' = the policy node's output_root)",
            ),
            DeclareLaunchArgument(
                "domain_id",
                default_value="",
                description="ROS_DOMAIN_ID of every node ('' = the environment's, else 42)",
            ),
            DeclareLaunchArgument(
                "secure",
                default_value="false",
                description="true: goals, robot calls, the e-stop reset, "
                "snapshot/restore and load_scene need a credential "
                "made with key_file (docs/ros.md; not SROS2: the Fast "
                "DDS wheel has no security plugins)",
            ),
            DeclareLaunchArgument(
                "key_file",
                default_value="",
                description="secure:=true: the deployment's key file, mode 0600 "
                "('' = $CAPTAIN_KEY_FILE)",
            ),
            DeclareLaunchArgument("segmenter", default_value="", description="default | sam"),
            DeclareLaunchArgument(
                "sam_folder", default_value="", description="SAM checkpoint folder"
            ),
            DeclareLaunchArgument(
                "pointer", default_value="", description="default | vlm_local | vlm_endpoint"
            ),
            DeclareLaunchArgument("vlm_folder", default_value="", description="local VLM folder"),
            DeclareLaunchArgument(
                "vlm_url", default_value="", description="OpenAI-compatible pointing endpoint"
            ),
            DeclareLaunchArgument(
                "vlm_model", default_value="", description="served pointing model"
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
