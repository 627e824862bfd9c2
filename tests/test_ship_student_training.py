"""``scripts/ship_student.py`` keeps a student's training stages: ``student.json``'s ``training``
lists every ``learn sft`` run its weights went through (a continuation from a shipped student adds
its own after the parent's), and the card gives each stage and the total."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ship_student.py"


@pytest.fixture(scope="module")
def ship() -> Any:
    spec = importlib.util.spec_from_file_location("ship_student", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(steps: int, epochs: float, lr: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """``metrics.json`` and ``sft_config.json`` of a ``learn sft`` run on 608 rows."""
    metrics = {"steps": steps, "train_loss": 0.2, "eval_loss": 0.001, "train_s": 600.0,
               "tokens_per_s": 200.0}  # fmt: skip
    sft = {"options": {"batch_size": 1, "grad_accum": 2, "epochs": epochs, "learning_rate": lr},
           "rows": {"train": 608}}  # fmt: skip
    return metrics, sft


def _package(root: Path, name: str, adapter: bytes, training: list[Any] | None) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "adapter.f16.gguf").write_bytes(adapter)
    record = {"base": "smollm2", "base_sha256": "0" * 64, "adapter": "adapter.f16.gguf",
              "profile": "student", "tasks": ["stack"]}  # fmt: skip
    if training is not None:
        record["training"] = training
    (folder / "student.json").write_text(json.dumps(record))


def _import(root: Path, imported_from: dict[str, Any]) -> dict[str, Any]:
    """``learn sft`` options of a run started from an imported student folder."""
    folder = root / "imported"
    (folder / "adapter").mkdir(parents=True)
    (folder / "sft_config.json").write_text(json.dumps({"imported_from": imported_from}))
    return {"init_adapter": str(folder / "adapter")}


def test_a_stage_is_recorded_in_numbers(ship: Any) -> None:
    stage = ship.training_stage(*_run(300, 2.0, 5e-4))
    assert stage["steps"] == 300 and stage["scheduled_steps"] == 608
    assert stage["epochs"] == pytest.approx(300 * 2 / 608, abs=1e-4)
    assert (stage["learning_rate"], stage["train_rows"]) == (5e-4, 608)


def test_earlier_stages_come_from_the_import_or_the_package_still_holding_it(
    ship: Any, tmp_path: Path
) -> None:
    from captain_ros.policy.students import file_sha256

    first = ship.training_stage(*_run(300, 2.0, 5e-4))
    assert ship.earlier_training({"init_adapter": None}, tmp_path) == []  # a fresh adapter
    # the import carries its stages (learn student-folder copies them)
    opts = _import(tmp_path / "a", {"student": "default", "sha256": "x", "training": [first]})
    assert ship.earlier_training(opts, tmp_path) == [first]
    # an import from before that: the package's student, while it holds the imported adapter
    _package(tmp_path / "pkg", "default", b"GGUF parent", [first])
    sha = file_sha256(tmp_path / "pkg" / "default" / "adapter.f16.gguf")
    opts = _import(tmp_path / "b", {"student": "default", "sha256": sha})
    assert ship.earlier_training(opts, tmp_path / "pkg") == [first]
    # not when the package has moved on: the earlier stages are then unknown, and said so
    opts = _import(tmp_path / "c", {"student": "default", "sha256": "another adapter"})
    assert ship.earlier_training(opts, tmp_path / "pkg") is None
    assert ship.history_lines(None)[0] == [
        "- The earlier stages' steps were not recorded with the imported student."
    ]


def test_the_card_gives_every_stage_and_the_total(ship: Any) -> None:
    first = ship.training_stage(*_run(300, 2.0, 5e-4))
    second = ship.training_stage(*_run(304, 1.0, 2.67e-4))
    assert ship.history_lines([second]) == ([], "", [])  # one stage: the run's line says it all
    before, this, whole = ship.history_lines([first, second])
    assert len(before) == 1 and before[0].startswith(
        "- Stage 1: 300 optimizer steps, epoch 0.99 (step 300 of a 608-step"
    )
    assert this == "Stage 2 (this run): "
    assert whole == ["- In all: 604 optimizer steps, 1.99 epochs."]


def test_a_resumed_run_is_timed_over_all_its_processes(ship: Any, tmp_path: Path) -> None:
    """``metrics.json`` of a resumed run has its last process's time and mean loss; the stage
    takes both from the whole log (each process counts ``elapsed_s`` from its own start)."""
    log = tmp_path / "train_log.jsonl"
    rows = [(1, 0.4, 10.0), (2, 0.2, 20.0), (3, 0.1, 5.0), (4, 0.1, 10.0)]  # resumed after 2
    log.write_text("".join(json.dumps({"step": s, "loss": x, "elapsed_s": e}) + "\n"
                           for s, x, e in rows))  # fmt: skip
    with log.open("a") as f:
        f.write(json.dumps({"step": 4, "eval_loss": 0.05, "elapsed_s": 11.0}) + "\n")
    assert ship.logged_run(log) == (31.0, pytest.approx(0.2))
    metrics, sft = _run(4, 1.0, 1e-4)
    metrics |= {"resumed_from": "checkpoint-2", "train_s": 11.0, "train_loss": 0.1,
                "tokens_seen": 3100}  # fmt: skip
    stage = ship.training_stage(metrics, sft, tmp_path)
    assert (stage["train_s"], stage["tokens_per_s"]) == (31.0, 100.0)
    assert stage["train_loss"] == pytest.approx(0.2)
    fresh = ship.training_stage(*_run(4, 1.0, 1e-4), tmp_path)  # not resumed: metrics as they are
    assert (fresh["train_s"], fresh["train_loss"]) == (600.0, 0.2)
