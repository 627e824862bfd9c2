"""The robot node's snapshot store stays bounded over a long run: a scene load keeps the snapshots
of the episode that just ended (a restore into it still works) and drops every older one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from captain_ros_interfaces.srv import LoadScene, Restore, Snapshot

from captain_ros.backends import make_backend
from captain_ros.ros.sim_services import SimServices
from captain_ros.tasks import get_task


class StubRobot:
    """What SimServices needs of the robot node: services, a backend, load_scene."""

    def __init__(self) -> None:
        self.backend = make_backend("fake", get_task("pick_place").sample(3))
        self.service = SimpleNamespace()
        self.loads: list[tuple[str, int]] = []

    def create_service(self, *_args: Any, **_kw: Any) -> None:
        return None

    def load_scene(self, task: str, seed: int) -> tuple[bool, str]:
        self.loads.append((task, seed))
        return (seed >= 0, "" if seed >= 0 else "bad seed")


def _snap(sim: SimServices) -> str:
    resp = sim._on_snapshot(Snapshot.Request(), Snapshot.Response())
    assert resp.success, resp.message
    return str(resp.snapshot_id)


def _load(sim: SimServices, seed: int) -> bool:
    return bool(
        sim._on_load_scene(
            LoadScene.Request(task="pick_place", seed=seed), LoadScene.Response()
        ).success
    )


def test_a_scene_load_keeps_the_last_episode_and_drops_older_ones() -> None:
    robot = StubRobot()
    try:
        sim = SimServices(robot, None, served={"privileged_state": False})
        first = [_snap(sim) for _ in range(3)]  # episode 1
        assert _load(sim, 4)
        second = [_snap(sim) for _ in range(2)]  # episode 2
        assert sim.snapshot_ids == first + second  # episode 1 is still restorable
        ok = sim._on_restore(Restore.Request(snapshot_id=first[0]), Restore.Response())
        assert ok.success, ok.message
        assert _load(sim, 5)
        assert sim.snapshot_ids == second  # episode 1's are gone, episode 2's kept
        gone = sim._on_restore(Restore.Request(snapshot_id=first[0]), Restore.Response())
        assert not gone.success and "unknown snapshot" in gone.message
        assert not _load(sim, -1)  # a refused load keeps everything
        assert sim.snapshot_ids == second
    finally:
        robot.backend.close()
