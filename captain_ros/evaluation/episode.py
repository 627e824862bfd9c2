"""The composition root: every front end builds its episode here from one
:class:`~captain_ros.evaluation.config.EpisodeConfig`.

``captain run``, every ``captain eval`` worker (:func:`run_job`), the RL and RE-0 rollout workers
and the ROS nodes (robot, perception and policy node) build through these functions, so an
episode is composed the same way whichever runs it:

- :func:`make_robot_backend`: the one place an episode's backend is made (``make_backend`` on the
  task's scene for the seed); the robot node calls it on configure and on each scene load;
- :func:`robot_service`: the one place a :class:`~captain_ros.api.RobotService` is bound (motion
  and/or perception over a backend; the robot node serves motion, the perception node
  perception, an in-process episode both);
- :func:`build_robot`: ``(task, backend, RobotService)`` of one scene;
- :func:`episode_setup`: the :class:`~captain_ros.harness.episode.setup.EpisodeSetup` of a config
  over any robot (in process, or the policy node's robot over the ROS graph);
- :func:`local_setup` / :func:`run_one`: the whole in-process episode, with the live progress
  callback (``on_event(kind, data)``: the terminal display of ``captain run``), the in-process bag
  writer (``bag/``, rosbag2 MCAP) and the report (``report.html``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from captain_ros.backends.registry import names
from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.evaluation.config import BackendConfig, EpisodeConfig
from captain_ros.evaluation.observers import Event, ProgressObserver, RuntimeObserver
from captain_ros.evaluation.runner import worker_environment
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.setup import EpisodeSetup
from captain_ros.harness.record.backend_source import BackendPrivileged
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.perception.models import PerceptionModels
from captain_ros.policy.base import Policy
from captain_ros.report.observer import ReportObserver

log = logging.getLogger(__name__)

SIM_BACKENDS = names(ground_truth=True)
"""Backends with ground truth (privileged state, snapshots); hardware has none (the registry's)."""


def check_episode_args(config: EpisodeConfig) -> None:
    """Refuse a policy spec that cannot be built (:class:`~captain_ros.core.errors.CaptainError`)
    before anything is started (the model itself is loaded later; the task and seed were checked
    when ``config`` was made); ``captain run | eval`` and ``captain up`` call it first."""
    from captain_ros.policy.factory import check_spec
    from captain_ros.policy.students import check_student_task
    from captain_ros.tasks import get_task

    check_spec(config.policy.spec)
    task = get_task(config.task, config.backend.name).name  # robosuite's `lift`: robosuite_lift
    check_student_task(config.policy.spec, task)


def make_robot_backend(
    backend: BackendConfig, task: str | None = None, seed: int = 0, *, enable: bool = True
) -> Any:
    """The backend of ``task``'s scene for ``seed`` (``task=None``: no scene, e.g. ``captain hw
    check``), in the safety layer (:func:`~captain_ros.backends.registry.make_backend`)."""
    from captain_ros.backends import make_backend
    from captain_ros.tasks import get_task

    scene = None if task is None else get_task(task, backend.name).sample(seed)
    return make_backend(backend.name, scene, enable=enable, **backend.options)


def robot_service(backend: Any, *, motion: bool = True, perception: Any = None) -> Any:
    """The :class:`~captain_ros.api.RobotService` over ``backend``: motion (a fresh
    :class:`~captain_ros.motion.service.MotionService`) unless ``motion=False``, and
    ``perception``: a :class:`~captain_ros.perception.service.PerceptionService`, the
    :class:`PerceptionModels` to build one from, or ``None`` (no perception capabilities)."""
    from captain_ros.api.service import RobotService
    from captain_ros.motion.service import MotionService

    if isinstance(perception, PerceptionModels):
        perception = perception.service(backend)
    return RobotService(backend, MotionService(backend) if motion else None, perception)


def build_robot(
    task_name: str,
    seed: int,
    backend: BackendConfig | str = "mujoco",
    perception: PerceptionModels | None = None,
) -> tuple[Any, Any, Any]:
    """``(task, backend, RobotService)`` for one scene (``backend``: a name or a
    :class:`BackendConfig` with its options; ``perception``: the models, default the simulator's)."""
    from captain_ros.tasks import get_task

    cfg = backend if isinstance(backend, BackendConfig) else BackendConfig(backend)
    task = get_task(task_name, cfg.name)
    models = perception or PerceptionModels()  # checked before the rig is started
    inner = make_robot_backend(cfg, task_name, seed)
    return task, inner, robot_service(inner, perception=models)


def episode_setup(
    config: EpisodeConfig,
    robot: Any,
    policy: Policy,
    *,
    profile: str,
    observers: list[EpisodeObserver],
    privileged: Any = None,
    host_success: Any = None,
) -> EpisodeSetup:
    """The :class:`EpisodeSetup` of ``config`` over ``robot`` (a RobotService in process, or the
    policy node's caller over the graph); ``profile``: the resolved prompt profile."""
    from captain_ros.harness.episode import EpisodeOptions
    from captain_ros.harness.sandbox.session import SessionConfig
    from captain_ros.tasks import get_task

    return EpisodeSetup(
        task=get_task(config.task, config.backend.name),
        seed=config.seed,
        robot=robot,
        policy=policy,
        out_dir=Path(config.out_dir),
        budgets=config.budgets.budgets(),
        options=EpisodeOptions(
            policy_name=config.policy.spec,
            backend_name=config.backend.name,
            missed_finish_after=config.missed_finish_after,
            profile=profile,
        ),
        privileged=privileged,
        host_success=host_success,
        observers=observers,
        session_config=SessionConfig(strict_sandbox=True) if config.strict_sandbox else None,
        overwrite=config.recording.overwrite,
    )


def local_setup(
    config: EpisodeConfig, on_event: Event | None = None, policy: Policy | None = None
) -> tuple[EpisodeSetup, Any]:
    """The in-process :class:`EpisodeSetup` of one episode and its backend (close it after)."""
    from captain_ros.harness.episode.profiles import resolve_profile
    from captain_ros.policy.factory import make_policy
    from captain_ros.policy.students import expand_policy

    config = config.replace(policy=expand_policy(config.policy))  # student: its folder
    profile = resolve_profile(config.profile, config.policy.model_folder)  # before any model
    task, backend, service = build_robot(
        config.task, config.seed, config.backend, config.perception
    )
    try:
        pol = policy or make_policy(config.policy)
    except BaseException:
        backend.close()
        raise
    out = Path(config.out_dir)
    observers: list[EpisodeObserver] = [RuntimeObserver(pol)]
    if on_event is not None:
        observers.append(ProgressObserver(on_event))
    if config.recording.bag:
        from captain_ros.evaluation.bag import BagObserver

        observers.append(
            BagObserver(EpisodeFiles(out).bag, service, images=config.recording.bag_images)
        )
    if config.recording.report:
        observers.append(ReportObserver(out))
    setup = episode_setup(
        config,
        service,
        pol,
        profile=profile,
        observers=observers,
        privileged=BackendPrivileged(backend) if config.backend.name in SIM_BACKENDS else None,
    )
    return setup, backend


def run_one(
    config: EpisodeConfig, on_event: Event | None = None, policy: Policy | None = None
) -> EpisodeRecord:
    """Run one episode in this process and write its folder; returns its record."""
    setup, backend = local_setup(config, on_event, policy)
    try:
        return setup.run()
    finally:
        setup.policy.close()
        backend.close()


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point of an evaluation worker (plain dict in, plain dict out): ``job["options"]``
    is the episode's :meth:`EpisodeConfig.to_mapping`."""
    worker_environment()
    return run_one(EpisodeConfig.from_mapping(job["options"])).to_dict()
