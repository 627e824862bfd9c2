"""``captain learn rl`` end to end on a tiny student in the real harness (fake backend):
rollouts in spawned worker processes, the weight sync, the log, resume, bad inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rl_loop_fixtures import TASK, make_critic, make_student  # noqa: E402

from captain_ros.cli.main import main  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)

LOG_KEYS = {
    "round",
    "return_mean",
    "success",
    "critic_loss",
    "critic_on_round",
    "kept_fraction",
    "kl",
    "wall_rollouts_s",
    "wall_update_s",
    "policy_version_rollouts",
    "policy_version",
    "stepped",
    "requests_sampled",
    "outcomes",
}


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    root = tmp_path_factory.mktemp("rl_assets")
    return make_student(root / "student"), make_critic(root / "critic")


def _args(assets, out: Path, rounds: int, *extra: str) -> list[str]:
    student, critic = assets
    return [
        "learn",
        "rl",
        "--policy-folder",
        str(student),
        "--critic",
        str(critic),
        "--tasks",
        TASK,
        "--starts",
        "2",
        "--group",
        "2",
        "--rounds",
        str(rounds),
        "--out",
        str(out),
        "--backend",
        "fake",
        "--max-requests",
        "4",
        "--max-new-tokens",
        "6",
        "--accumulation-rounds",
        "1",
        "--lr",
        "1e-2",
        "--threads",
        "1",
        "--no-progress",
        *extra,
    ]


def _log(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / "log.jsonl").read_text().splitlines()]


def _episodes(out: Path, k: int) -> list[Path]:
    return sorted(p.parent for p in (out / "rounds" / f"r{k:04d}").rglob("rollout.json"))


def _logprobs_under(
    student: Path, adapter: Path, prompt: list[int], completion: list[int], temperature=1.0
):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from captain_ros.learn.rl import token_logprobs

    model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(student)), str(adapter)
    ).eval()
    ids = torch.tensor(prompt + completion)
    pos = torch.arange(len(prompt), len(prompt) + len(completion))
    with torch.no_grad():
        return token_logprobs(model, ids, pos, temperature).numpy()


@pytest.mark.slow
def test_two_rounds_in_worker_processes_sync_weights_and_log(assets, tmp_path, capsys):
    import numpy as np

    from captain_ros.learn.rl.batch import read_rollout

    out = tmp_path / "run"
    code = main(
        _args(
            assets, out, 2, "--workers", "2", "--heldout-seeds", "1000-1001", "--heldout-every", "1"
        )
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert "round 1/2" in text and "round 2/2" in text
    rows = _log(out)
    assert [r["round"] for r in rows] == [1, 2]
    assert all(set(r) >= LOG_KEYS for r in rows)
    assert all(r["episodes"] == 4 and r["errors"] == 0 and r["skipped"] == 0 for r in rows)
    assert all(r["update_threads"] == 1 for r in rows)  # --threads 1, recorded per round
    assert [r["policy_version_rollouts"] for r in rows] == [0, 1]  # K = 1: a step per round
    assert [r["policy_version"] for r in rows] == [1, 2]
    assert all(r["heldout"]["episodes"] == 2 for r in rows)
    assert len((out / "heldout.jsonl").read_text().splitlines()) == 2
    assert rows[0]["adv_abs_mean"] > 0 and rows[0]["kept_fraction"] == 1.0
    # the critic that scored round 2, on round 2's states (before it trained on them)
    from captain_ros.learn.critic import Critic
    from captain_ros.learn.critic.train import evaluate
    from captain_ros.learn.episodes import load_run_dirs

    cv = rows[1]["critic_version_rollouts"]
    scored = Critic.load(out / "critic" / f"v{cv:04d}")
    want = evaluate(scored, load_run_dirs([str(e) for e in _episodes(out, 2)]).episodes)
    got = rows[1]["critic_on_round"]
    assert got["states"] == want["states"] == rows[1]["critic_states"]
    assert got["ece"] == pytest.approx(want["ece"]) and got["brier"] == pytest.approx(want["brier"])
    # every rollout of round 2 ran version 1 in a worker process ...
    eps = _episodes(out, 2)
    assert len(eps) == 4 and {read_rollout(e).version for e in eps} == {1}
    # ... and its recorded log-probs are those of the v1 adapter, not of v0
    tok = read_rollout(eps[0])
    prompt, completion = list(tok.prompts[0]), list(tok.completions[0])
    lp_v1 = _logprobs_under(assets[0], out / "policy" / "v0001", prompt, completion)
    lp_v0 = _logprobs_under(assets[0], out / "policy" / "v0000", prompt, completion)
    np.testing.assert_allclose(tok.logprobs[0], lp_v1, atol=1e-4)
    assert np.abs(lp_v1 - lp_v0).max() > 1e-3
    assert (out / "checkpoint" / "state.json").is_file()
    assert (out / "rounds" / "r0001" / "credit.json").is_file()


def test_a_tempered_round_records_and_scores_the_tempered_distribution(assets, tmp_path, capsys):
    """At --temperature 0.5 the rollout log-probs are those of pi_0.5 (what was sampled), and
    the update scores at 0.5 too: before its step the policy is the rollout policy, so every
    token's ratio is 1 and none is masked."""
    import numpy as np

    from captain_ros.learn.rl.batch import read_rollout

    out = tmp_path / "run"
    code = main(_args(assets, out, 1, "--workers", "1", "--temperature", "0.5"))
    assert code == 0, capsys.readouterr().out
    (row,) = _log(out)
    assert row["kept_fraction"] == 1.0 and row["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    tok = read_rollout(_episodes(out, 1)[0])
    prompt, completion = list(tok.prompts[0]), list(tok.completions[0])
    v0 = out / "policy" / "v0000"
    tempered = _logprobs_under(assets[0], v0, prompt, completion, 0.5)
    np.testing.assert_allclose(tok.logprobs[0], tempered, atol=1e-4)
    assert np.abs(tempered - _logprobs_under(assets[0], v0, prompt, completion)).max() > 1e-3
    assert json.loads((out / "run.json").read_text())["temperature"] == 0.5


def _comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("wall_")} for r in rows]


