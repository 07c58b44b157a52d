"""Packed training on the tiny model (src/train/packed.py, stacked.py): the reference path is the unpacked
loop bit for bit, the stacked path equals it within its stated tolerances, and a member's numbers
do not depend on its pack mates, their order, a diverging mate or an interruption."""

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from src.conditions.condition import Condition
from src.data import tokens
from src.model.finetuner import build_finetuner, reinitialised_layer_parameters
from src.params.load import validate
from src.tasks import splits
from src.tasks.registry import get_task
from src.train import loop
from src.train.alone import AlonePath
from src.train.loop import Member, RunSettings, finetune, train_members
from src.train.packed import at_pack_sizes, keys_as_trained, pack_key
from src.train.schedule import run_all
from src.train.stacked import STACKED_CHANGE_RTOL, STACKED_LOSS_RTOL, StackedPath
from tests.support import FAMILY_KINDS, tiny_config, tiny_params

TASK = get_task("rt_sentiment")
# (k, lr multiplier, epochs, lr) of each member: the first keeps layer 1, the second has the
# 5x lr on its fresh layers, the third trains one epoch less and leaves the pack early.
RUNS = {"a": (1, 1.0, 2, 1e-3), "b": (0, 5.0, 2, 1e-3), "c": (2, 1.0, 1, 1e-3), "diverges": (1, 1.0, 2, 1e12)}


def settings(epochs: int, lr: float = 1e-3, **changes) -> RunSettings:
    fields = dict(lr=lr, batch_size=8, epochs=epochs, weight_decay=0.0, eval_batch_size=64, group_by_length=True)
    fields.update(precision="fp32", checkpoint_every=0, threads=1, seed=0, device="cpu")
    return RunSettings(**{**fields, **changes})


@pytest.fixture(scope="module")
def train_split(tiny_task_dir):
    pool = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    return pool.subset(tokens.training_subset(len(pool), 48, TASK.name, 0, 0))  # 6 steps of 8


def member(name: str, model_dir, checkpoint=None, **changes) -> Member:
    k, multiplier, epochs, lr = RUNS[name]
    condition = Condition("rt_sentiment", 48, 0, epochs, k=k, lr_multiplier=multiplier)
    model, record = build_finetuner(model_dir, condition, 2, 0)
    fresh = frozenset(reinitialised_layer_parameters(model, record["reinitialised"]))
    return Member(model, settings(epochs, lr, **changes), fresh, multiplier, checkpoint, name)


def train(names, model_dir, split, path, **changes) -> dict:
    """Each member's (outcome, final weights), by name, trained as one pack on `path`."""
    members = [member(name, model_dir, **changes) for name in names]
    outcomes = train_members(members, TASK, split, order_seed=11, dropout_seed=11, path=path)
    return {
        name: (o, {n: p.detach().clone() for n, p in m.model.named_parameters()})
        for name, o, m in zip(names, outcomes, members)
    }


def alone(name, model_dir, split, **changes):
    """The unpacked loop: finetune(), as every run trained before packing."""
    m = member(name, model_dir, **changes)
    outcome = finetune(m.model, TASK, split, m.settings, 11, m.fresh, m.lr_multiplier, dropout_seed=11)
    return outcome, {n: p.detach().clone() for n, p in m.model.named_parameters()}


def assert_same(first, second):
    (outcome, weights), (outcome2, weights2) = first, second
    for field in ("status", "epoch_losses", "step_losses", "layer_change", "steps"):
        assert outcome.get(field) == outcome2.get(field), field
    assert all(torch.equal(weights[n], weights2[n]) for n in weights)


def assert_close(first, second, name, model_dir):
    """Equal within the stacked path's tolerances: each step's loss, and the weights' change from their start."""
    (outcome, weights), (outcome2, weights2) = first, second
    assert outcome["status"] == outcome2["status"]
    np.testing.assert_allclose(outcome["step_losses"], outcome2["step_losses"], rtol=STACKED_LOSS_RTOL)
    start = dict(member(name, model_dir).model.named_parameters())
    change, change2 = (torch.cat([(w[n] - start[n].detach()).flatten() for n in start]) for w in (weights, weights2))
    assert float((change - change2).norm() / change2.norm()) < STACKED_CHANGE_RTOL


def test_the_reference_path_trains_each_member_as_the_unpacked_loop_bit_for_bit(tiny_model_dir, train_split):
    packed = train(["b", "a", "c"], tiny_model_dir, train_split, AlonePath)
    for name in ("a", "b", "c"):
        assert_same(packed[name], alone(name, tiny_model_dir, train_split))


