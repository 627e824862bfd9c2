"""The llama.cpp engine on a tiny real Llama (SmolLM2's tokenizer, random weights) converted by
llama.cpp's own converter: agreement with transformers, the kept prefix, seeds, model-file errors."""

from __future__ import annotations

import pytest
from engine_models import tiny_llama

from captain_ros.policy.engines import (
    EngineSettings,
    ModelFileError,
    ModelSource,
    make_engine,
    model_source,
)
from captain_ros.policy.engines.llamacpp import LlamaCppChat

pytestmark = pytest.mark.learn  # llama.cpp, and torch for the conversion

LOGPROB_TOL = 1e-2  # nats: f32 GGUF (f16 KV cache) vs transformers fp32; measured max 2.2e-3


def chat(turns: int) -> list[dict]:
    msgs = [
        {"role": "system", "content": "You control a robot arm."},
        {"role": "user", "content": "Put the red cube on the blue cube."},
    ]
    for i in range(turns):
        msgs.append(
            {
                "role": "assistant",
                "content": f"Step {i}.",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": "python",
                            "arguments": f'{{"code": "robot.observe({i})"}}',
                        },
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"observation {i}: ok"})
    return msgs


@pytest.fixture(scope="module")
def model():
    return tiny_llama("f32")


def engine(gguf, **kw) -> LlamaCppChat:
    s = EngineSettings(**{"max_new_tokens": 12, "temperature": 0.0, "threads": 1, **kw})
    return LlamaCppChat(gguf, s)


def test_greedy_tokens_and_logprobs_agree_with_transformers(model):
    from captain_ros.learn.export import check_export

    folder, gguf = model
    checks = check_export(
        folder, gguf, [(chat(0), None), (chat(3), None)], max_new_tokens=16, threads=1
    )
    for c in checks:
        assert c.prompt_ids_equal and c.prompt_tokens > 20
        assert c.agreeing_tokens == c.reply_tokens == 16
        assert c.max_abs_logprob_diff < LOGPROB_TOL


def test_only_new_tokens_are_prefilled_and_compaction_invalidates(model):
    _, gguf = model
    eng, fresh = engine(gguf), engine(gguf, reuse_prefix=False)
    first = eng.generate(chat(1))
    assert first.cache.reused == 0 and first.cache.prefilled == len(first.prompt_ids)
    second = eng.generate(chat(2))  # the history grew by one turn: the old prompt is a prefix
    assert second.cache.reused >= len(first.prompt_ids) - 1
    assert second.cache.prefilled == len(second.prompt_ids) - second.cache.reused
    assert second.cache.prefilled < len(second.prompt_ids) // 2
    ref = fresh.generate(chat(2))
    assert ref.cache.reused == 0 and ref.completion_ids == second.completion_ids
    assert max(abs(a - b) for a, b in zip(ref.logprobs, second.logprobs, strict=True)) < LOGPROB_TOL
    # A compaction rewrites the history: only the common head (system + task) is kept.
    compacted = chat(2)[:2] + [{"role": "user", "content": "[harness] 2 requests summarised."}]
    third = eng.generate(compacted)
    assert 0 < third.cache.reused < len(first.prompt_ids)
    assert third.completion_ids == fresh.generate(compacted).completion_ids
    eng.reset()  # a restart forgets everything
    assert eng.generate(chat(2)).cache.reused == 0


def test_seeded_sampling_is_deterministic(model):
    _, gguf = model
    a = engine(gguf, temperature=1.0, seed=7, max_new_tokens=24).generate(chat(1))
    b = engine(gguf, temperature=1.0, seed=7, max_new_tokens=24).generate(chat(1))
    c = engine(gguf, temperature=1.0, seed=8, max_new_tokens=24).generate(chat(1))
    assert a.completion_ids == b.completion_ids and a.logprobs == b.logprobs
    assert a.completion_ids != c.completion_ids
    assert all(lp <= 0.0 for lp in a.logprobs) and len(a.logprobs) == len(a.completion_ids)


def test_each_sampled_episode_draws_its_own_numbers_and_replays_alone(model):
    """A policy re-seeds its engine per episode (task, seed): two episodes' first requests no
    longer share their random draws, and an episode samples the same whatever ran before it in
    the process (before the fix, request k of every episode sampled with seed + k, or went on
    counting from the previous episode)."""
    from captain_ros.policy.chat_policies import TransformersPolicy
    from captain_ros.policy.engines.base import episode_seed

    _, gguf = model
    pol = TransformersPolicy(
        str(gguf), engine="llamacpp", threads=1, temperature=1.0, seed=7, max_new_tokens=24
    )
    pol.reset("pick_place", 900)
    first = [pol.act(chat(1), []).completion_ids for _ in range(2)]
    assert pol.describe()["sampling_seed"] == episode_seed(7, "pick_place", 900)
    pol.reset("pick_place", 901)
    other = pol.act(chat(1), []).completion_ids
    assert pol.describe()["sampling_seed"] == episode_seed(7, "pick_place", 901)
    pol.reset("pick_place", 900)  # the same episode again, after another one
    again = [pol.act(chat(1), []).completion_ids for _ in range(2)]
    assert again == first and other != first[0]
    seeds = {episode_seed(b, t, s) for b in (0, 1) for t in ("stack", "restack") for s in range(50)}
    assert len(seeds) == 200 and all(0 <= v < 2**31 for v in seeds)


