"""RE-0's model seat on llama.cpp: the student as it ships, in every collection and rollout.

Tested where: the engine choice (:func:`seat_engine`) on the tiny transformers model from config
(which llama.cpp is not asked to load) and on a SmolLM2 student exported as its adapter; the
seat's llama.cpp runtime on the real packaged SmolLM2 (Q4_1) plus a real peft LoRA adapter with
random B matrices, converted by llama.cpp's own ``convert_lora_to_gguf.py`` (no merged weights
are written: the seat needs the adapter GGUF and its export record only). Greedy replies are
those of the packaged form of the same student (``student.json``); sampled replies follow the
seat's sampling seed (the paired draw's); one RE-0 episode job on the fake rig runs on llama.cpp.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
torch = pytest.importorskip("torch")

from tiny_student import model_job, save_tiny_student  # noqa: E402

from captain_ros.learn.export import ADAPTER_GGUF  # noqa: E402
from captain_ros.research.re0.rollouts import student_job  # noqa: E402
from captain_ros.research.re0.seats import ModelSeat, seat_engine  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]
MESSAGES = [
    {"role": "system", "content": "You control a robot arm with Python."},
    {"role": "user", "content": "Pick up the red cube and put it on the plate."},
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SmolLM2 student exported as its adapter: ``adapter/``, ``adapter.f16.gguf``, the
    ``export.json`` adapter record and ``sft_config.json`` (no merged model)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from captain_ros.learn.export import convert_adapter
    from captain_ros.learn.models import smollm2_base
    from captain_ros.policy.students import file_sha256
    from captain_ros.policy.transformers_chat import smollm2_folder

    torch.set_num_threads(1)
    base = smollm2_base()
    out = tmp_path_factory.mktemp("exported")
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    torch.manual_seed(0)
    model = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.005)
    model.save_pretrained(str(out / "adapter"))
    convert_adapter(out / "adapter", base, out / ADAPTER_GGUF)
    folder, gguf = smollm2_folder()
    record = {
        "gguf": ADAPTER_GGUF,
        "base": "smollm2",
        "base_gguf": gguf,
        "base_sha256": file_sha256(folder / gguf),
        "profile": "student",
    }
    (out / "export.json").write_text(json.dumps({"adapter": record}))
    (out / "sft_config.json").write_text(
        json.dumps({"options": {"base": "smollm2"}, "base_folder": str(base), "profile": "student"})
    )
    return out


def _packaged(exported: Path, dest: Path) -> Path:
    rec = json.loads((exported / "export.json").read_text())["adapter"]
    dest.mkdir()
    (dest / ADAPTER_GGUF).write_bytes((exported / ADAPTER_GGUF).read_bytes())
    (dest / "student.json").write_text(
        json.dumps(
            {
                "base": "smollm2",
                "base_sha256": rec["base_sha256"],
                "adapter": ADAPTER_GGUF,
                "profile": "student",
                "tasks": ["pick_place"],
            }
        )
    )
    return dest


def _reply(seat: ModelSeat, seed: int) -> str:
    seat.reset("pick_place", 0)
    seat.reseed(seed)
    return seat.act(list(MESSAGES), []).content


def test_a_model_seat_runs_the_exported_student_on_llama_cpp(exported: Path, tmp_path: Path):
    tiny = save_tiny_student(tmp_path / "tiny", seeds=range(1))
    assert seat_engine(str(tiny)) == "transformers"  # no GGUF: a fresh, unexported child
    assert seat_engine(str(exported)) == "llamacpp"  # the adapter export: what ships
    assert seat_engine(str(exported), "transformers") == "transformers"  # asked for: kept
    assert seat_engine(str(exported), device="cuda") == "transformers"
    packaged = _packaged(exported, tmp_path / "package")
    assert seat_engine(str(packaged)) == "llamacpp"

    greedy = {"max_new_tokens": 12, "temperature": 0.0, "threads": 1}
    seat = ModelSeat(str(exported), greedy)
    shipped = ModelSeat(str(packaged), greedy)
    try:
        runtime = seat.inner.describe()
        assert seat.engine == "llamacpp" and runtime["engine"] == "llamacpp"
        assert runtime["adapter"] == str(exported / ADAPTER_GGUF)
        assert runtime["model"].endswith(".gguf") and "SmolLM2" in runtime["model"]
        first = _reply(seat, 1)
        assert first and first == _reply(seat, 2)  # greedy: the sampling seed does not matter
        assert _reply(shipped, 1) == first  # exactly the packaged student's runtime
    finally:
        seat.close()
        shipped.close()

    sampled = ModelSeat(str(exported), {"max_new_tokens": 16, "temperature": 1.0, "threads": 1})
    try:
        a, b = _reply(sampled, 11), _reply(sampled, 12)
        assert _reply(sampled, 11) == a  # a paired draw's seed gives both arms the same sample
        assert a != b  # another draw samples anew
    finally:
        sampled.close()


def test_an_re0_episode_of_the_exported_student_runs_on_llama_cpp(exported: Path, tmp_path):
    job = model_job(
        f"model:{exported}",
        tmp_path / "ep",
        teacher="takeover",
        seat_options={"max_new_tokens": 16, "temperature": 0.0},
        budgets={"max_requests": 2},
    )
    rec = student_job(job)
    assert rec["outcome"] != "error", rec.get("error")
    summary = json.loads((tmp_path / "ep" / "summary.json").read_text())
    runtime = summary["extra"]["policy_runtime"]
    assert summary["extra"]["engine"] == "llamacpp" and runtime["adapter"].endswith(ADAPTER_GGUF)
    requests = [
        json.loads(x)
        for x in (tmp_path / "ep" / "trajectory.jsonl").read_text().splitlines()
        if '"policy_info"' in x
    ]
    assert requests and all(r["policy_info"]["engine"] == "llamacpp" for r in requests)