def test_the_stacked_path_equals_the_reference_within_its_tolerance(tiny_model_dir, train_split):
    stacked = train(["a", "b", "c"], tiny_model_dir, train_split, StackedPath)
    reference = train(["a", "b", "c"], tiny_model_dir, train_split, AlonePath)
    for name in ("a", "b", "c"):
        assert_close(stacked[name], reference[name], name, tiny_model_dir)
        assert not all(torch.equal(stacked[name][1][n], w) for n, w in reference[name][1].items())  # another path
    assert len(stacked["c"][0]["epoch_losses"]) == 1 and len(stacked["a"][0]["epoch_losses"]) == 2


def test_a_stacked_pack_of_one_equals_the_unpacked_loop_within_the_tolerance(tiny_model_dir, train_split):
    stacked = train(["b"], tiny_model_dir, train_split, StackedPath)["b"]
    assert_close(stacked, alone("b", tiny_model_dir, train_split), "b", tiny_model_dir)


def test_a_members_numbers_do_not_depend_on_its_mates_or_their_order(tiny_model_dir, train_split):
    together = train(["a", "b", "c"], tiny_model_dir, train_split, StackedPath)
    for names in (["c", "b", "a"], ["b", "a"], ["a"]):
        other = train(names, tiny_model_dir, train_split, StackedPath)
        assert_same(other["a"], together["a"])


def test_a_cuda_pack_draws_one_dropout_mask_for_its_members_whatever_its_mates(
    tiny_model_dir, train_split, monkeypatch
):
    """CUDA's fused dropout has no vmap rule: there a pack draws its masks with torch.rand
    (forced here on the CPU). A member's numbers still do not depend on its mates or order."""
    from src.train import stacked

    drawn = []
    monkeypatch.setattr(stacked, "shared_mask_for", lambda device: drawn.append(device) or True)
    monkeypatch.setattr(torch.nn.functional, "dropout", _refuse_batched_dropout(torch.nn.functional.dropout))
    together = train(["a", "b", "c"], tiny_model_dir, train_split, StackedPath)
    assert drawn and all(np.isfinite(together[n][0]["step_losses"]).all() for n in "abc")
    for names in (["c", "a"], ["a"]):
        assert_same(train(names, tiny_model_dir, train_split, StackedPath)["a"], together["a"])
    assert together["a"][0]["step_losses"] != alone("a", tiny_model_dir, train_split)[0]["step_losses"]  # other masks


def _refuse_batched_dropout(dropout):
    """torch's dropout, failing under vmap as CUDA's fused kernel does."""

    def refuse(input, *args, **kwargs):
        if torch._C._functorch.is_batchedtensor(input):
            raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input")
        return dropout(input, *args, **kwargs)

    return refuse


def test_a_diverging_member_leaves_and_its_mates_train_as_without_it(tiny_model_dir, train_split):
    for path in (StackedPath, AlonePath):
        with_it = train(["a", "diverges", "b"], tiny_model_dir, train_split, path)
        without = train(["a", "b"], tiny_model_dir, train_split, path)
        outcome = with_it["diverges"][0]
        assert outcome["status"] == "diverged" and len(outcome["epoch_losses"]) == 1
        assert not np.isfinite(outcome["epoch_losses"][0])
        for name in ("a", "b"):
            assert_same(with_it[name], without[name])


def test_a_pack_resumes_from_its_members_checkpoints_bit_for_bit(tiny_model_dir, train_split, tmp_path, monkeypatch):
    names = ["a", "b", "c"]
    whole = train(names, tiny_model_dir, train_split, StackedPath, checkpoint_every=4)

    class Stop(Exception):
        pass

    class Counted(StackedPath):
        def step(self, *args):
            steps.append(1)
            return super().step(*args)

    saves, steps = [], []
    real_save = loop._save_checkpoint

    def stop_in_the_second_epoch(*args):
        real_save(*args)
        saves.append(args[0])
        if len(saves) == 5:  # the 3 members at step 4 of epoch 1, the 2 still training at step 4 of epoch 2
            raise Stop

    monkeypatch.setattr(loop, "_save_checkpoint", stop_in_the_second_epoch)
    with pytest.raises(Stop):
        members = [member(n, tiny_model_dir, tmp_path / f"{n}.ckpt", checkpoint_every=4) for n in names]
        train_members(members, TASK, train_split, 11, 11, path=StackedPath)
    monkeypatch.setattr(loop, "_save_checkpoint", real_save)
    # c finished in epoch 1 (the stage wrote its result then): the pack resumes without it
    members = [member(n, tiny_model_dir, tmp_path / f"{n}.ckpt", checkpoint_every=4) for n in ("a", "b")]
    outcomes = train_members(members, TASK, train_split, 11, 11, path=Counted)
    assert len(steps) == 2  # steps 5 and 6 of epoch 2: resumed, not started again
    for name, outcome, m in zip(("a", "b"), outcomes, members):
        weights = {n: p.detach().clone() for n, p in m.model.named_parameters()}
        assert_same((outcome, weights), whole[name])


