"""data.glue_carve_train_from_dev carves a train split from dev only for the tasks it lists.
Part of the bad-input tests (unit/params/test_bad_params.py lists the others)."""

from src.params.load import validate
from tests.support import grid_params, on_tasks


def test_carving_applies_only_to_the_tasks_listed(tmp_path):
    from src.data.build import build_splits

    sst2 = "sentence\tlabel\n" + "".join(f"film {i}\t{i % 2}\n" for i in range(30))
    qnli = "index\tquestion\tsentence\tlabel\n" + "".join(
        f"{i}\tq {i}?\ts {i}.\t{'entailment' if i % 2 else 'not_entailment'}\n" for i in range(20)
    )
    for folder, files in (("SST-2", {"train.tsv": sst2, "dev.tsv": sst2[:60]}), ("QNLI", {"dev.tsv": qnli})):
        (tmp_path / folder).mkdir()
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text)
    params = on_tasks(grid_params(), ["sst2", "qnli"])
    params["data"].update(glue_dir=str(tmp_path), glue_carve_train_from_dev=["qnli"])
    data = validate(params).data
    sst2_train, _, sst2_note = build_splits("sst2", data)
    qnli_train, qnli_eval, qnli_note = build_splits("qnli", data)
    assert len(sst2_train) == 30 and "carved" not in sst2_note  # SST-2 keeps its own train file
    assert (len(qnli_train), len(qnli_eval)) == (10, 10) and "train = 10 of 20 dev rows" in qnli_note