@pytest.mark.slow
def test_resume_after_a_stop_reproduces_the_straight_run(assets, tmp_path, capsys):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert main(_args(assets, straight, 2)) == 0
    assert main(_args(assets, resumed, 1)) == 0
    shutil.rmtree(resumed / "rounds" / "r0001" / TASK)  # what a resume never needs again
    (resumed / "rounds" / "r0002" / "junk").mkdir(parents=True)  # a round killed half-way
    assert main(_args(assets, resumed, 2, "--resume")) == 0
    assert _comparable(_log(resumed)) == _comparable(_log(straight))
    capsys.readouterr()
    # a resume with changed options is refused, and the run is left as it was
    assert main(_args(assets, resumed, 3, "--resume", "--lr", "1e-3")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("captain learn rl: error: cannot resume with changed options: --lr")
    assert len(_log(resumed)) == 2


def test_a_run_stopped_after_its_first_rollouts_resumes_without_rolling_out_again(
    assets, tmp_path, capsys
):
    """Killed in round 1's update (no checkpoint yet): --resume reads the finished rollouts back,
    reruns the one that did not finish, and ends where the straight run ends."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert main(_args(assets, straight, 1)) == 0
    assert main(_args(assets, resumed, 1)) == 0
    for gone in ("checkpoint", "log.jsonl", "policy/v0001", "critic/v0002"):
        shutil.rmtree(resumed / gone) if (resumed / gone).is_dir() else (resumed / gone).unlink()
    eps = _episodes(resumed, 1)
    (eps[0] / "summary.json").unlink()  # this one was still running
    (eps[1] / "junk.txt").write_text("x")
    assert main(_args(assets, resumed, 1, "--resume")) == 0
    (row,) = _log(resumed)
    assert row["rollouts_reused"] == 3 and _log(straight)[0]["rollouts_reused"] == 0
    assert _comparable(_log(resumed)) == [
        {**r, "rollouts_reused": 3} for r in _comparable(_log(straight))
    ]
    assert (eps[0] / "summary.json").is_file()
    capsys.readouterr()
    # without a checkpoint, changed options are refused too
    shutil.rmtree(resumed / "checkpoint")
    assert main(_args(assets, resumed, 1, "--resume", "--lr", "1e-3")) == 2
    assert "cannot resume with changed options: --lr" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--tasks": "no_such_task"}, "unknown task 'no_such_task'"),
        ({"--tasks": "stack"}, "was not trained on task 'stack'"),
        ({"--critic": "{tmp}/nope"}, "is not a critic folder"),
        ({"--policy-folder": "{tmp}/nope"}, "no such folder"),
        ({"--starts": "0"}, "--starts must be in 1..1000"),
        ({"--heldout-seeds": "10-12"}, "held-out seed 10 is a training seed"),
        ({"--heldout-seeds": "9-3"}, "--heldout-seeds"),
        ({"--out": "{tmp}/full"}, "is not empty"),
        ({"--temperature": "0"}, "--temperature must be in (0, 2]"),
        ({"--engine": "llamacpp"}, "--engine llamacpp needs a GGUF of the policy folder"),
        (
            {"--engine": "llamacpp", "--served-url": "http://localhost:8000/v1"},
            "--engine llamacpp and --served-url exclude each other",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(assets, tmp_path, capsys, change, message):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("someone else's")
    args = _args(assets, tmp_path / "run", 1)
    for flag, value in change.items():
        if flag not in args:
            args += [flag, ""]
        args[args.index(flag) + 1] = value.format(tmp=tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("captain learn rl: error:") and message in err[0]
    assert not (tmp_path / "run" / "log.jsonl").exists()


@pytest.mark.slow
def test_rollouts_run_as_ray_tasks_on_a_local_cluster_of_two_workers(assets, tmp_path, capsys):
    """``--ray local --workers 2``: every rollout of both rounds runs in a Ray worker process (not
    the driver), the weights still sync (round 2 samples version 1), and the log is complete."""
    import os

    ray = pytest.importorskip("ray")
    from captain_ros.learn.rl.batch import read_rollout

    out = tmp_path / "run"
    try:
        code = main(_args(assets, out, 2, "--workers", "2", "--ray", "local"))
        text = capsys.readouterr().out
        assert code == 0, text
        assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
    finally:
        ray.shutdown()
    rows = _log(out)
    assert [r["round"] for r in rows] == [1, 2]
    assert all(r["episodes"] == 4 and r["errors"] == 0 for r in rows)
    workers = set()
    for k in (1, 2):
        eps = _episodes(out, k)
        assert len(eps) == 4 and {read_rollout(e).version for e in eps} == {k - 1}
        for e in eps:
            worker = json.loads((e / "rollout.json").read_text())["worker"]
            assert worker["ran_on"] == "ray" and worker["pid"] != os.getpid()  # not the driver
            workers.add(worker["pid"])
    assert 1 <= len(workers) <= 2  # Ray reuses its two worker processes across the rounds