def test_runs_of_one_trial_share_a_pack_key_and_others_do_not():
    plain = settings(3)
    key = lambda condition, s=plain: pack_key(condition, s, 0)  # noqa: E731
    base = key(Condition("rt_sentiment", 500, 0, 3, k=0))
    assert key(Condition("rt_sentiment", 500, 0, 5, k=6, lr_multiplier=5.0)) == base
    assert key(Condition("rt_sentiment", 500, 0, 3, scheme="permutation")) == base
    assert key(Condition("rt_sentiment", 500, 0, 3, k=0), RunSettings(**{**plain.__dict__, "cka": True})) == base
    for other in (
        Condition("rt_sentiment", 500, 1, 3, k=0),
        Condition("rt_sentiment", 1000, 0, 3, k=0),
        Condition("subjectivity", 500, 0, 3, k=0),
        Condition("rt_sentiment", 500, 0, 3, k=0, pooling="cls"),
    ):
        assert key(other) != base
    assert key(Condition("rt_sentiment", 500, 0, 3, k=0), settings(3, lr=2e-5)) != base
    assert key(Condition("rt_sentiment", 500, 0, 3, k=6, intermediate_task="subjectivity")) is None


# --- the finetune stage's execution with train.pack --------------------------------------------


def stage(tmp_path, model_dir, tasks_root, ks, pack=4):
    """run_all of progressive ks at 40 examples, trial 0, in this process: (config, results, out folder)."""
    params = tiny_params(workers=1, pack=pack, cka=False, criticality="off", head_importance="off")
    config = validate(params)
    conditions = [Condition("rt_sentiment", 40, 0, 1, k=k) for k in ks]
    out = tmp_path / f"out{pack}_{''.join(map(str, ks))}"
    return run_all(conditions, config, model_dir, tasks_root, out, "studies.progressive", False), out


def test_a_packed_stage_writes_each_runs_result_and_log_with_the_pack_size_it_trained_at_in_its_fingerprint(
    tmp_path, tiny_model_dir, tiny_tasks_root, capsys
):
    packed, out = stage(tmp_path, tiny_model_dir, tiny_tasks_root, [0, 1, 2, 3])
    assert all(r.status == "ok" and r.settings["pack"] == 4 and r.pack_sizes == [[0, 4]] for r in packed)
    assert len(list(out.rglob("trial0.json"))) == 4 and len(list(out.rglob("trial0.log"))) == 4
    assert capsys.readouterr().err.count("warning: params.yaml: train.pack = 4 on a CPU") == 1
    fewer, _ = stage(tmp_path, tiny_model_dir, tiny_tasks_root, [3, 0])  # other mates, another order, 2 of them
    assert [r.scores for r in fewer] == [packed[3].scores, packed[0].scores]  # on the CPU the size moves no bit
    assert [r.pack_sizes for r in fewer] == [[[0, 2]]] * 2
    assert fewer[0].fingerprint != packed[3].fingerprint and fewer[1].fingerprint != packed[0].fingerprint
    again, _ = stage(tmp_path, tiny_model_dir, tiny_tasks_root, [0, 1, 2, 3])  # current at the size it trained at
    assert capsys.readouterr().out.count("finished earlier, kept") == 4
    assert [r.fingerprint for r in again] == [r.fingerprint for r in packed]
    unpacked, _ = stage(tmp_path, tiny_model_dir, tiny_tasks_root, [0], pack=0)
    assert unpacked[0].fingerprint != packed[0].fingerprint and unpacked[0].pack_sizes == []


def test_a_failing_pack_is_tried_again_then_its_runs_train_alone(
    tmp_path, tiny_model_dir, tiny_tasks_root, monkeypatch, capsys
):
    sizes = []
    real_step = StackedPath.step

    def fails_in_a_pack(self, live, batch, labels):
        sizes.append(len(live))
        if len(self.slots) > 1:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real_step(self, live, batch, labels)

    monkeypatch.setattr(StackedPath, "step", fails_in_a_pack)
    results, out = stage(tmp_path, tiny_model_dir, tiny_tasks_root, [0, 2])
    assert sizes[:2] == [2, 2] and set(sizes[2:]) == {1}  # the pack twice, then each run alone
    assert all(r.status == "ok" for r in results) and not list(out.rglob("*.failed"))
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert len(notes) == 2 and "(RuntimeError: CUDA out of memory (simulated)): tried again" in notes[0]
    assert "each run trained as a pack of one after a second failure, as packs of 1, 1;" in notes[1]
    assert all(r.pack_fallback == "alone" and r.pack_sizes == [[0, 1]] for r in results)


