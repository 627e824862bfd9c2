"""``captain learn critic``: run dirs in, critic folder + metrics.json out, clear errors."""

import json

import pytest

torch = pytest.importorskip("torch")

from rl_records import record_from_arrays  # noqa: E402

from captain_ros.cli import learn_critic  # noqa: E402
from captain_ros.cli.main import main as captain_main  # noqa: E402
from captain_ros.learn.critic import Critic  # noqa: E402
from captain_ros.learn.critic.synthetic import synthetic_episodes  # noqa: E402
from captain_ros.tasks.features import FEATURE_NAMES  # noqa: E402

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def _run_dir(tmp_path, n_groups=40):
    """Episode folders (as the recorder leaves them: a privileged.jsonl each) and a loader that
    returns hand-built records for them (the lead's load_episode_record in production)."""
    records = {}
    run = tmp_path / "run"
    for k, e in enumerate(synthetic_episodes(n_groups, seed=5)):
        folder = run / f"ep{k:04d}"
        folder.mkdir(parents=True)
        (folder / "privileged.jsonl").write_text("")
        records[str(folder)] = record_from_arrays(e, seed=k, out_dir=str(folder))
    bad = run / "broken"
    bad.mkdir()
    (bad / "privileged.jsonl").write_text("")

    def loader(folder):
        if folder not in records:
            raise ValueError("privileged.jsonl line 1: not JSON")
        return records[folder]

    return run, loader


def test_trains_writes_the_folder_and_heldout_metrics(tmp_path, capsys):
    run, loader = _run_dir(tmp_path)
    out = tmp_path / "critic"
    rc = learn_critic.main(
        ["--episodes", str(run), "--out", str(out), "--epochs", "2", "--heldout-fraction", "0.25"],
        loader=loader,
    )
    assert rc == 0
    m = json.loads((out / "metrics.json").read_text())
    assert set(m["heldout"]) >= {"auc", "within_group_auc", "brier", "ece", "states", "episodes"}
    assert m["heldout"]["auc"] > 0.7
    assert m["split"]["train_episodes"] + m["split"]["heldout_episodes"] == 160
    assert m["anchors"]["auc"] == 0.970 and m["critic_version"] == 1
    assert m["skipped"][0]["folder"].endswith("broken") and "not JSON" in m["skipped"][0]["reason"]
    assert Critic.load(out, FEATURE_NAMES).version == 1
    text = capsys.readouterr()
    assert "held-out: AUC" in text.out and "skipped 1 unreadable" in text.err
    # continue training from the folder
    rc = learn_critic.main(
        [
            "--episodes",
            str(run),
            "--out",
            str(tmp_path / "c2"),
            "--epochs",
            "1",
            "--init",
            str(out),
        ],
        loader=loader,
    )
    assert rc == 0 and Critic.load(tmp_path / "c2").version == 2


def test_no_episodes_is_one_clear_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = learn_critic.main(
        ["--episodes", str(tmp_path / "empty"), "--out", str(tmp_path / "o")], loader=lambda f: None
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no readable episode records" in err[0]
    rc = captain_main(
        ["learn", "critic", "--episodes", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("captain learn critic: error:")
