"""RL rollouts on llama.cpp (``captain learn rl --engine llamacpp``): a published policy version
(a peft LoRA adapter on a tiny real Llama) is converted once per version and sampled by llama.cpp,
and the log-probs it records are the ones the trainer's transformers update computes for the same
tokens; a newer version rebuilds the engine; a rollout job runs in the real harness with it."""

from __future__ import annotations

import json

import pytest
from engine_models import tiny_llama

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from captain_ros.learn.rl import token_logprobs  # noqa: E402
from captain_ros.learn.rl.llama_student import llama_student  # noqa: E402
from captain_ros.learn.rl.sync import publish_adapter, version_dir  # noqa: E402

pytestmark = pytest.mark.learn

LOGPROB_TOL = 2e-2  # nats: f32 GGUF base (f16 KV cache) + f16 adapter against transformers fp32

MESSAGES = [
    {"role": "system", "content": "You control a robot arm."},
    {"role": "user", "content": "Put the red cube on the blue cube."},
]


def lora_student(folder, seed: int):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    cfg = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear")
    model = peft.get_peft_model(base, cfg)
    with torch.no_grad():  # a trained-looking adapter: B is zero at initialisation
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.3)
    return model.eval()


def transformers_logprobs(model, gen, temperature: float) -> list[float]:
    ids = torch.tensor(list(gen.prompt_ids) + list(gen.completion_ids))
    pos = torch.arange(len(gen.prompt_ids), len(ids))
    with torch.no_grad():
        return token_logprobs(model, ids, pos, temperature).tolist()


def test_a_version_is_converted_once_sampled_and_scored_alike(tmp_path):
    folder, _ = tiny_llama("f32")
    out = tmp_path / "run"
    model = lora_student(folder, 1)
    publish_adapter(model, out, 1)
    v1 = version_dir(out, 1)
    engine, version = llama_student(str(folder), str(v1), 16, 1.0, 1)
    assert version == 1 and (v1 / "adapter.f16.gguf").is_file()
    engine.seed, engine.requests = 5, 0
    gen = engine.generate(MESSAGES)
    assert len(gen.completion_ids) > 0 and len(gen.logprobs) == len(gen.completion_ids)
    ref = transformers_logprobs(model, gen, 1.0)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, ref, strict=True)) < LOGPROB_TOL
    same, again = llama_student(str(folder), str(v1), 16, 0.7, 1)
    assert same is engine and again == 1 and engine.settings.temperature == 0.7
    # the next version: a new adapter, a new engine, still scored alike (tempered)
    model2 = lora_student(folder, 2)
    publish_adapter(model2, out, 2)
    engine2, version2 = llama_student(str(folder), str(version_dir(out, 2)), 16, 0.7, 1)
    assert version2 == 2 and engine2 is not engine
    gen2 = engine2.generate(MESSAGES)
    ref2 = transformers_logprobs(model2, gen2, 0.7)
    assert max(abs(a - b) for a, b in zip(gen2.logprobs, ref2, strict=True)) < LOGPROB_TOL
    assert transformers_logprobs(model, gen2, 0.7) != pytest.approx(ref2, abs=LOGPROB_TOL)


def test_a_rollout_job_samples_with_llamacpp_in_the_harness(tmp_path):
    from captain_ros.learn.rl.rollout import run_rollout_job

    folder, _ = tiny_llama("f32")
    out = tmp_path / "run"
    publish_adapter(lora_student(folder, 3), out, 1)
    rl = {
        "base": str(folder),
        "adapter": str(version_dir(out, 1)),
        "critic": None,
        "episode_key": "pick_place:3:r0:g0",
        "sample_seed": 11,
        "max_new_tokens": 24,
        "temperature": 1.0,
        "threads": 1,
        "engine": "llamacpp",
    }
    from captain_ros.evaluation.config import (
        BackendConfig,
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )

    episode = EpisodeConfig(  # the workers' wire form: the episode's to_mapping() plus rl
        task="pick_place",
        seed=3,
        out_dir=str(tmp_path / "ep"),
        policy=PolicyConfig("rl-student"),
        backend=BackendConfig("fake"),
        budgets=BudgetConfig(max_requests=2),
        recording=RecordingConfig(bag=False),
        profile="student",
    )
    job = {
        "task": "pick_place",
        "seed": 3,
        "backend": "fake",
        "out_dir": str(tmp_path / "ep"),
        "options": {**episode.to_mapping(), "rl": rl},
    }
    record = run_rollout_job(job)
    data = json.loads((tmp_path / "ep" / "rollout.json").read_text())
    assert data["version"] == 1 and data["requests"], record
    req = data["requests"][0]
    assert len(req["completion"]) == len(req["logprobs"]) > 0
    assert all(lp <= 0.0 for lp in req["logprobs"])
    summary = json.loads((tmp_path / "ep" / "summary.json").read_text())
    assert summary["requests"] >= 1
