"""Extractive QA (SQuAD 2.0): the official metric, windowing with a stride, the null
threshold fitted on training data only, the SQuAD files' checks, and the real slices of
../shared/squad when they are there."""

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

from src.conditions.condition import Condition
from src.core.errors import ParamsError
from src.data import tokens
from src.data.build import build_splits, checked_unknown_words, write_task
from src.model.base import load_tokenizer
from src.params.load import validate
from src.tasks import splits
from src.tasks.metrics import best_over_golds, exact_match, normalize_answer, squad_scores, token_f1
from src.tasks.spans import Decoded, best_span
from src.tasks.squad import SquadFormatError, read_squad_json
from src.train.run import run_condition
from src.train.schedule import run_settings
from tests.support import REPO, long_context, toy_qa

SHARED_SQUAD = REPO.parent / "shared" / "squad"

# --- the official metric (evaluate-v2.0.py), hand-computed cases ---------------------------------


def test_normalisation_lower_cases_and_drops_punctuation_articles_and_extra_spaces():
    assert normalize_answer("  The Cat,  sat on a mat! ") == "cat sat on mat"
    assert normalize_answer("An apple") == "apple"
    assert normalize_answer("theatre") == "theatre"  # an article only as a whole word


def test_exact_match_after_normalisation():
    assert exact_match("The Cat", "cat") == 1.0
    assert exact_match("cat", "cats") == 0.0


def test_f1_of_a_partial_token_overlap():
    # gold {cat, sat}, predicted {cat, sat, down}: precision 2/3, recall 1, F1 = 0.8
    assert token_f1("the cat sat", "cat sat down") == pytest.approx(0.8)
    assert token_f1("cat cat", "cat") == pytest.approx(2 * 1 * 0.5 / 1.5)  # tokens count with multiplicity
    assert token_f1("dog", "cat") == 0.0


def test_the_best_over_gold_answers_counts():
    # vs "big red dog": P 1, R 2/3 -> 0.8; vs "dog": P 1/2, R 1 -> 2/3: the max is 0.8, no exact match
    assert best_over_golds(["the big red dog", "dog"], "red dog") == pytest.approx((0.8, 0.0))
    assert best_over_golds(["New York City", "NYC"], "nyc") == (1.0, 1.0)


def test_no_answer_scores_one_against_no_answer_and_zero_against_a_span():
    assert best_over_golds([], "") == (1.0, 1.0)
    assert best_over_golds([], "Paris") == (0.0, 0.0)
    assert best_over_golds(["Paris"], "") == (0.0, 0.0)
    assert best_over_golds(["the"], "") == (1.0, 1.0)  # no gold left: the gold is "" (no answer)
    assert best_over_golds(["the", "cat"], "") == (0.0, 0.0)  # a gold that normalises to nothing is dropped


def test_a_span_blank_after_normalisation_scores_as_no_answer_as_the_official_script():
    assert best_over_golds([], "the") == (1.0, 1.0) and best_over_golds([], " . ") == (1.0, 1.0)
    assert best_over_golds(["cat"], "the") == (0.0, 0.0)


def test_has_answer_and_no_answer_are_averaged_separately():
    f1, exact = np.array([1.0, 0.5, 1.0, 0.0]), np.array([1.0, 0.0, 1.0, 0.0])
    scores = squad_scores(f1, exact, np.array([1, 1, 0, 0]))
    assert scores == pytest.approx(
        {
            "squad_f1": 0.625,
            "squad_exact": 0.5,
            "HasAns_f1": 0.75,
            "HasAns_exact": 0.5,
            "NoAns_f1": 0.5,
            "NoAns_exact": 0.5,
        }
    )


# --- decoding and the null threshold ---------------------------------------------------------------


