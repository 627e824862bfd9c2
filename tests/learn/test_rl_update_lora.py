"""The streaming policy update on a tiny random Qwen2 with a peft LoRA adapter."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from captain_ros.learn.rl import (  # noqa: E402
    PolicyUpdater,
    RLSample,
    UpdateConfig,
    reference_context,
    token_logprobs,
)

pytestmark = pytest.mark.learn
torch.set_num_threads(1)


def tiny_base(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=96,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    return transformers.Qwen2ForCausalLM(cfg)


def tiny_lora(seed: int = 0, base=None):
    base = base if base is not None else tiny_base(seed)
    lora = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear")
    return peft.get_peft_model(base, lora)


def _sample(model, rng, version=0, n_req=3, eid="ep0"):
    """A segment whose rollout log-probs are the current policy's own (ratio 1 at the start)."""
    ids, req = [1, 2, 3], [0, 0, 0]
    for t in range(1, n_req + 1):
        ids += rng.integers(4, 96, size=5).tolist()  # the reply of request t
        req += [t] * 5
        ids += [3, 4]  # tool output
        req += [0, 0]
    ids_t = torch.tensor(ids)
    pos = torch.nonzero(torch.tensor(req) > 0).squeeze(-1)
    with torch.no_grad():
        lp = token_logprobs(model, ids_t, pos)
    old = np.zeros(len(ids))
    old[pos.numpy()] = lp.numpy()
    return RLSample(eid, np.array(ids), np.array(req), old, version)


def _request_logprob(model, s, t):
    req = np.asarray(s.request_of_token)
    pos = torch.as_tensor(np.nonzero(req == t)[0])
    with torch.no_grad():
        return float(token_logprobs(model, torch.as_tensor(s.input_ids), pos).sum())


def test_token_logprobs_match_the_full_logits():
    model = tiny_lora()
    ids = torch.tensor([1, 5, 9, 13, 17, 21])
    pos = torch.tensor([2, 4, 5])
    with torch.no_grad():
        lp = token_logprobs(model, ids, pos)
        full = torch.log_softmax(model(input_ids=ids[None]).logits[0].float(), -1)
    assert torch.allclose(lp, full[pos - 1, ids[pos]], atol=1e-5)
    # only the tokens up to the last position are read: what follows changes nothing
    seen = []
    embed = model.get_input_embeddings()
    hook = embed.register_forward_hook(lambda _m, args, _out: seen.append(args[0].shape[-1]))
    with torch.no_grad():
        early = token_logprobs(model, ids, pos[:2])
        longer = token_logprobs(model, torch.cat([ids, torch.tensor([7, 8, 9])]), pos[:2])
    hook.remove()
    assert seen == [int(pos[1]) + 1] * 2  # read up to position 4 of 6 and of 9 tokens
    assert torch.allclose(early, lp[:2], atol=1e-5) and torch.allclose(longer, early, atol=1e-6)


def test_reference_is_the_model_without_its_adapter():
    import copy

    base = tiny_base()
    sft = copy.deepcopy(base)  # the SFT model the adapter starts from
    model = tiny_lora(base=base)
    for n, p in model.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.5)
    ids, pos = torch.tensor([1, 5, 9, 13]), torch.tensor([1, 2, 3])
    with torch.no_grad():
        with_adapter = token_logprobs(model, ids, pos)
        with reference_context(model):
            ref = token_logprobs(model, ids, pos)
        expected = token_logprobs(sft, ids, pos)
    assert torch.allclose(ref, expected, atol=1e-6) and not torch.allclose(ref, with_adapter)


def test_accumulates_k_rounds_then_steps_and_only_lora_moves():
    model = tiny_lora()
    rng = np.random.default_rng(0)
    upd = PolicyUpdater(model, UpdateConfig(lr=1e-3, accumulation_rounds=2, warmup_steps=0))
    base_before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora" not in n}
    lora_before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora" in n}
    s = _sample(model, rng)
    adv = {"ep0": {1: 1.0, 2: -1.0, 3: 0.5}}
    r1 = upd.accumulate_round([s], adv)
    assert not r1.stepped and upd.version == 0
    # a fresh adapter is the SFT model and the rollout is the policy itself: ratio 1, KL 0
    assert r1.kept_fraction == 1.0 and r1.kl_mean == pytest.approx(0.0, abs=1e-10)
    assert r1.ratio_mean == pytest.approx(1.0, abs=1e-5)
    assert all(torch.equal(p, lora_before[n]) for n, p in model.named_parameters() if "lora" in n)
    r2 = upd.accumulate_round([s], adv)
    assert r2.stepped and upd.version == 1 and r2.policy_version == 1
    assert any(
        not torch.equal(p, lora_before[n]) for n, p in model.named_parameters() if "lora" in n
    )
    assert all(
        torch.equal(p, base_before[n]) for n, p in model.named_parameters() if "lora" not in n
    )


