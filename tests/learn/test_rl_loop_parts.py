"""The loop's parts: the critic's early stop in a real harness episode, rollout segments,
the per-trajectory request cap over segments, start states, version publishing."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from captain_ros.core.errors import InvalidArgumentError  # noqa: E402
from captain_ros.learn.credit import EarlyStop  # noqa: E402
from captain_ros.learn.errors import RecordError  # noqa: E402
from captain_ros.learn.rl.batch import RolloutTokens, read_rollout, rollout_segments  # noqa: E402
from captain_ros.learn.rl.rollout import CriticEarlyStop  # noqa: E402
from captain_ros.learn.rl.workers import JobSpec, heldout_jobs, round_jobs, round_starts  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def _critic(bias: float):
    """A real critic for pick_place whose output layer is shifted to V = sigmoid(~bias)."""
    from captain_ros.learn.critic import Critic
    from captain_ros.learn.critic.synthetic import synthetic_episodes
    from captain_ros.tasks.features import FEATURE_NAMES

    eps = synthetic_episodes(2, seed=0, tasks=("pick_place",), mean_requests=4)
    c = Critic.for_episodes(eps, FEATURE_NAMES, tasks=["pick_place"])
    with torch.no_grad():
        c.model.weights[-1].zero_()
        c.model.biases[-1].fill_(bias)
    return c


def _key(control: bool) -> str:
    rule = EarlyStop()
    return next(
        k
        for k in (f"pick_place:7:r1:g{i}" for i in range(1000))
        if rule.in_control_slice(k) == control
    )


def _episode(tmp_path, stop: CriticEarlyStop, n: int = 14):
    from captain_ros.evaluation.config import (
        BackendConfig,
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )
    from captain_ros.evaluation.episode import local_setup
    from captain_ros.policy.replay import ReplayPolicy

    policy = ReplayPolicy([{"reasoning": "look", "code": "robot.observe()"}] * n)
    config = EpisodeConfig(
        "pick_place",
        7,
        str(tmp_path),
        policy=PolicyConfig("replay"),
        backend=BackendConfig("fake"),
        budgets=BudgetConfig(max_requests=n),
        recording=RecordingConfig(bag=False, report=False),
    )
    setup, backend = local_setup(config, policy=policy)
    setup.observers.append(stop)
    try:
        return setup.run()
    finally:
        backend.close()


@pytest.mark.parametrize(
    "bias, control, stopped", [(-10.0, False, True), (-10.0, True, False), (10.0, False, False)]
)
def test_critic_early_stop_in_a_real_episode(tmp_path, bias, control, stopped):
    stop = CriticEarlyStop(_critic(bias), EarlyStop(), _key(control), "pick_place")
    rec = _episode(tmp_path, stop)
    if stopped:  # V < 0.02 after requests 6..10: cut before request 11, settled as budget
        assert rec.requests == 10 and stop.stopped_after == 10
        assert rec.end_reason == "stop:early_stop" and rec.outcome == "budget_exhausted"
        assert rec.return_R == pytest.approx(-0.1)
    else:
        assert rec.requests == 14 and stop.stopped_after is None
        assert rec.end_reason == "budget:requests"
    # the observer scored s_2 .. s_T at their own index (one value after each request but the last)
    assert len(stop.values_after) == rec.requests - (0 if stopped else 1)
    lines = [json.loads(ln) for ln in (tmp_path / "privileged.jsonl").read_text().splitlines()]
    states = [d for d in lines if d["type"] == "state"]
    assert len(states) == rec.requests + 1


def _tokens(prompts, completions) -> RolloutTokens:
    lps = tuple(tuple(-0.5 for _ in c) for c in completions)
    return RolloutTokens(
        0, "k", tuple(map(tuple, prompts)), tuple(map(tuple, completions)), lps, (), None
    )


def test_segments_follow_the_append_only_history():
    p1, c1 = [1, 2, 3], [4, 5]
    p2, c2 = [1, 2, 3, 4, 5, 9], [6]  # extends prompt 1 + reply 1
    p3, c3 = [1, 2, 3, 7, 7], [8, 8]  # reply re-rendered: a new segment
    p4, c4 = [1, 2, 3, 7, 7, 8, 8, 9], []  # a failed generation: no tokens
    p5, c5 = [1, 2, 3, 7, 7, 8, 8, 9, 9], [5]
    segs = rollout_segments("ep", _tokens([p1, p2, p3, p4, p5], [c1, c2, c3, c4, c5]))
    assert [s.requests for s in segs] == [(1, 2), (3,), (5,)]
    assert segs[0].input_ids.tolist() == [1, 2, 3, 4, 5, 9, 6]
    assert segs[0].request_of_token.tolist() == [0, 0, 0, 1, 1, 0, 2]
    assert {s.policy_version for s in segs} == {0}


def test_at_most_8_requests_per_trajectory_across_segments():
    from test_rl_update_lora import tiny_lora

    from captain_ros.learn.rl import PolicyUpdater, UpdateConfig

    prompts, comps = [], []
    for t in range(12):  # every prompt diverges: 12 segments
        prompts.append([1, 2, 10 + t])
        comps.append([20 + t, 30])
    segs = rollout_segments("ep", _tokens(prompts, comps))
    assert len(segs) == 12
    upd = PolicyUpdater(tiny_lora(0), UpdateConfig(lr=1e-3, accumulation_rounds=1, warmup_steps=0))
    st = upd.accumulate_round(segs, {"ep": {t: 1.0 for t in range(1, 13)}})
    assert st.requests_total == 12 and st.requests_sampled == 8 and st.tokens == 16


def test_read_rollout_refuses_malformed_files(tmp_path):
    (tmp_path / "rollout.json").write_text(
        json.dumps(
            {
                "version": 0,
                "episode_key": "k",
                "requests": [
                    {"t": 1, "shared": 0, "extra": [1, 2], "completion": [3], "logprobs": [-1.0]},
                    {"t": 2, "shared": 5, "extra": [], "completion": [3], "logprobs": [-1.0]},
                ],
            }
        )
    )
    with pytest.raises(RecordError, match="shared prefix 5"):
        read_rollout(tmp_path)
    with pytest.raises(RecordError, match="missing"):
        read_rollout(tmp_path / "nope")


def test_start_states_are_training_seeds_fixed_by_seed_and_round(tmp_path):
    a = round_starts(0, 3, ["pick_place", "stack"], 6)
    assert (
        a
        == round_starts(0, 3, ["pick_place", "stack"], 6)
        != round_starts(0, 4, ["pick_place", "stack"], 6)
    )
    assert [t for t, _ in a] == ["pick_place", "stack"] * 3
    assert all(0 <= s < 1000 for _, s in a) and len({s for _, s in a}) == 6
    spec = JobSpec("base", "fake", str(tmp_path))
    jobs = round_jobs(spec, 0, 3, ["pick_place"], 2, 4, tmp_path / "v", "critic", True)
    assert len(jobs) == 8 and len({j.out_dir for j in jobs}) == 8
    assert len({j.options["rl"]["sample_seed"] for j in jobs}) == 8  # G rollouts differ
    held = heldout_jobs(spec, 0, 3, ["pick_place"], [1000, 1001], tmp_path / "v")
    assert [j.seed for j in held] == [1000, 1001] and not held[0].options["rl"]["early_stop"]
    assert (
        held[0].options["rl"]["sample_seed"]
        == heldout_jobs(spec, 0, 9, ["pick_place"], [1000], tmp_path / "v")[0].options["rl"][
            "sample_seed"
        ]
    )


def test_published_versions_are_complete_and_pruned(tmp_path):
    from test_rl_update_lora import tiny_lora

    from captain_ros.learn.rl.sync import (
        load_adapter_weights,
        publish_adapter,
        published_versions,
        read_version,
    )

    model = tiny_lora(0)
    for v in range(5):
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.fill_(float(v))
        publish_adapter(model, tmp_path, v)
    assert published_versions(tmp_path) == [2, 3, 4]
    assert read_version(tmp_path / "policy" / "v0003") == 3
    other = tiny_lora(0)
    load_adapter_weights(other, tmp_path / "policy" / "v0003")
    b = [p for n, p in other.named_parameters() if "lora_B" in n]
    assert all(float(p.mean()) == 3.0 for p in b)


def test_options_refuse_bad_values(tmp_path):
    from captain_ros.learn.rl.options import RLOptions

    base = dict(policy_folder="x", critic="y", tasks=("pick_place",), out=str(tmp_path))
    RLOptions(**base)
    RLOptions(**base, served_url="http://localhost:8000/v1")
    for bad in (
        {"group": 0},
        {"backend": "piper"},
        {"heldout_seeds": (5,)},
        {"tasks": ()},
        {"lr": 0.0},
        {"max_requests": 0},
        {"served_url": "localhost:8000"},
        {"temperature": 0.0},
        {"temperature": 2.5},
        {"temperature": 0.5, "served_url": "http://localhost:8000/v1"},
    ):
        with pytest.raises(InvalidArgumentError):
            RLOptions(**{**base, **bad})
    saved = RLOptions(**base).to_dict()
    assert RLOptions(**{**base, "starts": 8}).resume_conflicts(saved) == ["--starts 64 -> 8"]
    assert RLOptions(**{**base, "rounds": 9, "workers": 2}).resume_conflicts(saved) == []
    assert np.isfinite(saved["lr"])


def test_rollouts_run_with_the_prompt_profile_the_student_was_trained_with(tmp_path):
    """CaPtain's format alignment: a `helpers` SFT student is rolled out under `helpers`."""
    from captain_ros.learn.rl.loop import job_options
    from captain_ros.learn.rl.options import RLOptions

    opts = RLOptions(policy_folder="student", critic="critic", tasks=("pick_place",), out="o")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "sft_config.json").write_text(json.dumps({"profile": "helpers"}))
    assert job_options(opts, str(tmp_path / "helpers")).profile == "helpers"
    assert job_options(opts, str(tmp_path)).profile == "default"  # a base model
    assert job_options(opts, str(tmp_path)).budgets.mode == "rl"
    assert job_options(opts, str(tmp_path)).budgets.budgets().max_physical_actions == 120


def test_pool_workers_exit_when_the_run_process_is_killed(tmp_path):
    """A run killed hard (SIGKILL, the OOM killer) leaves no workers rolling out for nobody."""
    import subprocess
    import sys
    import time

    script = (
        "import os, sys\n"
        "from captain_ros.learn.rl.workers import RolloutPool\n"
        "pool = RolloutPool(2)\n"
        "pids = {pool._pool.submit(os.getpid).result() for _ in range(8)}\n"
        "print(' '.join(map(str, pids)), flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    pids = [int(p) for p in out.stdout.split()]
    assert out.returncode == -9 and pids
    deadline = time.monotonic() + 15
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in alive if _alive(p)]
    assert not alive, f"workers {alive} outlived the killed run"


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False
