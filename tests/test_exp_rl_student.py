"""Issue 35's orchestrator (benchmarks/experiments/exp_rl_student.py): its commands and its report.

The heavy stages run the project's own tested commands (``learn critic``, ``learn export``,
``learn rl``, ``learn rl-student``, ``exp_student.py``); here the stage wiring is checked with
``--dry-run``, and the report's paired statistics on evaluation folders written as
``captain eval`` writes them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from captain_ros.harness.record.episode_record import EpisodeRecord

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "experiments" / "exp_rl_student.py"
sys.path.insert(0, str(SCRIPT.parent))


def _eval_folder(folder: Path, task: str, wins: list[bool], first_seed: int = 1500) -> None:
    folder.mkdir(parents=True)
    eps = [
        EpisodeRecord(
            task,
            first_seed + i,
            outcome="success_with_finish" if ok else "other_failure",
            host_success=ok,
            strict_success=ok,
            finished=ok,
        ).to_dict()
        for i, ok in enumerate(wins)
    ]
    (folder / "eval.json").write_text(json.dumps({"episodes": eps}))


def _arm(root: Path) -> Path:
    arm = root / "six"
    (arm / "student" / "adapter").mkdir(parents=True)
    (arm / "data").mkdir()
    return arm


def test_dry_run_names_every_stage_in_order(tmp_path: Path) -> None:
    _arm(tmp_path)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--run", str(tmp_path), "--arm", "six",
         "--tasks", "stack,insertion", "--starts", "8", "--group", "2", "--eval-rounds", "5,2",
         "--dry-run", "--stages", "critic,gguf,rl,eval", "--", "--max-requests", "20"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cmds = [line[2:] for line in out.splitlines() if line.startswith("$ ")]
    assert "learn critic --episodes" in cmds[0] and cmds[0].endswith(f"{tmp_path}/six_rl/critic0")
    # checked on the arm's own prompts, not the default chat prompt
    assert "learn export" in cmds[1]
    assert cmds[1].endswith(f"{tmp_path}/six/student --data {tmp_path}/six/data")
    rl = [c for c in cmds if " learn rl " in c]
    assert [c.split("--rounds ")[1].split()[0] for c in rl] == ["2", "5"]  # sorted
    for c in rl:
        assert "--accumulation-rounds 1 --engine llamacpp" in c and "--tasks stack,insertion" in c
        assert c.endswith("--max-requests 20") and f"--policy-folder {tmp_path}/six/student" in c
    stacked = [c for c in cmds if "learn rl-student" in c]
    assert stacked[0].endswith(f"six_rl/r2/adapter --out {tmp_path}/six_rl_r2/student")
    evals = [c for c in cmds if "exp_student.py" in c]
    assert "--arm six_rl_r5" in evals[1] and "--stages export,eval,report" in evals[1]
    assert "--split heldout" in evals[1] and "--temperature 0.0 " in evals[1]  # greedy, as shipped


def _dry_run(root: Path, stages: str) -> list[str]:
    """The commands ``--dry-run`` prints for the arm ``six`` on stack."""
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--run", str(root), "--arm", "six", "--tasks", "stack",
         "--dry-run", "--stages", stages],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line[2:] for line in out.splitlines() if line.startswith("$ ")]


def test_the_critic_reads_the_students_dev_episodes_and_a_failed_export_is_redone(
    tmp_path: Path,
) -> None:
    arm = _arm(tmp_path)
    for folder in ("eval_dev", "eval_dev_t1"):  # greedy, and at the rollouts' temperature
        (arm / folder / "stack").mkdir(parents=True)
    (arm / "eval_dev_t0.5" / "stack").mkdir(parents=True)  # another temperature: not this run's
    # the export's record after a failed check (it is written before the error, for inspection)
    (arm / "student" / "export.json").write_text(
        json.dumps({"gguf": "student.q8_0.gguf", "greedy_tokens_agree": False})
    )
    cmds = _dry_run(tmp_path, "critic,gguf")
    assert f"{arm}/eval_dev/stack " in cmds[0] and f"{arm}/eval_dev_t1/stack " in cmds[0]
    assert "eval_dev_t0.5" not in cmds[0]
    assert len(cmds) == 2 and "learn export" in cmds[1]  # the failed export is not taken as done
    (arm / "student" / "export.json").write_text(
        json.dumps({"gguf": "student.q8_0.gguf", "greedy_tokens_agree": True})
    )
    assert _dry_run(tmp_path, "gguf") == []  # a checked export is done


def test_the_report_pairs_each_round_with_round_zero_by_seed(tmp_path, capsys) -> None:
    import exp_rl_student as exp

    arm = _arm(tmp_path)
    base = [True] * 10 + [False] * 10
    better = [True] * 10 + [True] * 9 + [False]  # 9 failures of round 0 now solved, none lost
    _eval_folder(arm / "eval_heldout" / "stack" / "1500-1519", "stack", base)
    _eval_folder(tmp_path / "six_rl_r2" / "eval_heldout" / "stack" / "1500-1519", "stack", better)
    ns = exp.argparse.Namespace(
        tasks=["stack", "insertion"],
        eval_rounds=[2],
        split="heldout",
        arm="six",
        eval_temperature=0.0,
    )
    (tmp_path / "six_rl").mkdir()
    res = exp.report(ns, tmp_path, arm, tmp_path / "six_rl")
    stack = res["rounds"][2]["tasks"]["stack"]
    assert stack["paired"] == 20 and stack["round0"]["successes"] == 10
    assert stack["later"]["successes"] == 19 and stack["mcnemar"]["only_b"] == 9
    assert abs(stack["mcnemar_p"] - 2 / 2**9) < 1e-12  # exact: 9 discordant pairs, all one way
    assert "insertion" not in res["rounds"][2]["tasks"]  # no evaluation, no claim
    assert res["rounds"][2]["critic_before"] == {"episodes": 0}  # eval.json alone: no states
    table = capsys.readouterr().out
    assert "| stack | 10/20 [30%, 70%] | 19/20 [76%, 99%] (p = 0.00391) |" in table
    assert "| insertion | - | - |" in table
    assert json.loads((tmp_path / "six_rl" / "report.json").read_text())["split"] == "heldout"


def test_a_round_without_round_zero_on_its_seeds_is_shown_unpaired(tmp_path, capsys) -> None:
    import exp_rl_student as exp

    arm = _arm(tmp_path)
    later = tmp_path / "six_rl_r1" / "eval_heldout_t1" / "restack" / "1500-1503"
    _eval_folder(later, "restack", [True, True, True, False])
    (tmp_path / "six_rl").mkdir()
    ns = exp.argparse.Namespace(
        tasks=["restack"], eval_rounds=[1], split="heldout", arm="six", eval_temperature=1.0
    )
    res = exp.report(ns, tmp_path, arm, tmp_path / "six_rl")
    assert res["rounds"][1]["tasks"]["restack"]["paired"] == 0
    table = capsys.readouterr().out
    assert "| restack | - | 3/4 [30%, 95%] (unpaired: no round 0) |" in table


def test_a_sampled_evaluation_is_reported_from_its_own_folders(tmp_path, capsys) -> None:
    import exp_rl_student as exp

    arm = _arm(tmp_path)
    greedy = arm / "eval_heldout" / "stack" / "1500-1503"
    _eval_folder(greedy, "stack", [True] * 4)
    _eval_folder(
        tmp_path / "six_rl_r2" / "eval_heldout" / "stack" / "1500-1503", "stack", [True] * 4
    )
    _eval_folder(
        arm / "eval_heldout_t1" / "stack" / "1500-1503", "stack", [False, False, True, True]
    )
    _eval_folder(
        tmp_path / "six_rl_r2" / "eval_heldout_t1" / "stack" / "1500-1503", "stack", [True] * 4
    )
    (tmp_path / "six_rl").mkdir()
    ns = exp.argparse.Namespace(
        tasks=["stack"], eval_rounds=[2], split="heldout", arm="six", eval_temperature=1.0
    )
    stack = exp.report(ns, tmp_path, arm, tmp_path / "six_rl")["rounds"][2]["tasks"]["stack"]
    assert stack["round0"]["successes"] == 2 and stack["later"]["successes"] == 4
    assert stack["mcnemar"]["only_b"] == 2  # the T = 1 episodes, never the greedy ones
    assert exp.eval_dir(arm, "dev", 0.0).name == "eval_dev"
    assert exp.eval_dir(arm, "dev", 0.7).name == "eval_dev_t0.7"


def test_the_report_lists_each_rounds_rollouts_and_the_scoring_critics_calibration(
    tmp_path: Path, capsys
) -> None:
    import exp_rl_student as exp

    arm = _arm(tmp_path)
    rl = tmp_path / "six_rl"
    (rl / "run").mkdir(parents=True)
    rows = [
        {"round": 1, "episodes": 128, "strict_success": 0.8125, "critic_version_rollouts": 1,
         "outcomes": {"false_finish": 14, "success_with_finish": 104},
         "critic_on_round": {"ece": 0.26, "brier": 0.3, "auc": 0.59, "within_group_auc": 0.61},
         "wall_rollouts_s": 4300.0, "wall_update_s": 3100.0},
        # a row from before the loop logged the figures, its critic folder gone: no figures
        {"round": 2, "episodes": 128, "strict_success": 0.875, "critic_version_rollouts": 2,
         "outcomes": {"success_with_finish": 112}, "wall_rollouts_s": 4000.0},
    ]  # fmt: skip
    (rl / "run" / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ns = exp.argparse.Namespace(
        tasks=["restack"], eval_rounds=[], split="heldout", arm="six", eval_temperature=1.0
    )
    res = exp.report(ns, tmp_path, arm, rl)
    assert [r["strict"] for r in res["rollouts"]] == [104, 112]
    assert res["rollouts"][1]["critic_on_round"] is None
    table = capsys.readouterr().out
    assert (
        "| 1 | 104/128 | false_finish 14, success_with_finish 104 | 0.260 / 0.300 / 0.590 / "
        "0.610 | 4300 | 3100 |" in table
    )
    assert "| 2 | 112/128 | success_with_finish 112 | - / - / - / - | 4000 | - |" in table
