"""GPU batching in ``captain learn sft`` (``--pack-tokens``, ``--batch-size`` > 1), checked on the
CPU with a tiny model: packs of whole sequences, the per-sequence attention equal to the
block-diagonal mask, a packed run equal to the unpacked run with the same sequences per step, and
the unpacked default's fingerprint unchanged (runs resume across the change)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

from sft_fixtures import episode_history, make_row, save_tiny, tiny_sft_options, write_rows  # noqa: E402

from captain_ros.learn.collate import (  # noqa: E402
    AUTOCAST_ATTENTION,
    PACKED_ATTENTION,
    PackedCollator,
    pack_sequences,
)
from captain_ros.learn.sft import (  # noqa: E402
    RUN_LENGTH,
    SftError,
    SftOptions,
    _fingerprint,
    build_trainer,
    prepare,
    run_sft,
)

pytestmark = pytest.mark.learn


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    torch.set_num_threads(1)
    return save_tiny(tmp_path_factory.mktemp("base"), "qwen2", "smol")


def _opts(tmp_path, base, **kw):
    return tiny_sft_options(tmp_path, base, **{"lora_dropout": 0.0, **kw})


def _feature(seq):
    return {"input_ids": list(seq.input_ids), "labels": list(seq.labels), "weights": seq.weights}


def test_packs_hold_every_sequence_once_within_the_budget_and_are_seeded():
    lengths = [300, 1200, 50, 900, 700, 4000, 20, 610, 640, 1000]
    rows = pack_sequences(lengths, 2000, seed=3)
    assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
    assert [r for r in rows if sum(lengths[i] for i in r) > 2000] == [[5]]  # too long: alone
    assert len(rows) <= 6  # first fit: 9,420 tokens in at most 6 rows of 2,000 (+ the long one)
    assert rows == pack_sequences(lengths, 2000, seed=3)
    assert rows != pack_sequences(lengths, 2000, seed=4)
    with pytest.raises(ValueError):
        pack_sequences(lengths, 0, seed=0)


def test_a_packed_row_collates_like_its_sequences_and_names_their_lengths(tmp_path, base):
    write_rows(tmp_path / "data", [make_row(episode_history(2 + s), seed=s) for s in range(3)])
    prep = prepare(_opts(tmp_path, base), tmp_path / "out")
    seqs = prep["train"]
    row = {k: [x for s in seqs for x in _feature(s)[k]] for k in ("input_ids", "labels", "weights")}
    row["lengths"] = [len(s.input_ids) for s in seqs]
    packed = PackedCollator(lengths=True)([row])
    apart = PackedCollator()([_feature(s) for s in seqs])
    for k in apart:
        assert torch.equal(packed[k], apart[k]), k
    assert packed["seq_lengths"] == tuple(row["lengths"])
    with pytest.raises(ValueError, match="do not split"):
        PackedCollator()([{**row, "lengths": [1, 2]}])


def test_per_sequence_attention_gives_the_block_mask_loss_and_the_lone_sequence_logits(
    tmp_path, base
):
    rows = [make_row(episode_history(2), seed=1), make_row(episode_history(3), seed=2)]
    write_rows(tmp_path / "data", rows)
    opts = _opts(tmp_path, base)
    prep = prepare(opts, tmp_path / "out")
    a, b = prep["train"]
    masked, _ = build_trainer(opts, prep, tmp_path / "out", "cpu", False)  # sdpa + block mask
    packed, _ = build_trainer(replace(opts, batch_size=2), prep, tmp_path / "out", "cpu", False)
    assert packed.model.config._attn_implementation == PACKED_ATTENTION
    assert masked.model.config._attn_implementation != PACKED_ATTENTION
    for t in (masked, packed):
        t.model.eval()
    with torch.no_grad():
        loss_mask = float(
            masked.compute_loss(masked.model, PackedCollator()([_feature(a), _feature(b)]))
        )
        batch = PackedCollator(lengths=True)([_feature(a), _feature(b)])
        loss_packed = float(packed.compute_loss(packed.model, dict(batch)))
        n = len(a.input_ids)
        alone = packed.model(input_ids=torch.tensor([list(b.input_ids)])).logits[0]
        inputs = {k: batch[k] for k in ("input_ids", "position_ids", "seq_lengths")}
        packed_b = packed.model(**inputs).logits[0, n:]
        leaky_b = packed.model(input_ids=batch["input_ids"]).logits[0, n:]  # no lengths, no mask
    assert loss_packed == pytest.approx(loss_mask, rel=1e-5)
    assert torch.allclose(packed_b, alone, atol=1e-5)
    assert (leaky_b - alone).abs().max() > 1e-3  # the check can fail


def test_attention_runs_in_the_autocast_dtype_packed_or_not(tmp_path, base, monkeypatch):
    """CPU autocast leaves sdpa in fp32; the trainer's attention casts its inputs to bf16, as
    CUDA's autocast does, and the loss stays within bf16 rounding of the fp32 one."""
    import torch.nn.functional as F

    rows = [make_row(episode_history(2), seed=1), make_row(episode_history(3), seed=2)]
    write_rows(tmp_path / "data", rows)
    opts = _opts(tmp_path, base)
    prep = prepare(opts, tmp_path / "out")
    a, b = prep["train"]
    seen = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, *args, **kw):
        seen.append((q.dtype, k.dtype, v.dtype))
        return real(q, k, v, *args, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    for options, lengths, name in (
        (opts, False, AUTOCAST_ATTENTION),
        (replace(opts, batch_size=2), True, PACKED_ATTENTION),
    ):
        trainer, _ = build_trainer(options, prep, tmp_path / "out", "cpu", False)
        assert trainer.model.config._attn_implementation == name
        trainer.model.eval()
        batch = PackedCollator(lengths=lengths)([_feature(a), _feature(b)])
        losses = {}
        for bf16 in (False, True):
            seen.clear()
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                losses[bf16] = float(trainer.compute_loss(trainer.model, dict(batch)))
            want = torch.bfloat16 if bf16 else torch.float32
            assert seen and all(d == (want, want, want) for d in seen), (name, bf16, seen[:2])
        assert losses[True] == pytest.approx(losses[False], rel=0.05)
        assert losses[True] != losses[False]  # bf16 did run


def _curve(out):
    return [
        (r["step"], r["loss"], r["grad_norm"])
        for r in map(json.loads, (out / "train_log.jsonl").read_text().splitlines())
        if "loss" in r
    ]


def test_a_packed_run_trains_like_accumulating_the_same_sequences(tmp_path, base):
    write_rows(tmp_path / "data", [make_row(episode_history(2 + s), seed=s) for s in range(2)])
    kw = dict(max_steps=3, learning_rate=5e-3)
    apart = run_sft(_opts(tmp_path, base, out=str(tmp_path / "a"), grad_accum=2, **kw))
    packed = run_sft(_opts(tmp_path, base, out=str(tmp_path / "p"), pack_tokens=8192, **kw))
    meta = json.loads((tmp_path / "p" / "sft_config.json").read_text())
    assert meta["packing"]["rows"] == 1 and 0 < meta["packing"]["fill"] < 1
    assert meta["train_length_sq"] > 0
    ca, cp = _curve(tmp_path / "a"), _curve(tmp_path / "p")
    assert [r[0] for r in ca] == [r[0] for r in cp] == [1, 2, 3]
    for ra, rp in zip(ca, cp, strict=True):
        assert rp[1] == pytest.approx(ra[1], rel=1e-4) and rp[2] == pytest.approx(ra[2], rel=1e-3)
    assert packed["tokens_seen"] == apart["tokens_seen"]
    config = (tmp_path / "p" / "config.json").read_text()
    assert PACKED_ATTENTION not in config  # the student loads anywhere


def test_unpacked_runs_keep_their_fingerprint_and_packing_is_not_a_run_length(tmp_path, base):
    write_rows(tmp_path / "data", [make_row(episode_history(2), seed=0)])
    opts = _opts(tmp_path, base)
    prep = prepare(opts, tmp_path / "out")
    seqs = prep["train"] + prep["val"]
    # the fingerprint as it was computed before --pack-tokens existed
    h = hashlib.sha256()
    old = {k: v for k, v in asdict(opts).items() if k not in RUN_LENGTH and k != "pack_tokens"}
    h.update(json.dumps(old, sort_keys=True).encode())
    h.update((base / "config.json").read_bytes())
    for s in seqs:
        h.update(json.dumps([s.input_ids, s.labels, s.weights]).encode())
    assert _fingerprint(opts, base, seqs) == h.hexdigest()
    assert _fingerprint(replace(opts, pack_tokens=4096), base, seqs) != h.hexdigest()
    assert "pack_tokens" not in RUN_LENGTH
    with pytest.raises(SftError, match="pack_tokens"):
        SftOptions(data="d", pack_tokens=-1)