# --- what decides a packed run's bits: its pack's size, kept while members leave -----------------


def test_a_member_that_leaves_keeps_its_slot_frozen_and_the_stack_is_neither_copied_nor_shrunk(
    tiny_model_dir, train_split
):
    members = [member(name, tiny_model_dir) for name in ("a", "c")]  # c trains one epoch, a two
    packs, start = [], {}

    def stacked(members, task):
        packs.append(StackedPath(members, task))
        start.update({n: p.data_ptr() for n, p in packs[0].params.items()})
        return packs[0]

    outcomes = train_members(members, TASK, train_split, order_seed=11, dropout_seed=11, path=stacked)
    pack = packs[0]
    assert [len(o["epoch_losses"]) for o in outcomes] == [2, 1]
    assert pack.slots == [0, 1] and pack.left == {0, 1} and pack.sizes == [[0, 2]]
    assert all(p.shape[0] == 2 and p.data_ptr() == start[n] for n, p in pack.params.items())
    # c's slot did not move after it left: its model's own copy equals it
    assert all(torch.equal(p, pack.params[n][1]) for n, p in members[1].model.named_parameters())


def test_a_pack_resumed_at_another_size_records_both_sizes(tiny_model_dir):
    saved = StackedPath([member(n, tiny_model_dir) for n in ("a", "b", "c")], TASK).state(0)
    saved["optimizer"]["step"] = 10
    for names, sizes in ((["a", "b"], [[0, 3], [10, 2]]), (["a", "b", "c"], [[0, 3]])):
        pack = StackedPath([member(n, tiny_model_dir) for n in names], TASK)
        pack.load(0, saved)
        assert pack.sizes == sizes and pack.state(0)["optimizer"]["pack_sizes"] == sizes


@pytest.mark.parametrize("kind", FAMILY_KINDS)
def test_a_stacked_models_dropout_draws_the_packs_mask_in_that_model_only(kind):
    """Every family's stacked copy gives what eager attention with torch's dropout replaced by the
    pack's mask gives, bit for bit; torch's dropout and every other model are left as they were."""
    from transformers import AutoModel

    from src.train import stacked

    model = AutoModel.from_config(tiny_config(kind, 40)).train()
    ids = torch.randint(5, 40, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # padding: the attention mask must be eager attention's

    def forward(copy) -> torch.Tensor:
        torch.manual_seed(0)
        return copy(input_ids=ids, attention_mask=mask).last_hidden_state

    fused, implementation = torch.nn.functional.dropout, model.config._attn_implementation
    reference = copy.deepcopy(model)
    reference.config._attn_implementation = "eager"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.functional, "dropout", stacked._shared_mask)
        expected = forward(reference)
    shared = copy.deepcopy(model)
    stacked._draw_shared_masks(shared)
    assert torch.equal(forward(shared), expected)
    assert not torch.equal(forward(model), expected)  # a model's own dropout draws other masks
    assert torch.nn.functional.dropout is fused and model.config._attn_implementation == implementation
    assert not any(isinstance(m, stacked.SharedMaskDropout) for m in model.modules())


def test_a_packed_result_is_current_at_the_pack_sizes_it_trained_at_up_to_train_pack():
    packed, alone = settings(1, pack=4), settings(1)
    trained = SimpleNamespace(pack_sizes=[[0, 3], [10, 2]])
    key, training_key = keys_as_trained(packed, "run", "training", trained)
    assert (key, training_key) == (
        at_pack_sizes("run", trained.pack_sizes),
        at_pack_sizes("training", trained.pack_sizes),
    )
    assert len({key, at_pack_sizes("run", [[0, 3]]), at_pack_sizes("run", [[0, 2]]), "run"}) == 4
    assert keys_as_trained(settings(1, pack=2), "run", "training", trained) == ("run", "training")  # wider than asked
    assert keys_as_trained(alone, "run", "training", trained) == ("run", "training")
    assert keys_as_trained(packed, "run", "training", SimpleNamespace(pack_sizes=[])) == ("run", "training")
    assert keys_as_trained(packed, "run", "training", None) == ("run", "training")
