"""RE-0 runs a learned student in the prompt profile it was trained with (its SFT rows, audited
episodes and distilled corpus share one input format), and every seat of a generation, the
scripted teacher in the cold pass included, uses that profile."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

torch = pytest.importorskip("torch")

from tiny_student import model_job, save_tiny_student  # noqa: E402

from captain_ros.core.errors import InvalidArgumentError  # noqa: E402
from captain_ros.research.re0 import cli as learn_re0  # noqa: E402
from captain_ros.research.re0.loop import LoopConfig, seat_jobs  # noqa: E402
from captain_ros.research.re0.rollouts import student_job  # noqa: E402
from captain_ros.research.re0.seats import seat_profile  # noqa: E402

pytestmark = [pytest.mark.learn]


@pytest.fixture(scope="module")
def helpers_student(tmp_path_factory):
    torch.set_num_threads(1)
    folder = save_tiny_student(tmp_path_factory.mktemp("tiny") / "student")
    (folder / "sft_config.json").write_text(json.dumps({"profile": "helpers"}))
    return folder


def _start_line(episode_dir) -> dict:
    first = (episode_dir / "trajectory.jsonl").read_text().splitlines()[0]
    return json.loads(first)


def test_a_model_seat_runs_in_its_trained_profile(helpers_student, tmp_path):
    seat = f"model:{helpers_student}"
    assert seat_profile(seat) == "helpers"
    assert (
        seat_profile("scripted") == "default" and seat_profile("scripted", "compact") == "compact"
    )
    with pytest.raises(InvalidArgumentError, match="trained with the 'helpers'"):
        seat_profile(seat, "default")
    job = model_job(
        seat, tmp_path / "ep", seat_options={"max_new_tokens": 8}, budgets={"max_requests": 2}
    )
    student_job(job)
    start = _start_line(tmp_path / "ep")
    assert start["profile"] == "helpers"
    assert "def " in start["session"]["prelude"]  # the helper library ran in the session


def test_every_seat_of_a_generation_shares_the_students_profile(helpers_student, tmp_path):
    cfg = LoopConfig(
        task="pick_place", seeds=(0, 1), student=f"model:{helpers_student}", out=str(tmp_path)
    )
    cold = seat_jobs(cfg, "scripted", "cold_collect", cfg.seeds)
    refine = seat_jobs(cfg, cfg.student, "refine_collect", cfg.seeds)
    assert {j.options["profile"] for j in cold + refine} == {"helpers"}
    testbed = LoopConfig(
        task="pick_place", seeds=(0,), student="scripted-faulty", out=str(tmp_path)
    )
    assert seat_jobs(testbed, testbed.student, "c", (0,))[0].options["profile"] == "default"


def test_the_command_refuses_a_student_in_another_profile(helpers_student, tmp_path):
    parser = argparse.ArgumentParser()
    learn_re0.add_arguments(parser)
    base = ["--student", str(helpers_student), "--task", "pick_place", "--out", str(tmp_path)]
    cfg, _ = learn_re0.config(parser.parse_args(base))
    assert cfg.profile is None and seat_profile(cfg.student, cfg.profile) == "helpers"
    with pytest.raises(InvalidArgumentError, match="trained with the 'helpers'"):
        learn_re0.config(parser.parse_args([*base, "--profile", "compact"]))
    copy = tmp_path / "plain"
    shutil.copytree(helpers_student, copy)
    (copy / "sft_config.json").unlink()
    cfg, _ = learn_re0.config(parser.parse_args([*base[:1], str(copy), *base[2:]]))
    assert seat_profile(cfg.student, cfg.profile) == "default"
