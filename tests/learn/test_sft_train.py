"""The SFT trainer on tiny random models: the weighted objective, padding-free packing, one step
lowering the loss, checkpoint/resume reproducing the loss curve, bf16, the saved student."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

from sft_fixtures import episode_history, make_row, save_tiny, tiny_sft_options, write_rows  # noqa: E402
from transformers import AutoModelForCausalLM, TrainerCallback  # noqa: E402

from captain_ros.learn.collate import PackedCollator  # noqa: E402
from captain_ros.learn.models import bf16_supported  # noqa: E402
from captain_ros.learn.sft import SftError, build_trainer, prepare, run_sft  # noqa: E402
from captain_ros.learn.tokenize import IGNORE  # noqa: E402

pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    torch.set_num_threads(1)
    return save_tiny(tmp_path_factory.mktemp("base"), "qwen2", "smol")


_opts = tiny_sft_options


def _trainer(tmp_path, base, rows, **kw):
    write_rows(tmp_path / "data", rows)
    opts = _opts(tmp_path, base, **kw)
    prep = prepare(opts, tmp_path / "out")
    trainer, _ = build_trainer(opts, prep, tmp_path / "out", "cpu", opts.bf16 == "on")
    trainer.model.eval()
    return trainer, prep


def _feature(seq, labels=None):
    return {
        "input_ids": list(seq.input_ids),
        "labels": list(labels or seq.labels),
        "weights": list(seq.weights),
    }


def _loss(trainer, features):
    with torch.no_grad():
        return float(trainer.compute_loss(trainer.model, PackedCollator()(features)))


def _nll(model, seq):
    """Per-token -log p of a sequence with a plain forward pass (full logits, fp32)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(seq.input_ids)])).logits[0].float()
    logp = logits[:-1].log_softmax(-1)
    target = torch.tensor(seq.input_ids[1:])
    return -logp.gather(1, target[:, None])[:, 0]


def test_loss_is_the_weighted_mean_over_supervised_tokens_and_masked_turns_count_nothing(
    tmp_path, base
):
    weights = [1.0, 0.0, 2.0, 0.5]
    trainer, prep = _trainer(tmp_path, base, [make_row(episode_history(4), weights)])
    (seq,) = prep["train"]
    nll = _nll(trainer.model, seq)
    w = torch.tensor(seq.weights[1:])
    labelled = torch.tensor([lab != IGNORE for lab in seq.labels[1:]])
    expected = float((nll * w * labelled).sum() / (labelled & (w > 0)).sum())
    assert _loss(trainer, [_feature(seq)]) == pytest.approx(expected, rel=1e-5)
    # Give the masked turn its labels back (weights stay 0): the loss does not move.
    from captain_ros.learn.rows import parse_row
    from captain_ros.learn.tokenize import tokenize_row

    all_on = tokenize_row(prep["tokenizer"], parse_row(make_row(episode_history(4)), "r"), 4096)[0]
    assert all_on.input_ids == seq.input_ids
    relabelled = _feature(seq, labels=list(all_on.labels))
    assert sum(a != b for a, b in zip(relabelled["labels"], seq.labels, strict=True)) > 10
    assert _loss(trainer, [relabelled]) == _loss(trainer, [_feature(seq)])
    # The accumulation step's token count is the same supervised-and-weighted count.
    batches = [PackedCollator()([_feature(seq)]), PackedCollator()([relabelled])]
    _, n = trainer.get_batch_samples(iter(batches), 2, "cpu")
    assert int(n) == 2 * int((labelled & (w > 0)).sum())


def test_packed_sequences_do_not_attend_to_each_other(tmp_path, base):
    rows = [make_row(episode_history(2), seed=1), make_row(episode_history(3), seed=2)]
    trainer, prep = _trainer(tmp_path, base, rows)
    a, b = prep["train"]
    sums, counts = [], []
    for s in (a, b):
        mask = torch.tensor([lab != IGNORE for lab in s.labels[1:]])
        sums.append(float((_nll(trainer.model, s) * mask).sum()))
        counts.append(int(mask.sum()))
    packed = _loss(trainer, [_feature(a), _feature(b)])
    assert packed == pytest.approx(sum(sums) / sum(counts), rel=1e-5)
    batch = PackedCollator()([_feature(a), _feature(b)])
    n = len(a.input_ids)
    with torch.no_grad():
        alone = trainer.model(input_ids=torch.tensor([list(b.input_ids)])).logits[0]
        packed_b = trainer.model(
            input_ids=batch["input_ids"], position_ids=batch["position_ids"]
        ).logits[0, n:]
        leaky_b = trainer.model(input_ids=batch["input_ids"]).logits[0, n:]  # one long sequence
    assert torch.allclose(packed_b, alone, atol=1e-5)
    assert (leaky_b - alone).abs().max() > 1e-3  # the check can fail: without the block mask