def test_update_raises_positively_and_lowers_negatively_credited_requests():
    model = tiny_lora(1)
    rng = np.random.default_rng(1)
    upd = PolicyUpdater(model, UpdateConfig(lr=5e-3, accumulation_rounds=1, warmup_steps=0))
    s = _sample(model, rng)
    before = {t: _request_logprob(model, s, t) for t in (1, 2, 3)}
    for _ in range(3):
        upd.accumulate_round([s], {"ep0": {1: 1.0, 2: -1.0, 3: 0.0}})
    after = {t: _request_logprob(model, s, t) for t in (1, 2, 3)}
    assert after[1] > before[1] + 0.05
    assert after[2] < before[2] - 0.05
    assert upd.version == 3


def test_gradient_checkpointing_gives_the_same_gradients_by_recomputing():
    grads, calls = [], []
    for ckpt in (False, True):
        model = tiny_lora(2)
        s = _sample(model, np.random.default_rng(2))
        upd = PolicyUpdater(
            model, UpdateConfig(accumulation_rounds=2, warmup_steps=0, gradient_checkpointing=ckpt)
        )
        n = [0]
        mlp = model.base_model.model.model.layers[0].mlp
        mlp.register_forward_pre_hook(lambda *_, n=n: n.__setitem__(0, n[0] + 1))
        st = upd.accumulate_round([s], {"ep0": {1: 1.0, 2: -0.5, 3: 0.25}})
        assert st.ratio_mean == pytest.approx(1.0, abs=1e-5) and not model.training
        grads.append([p.grad.clone() for p in upd.params])
        calls.append(n[0])
    # policy pass + reference pass; checkpointing recomputes the layer once in the backward
    assert calls == [2, 3]
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    assert any(float(g.abs().max()) > 0 for g in grads[1])


def test_stale_rollouts_are_skipped_and_counted():
    model = tiny_lora()
    rng = np.random.default_rng(2)
    upd = PolicyUpdater(model, UpdateConfig(accumulation_rounds=1, max_staleness=2))
    upd.version = 5
    ok = _sample(model, rng, version=3, eid="ok")
    stale = _sample(model, rng, version=2, eid="stale")
    ok2 = _sample(model, rng, version=5, eid="ok2")
    adv = {e: {1: 1, 2: 1, 3: 1} for e in ("ok", "stale", "ok2")}
    done: list[tuple[int, int]] = []
    r = upd.accumulate_round([ok, stale, ok2], adv, on_segment=lambda i, n: done.append((i, n)))
    assert r.stale_skipped == 1 and r.segments == 2 and r.episodes == 2
    assert done == [(1, 2), (2, 2)]  # progress counts the segments back-propagated, not the stale


def test_progress_lines_in_a_log_file(capsys):
    from captain_ros.learn.rl.progress import Ticker

    t = Ticker(True)
    t.tty = False
    t.show("round 1/5 update", 3, 128, "segments")
    t.of("round 1/5", 2)(None)
    Ticker(False).show("quiet", 1, 1)
    assert (
        capsys.readouterr().err == "\rround 1/5 update  segments 3/128\n\rround 1/5  episodes 1/2\n"
    )


def test_at_most_8_requests_enter_the_gradient():
    model = tiny_lora()
    rng = np.random.default_rng(3)
    upd = PolicyUpdater(model, UpdateConfig(accumulation_rounds=1))
    s = _sample(model, rng, n_req=12)
    r = upd.accumulate_round([s], {"ep0": {t: 1.0 for t in range(1, 13)}})
    assert r.requests_total == 12 and r.requests_sampled == 8 and r.tokens == 8 * 5


def test_state_save_and_resume_mid_accumulation(tmp_path):
    rng = np.random.default_rng(4)
    a = tiny_lora(5)
    upd = PolicyUpdater(a, UpdateConfig(lr=1e-3, accumulation_rounds=2, warmup_steps=0))
    s = _sample(a, rng)
    adv = {"ep0": {1: 1.0, 2: -1.0, 3: 0.5}}
    upd.accumulate_round([s], adv)
    upd.save_state(tmp_path / "upd.pt")
    b = tiny_lora(5)
    b.load_state_dict(a.state_dict())
    upd_b = PolicyUpdater(b, UpdateConfig(lr=1e-3, accumulation_rounds=2, warmup_steps=0))
    upd_b.load_state(tmp_path / "upd.pt")
    upd.accumulate_round([s], adv)
    upd_b.accumulate_round([s], adv)
    assert upd.version == upd_b.version == 1
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-7), n


def test_full_fine_tuning_needs_a_reference_model():
    base = tiny_base()
    with pytest.raises(ValueError, match="reference_model"):
        PolicyUpdater(base)