def test_the_best_span_is_inside_the_context_ordered_and_not_too_long():
    start = np.array([9.0, 0.0, 5.0, 1.0, 0.0, 0.0])
    end = np.array([9.0, 0.0, 0.0, 1.0, 0.0, 4.0])
    context = np.array([False, False, True, True, True, True])  # [CLS] and the question are not answers
    assert best_span(start, end, context, max_tokens=4) == (9.0, 2, 5)
    assert best_span(start, end, context, max_tokens=3) == (6.0, 2, 3)  # 2..5 is 4 tokens: too long


def test_the_threshold_is_the_official_best_f1_threshold():
    # Switching questions from "no answer" to their span in order of null margin: gains 1, -1, 0.5, 0
    # give running totals 1, 0, 0.5, 0.5: only the first question is answered, threshold = its margin.
    decoded = Decoded(
        texts=["a", "b", "c", "d"],
        answerable=np.array([1, 0, 1, 0], dtype=np.int8),
        null_margin=np.array([-2.0, -1.0, 0.5, 3.0]),
        f1_span=np.array([1.0, 0.0, 0.5, 1.0]),
        exact_span=np.zeros(4),
        f1_null=np.array([0.0, 1.0, 0.0, 1.0]),
        exact_null=np.zeros(4),
    )
    assert decoded.best_null_threshold() == -2.0
    f1, _, no_answer = decoded.scored(-2.0)
    assert no_answer.tolist() == [False, True, True, True] and f1.tolist() == [1.0, 1.0, 0.0, 1.0]
    nothing_helps = Decoded(**{**vars(decoded), "f1_span": np.zeros(4)})
    assert nothing_helps.scored(nothing_helps.best_null_threshold())[2].all()  # every question "no answer"


# --- windows ---------------------------------------------------------------------------------------


def squad_frame(questions: list[tuple[str, str, list[str]]]):
    """(question, context, gold texts) -> the frame the SQuAD loaders return."""
    rows = [(f"q{i}", q, c, golds, c.index(golds[0]) if golds else -1) for i, (q, c, golds) in enumerate(questions)]
    return pd.DataFrame(rows, columns=["id", "question", "context", "answers", "answer_start"])