def test_one_sft_step_lowers_the_loss_on_a_fixed_batch(tmp_path, base):
    trainer, prep = _trainer(tmp_path, base, [make_row(episode_history(3))], learning_rate=5e-3)
    batch = [_feature(prep["train"][0])]
    before = _loss(trainer, batch)
    trainer.train()
    trainer.model.eval()
    after = _loss(trainer, batch)
    assert after < before
    assert any("lora_" in n for n, p in trainer.model.named_parameters() if p.requires_grad)


class Crash(TrainerCallback):
    """Simulates a kill after ``step`` optimizer steps (the checkpoint of that step is written)."""

    def __init__(self, step):
        self.step = step

    def on_step_begin(self, args, state, control, **kw):
        if state.global_step == self.step:
            raise KeyboardInterrupt("killed")


def _curve(out):
    keep = ("step", "loss", "grad_norm", "learning_rate", "eval_loss")
    return [
        {k: r[k] for k in keep if k in r}
        for r in map(json.loads, (out / "train_log.jsonl").read_text().splitlines())
    ]


def test_kill_and_resume_gives_the_same_loss_curve_and_student(tmp_path, base):
    rows = [make_row(episode_history(2 + s % 3), seed=s) for s in range(5)]
    rows.append(make_row(episode_history(2), seed=9, split="val"))
    write_rows(tmp_path / "data", rows)
    kw = dict(
        max_steps=6,
        save_steps=2,
        eval_steps=3,
        grad_accum=2,
        learning_rate=2e-3,
        warmup=0.2,
        lora_dropout=0.1,
    )
    whole = run_sft(_opts(tmp_path, base, out=str(tmp_path / "a"), **kw))
    with pytest.raises(KeyboardInterrupt):
        run_sft(_opts(tmp_path, base, out=str(tmp_path / "b"), **kw), callbacks=[Crash(4)])
    with pytest.raises(SftError, match="--resume"):
        run_sft(_opts(tmp_path, base, out=str(tmp_path / "b"), **kw))
    resumed = run_sft(_opts(tmp_path, base, out=str(tmp_path / "b"), resume=True, **kw))
    assert resumed["resumed_from"].endswith("checkpoint-4")
    a, b = _curve(tmp_path / "a"), _curve(tmp_path / "b")
    assert [r["step"] for r in a] == [r["step"] for r in b] and len(a) >= 8
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            assert rb[k] == pytest.approx(ra[k], rel=1e-5, abs=1e-7), (ra["step"], k)
    assert any("eval_loss" in r for r in a)
    assert whole["eval_loss"] == pytest.approx(resumed["eval_loss"], rel=1e-5)
    wa = AutoModelForCausalLM.from_pretrained(tmp_path / "a").state_dict()
    wb = AutoModelForCausalLM.from_pretrained(tmp_path / "b").state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    other = [make_row(episode_history(1), seed=s) for s in range(5)]
    write_rows(tmp_path / "data", other)
    with pytest.raises(SftError, match="other data or options"):
        run_sft(_opts(tmp_path, base, out=str(tmp_path / "b"), resume=True, **kw))


def test_saved_student_is_a_plain_folder_equal_to_the_adapter_on_the_base(tmp_path, base):
    from peft import PeftModel
    from transformers import AutoTokenizer

    from captain_ros.policy.chat_render import template_supports_tools

    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    run_sft(_opts(tmp_path, base, max_steps=2))
    out = tmp_path / "out"
    merged = AutoModelForCausalLM.from_pretrained(out)
    adapter = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), out / "adapter")
    ids = torch.tensor([[1, 5, 9, 12, 40, 7]])
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, adapter(ids).logits, atol=1e-5)
    tok = AutoTokenizer.from_pretrained(out)
    assert template_supports_tools(tok.chat_template)  # servers render tools like the policy
    meta = json.loads((out / "sft_config.json").read_text())
    assert meta["train"]["supervised_tokens"] > 0 and meta["rows"]["train"] == 1
    assert (out / "metrics.json").exists()


