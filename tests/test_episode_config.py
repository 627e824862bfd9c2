"""EpisodeConfig: validated once, plain data across process boundaries, and the same episode
whether the CLI flags, the ROS node parameters or a worker's mapping describe it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from captain_ros.cli.main import build_parser
from captain_ros.core.errors import CaptainError, InvalidArgumentError, UnknownNameError
from captain_ros.evaluation.config import (
    BackendConfig,
    BudgetConfig,
    EpisodeConfig,
    PolicyConfig,
    RecordingConfig,
)
from captain_ros.perception.models import PerceptionModels


def _full() -> EpisodeConfig:
    return EpisodeConfig(
        "stack",
        7,
        "runs/x",
        policy=PolicyConfig(
            "transformers", model_folder="/m", max_new_tokens=64, temperature=0, threads=2
        ),
        backend=BackendConfig("mujoco", {"noise": {"seed": 3, "scale": 0.5}}),
        budgets=BudgetConfig("rl", max_requests=9, max_wall_s=30),
        perception=PerceptionModels(pointer="vlm_endpoint", vlm_url="http://h/v1", vlm_model="m"),
        recording=RecordingConfig(bag=False, report=False, overwrite=True),
        profile="helpers",
        strict_sandbox=True,
        missed_finish_after=4,
    )


def test_to_mapping_is_json_and_reads_back_equal() -> None:
    for cfg in (EpisodeConfig(), _full()):
        data = json.loads(json.dumps(cfg.to_mapping()))
        assert EpisodeConfig.from_mapping(data) == cfg
    back = EpisodeConfig.from_mapping(json.loads(json.dumps(_full().to_mapping())))
    assert back.budgets.budgets().max_physical_actions == 120  # the rl mode, with overrides
    assert back.budgets.budgets().max_requests == 9
    assert isinstance(back.policy.temperature, float) and back.policy.temperature == 0.0
    assert dict(back.backend.options) == {"noise": {"seed": 3, "scale": 0.5}}
    assert EpisodeConfig.from_mapping({"task": "stack"}) == EpisodeConfig("stack")  # defaults


def test_the_config_is_frozen_and_its_backend_options_read_only() -> None:
    cfg = _full()
    with pytest.raises(AttributeError):
        cfg.seed = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.backend.options["noise"] = None  # type: ignore[index]
    assert cfg.replace(seed=8).seed == 8 and cfg.seed == 7


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        ({"sede": 3}, InvalidArgumentError, "unknown episode config key.*sede.*valid: task"),
        ({"policy": {"temp": 1}}, InvalidArgumentError, "unknown policy key.*temp"),
        ({"recording": {"bags": False}}, InvalidArgumentError, "unknown recording key.*bags"),
        ({"seed": -1}, InvalidArgumentError, "seed must be a non-negative int, got -1"),
        ({"seed": True}, InvalidArgumentError, "episode.seed must be int, got True"),
        ({"seed": "3"}, InvalidArgumentError, "episode.seed must be int, got '3'"),
        ({"policy": {"temperature": "hot"}}, InvalidArgumentError, "policy.temperature must be"),
        ({"policy": {"engine": "vllm"}}, InvalidArgumentError, "policy.engine 'vllm' is unknown"),
        ({"policy": {"threads": 0}}, InvalidArgumentError, "policy.threads must be >= 1"),
        ({"budgets": {"max_requests": 0}}, InvalidArgumentError, "budgets"),
        ({"budgets": {"mode": "train"}}, InvalidArgumentError, "budgets.mode 'train'"),
        ({"profile": "tiny"}, InvalidArgumentError, "episode.profile 'tiny' is unknown"),
        ({"perception": {"segmenter": "x"}}, InvalidArgumentError, "segmenter 'x'"),
        ({"task": "juggle"}, UnknownNameError, "juggle"),
        ({"backend": {"name": "xr9"}}, UnknownNameError, "xr9"),
        ({"backend": "fake"}, InvalidArgumentError, "backend must be a mapping"),
        ({"recording": {"bag": "no"}}, InvalidArgumentError, "recording.bag must be bool"),
    ],
)
def test_bad_values_are_one_clear_error(data: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        EpisodeConfig.from_mapping(data)
    assert isinstance(info.value, CaptainError)


def test_cli_flags_and_ros_parameters_map_onto_the_same_config() -> None:
    ns = build_parser().parse_args(
        [
            "run",
            "--task",
            "stack",
            "--seed",
            "5",
            "--backend",
            "piper",
            "--config",
            "config/piper_dual.yaml",
            "--can",
            "can0,can1",
            "--emulate",
            "--out",
            "runs/ep",
            "--model-folder",
            "/m",
            "--engine",
            "llamacpp",
            "--profile",
            "compact",
            "--overwrite",
        ]
    )
    cli = EpisodeConfig.from_cli(ns)
    ros = EpisodeConfig.from_ros_parameters(
        {  # the robot, perception and policy nodes' parameters (and some that are not episodes')
            "backend": "piper",
            "task": "stack",
            "seed": 5,
            "backend_config": "config/piper_dual.yaml",
            "can": "can0,can1",
            "emulate": True,
            "segmenter": "default",
            "pointer": "default",
            "sam_folder": "",
            "model_device": "cpu",
            "policy": "scripted",
            "model_folder": "/m",
            "engine": "llamacpp",
            "profile": "compact",
            "output_dir": "runs/ep",
            "overwrite_output": True,
            "joint_state_rate_hz": 10.0,
            "key_file": "",
        }
    )
    assert cli == ros
    assert dict(cli.backend.options) == {
        "config": "config/piper_dual.yaml",
        "can": "can0,can1",
        "emulate": True,
    }


def test_rig_arguments_a_backend_does_not_take_are_left_out() -> None:
    args = {"config": "config/xr1.yaml", "can": "can0", "emulate": True, "rig": None}
    assert dict(BackendConfig.from_rig_args("ros_arm", **args).options) == {
        "config": "config/xr1.yaml"
    }
    assert dict(BackendConfig.from_rig_args("mujoco", **args).options) == {}
    assert dict(BackendConfig.from_rig_args("piper", rig="piper_dual").options) == {
        "rig": "piper_dual"
    }


def test_cli_defaults_and_flags_a_subcommand_lacks() -> None:
    ns = build_parser().parse_args(["run", "--no-bag", "--max-requests", "3", "--temperature", "0"])
    cfg = EpisodeConfig.from_cli(ns)
    assert cfg.recording == RecordingConfig(bag=False)
    assert cfg.budgets.budgets().max_requests == 3 and cfg.policy.temperature == 0.0
    assert (cfg.task, cfg.seed, cfg.out_dir, cfg.backend) == (
        "pick_place",
        1000,
        "runs/episode",
        BackendConfig("mujoco"),
    )
    bare = EpisodeConfig.from_cli(SimpleNamespace(task="stack"), seed=4, out_dir="o")
    assert (bare.task, bare.seed, bare.out_dir) == ("stack", 4, "o")
    with pytest.raises(InvalidArgumentError, match="seed must be a non-negative int"):
        EpisodeConfig.from_cli(build_parser().parse_args(["run", "--seed", "-2"]))


def test_a_goal_maps_onto_the_config_with_the_node_parameters(tmp_path: Path) -> None:
    from captain_ros.ros.episode_goal import goal_config

    params = {
        "policy": "scripted",
        "model_folder": "",
        "engine": "auto",
        "profile": "auto",
        "output_root": str(tmp_path),
        "allowed_root": "",
        "overwrite_output": False,
        "key_file": "",
    }
    goal = SimpleNamespace(
        task="stack",
        seed=3,
        policy="",
        output_dir="",
        max_requests=0,
        max_wall_time_s=0.0,
        max_physical_actions=7,
    )
    cfg = goal_config(goal, params, "fake", "ep1")
    assert cfg.out_dir == str(tmp_path / "ep1") and cfg.backend == BackendConfig("fake")
    assert cfg.policy == PolicyConfig("scripted", engine="auto") and cfg.profile == "auto"
    budgets = cfg.budgets.budgets()
    assert (budgets.max_requests, budgets.max_physical_actions) == (60, 7)  # 0: the default
    # a robot node that did not answer: the scene load refuses the goal, not the config
    with pytest.raises(UnknownNameError):  # the policy node refuses it first (robot_not_ready)
        goal_config(goal, params, "unknown", "e")
    with pytest.raises(InvalidArgumentError, match="seed must be a non-negative int"):
        goal_config(SimpleNamespace(**{**goal.__dict__, "seed": -1}), params, "fake", "e")
    with pytest.raises(UnknownNameError):
        goal_config(SimpleNamespace(**{**goal.__dict__, "task": ""}), params, "fake", "e")
    with pytest.raises(InvalidArgumentError):  # a goal's file must lie under the allowed root
        goal_config(
            SimpleNamespace(**{**goal.__dict__, "policy": "replay:/etc/x"}), params, "fake", "e"
        )


def test_eval_jobs_carry_the_config_and_a_worker_runs_it(tmp_path: Path) -> None:
    """make_jobs puts each job's config on the wire as plain data; run_job (the evaluation
    worker) reads it back and runs that very episode."""
    from captain_ros.evaluation.episode import run_job
    from captain_ros.evaluation.runner import make_jobs

    base = EpisodeConfig(
        backend=BackendConfig("fake"),
        budgets=BudgetConfig(max_requests=2),
        recording=RecordingConfig(bag=False, report=False),
    )
    jobs = make_jobs(["pick_place"], [3], tmp_path, base)
    wire = json.loads(json.dumps(jobs[0].__dict__))
    assert EpisodeConfig.from_mapping(wire["options"]) == base.replace(
        seed=3, out_dir=str(tmp_path / "pick_place" / "seed_00003")
    )
    rec = run_job(wire)
    assert (rec["task"], rec["seed"], rec["backend"], rec["policy"]) == (
        "pick_place",
        3,
        "fake",
        "scripted",
    )
    assert rec["requests"] <= 2
    folder = Path(jobs[0].out_dir)
    assert (folder / "summary.json").is_file()
    assert not (folder / "report.html").exists() and not (folder / "bag").exists()
