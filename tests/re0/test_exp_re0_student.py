"""benchmarks/experiments/exp_re0_student.py: the commands it runs (dry run), and a tiny proof of
gen1 + the unverified control + the report end to end (a tiny random SFT student from config,
the fake rig; the held-out evaluation needs a packaged SmolLM2 student and is not run here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "experiments"))


def _arm(root: Path) -> Path:
    arm = root / "six"
    (arm / "student" / "adapter").mkdir(parents=True)
    (arm / "data").mkdir()
    return arm


def test_the_dry_run_prints_every_stage(tmp_path, capsys):
    from exp_re0_student import main

    arm = _arm(tmp_path)
    args = ["--run", str(tmp_path), "--arm", "six", "--tasks", "stack,insertion", "--dry-run"]
    assert main([*args, "--seeds", "0-39", "--", "--max-events", "10"]) == 0
    out = capsys.readouterr().out.splitlines()
    re0 = [x for x in out if " learn re0 " in x]
    assert len(re0) == 4  # gen1 and gen2 of both tasks
    g1 = next(x for x in re0 if "/stack/g1" in x)
    assert f"--student {arm / 'student'} " in g1 and "--candidate harmful" in g1
    assert "--generation 0" in g1 and "--seeds 0-39" in g1 and "--max-events 8 " in g1
    assert g1.endswith("--max-events 10")  # extra `learn re0` options come last: they win
    assert "--max-new-tokens 160 --temperature 0.0" in g1 and "--resume" not in g1
    g2 = next(x for x in re0 if "/insertion/g2" in x)
    assert f"--student {tmp_path / 'six_re0' / 'insertion' / 'g1' / 'child'} " in g2
    assert "--generation 1" in g2
    assert sum("# control:" in x for x in out) == 2
    evals = [x for x in out if "exp_student.py" in x]
    assert len(evals) == 6  # g1, g2, unverified of both tasks
    assert all("--split heldout" in x and "export,eval,report" in x for x in evals)
    assert any("--arm six_re0_stack_unverified" in x for x in evals)
    assert "| task | SFT | gen 1" in out[-4] and out[-2].startswith("| stack | - |")
    assert not (tmp_path / "six_re0").exists()  # nothing ran, nothing was written


ARGS = ["--tasks", "pick_place", "--seeds", "0", "--backend", "fake", "--workers", "1",
        "--max-draws", "8", "--max-new-tokens", "16", "--candidate", "none", "--sft-steps", "1",
        "--grad-accum", "1", "--bf16", "off", "--topup-seeds", "200"]  # fmt: skip
RE0_ARGS = ["--", "--max-requests", "20", "--segments", "16", "--device", "cpu"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A tiny SFT arm (a LoRA r = 2 on the tiny random base) through gen1, control, report."""
    import contextlib
    import io

    torch = pytest.importorskip("torch")
    from exp_re0_student import main
    from peft import LoraConfig, get_peft_model
    from tiny_student import save_tiny_student
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("run")
    base = save_tiny_student(root / "base", seeds=range(1))
    arm = root / "six"
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    model = get_peft_model(
        model, LoraConfig(r=2, lora_alpha=4, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    model.save_pretrained(str(arm / "student" / "adapter"))
    model.merge_and_unload().save_pretrained(str(arm / "student"))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (base / name).is_file():
            (arm / "student" / name).write_bytes((base / name).read_bytes())
    (arm / "student" / "sft_config.json").write_text(
        json.dumps({"options": {"base": str(base)}, "base_folder": str(base)})
    )
    (arm / "data").mkdir()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["--run", str(root), "--arm", "six", *ARGS,
                   "--stages", "gen1,control,report", *RE0_ARGS])  # fmt: skip
    assert rc == 0
    return root, out.getvalue()


def _r(folder: Path) -> int:
    return int(json.loads((folder / "adapter" / "adapter_config.json").read_text())["r"])


@pytest.mark.slow
@pytest.mark.learn
def test_a_tiny_student_runs_gen1_the_control_and_the_report(tiny_run):
    root, table = tiny_run
    re = root / "six_re0" / "pick_place"
    g1 = json.loads((re / "g1" / "re0.json").read_text())
    r_child = _r(re / "g1" / "student")
    assert g1["child"]["stacked_rank"] == 2 + r_child and not g1["child"]["exported"]
    assert g1["passes"]["refine"]["events"][0]["audited"][0]["verdict"] == "insufficient"
    ctl = json.loads((re / "unverified" / "control.json").read_text())
    assert ctl["rows"] == ctl["wanted_rows"] == g1["corpus"]["rows"]
    assert ctl["ungated_repairs"] == {"insufficient": 1}  # the repair the gate did not admit
    assert ctl["rows_holding_a_repair_by_verdict"] == {"insufficient": 1}  # it succeeded: kept
    assert ctl["distill"]["ran"] and ctl["child"]["stacked_rank"] == 2 + r_child
    rep = json.loads((root / "six_re0" / "report.json").read_text())["tasks"]["pick_place"]
    assert rep["gen1"]["verdicts_by_teacher"] == {"takeover": {"insufficient": 1}}
    assert rep["gen1"]["seat_engine"] == "transformers"  # the tiny model has no GGUF
    assert "| pick_place | - |" in table and "takeover: 1 insufficient" in table


@pytest.mark.slow
@pytest.mark.learn
def test_generation_2_starts_from_generation_1s_child(tiny_run, capsys):
    from exp_re0_student import main

    root, _ = tiny_run
    re = root / "six_re0" / "pick_place"
    assert main(["--run", str(root), "--arm", "six", *ARGS,
                 "--stages", "gen2,report", *RE0_ARGS]) == 0  # fmt: skip
    g1 = json.loads((re / "g1" / "re0.json").read_text())
    g2 = json.loads((re / "g2" / "re0.json").read_text())
    assert g2["student"] == "model:" + g1["child"]["folder"] and g2["generation"] == 1
    ledger = (re / "g2" / "ledger.jsonl").read_text().splitlines()
    assert ledger and all(json.loads(x)["event_id"].startswith("g1:") for x in ledger)
    # base + ONE adapter: the SFT adapter, gen 1's and gen 2's distilled ones
    assert g2["child"]["stacked_rank"] == 2 + _r(re / "g1" / "student") + _r(re / "g2" / "student")
    assert _r(Path(g2["child"]["folder"])) == g2["child"]["stacked_rank"]
    rep = json.loads((root / "six_re0" / "report.json").read_text())["tasks"]["pick_place"]
    assert rep["gen2"]["ran"] and rep["gen2"]["child"]["folder"] == g2["child"]["folder"]