@pytest.mark.skipif(not bf16_supported("cpu"), reason="this CPU has no native bf16")
def test_bf16_autocast_when_the_cpu_supports_it(tmp_path, base):
    seen = set()

    class Dtypes(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            lin = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
            lin.register_forward_hook(lambda m, i, o: seen.add(o.dtype))

    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    metrics = run_sft(_opts(tmp_path, base, bf16="auto", max_steps=3), callbacks=[Dtypes()])
    assert metrics["bf16"] is True and torch.bfloat16 in seen
    losses = [r["loss"] for r in _curve(tmp_path / "out") if "loss" in r]
    assert all(v == v for v in losses) and losses[-1] < losses[0]


class Checkpointing(TrainerCallback):
    """Records whether the model recomputes activations in the backward pass."""

    def __init__(self):
        self.on = None

    def on_train_begin(self, args, state, control, model=None, **kw):
        self.on = bool(model.get_base_model().is_activation_checkpointing)


def test_gradient_checkpointing_gives_the_same_loss_curve(tmp_path, base):
    write_rows(tmp_path / "data", [make_row(episode_history(3), seed=s) for s in range(2)])
    kw = dict(max_steps=3, learning_rate=5e-3, lora_dropout=0.1)
    seen = Checkpointing(), Checkpointing(), Checkpointing()
    run_sft(
        _opts(tmp_path, base, out=str(tmp_path / "plain"), gradient_checkpointing="off", **kw),
        callbacks=[seen[0]],
    )
    run_sft(
        _opts(tmp_path, base, out=str(tmp_path / "ckpt"), gradient_checkpointing="on", **kw),
        callbacks=[seen[1]],
    )
    run_sft(_opts(tmp_path, base, out=str(tmp_path / "auto"), **kw), callbacks=[seen[2]])
    assert [s.on for s in seen] == [False, True, False]  # auto: short sequences, no recompute
    plain = [r for r in _curve(tmp_path / "plain") if "loss" in r]
    ckpt = [r for r in _curve(tmp_path / "ckpt") if "loss" in r]
    assert len(plain) == 3
    assert [r["loss"] for r in ckpt] == pytest.approx([r["loss"] for r in plain], rel=1e-5)
    assert [r["grad_norm"] for r in ckpt] == pytest.approx(
        [r["grad_norm"] for r in plain], rel=1e-4
    )


def test_a_resume_may_change_the_run_length(tmp_path, base):
    """``--resume --max-steps N`` cuts (or extends) a run: a kill after step 4 of 6, resumed with
    4 steps, saves the student of checkpoint 4; other training options are still refused."""
    rows = [make_row(episode_history(2 + s % 3), seed=s) for s in range(5)]
    rows.append(make_row(episode_history(2), seed=9, split="val"))
    write_rows(tmp_path / "data", rows)
    kw = dict(save_steps=2, eval_steps=3, grad_accum=2, learning_rate=2e-3, warmup=0.2)
    with pytest.raises(KeyboardInterrupt):
        run_sft(
            _opts(tmp_path, base, out=str(tmp_path / "b"), max_steps=6, **kw), callbacks=[Crash(4)]
        )
    with pytest.raises(SftError, match="other data or options"):
        run_sft(
            _opts(
                tmp_path,
                base,
                out=str(tmp_path / "b"),
                resume=True,
                max_steps=4,
                **{**kw, "learning_rate": 1e-3},
            )
        )
    cut = run_sft(_opts(tmp_path, base, out=str(tmp_path / "b"), resume=True, max_steps=4, **kw))
    assert cut["resumed_from"].endswith("checkpoint-4") and cut["steps"] == 4
    assert (tmp_path / "b" / "config.json").is_file() and "eval_loss" in cut
    assert cut["train_s"] > 0 and cut["tokens_per_s"] > 10  # the run's, not this process's
    assert max(r["step"] for r in _curve(tmp_path / "b")) == 4


def test_init_adapter_starts_the_lora_from_an_earlier_run(tmp_path, base):
    """--init-adapter: the continuation's LoRA starts exactly at the earlier adapter (its first
    loss equals the earlier student's loss on the same row), and an adapter of another rank is
    refused with one line."""
    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    run_sft(_opts(tmp_path, base, max_steps=3))
    first = tmp_path / "out" / "adapter"
    earlier = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    cont, prep = _trainer(tmp_path / "c", base, [make_row(episode_history(2))],
                          init_adapter=str(first))  # fmt: skip
    seq = prep["train"][0]
    fresh, _ = _trainer(tmp_path / "f", base, [make_row(episode_history(2))])
    assert torch.allclose(_nll(cont.model, seq), _nll(earlier, seq), atol=1e-5)
    assert not torch.allclose(_nll(fresh.model, seq), _nll(earlier, seq), atol=1e-3)
    with pytest.raises(SftError, match="init-adapter"):
        _trainer(tmp_path / "r", base, [make_row(episode_history(2))], init_adapter=str(first),
                 lora_r=4)  # fmt: skip
    with pytest.raises(SftError, match="no adapter_model"):
        _trainer(tmp_path / "n", base, [make_row(episode_history(2))], init_adapter=str(tmp_path))
