"""The backend registry: one shape per backend folder, the safety layer put on in one place, and
the readers (CLI, evaluation, robot node) answering from it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from captain_ros.backends import make_backend
from captain_ros.backends.base import Backend
from captain_ros.backends.fake import FakeBackend
from captain_ros.backends.piper import PiperBackend
from captain_ros.backends.registry import BACKENDS, REGISTRY, guard, info, names
from captain_ros.backends.safety import SIM_DEFAULTS, LinkStatus, SafeBackend
from captain_ros.core.errors import (
    HardwareError,
    InvalidArgumentError,
    NotSupportedError,
    UnknownNameError,
)
from captain_ros.core.share import share_path
from captain_ros.tasks import get_task

BACKENDS_DIR = Path(__file__).resolve().parents[1] / "captain_ros" / "backends"


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_is_a_folder_of_one_shape(name: str) -> None:
    """``config.py``, ``backend.py`` and a ``make()`` typed with a Backend class (not ``Any``)."""
    folder = BACKENDS_DIR / name
    assert (folder / "config.py").is_file() and (folder / "backend.py").is_file()
    tree = ast.parse((folder / "__init__.py").read_text())
    make = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make")
    assert isinstance(make.returns, ast.Name) and make.returns.id.endswith("Backend")
    assert make.args.args[0].arg == "scene"


@pytest.mark.parametrize("name", ["mujoco", "fake"])
def test_make_is_unguarded_and_make_backend_guards_it_once(name: str) -> None:
    scene = get_task("pick_place").sample(3)
    raw = info(name).make(scene)
    try:
        assert isinstance(raw, Backend) and not isinstance(raw, SafeBackend)
    finally:
        raw.close()
    with make_backend(name, scene) as b:
        assert isinstance(b, SafeBackend) and b.config is SIM_DEFAULTS
        assert type(b.inner).__name__ == {"mujoco": "MujocoBackend", "fake": "FakeBackend"}[name]
        assert b.spec.arm_names == ("arm",)


def test_a_rig_is_guarded_with_its_own_limits_and_enabled_after_the_checks() -> None:
    """The PiPER against its CAN emulator: the rig file's safety section, enable on request."""
    b = make_backend(
        "piper",
        get_task("pick_place").sample(3),
        emulate=True,
        can="registry-test",
        image_size_px=48,
        enable=False,
    )
    try:
        assert isinstance(b, SafeBackend) and isinstance(b.inner, PiperBackend)
        assert b.config is b.inner.config.safety and b.config != SIM_DEFAULTS
        assert not b.inner.link_status("arm").enabled
        b.enable()
        assert b.inner.link_status("arm").enabled
    finally:
        b.close()


class DownLink(FakeBackend):
    """The fake rig with a hardware link that is down (a bus without power)."""

    closed = 0

    def link_status(self, arm: str) -> LinkStatus:
        return LinkStatus(connected=False, enabled=False, feedback_age_s=float("inf"))

    def enable(self, arm: str) -> None:
        raise AssertionError("never reached: the link check refuses first")

    def disable(self, arm: str) -> None:
        pass

    def hold(self) -> None:
        pass

    def close(self) -> None:
        self.closed += 1


def test_guard_closes_a_rig_whose_enable_fails() -> None:
    rig = DownLink()
    with pytest.raises(HardwareError, match="no link to the controller"):
        guard(rig, enable=True)
    assert rig.closed == 1
    safe = guard(DownLink(), enable=False)  # `captain hw check`: built, not enabled
    assert isinstance(safe, SafeBackend) and safe.link is safe.inner


def test_bad_names_and_options_get_one_clear_error() -> None:
    with pytest.raises(UnknownNameError, match="backend.*nosuch.*mujoco"):
        make_backend("nosuch")
    with pytest.raises(InvalidArgumentError, match="unknown fake option key.*colour.*valid: boxes"):
        make_backend("fake", colour="red")
    with pytest.raises(InvalidArgumentError, match="image_size_px must be a positive integer"):
        make_backend("mujoco", image_size_px=0)


def test_ros_arm_without_the_ros_layer_says_what_to_import(monkeypatch) -> None:
    from captain_ros.backends.ros_arm import transport

    monkeypatch.setattr(transport, "_registered", [])
    with pytest.raises(NotSupportedError, match="import captain_ros.ros.arm_bridge"):
        make_backend("ros_arm", config=share_path("config", "ros_arm_piper.yaml"))


def test_the_ros_layer_registers_its_transport_on_import() -> None:
    """A fresh process: nothing registered until the ros layer's package is imported, and its
    import does not pull rclpy in (the transport is built, and rclpy imported, on demand)."""
    code = (
        "import sys\n"
        "from captain_ros.backends.ros_arm import transport\n"
        "assert transport._registered == []\n"
        "import captain_ros.ros.arm_bridge as bridge\n"
        "assert transport._registered == [bridge.rclpy_transport]\n"
        "assert 'rclpy' not in sys.modules\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_readers_answer_from_the_registry() -> None:
    from captain_ros.cli.hw import RIG_ARGS
    from captain_ros.cli.main import build_parser
    from captain_ros.evaluation.episode import SIM_BACKENDS

    assert tuple(n for n, b in REGISTRY.items() if b.ground_truth) == SIM_BACKENDS
    assert set(RIG_ARGS) == set(names(hardware=True)) == {"piper", "ros_arm"}
    assert RIG_ARGS["piper"] == ("config", "can", "emulate", "rig")
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--backend", "nosuch"])
    for name in BACKENDS:
        assert parser.parse_args(["run", "--backend", name]).backend == name
