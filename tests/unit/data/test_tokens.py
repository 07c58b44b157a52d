"""src/data/tokens.py: tokenised splits, training subsets, batching and padding."""

import numpy as np
import pandas as pd
import pytest

from src.data import tokens as data
from src.tasks import splits
from src.tasks.kinds import KINDS


def test_training_subset_is_fresh_per_trial_and_pure():
    a = data.training_subset(1000, 50, "rt_sentiment", trial=0, seed=0)
    assert np.array_equal(a, data.training_subset(1000, 50, "rt_sentiment", trial=0, seed=0))
    assert len(np.unique(a)) == 50 and a.max() < 1000
    assert not np.array_equal(a, data.training_subset(1000, 50, "rt_sentiment", trial=1, seed=0))
    assert not np.array_equal(a, data.training_subset(1000, 50, "bigram_shift", trial=0, seed=0))


def test_subset_larger_than_the_pool_is_refused():
    with pytest.raises(ValueError, match="training size 501 is larger than the 500 training examples of task 'x'"):
        data.training_subset(500, 501, "x", 0, 0)


@pytest.mark.parametrize("group", [False, True])
def test_training_batches_cover_every_example_once(group):
    lengths = np.random.default_rng(0).integers(3, 60, size=1003)
    plan = data.batches(lengths, 8, np.random.default_rng(1), group_by_length=group)
    assert sorted(np.concatenate(plan).tolist()) == list(range(1003))
    assert max(len(b) for b in plan) == 8


def test_length_grouping_cuts_padding():
    lengths = np.random.default_rng(0).integers(3, 60, size=2000)

    def padded(group):
        return sum(lengths[b].max() * len(b) for b in data.batches(lengths, 8, np.random.default_rng(1), group))

    assert padded(True) < 0.8 * padded(False)


def test_collate_pads_and_masks(tiny_task_dir):
    split = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    batch = data.collate(split, np.array([0, 5, 7]))
    lengths = split.lengths[[0, 5, 7]]
    assert batch["input_ids"].shape == (3, lengths.max())
    assert batch["attention_mask"].sum(1).tolist() == lengths.tolist()
    assert batch["input_ids"][0, : lengths[0]].tolist() == split.ids[split.offsets[0] : split.offsets[1]].tolist()
    assert (batch["input_ids"][batch["attention_mask"] == 0] == split.pad_id).all()


def test_tokens_carry_the_tokenizers_padding_id(tmp_path, tiny_model_dir):
    from src.model.base import load_tokenizer

    tokenizer = load_tokenizer(tiny_model_dir)
    tokenizer.pad_token = "[MASK]"  # any id but 0, which a zero-filled array would give anyway
    split = data.tokenize(
        pd.DataFrame({"sentence": ["a good film", "bad"], "label": [1, 0]}),
        ("sentence",),
        KINDS["classification"],
        tokenizer,
        16,
    )
    splits.save_splits(tmp_path / "tokens.npz", {"train": split})
    loaded = splits.load_split(tmp_path / "tokens.npz", "train")
    assert loaded.pad_id == tokenizer.pad_token_id == 4
    assert loaded.subset(np.array([0, 1])).pad_id == 4
    batch = data.collate(loaded, np.array([0, 1]))
    assert batch["input_ids"][1, -1] == 4 and batch["attention_mask"][1, -1] == 0


def test_subset_keeps_examples_intact(tiny_task_dir):
    split = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    sub = split.subset(np.array([3, 1]))
    assert len(sub) == 2 and sub.labels.tolist() == split.labels[[3, 1]].tolist()
    assert sub.ids[sub.offsets[1] : sub.offsets[2]].tolist() == split.ids[split.offsets[1] : split.offsets[2]].tolist()