def test_a_long_context_is_cut_into_overlapping_windows_that_map_back_to_the_answer(tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    context = long_context(0) + " zebra crossing fun " + long_context(1)
    frame = squad_frame([("what is the plot", context, ["zebra crossing"]), ("is it a plot", context, [])])
    split = tokens.tokenize_spans(frame, tokenizer, max_length=24, stride=6, max_answer_tokens=30)
    windows = split.question_of_window
    assert (windows == 0).sum() > 3 and (windows == 1).sum() == (windows == 0).sum()
    assert split.examples == 2 and split.answerable.tolist() == [1, 0]
    # consecutive windows of a question share `stride` context tokens
    context_spans = [
        [tuple(s) for s in split.char_spans[split.offsets[w] : split.offsets[w + 1]] if s[0] >= 0]
        for w in np.flatnonzero(windows == 0)
    ]
    for before, after in zip(context_spans, context_spans[1:]):
        assert before[-6:] == after[:6]
    covered = {span for spans in context_spans for span in spans}
    all_tokens = tokenizer(context, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
    assert covered == {tuple(s) for s in all_tokens}  # every context token is in some window
    # the windows holding the whole answer point at exactly its text; the others at [CLS]
    answered = 0
    for w in np.flatnonzero(windows == 0):
        start, end, _ = split.labels[w]
        if (start, end) != (0, 0):
            spans = split.char_spans[split.offsets[w] :]
            assert context[spans[start][0] : spans[end][1]] == "zebra crossing"
            answered += 1
    assert answered >= 1
    assert (split.labels[windows == 1][:, :2] == 0).all()  # unanswerable: [CLS] in every window


def test_spans_survive_saving_and_a_training_subset_takes_whole_questions(tiny_model_dir, tmp_path):
    tokenizer = load_tokenizer(tiny_model_dir)
    frame = squad_frame([(f"q {i} plot", long_context(i), []) for i in range(5)])
    split = tokens.tokenize_spans(frame, tokenizer, max_length=24, stride=6, max_answer_tokens=7)
    splits.save_splits(tmp_path / "tokens.npz", {"train": split})
    loaded = splits.load_split(tmp_path / "tokens.npz", "train")
    assert isinstance(loaded, splits.SpanSplit) and loaded.max_answer_tokens == 7
    assert loaded.contexts == split.contexts and np.array_equal(loaded.char_spans, split.char_spans)
    chosen = loaded.of_examples(np.array([1, 3]))
    assert set(chosen.question_of_window) == {1, 3}
    assert len(chosen) == int(np.isin(split.question_of_window, [1, 3]).sum())
    assert len(chosen.char_spans) == chosen.offsets[-1]


def test_a_question_that_leaves_no_room_for_context_names_max_length_and_stride(tiny_model_dir):
    frame = squad_frame([(" ".join(["plot"] * 30), "a good film", ["good"])])
    with pytest.raises(ParamsError, match=r"^params.yaml: model.max_length = 24 is invalid; .*data.qa_stride \(6\)"):
        tokens.tokenize_spans(frame, load_tokenizer(tiny_model_dir), max_length=24, stride=6, max_answer_tokens=30)


def test_a_stride_as_long_as_the_window_names_data_qa_stride(params):
    params["data"].update(tasks=[*params["data"]["tasks"], "squad_v2"], qa_stride=128)
    params["model"]["max_length"] = 128
    with pytest.raises(ParamsError, match=r"^params.yaml: data.qa_stride = 128 is invalid; allowed: 0..123 "):
        validate(params)
    params["data"]["qa_stride"] = 123
    assert validate(params).data.qa_stride == 123
    params["data"].update(tasks=params["data"]["tasks"][:-1], qa_stride=128)  # no span-QA task: no windows
    assert validate(params).data.qa_stride == 128


# --- the threshold comes from the training data ----------------------------------------------------


@pytest.fixture
def qa_tasks_dir(tmp_path, tiny_model_dir, params):
    params["data"].update(tasks=[*params["data"]["tasks"], "squad_v2"], qa_stride=4, qa_max_answer_tokens=5)
    config = validate(params)
    tokenizer = load_tokenizer(tiny_model_dir)
    train, eval_ = squad_frame(toy_qa(40, 1)), squad_frame(toy_qa(20, 2))
    unknown = checked_unknown_words("squad_v2", train, eval_, tokenizer, config.data)
    write_task("squad_v2", train, eval_, "toy", unknown, tokenizer, 24, tmp_path / "squad_v2", config.data)
    return tmp_path, config


def test_the_null_threshold_is_fitted_on_training_data_and_ignores_the_eval_answers(qa_tasks_dir, tiny_model_dir):
    tasks_dir, config = qa_tasks_dir
    condition = Condition("squad_v2", 30, 0, 2, k=3)
    settings = run_settings(config, 2)
    first = run_condition(condition, settings, tiny_model_dir, tasks_dir)
    assert first.ok and first.null_threshold is not None and first.metric == "squad_f1"
    assert set(first.scores) == {"squad_f1", "squad_exact", "HasAns_f1", "HasAns_exact", "NoAns_f1", "NoAns_exact"}
    per_question = first.eval_predictions()
    assert len(per_question) == 20 and first.eval_examples == 20
    assert per_question.mean() == pytest.approx(first.scores["squad_f1"], abs=1e-3)

    # every eval answer changed (answerable <-> not): the eval scores move, the threshold does not
    path = tasks_dir / "squad_v2" / "tokens.npz"
    stored = {name: splits.load_split(path, name) for name in ("train", "eval")}
    swapped = copy.copy(stored["eval"])
    swapped.golds = [[] if g else ["story"] for g in swapped.golds]
    splits.save_splits(path, {**stored, "eval": swapped})
    second = run_condition(condition, settings, tiny_model_dir, tasks_dir)
    assert second.null_threshold == first.null_threshold
    assert second.scores != first.scores


def test_the_null_threshold_is_fitted_on_training_questions_the_run_did_not_train_on(
    qa_tasks_dir, tiny_model_dir, monkeypatch
):
    import src.train.run

    fitted_on = []
    fit = src.train.run.fit_null_threshold
    monkeypatch.setattr(src.train.run, "fit_null_threshold", lambda *a: fitted_on.append(a[2]) or fit(*a))
    tasks_dir, config = qa_tasks_dir
    settings = run_settings(config, 2)
    result = run_condition(Condition("squad_v2", 30, 0, 2, k=3), settings, tiny_model_dir, tasks_dir)
    trained = set(tokens.training_subset(40, 30, "squad_v2", 0, settings.seed).tolist())
    (split,) = fitted_on
    questions = set(np.unique(split.question_of_window).tolist())
    # as many as it trains on, or all the 40 - 30 left; each with all its windows
    assert result.null_threshold_questions == len(questions) == 10 and not questions & trained
    pool = splits.load_split(tasks_dir / "squad_v2" / "tokens.npz", "train")
    assert len(split) == int(np.isin(pool.question_of_window, list(questions)).sum())


def test_a_span_qa_run_on_its_whole_training_pool_is_refused_before_training(qa_tasks_dir):
    from src.train.schedule import check_sizes

    tasks_dir, _ = qa_tasks_dir
    (tasks_dir / "squad_v2" / "info.json").write_text(json.dumps({"task": "squad_v2", "train_examples": 40}))
    check_sizes([Condition("squad_v2", 39, 0, 2, k=3)], tasks_dir, "studies.progressive")
    with pytest.raises(ParamsError, match=r"asks for 40 training examples of task 'squad_v2', all 40: .*at most 39"):
        check_sizes([Condition("squad_v2", 40, 0, 2, k=3)], tasks_dir, "studies.progressive")


def qa_settings(config, **train):
    from dataclasses import replace

    return replace(run_settings(config, 2), **train)


def test_criticality_scores_rewound_models_as_the_reported_score_is(qa_tasks_dir, tiny_model_dir):
    # At lr 0 nothing moves, so every layer rewound to its pretrained value is the reported model:
    # the same fitted threshold must give the same score, a drop of exactly 0.
    tasks_dir, config = qa_tasks_dir
    settings = qa_settings(config, lr=0.0, criticality=True, criticality_examples=0)
    result = run_condition(Condition("squad_v2", 30, 0, 2, k=3), settings, tiny_model_dir, tasks_dir)
    assert result.null_threshold is not None
    assert [r["drop"] for r in result.criticality if r["rewound_to"] == "pretrained"] == [0.0, 0.0, 0.0]


def test_the_criticality_subset_takes_whole_questions(qa_tasks_dir, tiny_model_dir):
    # the first 6 questions with all their windows: the finetuned model's F1 on them (score + drop)
    # is the mean of their reported per-question F1
    tasks_dir, config = qa_tasks_dir
    eval_split = splits.load_split(tasks_dir / "squad_v2" / "tokens.npz", "eval")
    assert len(eval_split) > eval_split.examples  # several windows per question
    settings = qa_settings(config, criticality=True, criticality_examples=6)
    result = run_condition(Condition("squad_v2", 30, 0, 2, k=3), settings, tiny_model_dir, tasks_dir)
    first_six = float(result.eval_predictions()[:6].mean())
    assert {round(r["score"] + r["drop"], 3) for r in result.criticality} == {round(first_six, 3)}


def test_a_span_qa_task_cannot_be_probed(params):
    params["data"].update(tasks=[*params["data"]["tasks"], "squad_v2"], qa_stride=8)
    params["probe"]["tasks"] = ["squad_v2"]
    with pytest.raises(ParamsError, match=r"^params.yaml: probe.tasks\[0\] = 'squad_v2' is invalid; .*span QA"):
        validate(params)


# --- the SQuAD files -------------------------------------------------------------------------------


def squad_json(questions: list[dict], context: str = "The cat sat on the mat.") -> dict:
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": questions}]}]}


GOOD = {"id": "a", "question": "Who sat?", "is_impossible": False, "answers": [{"text": "cat", "answer_start": 4}]}


@pytest.mark.parametrize(
    "content, message",
    [
        pytest.param(None, r"dev-v2.0.json not found \(data.squad_dir must hold", id="missing"),
        pytest.param("{not json", r"dev-v2.0.json: not UTF-8 JSON", id="not-json"),
        pytest.param(json.dumps({"data": [{"qas": []}]}), r"not the SQuAD 2.0 layout .*'paragraphs'", id="layout"),
        pytest.param(
            json.dumps(squad_json([{**GOOD, "answers": []}])),
            r"question 'a': marked answerable \(is_impossible false\) but has no answers",
            id="answerable-without-answers",
        ),
        pytest.param(
            json.dumps(squad_json([{**GOOD, "answers": [{"text": "cat", "answer_start": 9}]}])),
            r"answer 'cat' is not at answer_start 9",
            id="misplaced-answer",
        ),
        pytest.param(  # Python slices from the end: "cat" is also at -19 of this context
            json.dumps(squad_json([{**GOOD, "answers": [{"text": "cat", "answer_start": -19}]}])),
            r"question 'a': answer_start = -19 .*an integer >= 0",
            id="negative-answer-start",
        ),
        pytest.param(
            json.dumps(squad_json([{**GOOD, "is_impossible": True, "answers": []}], context="")),
            r"data\[0\].paragraphs\[0\]: context = '' .*a non-empty text",
            id="empty-context",
        ),
        pytest.param(
            json.dumps({"data": [squad_json([GOOD])["data"][0]] * 2}),
            r"data\[1\].paragraphs\[0\], question 'a': id 'a' again \(first at data\[0\].paragraphs\[0\]\)",
            id="duplicate-id",
        ),
    ],
)
def test_a_bad_squad_file_is_named_with_what_is_wrong(tmp_path, content, message):
    if content is not None:
        (tmp_path / "dev-v2.0.json").write_text(content)
    with pytest.raises(SquadFormatError, match=message) as error:
        read_squad_json(tmp_path / "dev-v2.0.json", "data.squad_dir")
    assert "\n" not in str(error.value)


@pytest.mark.skipif(not SHARED_SQUAD.exists(), reason="../shared/squad (the real SQuAD 2.0 slices) is not here")
def test_the_shared_slices_build_with_their_question_counts(tmp_path, tiny_model_dir, params):
    params["data"].update(
        tasks=[*params["data"]["tasks"], "squad_v2"], squad_dir=str(SHARED_SQUAD), qa_stride=16, max_unk_rate=1.0
    )  # the 18-word tiny tokenizer
    config = validate(params)
    train, eval_, note = build_splits("squad_v2", config.data)
    tokenizer = load_tokenizer(tiny_model_dir)
    unknown = checked_unknown_words("squad_v2", train, eval_, tokenizer, config.data)
    info = write_task("squad_v2", train, eval_, note, unknown, tokenizer, 64, tmp_path, config.data)
    assert (info["train_examples"], info["eval_examples"]) == (5147, 6078)
    assert info["answerable"] == {"train": 4799, "eval": 2910}
    assert info["eval_examples"] - info["answerable"]["eval"] == 3168
    assert str(SHARED_SQUAD) in note
    eval_split = splits.load_split(tmp_path / "tokens.npz", "eval")
    assert eval_split.examples == 6078 and len(np.unique(eval_split.question_of_window)) == 6078
    assert torch.from_numpy(eval_split.labels).shape[1] == 3