def test_missing_and_corrupt_model_files_give_one_line(tmp_path):
    with pytest.raises(ModelFileError, match=r"^model file not found: .*nope\.gguf$"):
        LlamaCppChat(tmp_path / "nope.gguf")
    text = tmp_path / "text.gguf"
    text.write_text("not a model")
    with pytest.raises(ModelFileError, match="is not a GGUF file"):
        LlamaCppChat(text)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(ModelFileError) as err:
        LlamaCppChat(broken)
    assert "cannot load" in str(err.value) and "\n" not in str(err.value)
    empty = tmp_path / "student"
    empty.mkdir()
    with pytest.raises(ModelFileError, match="has no GGUF file: run `captain learn export"):
        make_engine("llamacpp", empty)
    # exported only as its adapter: a transformers folder whose adapter GGUF is not its model
    (empty / "export.json").write_text('{"adapter": {"gguf": "adapter.f16.gguf"}}')
    (empty / "adapter.f16.gguf").write_bytes(b"GGUF" + bytes(60))
    assert model_source(empty) == ModelSource(empty, None)
    with pytest.raises(ModelFileError, match="has no GGUF file"):
        make_engine("llamacpp", empty)
    (empty / "export.json").write_text('["not", "a", "record"]')
    with pytest.raises(ModelFileError, match="is not an export record"):
        model_source(empty)


def test_the_policy_records_its_engine_in_the_summary(model, tmp_path):
    from captain_ros.cli.main import main

    _, gguf = model
    out = tmp_path / "run"
    rc = main(
        [
            "run",
            "--task",
            "pick_place",
            "--seed",
            "0",
            "--backend",
            "fake",
            "--policy",
            "transformers",
            "--model-folder",
            str(gguf),
            "--engine",
            "llamacpp",
            "--grammar",
            "envelope",
            "--threads",
            "1",
            "--max-new-tokens",
            "24",
            "--max-requests",
            "2",
            "--no-bag",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert rc in (0, 1)
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["extra"]["engine"] == "llamacpp"
    assert summary["extra"]["policy_runtime"]["grammar"] == "envelope"
    requests = [json.loads(ln) for ln in (out / "trajectory.jsonl").read_text().splitlines()]
    infos = [r["policy_info"] for r in requests if r.get("type") == "request"]
    assert infos and all(i["engine"] == "llamacpp" and i["grammar"] == "envelope" for i in infos)


def test_an_re0_model_seat_runs_on_llamacpp_and_reseeds(model):
    from captain_ros.research.re0.seats import ModelSeat, seat_options

    _, gguf = model
    seat = ModelSeat(str(gguf), seat_options(10, 1.0, None, "llamacpp"))
    seat.reset("pick_place", 3)
    a = seat.act(chat(1), [])
    seat.reset("pick_place", 3)
    b = seat.act(chat(1), [])
    seat.reseed(4)
    c = seat.act(chat(1), [])
    assert a.info["engine"] == "llamacpp" and len(a.logprobs) == len(a.completion_ids)
    assert a.completion_ids == b.completion_ids != c.completion_ids


def test_lookup_drafting_writes_the_same_replies_in_fewer_decode_calls(model, tmp_path):
    """Drafted tokens are kept only where the sampler picks them itself: the replies, log-probs and
    random draws equal those of the engine without drafting, greedy and sampled; drafts from a
    corpus of earlier replies (a shipped student's drafts.txt) are actually accepted."""
    from captain_ros.policy.engines.lookup import LookupSettings

    _, gguf = model
    for kw in ({"temperature": 0.0}, {"temperature": 0.8, "seed": 3}):
        s = EngineSettings(**{"max_new_tokens": 40, "threads": 1, **kw})
        plain = LlamaCppChat(gguf, s, lookup=LookupSettings(max_draft=0))
        replies = [plain.generate(chat(turns)) for turns in (1, 2, 3)]
        corpus = tmp_path / "drafts.txt"
        corpus.write_text("\n".join(r.text for r in replies))
        lookup = LookupSettings(max_draft=6, ngram_min=2)
        drafting = LlamaCppChat(gguf, s, lookup=lookup, draft_corpus=corpus)
        for turns, a in zip((1, 2, 3), replies, strict=True):
            b = drafting.generate(chat(turns))
            assert a.completion_ids == b.completion_ids, (kw, turns)
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-3
            assert a.finish_reason == b.finish_reason
        assert plain.drafter.drafted == 0
        if kw["temperature"] == 0.0:  # the same greedy replies are in the corpus
            assert drafting.drafter.accepted > 0, drafting.drafter.drafted
        assert drafting.describe()["lookup_max_draft"] == 6
