"""src/figures/plots.py: every figure draws from small hand-made aggregated tables, names excluded diverged and included
collapsed runs, keeps bands in range, joins only measured neighbours, and refuses an empty table."""

import math

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from src.figures import plots

NAN = math.nan


def assert_png(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 200
    assert len(np.unique(image.reshape(-1, image.shape[2]), axis=0)) > 10  # not a blank canvas


def references(tasks=("rt_sentiment", "mrpc"), sizes=(50,)):
    rows = []
    for task in tasks:
        for size in sizes:
            rows.append(
                {
                    "task": task,
                    "size": size,
                    "reference": "full",
                    "mean": 0.85,
                    "ci_low": 0.82,
                    "ci_high": 0.88,
                    "std": 0.02,
                    "n": 5,
                }
            )
            rows.append(
                {
                    "task": task,
                    "size": size,
                    "reference": "scratch",
                    "mean": 0.55,
                    "ci_low": NAN,
                    "ci_high": NAN,
                    "std": NAN,
                    "n": 1,
                }
            )
    return pd.DataFrame(rows)


def test_blocks_names_windows_and_diverged_runs(tmp_path):
    rows = []
    for task in ("rt_sentiment", "mrpc"):
        for scheme, base in (("block_reinit", 0.8), ("block_preserve", 0.6)):
            for layer in range(1, 5):
                rows.append(
                    {
                        "task": task,
                        "size": 50,
                        "scheme": scheme,
                        "layer": layer,
                        "window": 3,
                        "metric": "accuracy",
                        "mean": base + 0.02 * layer,
                        "ci_low": base + 0.02 * layer - 0.03,
                        "ci_high": base + 0.02 * layer + 0.03,
                        "n": 3,
                        "diverged": 0,
                    }
                )
    points = pd.DataFrame(rows).assign(extra="ignored")
    points.loc[0, "diverged"] = 2
    points.loc[5, ["ci_low", "ci_high"]] = NAN
    texts = plots.plot_blocks(points, references(), tmp_path / "blocks.png")
    assert_png(tmp_path / "blocks.png")
    assert "reinitialise window (2 diverged runs excluded)" in texts
    assert "preserve window only" in texts
    assert {"1-3", "4-6"} <= set(texts)
    assert "all layers pretrained (k=L), n=5" in texts


def test_single_layer(tmp_path):
    points = pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": size,
                "layer": layer,
                "metric": "accuracy",
                "mean": 0.8 - 0.01 * layer,
                "ci_low": 0.77 - 0.01 * layer,
                "ci_high": 0.83 - 0.01 * layer,
                "n": 3,
                "diverged": 0,
            }
            for size in (50, 500)
            for layer in range(1, 7)
        ]
    )
    points.loc[2, "diverged"] = 1
    points.loc[3, ["ci_low", "ci_high"]] = NAN
    texts = plots.plot_single_layer(points, references(("rt_sentiment",), (50, 500)), tmp_path / "single.png")
    assert_png(tmp_path / "single.png")
    assert "only this layer reinitialised (1 diverged run excluded)" in texts


def test_permutation_counts_but_does_not_plot_diverged_runs(tmp_path):
    values = [0.70, 0.72, 0.75, 0.71, NAN]
    runs = pd.DataFrame(
        {
            "task": "rt_sentiment",
            "size": 50,
            "trial": range(5),
            "value": values,
            "status": ["ok"] * 4 + ["diverged"],
            "metric": "accuracy",
        }
    )
    same = runs.assign(task="mrpc", value=0.6, status="ok", metric="f1").head(
        3
    )  # no spread: no density shade, still drawn
    texts = plots.plot_permutation(pd.concat([runs, same]), references(), tmp_path / "permutation.png")
    assert_png(tmp_path / "permutation.png")
    assert "permuted-layer runs (4 finished; 1 diverged, not plotted)" in texts
    assert "permuted-layer runs (3 finished)" in texts
    assert texts.count("density of ok runs (KDE)") == 0  # 4 and 3 runs: too few for a density
    assert texts.count("mean, 95% t CI") == 2


def test_heads_annotates_each_present_cell(tmp_path):
    changes = pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": size,
                "layer": layer,
                "head_index": head,
                "change": 0.01 * (layer - head),
                "n": 3,
            }
            for size in (50, 500)
            for layer in (1, 2)
            for head in (0, 3, 7)
        ]
    )
    changes = changes.drop(index=1)  # a missing cell stays blank
    texts = plots.plot_heads(changes, references(("rt_sentiment",), (50, 500)), tmp_path / "heads.png")
    assert_png(tmp_path / "heads.png")
    assert {"+0.010", "+0.020", "-0.010", "-0.050"} <= set(texts)
    assert texts.count("-0.060") == 2 and texts.count("-0.020") == 1  # (layer 1, head 3) is missing at size 50


def test_modifier(tmp_path):
    points = pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": size,
                "k": k,
                "variant": variant,
                "metric": "accuracy",
                "mean": 0.6 + 0.05 * k + shift,
                "ci_low": 0.57 + 0.05 * k + shift,
                "ci_high": 0.63 + 0.05 * k + shift,
                "n": 3,
                "diverged": 0,
            }
            for size in (50, 500)
            for variant, shift in (("baseline", 0), ("5x lr on reinitialised layers", 0.02))
            for k in range(4)
        ]
    )
    points.loc[4, "diverged"] = 3
    points.loc[0, ["ci_low", "ci_high"]] = NAN
    texts = plots.plot_modifier(points, tmp_path / "modifier.png", "Learning rate on reinitialised layers")
    assert_png(tmp_path / "modifier.png")
    assert "Learning rate on reinitialised layers" in texts
    assert "5x lr on reinitialised layers (3 diverged runs excluded)" in texts


def test_remove_draws_a_line_per_pattern_and_names_each_listed_set(tmp_path):
    rows = [
        {
            "task": task,
            "size": 50,
            "scheme": "remove",
            "removal": removal,
            "removed": removed,
            "metric": "accuracy",
            "mean": 0.8 - 0.02 * len(removed),
            "ci_low": 0.77 - 0.02 * len(removed),
            "ci_high": 0.83 - 0.02 * len(removed),
            "n": 3,
            "diverged": 0,
            "collapsed": 0,
        }
        for task in ("rt_sentiment", "mrpc")
        for removal, removed in (
            ("top", (6,)),
            ("top", (5, 6)),
            ("bottom", (1, 2)),
            ("alternate", (4, 6)),
            ("listed", (3, 4, 5)),
        )
    ]
    points = pd.DataFrame(rows)
    points.loc[1, "diverged"] = 2
    texts = plots.plot_remove(points, references(), tmp_path / "remove.png")
    assert_png(tmp_path / "remove.png")
    assert {
        "top layers removed (2 diverged runs excluded)",
        "top layers removed",
        "bottom layers removed",
        "alternate layers removed (from the top)",
        "all layers pretrained (k=L), n=5",
    } <= set(texts)
    assert texts.count("layers 3, 4, 5 removed") == 2 and texts.count("encoder layers removed") == 2


def test_runs_at_the_smallest_size_scatter_every_run_and_count_the_diverged(tmp_path):
    rng = np.random.default_rng(1)
    runs = pd.DataFrame(
        [
            {
                "task": task,
                "size": size,
                "k": k,
                "trial": trial,
                "metric": "accuracy",
                "value": 0.5 + 0.05 * k + rng.normal(0, 0.02),
                "status": "ok",
                "collapsed": False,
            }
            for task in ("rt_sentiment", "mrpc")
            for size in (50, 500)
            for k in (0, 3, 6)
            for trial in range(10)
        ]
    )
    runs.loc[0, ["status", "value"]] = ["diverged", NAN]
    runs.loc[1, "collapsed"] = True
    texts = plots.plot_runs_at_smallest_size(runs, tmp_path / "runs.png")
    assert_png(tmp_path / "runs.png")
    assert "rt_sentiment, 50 training examples" in texts and "mrpc, 50 training examples" in texts
    assert not any("500 training examples" in text for text in texts)  # only the smallest size
    assert "one run (29 finished; 1 diverged, not plotted)" in texts and "one run (30 finished)" in texts
    assert "of which collapsed to one class: 1 (hollow; in the mean)" in texts


def test_step_losses_draw_one_line_per_series_with_its_trials(tmp_path):
    curves = pd.DataFrame(
        [
            {
                "task": task,
                "size": 50,
                "series": series,
                "step": step,
                "loss": 0.7 / step**0.5 + shift,
                "ci_low": 0.6 / step**0.5 + shift,
                "ci_high": 0.8 / step**0.5 + shift,
                "n": n,
            }
            for task in ("rt_sentiment", "mrpc")
            for series, shift, n in (("k=0", 0.1, 3), ("k=6", 0.0, 1))
            for step in range(1, 41)
        ]
    )
    texts = plots.plot_step_losses(curves, tmp_path / "loss.png", "Training loss against steps")
    assert_png(tmp_path / "loss.png")
    assert {"k=0 (3 trials)", "k=6 (1 trial) (no band where n < 3 trials)", "finetuning step", "training loss"} <= set(
        texts
    )


def test_epochs_has_a_loss_and_a_metric_column_per_task(tmp_path):
    rows = []
    for task, metric in (("rt_sentiment", "accuracy"), ("mrpc", "f1")):
        for k in (0, 6):
            for epoch in (1, 2, 3):
                for quantity, value in (("eval_loss", 0.7 / epoch + 0.01 * k), (metric, 0.6 + 0.05 * epoch)):
                    rows.append(
                        {
                            "task": task,
                            "size": 50,
                            "k": k,
                            "epoch": epoch,
                            "quantity": quantity,
                            "mean": value,
                            "ci_low": value - 0.02,
                            "ci_high": value + 0.02,
                            "n": 3,
                        }
                    )
    curves = pd.DataFrame(rows)
    curves.loc[0, ["ci_low", "ci_high"]] = NAN
    texts = plots.plot_epochs(curves, tmp_path / "epochs.png")
    assert_png(tmp_path / "epochs.png")
    assert {"eval loss", "accuracy", "f1", "k=0", "k=6"} <= set(texts)


def test_weight_change(tmp_path):
    rows = []
    for task in ("rt_sentiment", "mrpc"):
        for size in (50, 500):
            for layer in range(1, 5):
                for sublayer in ("query", "key", "value", "attention_output", "intermediate", "output"):
                    mean = 3.0 if task == "mrpc" and size == 50 else 0.3 * layer * (2 if size == 500 else 1)  # one flat
                    rows.append(
                        {
                            "task": task,
                            "size": size,
                            "layer": layer,
                            "sublayer": sublayer,
                            "mean": mean,
                            "ci_low": mean - 0.1,
                            "ci_high": mean + 0.1,
                            "n": 3,
                        }
                    )
    texts = plots.plot_weight_change(pd.DataFrame(rows), tmp_path / "weights.png")
    assert_png(tmp_path / "weights.png")
    assert {"rt_sentiment", "mrpc", "50 training examples, n=3", "500 training examples, n=3"} <= set(texts)


def test_sequential_annotates_mean_and_ci(tmp_path):
    tasks = ["rt_sentiment", "mrpc", "sst2"]
    rows = [
        {
            "final_task": final,
            "intermediate_task": middle,
            "metric": "accuracy",
            "mean": 0.8 + 0.01 * i - 0.02 * j,
            "ci_low": 0.78,
            "ci_high": 0.84,
            "n": 3,
        }
        for i, final in enumerate(tasks)
        for j, middle in enumerate(tasks)
    ]
    matrix = pd.DataFrame(rows).drop(index=1)  # (rt_sentiment after mrpc) missing: blank cell
    matrix.loc[2, ["ci_low", "ci_high"]] = NAN
    texts = plots.plot_sequential(matrix, tmp_path / "sequential.png")
    assert_png(tmp_path / "sequential.png")
    assert "0.800\n[0.78, 0.84]" in texts
    assert "0.760" in texts  # NaN CI: mean only
    assert sum("\n[" in text for text in texts) == 7


@pytest.mark.parametrize(
    ("draw", "name"),
    [
        (lambda table, path: plots.plot_blocks(table, references(), path), "block reinitialisation"),
        (lambda table, path: plots.plot_single_layer(table, references(), path), "single-layer reinitialisation"),
        (lambda table, path: plots.plot_permutation(table, references(), path), "layer permutation"),
        (lambda table, path: plots.plot_heads(table, references(), path), "attention-head reinitialisation"),
        (lambda table, path: plots.plot_modifier(table, path, "Larger learning rate"), "Larger learning rate"),
        (plots.plot_epochs, "training curves"),
        (plots.plot_weight_change, "weight change"),
        (plots.plot_sequential, "sequential finetuning"),
        (lambda table, path: plots.plot_remove(table, references(), path), "layer removal"),
        (plots.plot_runs_at_smallest_size, "every run at the smallest size"),
        (lambda table, path: plots.plot_step_losses(table, path, "Training loss"), "Training loss"),
    ],
)
def test_empty_table_is_refused(tmp_path, draw, name):
    empty = pd.DataFrame(columns=["task", "size", "sublayer", "final_task"])
    with pytest.raises(ValueError, match=f"no rows to plot for {name}"):
        draw(empty, tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()


def test_runs_of_finds_each_stretch_of_true():
    assert [list(p) for p in plots.runs_of([True, True, False, True])] == [[0, 1], [3]]
    assert plots.runs_of([False, False]) == []


def test_bands_stay_in_the_metric_range_and_too_few_trials_get_a_note_not_a_band(tmp_path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    thin = plots._band(
        ax, [1, 2, 3], [-0.4, 0.5, 0.6], [1.3, 0.9, 0.95], [3, 3, 2], "C0", plots.VALUE_RANGE["accuracy"]
    )
    (band,) = ax.collections  # one band, over epochs 1-2 only: epoch 3 has n = 2
    ys = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
    xs = np.concatenate([path.vertices[:, 0] for path in band.get_paths()])
    assert thin and ys.min() >= 0.0 and ys.max() <= 1.0 and xs.max() <= 2
    plt.close(fig)
    curves = pd.DataFrame(
        {
            "task": "rt_sentiment",
            "size": 64,
            "k": [0, 6] * 2,
            "epoch": [1, 1, 2, 2],
            "quantity": "accuracy",
            "mean": [0.6, 0.7, 0.65, 0.75],
            "ci_low": [-0.5] * 4,
            "ci_high": [1.6] * 4,
            "n": 2,
            "diverged": 0,
            "collapsed": [0, 1, 0, 0],
        }
    )
    texts = plots.plot_epochs(pd.concat([curves, curves.assign(quantity="eval_loss")]), tmp_path / "epochs.png")
    assert any("no band where n < 3 trials" in t for t in texts) and any("1 collapsed run included" in t for t in texts)


# What a figure shows, read from its matplotlib objects (the figure is kept open instead of closed).


@pytest.fixture
def kept(monkeypatch):
    """Call it after drawing: the figure the plot function would have closed."""
    import matplotlib.pyplot as plt

    close, figures = plt.close, []
    monkeypatch.setattr(plots.plt, "close", figures.append)  # plots.plt is pyplot itself: keep the real close
    yield lambda: figures[-1]
    for figure in figures:
        close(figure)


def _lines(ax, label=None):
    return [line for line in ax.get_lines() if label is None or line.get_label() == label]


def _band_x(ax):
    """x extent of every band (fill_between) and interval bar (vlines) on the axis."""
    from matplotlib.collections import FillBetweenPolyCollection, LineCollection

    spans = []
    for artist in ax.collections:
        if isinstance(artist, FillBetweenPolyCollection):
            xs = np.concatenate([path.vertices[:, 0] for path in artist.get_paths()])
            spans.append((xs.min(), xs.max()))
        elif isinstance(artist, LineCollection):
            spans += [(seg[0][0], seg[0][0]) for seg in artist.get_segments()]
    return spans


def modifier_points(ks, n=3):
    return pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": 128,
                "k": k,
                "variant": variant,
                "metric": "accuracy",
                "mean": 0.6 + 0.01 * k,
                "ci_low": 0.55 + 0.01 * k,
                "ci_high": 0.65 + 0.01 * k,
                "n": n,
                "diverged": 0,
            }
            for variant in ("baseline", "5x lr")
            for k in ks
        ]
    )


@pytest.mark.parametrize("ks", [[0, 3], [0, 3, 6, 9, 12], [0, 1, 2, 6]])
def test_any_grid_of_ks_gets_one_line_and_one_band_per_series(tmp_path, kept, ks):
    plots.plot_modifier(modifier_points(ks), tmp_path / "modifier.png", "Larger learning rate")
    (ax, *_) = kept().axes
    for variant in ("baseline", "5x lr"):
        (line,) = _lines(ax, variant)
        assert list(line.get_xdata()) == ks
    assert _band_x(ax) == [(0, ks[-1])] * 2


def test_a_lone_point_with_enough_trials_gets_an_interval_bar(tmp_path, kept):
    points = modifier_points([0, 3, 6]).query("variant == 'baseline'")
    points.loc[points["k"] == 3, "n"] = 2  # k = 0 and k = 6 are cut off from each other
    texts = plots.plot_modifier(points, tmp_path / "modifier.png", "Larger learning rate")
    (ax, *_) = kept().axes
    assert sorted(_band_x(ax)) == [(0, 0), (6, 6)]
    assert any("no band where n < 3 trials" in text for text in texts)


def progressive_curves(ks=(0, 3, 6, 9, 12)):
    rows = [
        {
            "task": task,
            "curve": "finetune",
            "series": f"n={size}",
            "size": size,
            "k": k,
            "metric": "accuracy",
            "mean": 0.6 + 0.01 * k,
            "ci_low": 0.55 + 0.01 * k,
            "ci_high": 0.65 + 0.01 * k,
            "n": 3,
            "diverged": 0,
        }
        for task, sizes in (("rt_sentiment", (128, 256)), ("mrpc", (256,)))
        for size in sizes
        for k in ks
    ]
    rows += [
        {
            "task": task,
            "curve": "probe",
            "series": "probe",
            "size": 9110,
            "k": k,
            "metric": "accuracy",
            "mean": 0.7,
            "ci_low": 0.69,
            "ci_high": 0.71,
            "n": 3,
            "diverged": 0,
        }
        for task in ("rt_sentiment", "mrpc")
        for k in ks
    ]
    return pd.DataFrame(rows)


def test_progressive_names_the_probes_training_size_and_keeps_a_colour_per_size(tmp_path, kept):
    plots.plot_progressive(progressive_curves(), tmp_path / "progressive.png")
    first, second = kept().axes
    labels = [line.get_label() for line in first.get_lines()]
    assert "probe of layer k (frozen; trained on 9110 examples, 3 seeds)" in labels
    assert "finetune on 128 examples" in labels
    (in_first,) = _lines(first, "finetune on 256 examples")
    (in_second,) = _lines(second, "finetune on 256 examples")
    assert in_first.get_color() == in_second.get_color()  # the only size in the second panel: still its colour
    assert list(in_first.get_xdata()) == [0, 3, 6, 9, 12] and len(_band_x(first)) == 3


def weight_rows(sizes_per_task):
    return pd.DataFrame(
        [
            {
                "task": task,
                "size": size,
                "layer": layer,
                "sublayer": "output",
                "mean": 3.0 * layer + size / 1000,
                "ci_low": 2.9 * layer + size / 1000,
                "ci_high": 3.1 * layer + size / 1000,
                "n": 3,
            }
            for task, sizes in sizes_per_task.items()
            for size in sizes
            for layer in range(1, 5)
        ]
    )


def test_weight_change_plots_the_claims_frobenius_norm_in_one_colour_per_size(tmp_path, kept):
    table = weight_rows({"rt_sentiment": (128, 256, 512), "mrpc": (128,)})
    plots.plot_weight_change(table, tmp_path / "weights.png")
    raw_first, raw_second, normalised_first, normalised_second = kept().axes  # row by row
    (first,) = _lines(raw_first, "128 training examples, n=3")
    (second,) = _lines(raw_second, "128 training examples, n=3")
    assert first.get_color() == second.get_color()
    assert _lines(normalised_first)[0].get_color() == _lines(normalised_second)[0].get_color() == first.get_color()
    rows = table[(table["task"] == "rt_sentiment") & (table["size"] == 128)]
    assert list(first.get_ydata()) == list(rows["mean"])
    assert "Frobenius" in kept()._suptitle.get_text()


def head_changes(heads=(0, 1)):
    return pd.DataFrame(
        [
            {"task": "rt_sentiment", "size": 50, "layer": layer, "head_index": head, "change": 0.006, "n": 1}
            for layer in (1, 2)
            for head in heads
        ]
    )


def test_heads_scale_is_the_baselines_noise_and_every_head_run_has_a_cell(tmp_path, kept):
    plots.plot_heads(
        head_changes(), references(("rt_sentiment",)), tmp_path / "heads.png", layers=(1, 2), heads=(0, 1, 2, 3)
    )
    ax, colourbar = kept().axes
    (image,) = ax.get_images()
    assert image.get_array().shape == (2, 4)  # heads 2 and 3 ran and have no finished run: blank cells
    assert image.get_clim() == pytest.approx((-0.03, 0.03))  # the full reference's CI: 0.82..0.88
    assert "baseline's 95% t CI half-width" in colourbar.get_ylabel()


def test_heads_without_a_baseline_interval_say_their_scale_is_not_its_noise(tmp_path, kept):
    refs = references(("rt_sentiment",)).assign(ci_low=NAN, ci_high=NAN)
    plots.plot_heads(head_changes(), refs, tmp_path / "heads.png")
    ax, colourbar = kept().axes
    assert ax.get_images()[0].get_clim() == pytest.approx((-0.006, 0.006))
    assert "not its noise" in colourbar.get_ylabel()


def permutation_runs(count):
    return pd.DataFrame(
        {
            "task": "rt_sentiment",
            "size": 50,
            "trial": range(count),
            "value": np.linspace(0.6, 0.8, count),
            "status": "ok",
            "metric": "accuracy",
        }
    )


def test_permutation_density_needs_enough_runs_and_references_show_their_t_interval(tmp_path, kept):
    texts = plots.plot_permutation(permutation_runs(plots.MIN_RUNS_FOR_DENSITY), references(), tmp_path / "p.png")
    assert "density of ok runs (KDE)" in texts
    (ax,) = [ax for ax in kept().axes if ax.get_visible()]
    full_band = [
        patch
        for patch in ax.patches
        if patch.get_facecolor()[:3] == matplotlib.colors.to_rgb(plots.REFERENCES["full"][1])
    ]
    ys = full_band[0].get_transform().transform(full_band[0].get_path().vertices)[:, 1]
    assert ax.transData.inverted().transform([[0, ys.min()], [0, ys.max()]])[:, 1] == pytest.approx([0.82, 0.88])
    texts = plots.plot_permutation(permutation_runs(plots.MIN_RUNS_FOR_DENSITY - 1), references(), tmp_path / "p.png")
    assert "density of ok runs (KDE)" not in texts


INTERVAL = "95% t CI over trials"


@pytest.mark.parametrize(
    "draw",
    [
        lambda path: plots.plot_progressive(progressive_curves(), path),
        lambda path: plots.plot_modifier(modifier_points([0, 3]), path, "Larger lr (mean and 95% t CI over trials)"),
        lambda path: plots.plot_permutation(permutation_runs(4), references(), path),
        lambda path: plots.plot_heads(head_changes(), references(("rt_sentiment",)), path),
    ],
)
def test_every_figure_with_intervals_names_their_type_in_its_title(tmp_path, kept, draw):
    draw(tmp_path / "figure.png")
    assert INTERVAL in kept()._suptitle.get_text().replace("\n", " ")


# Fit for a paper: every figure, drawn from the tables above, as a PNG and an SVG, its titles inside the
# canvas, every colour from the palette, an interval wherever a mean is drawn.


def representation_tables(ks=(0, 3, 6)):
    runs = [{"task": "rt_sentiment", "size": 50, "k": k, "trial": t} for k in ks for t in range(3)]
    cka = pd.DataFrame(
        [{**r, "layer": layer, "cka": 1 - 0.1 * layer + 0.01 * r["trial"]} for r in runs for layer in range(4)]
    )
    weights = pd.DataFrame(
        [
            {**r, "layer": layer, "sublayer": s, "frobenius": layer + 0.1 * r["trial"]}
            for r in runs
            for layer in (1, 2, 3)
            for s in ("query", "output")
        ]
    )
    criticality = pd.DataFrame(
        [
            {
                **r,
                "layer": layer,
                "rewound_to": target,
                "drop": 0.05 * layer + 0.01 * r["trial"] + (0.1 if target == "initial" and r["k"] < layer else 0),
            }
            for r in runs
            for layer in (1, 2, 3)
            for target in ("pretrained", "initial")
        ]
    )
    return cka, weights, criticality


def smallest_size_runs():
    return pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": 50,
                "k": k,
                "trial": t,
                "value": 0.6 + 0.02 * k + 0.01 * t,
                "status": "ok",
                "collapsed": False,
                "metric": "accuracy",
            }
            for k in (0, 3, 6)
            for t in range(4)
        ]
    )


def step_losses(n=3):
    return pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": 50,
                "series": f"k={k}",
                "step": step,
                "loss": 1 / step + 0.1 * k,
                "ci_low": 0.9 / step + 0.1 * k,
                "ci_high": 1.1 / step + 0.1 * k,
                "n": n,
            }
            for k in (0, 3)
            for step in range(1, 41)
        ]
    )


def epoch_curves():
    return pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": 50,
                "k": k,
                "epoch": epoch,
                "quantity": quantity,
                "mean": 0.5 + 0.1 * epoch,
                "ci_low": 0.45 + 0.1 * epoch,
                "ci_high": 0.55 + 0.1 * epoch,
                "n": 3,
            }
            for k in (0, 6)
            for epoch in (1, 2, 3)
            for quantity in ("eval_loss", "accuracy")
        ]
    )


def line_points(x, **columns):
    return pd.DataFrame(
        [
            {
                "task": "rt_sentiment",
                "size": 50,
                x: i,
                "metric": "accuracy",
                "mean": 0.6 + 0.02 * i,
                "ci_low": 0.55 + 0.02 * i,
                "ci_high": 0.65 + 0.02 * i,
                "n": 3,
                "diverged": 0,
                **columns,
            }
            for i in (1, 2, 3)
        ]
    )


def sequential_matrix():
    return pd.DataFrame(
        [
            {
                "final_task": final,
                "intermediate_task": middle,
                "metric": "accuracy",
                "mean": 0.7,
                "ci_low": 0.65,
                "ci_high": 0.75,
            }
            for final in ("rt_sentiment", "mrpc")
            for middle in ("rt_sentiment", "mrpc")
        ]
    )


def measured_references():
    """Both references with a 95% t CI (the scratch one of references() has a single trial: no interval)."""
    refs = references(("rt_sentiment",))
    refs.loc[refs["reference"] == "scratch", ["ci_low", "ci_high", "n"]] = [0.5, 0.6, 3]
    return refs


# name -> (draw(paths), whether it draws a mean)
FIGURES = {
    "progressive": (lambda paths: plots.plot_progressive(progressive_curves(), paths), True),
    "blocks": (
        lambda paths: plots.plot_blocks(
            line_points("layer", scheme="block_reinit", window=3), measured_references(), paths
        ),
        True,
    ),
    "single_layer": (lambda paths: plots.plot_single_layer(line_points("layer"), measured_references(), paths), True),
    "permutation": (lambda paths: plots.plot_permutation(permutation_runs(12), measured_references(), paths), True),
    "heads": (lambda paths: plots.plot_heads(head_changes(), references(("rt_sentiment",)), paths), False),
    "modifier": (lambda paths: plots.plot_modifier(modifier_points(range(13)), paths, "Larger learning rate"), True),
    "remove": (
        lambda paths: plots.plot_remove(
            line_points("removed", removal="top").assign(removed=lambda t: [tuple(range(i)) for i in t["removed"]]),
            measured_references(),
            paths,
        ),
        True,
    ),
    "epochs": (lambda paths: plots.plot_epochs(epoch_curves(), paths), True),
    "weight_change": (lambda paths: plots.plot_weight_change(weight_rows({"rt_sentiment": (128, 256)}), paths), True),
    "sequential": (lambda paths: plots.plot_sequential(sequential_matrix(), paths), False),
    "runs": (lambda paths: plots.plot_runs_at_smallest_size(smallest_size_runs(), paths), True),
    "step_losses": (lambda paths: plots.plot_step_losses(step_losses(), paths, "Training loss"), True),
    "representation": (lambda paths: plots.plot_representation(*representation_tables(), paths), True),
}


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_saved_as_a_png_an_identical_svg_each_time_and_its_means_as_data(tmp_path, name):
    import xml.etree.ElementTree as ElementTree

    draw, _ = FIGURES[name]
    has_lines = name not in {"heads", "sequential", "permutation"}  # heatmaps, and runs with their mean as one bar
    data = tmp_path / "figure.csv"
    data.write_text("a stale table\n")
    draw((tmp_path / "figure.png", tmp_path / "figure.svg", data))
    assert_png(tmp_path / "figure.png")
    first = (tmp_path / "figure.svg").read_bytes()
    assert ElementTree.fromstring(first).tag == "{http://www.w3.org/2000/svg}svg"
    draw((tmp_path / "again.png", tmp_path / "figure.svg"))
    assert (tmp_path / "figure.svg").read_bytes() == first  # no date, no random ids: DVC sees no change
    assert data.exists() == has_lines  # no line of means: no plot data, and no stale one left
    if has_lines:
        table = pd.read_csv(data)
        assert list(table.columns) == ["panel", "x_label", "series", "x", "mean", "ci_low", "ci_high", "n"]
        assert table["mean"].notna().all() and table["panel"].notna().all() and table["series"].notna().all()


@pytest.mark.parametrize("name", FIGURES)
def test_every_title_lies_inside_the_canvas(tmp_path, kept, name):
    FIGURES[name][0](tmp_path / "figure.png")
    figure = kept()
    titles = [figure._suptitle, *(ax.title for ax in figure.axes if ax.get_visible())]
    canvas, renderer = figure.bbox, figure.canvas.get_renderer()  # at the figure's dpi, as its bbox
    for title in filter(lambda t: t is not None and t.get_text(), titles):
        box = title.get_window_extent(renderer)
        assert canvas.x0 <= box.x0 and box.x1 <= canvas.x1 and canvas.y0 <= box.y0 and box.y1 <= canvas.y1, title


def _data_colours(ax) -> set[tuple[float, float, float]]:
    """The RGB of every line, marker, band, bar and span drawn on the axis (not a colour-mapped image or mesh)."""
    from matplotlib.colors import to_rgba

    colours = []
    for line in ax.get_lines():
        colours += [line.get_color(), line.get_markerfacecolor(), line.get_markeredgecolor()]
    for collection in ax.collections:
        if collection.get_array() is None:
            colours += [*collection.get_facecolor(), *collection.get_edgecolor()]
    for patch in ax.patches:
        colours += [patch.get_facecolor(), patch.get_edgecolor()]
    rgba = [to_rgba(c) for c in colours if not (isinstance(c, str) and c == "none")]
    return {tuple(np.round(c[:3], 4)) for c in rgba if c[3] > 0}


@pytest.mark.parametrize("name", FIGURES)
def test_every_colour_is_from_the_colour_blind_safe_palette(tmp_path, kept, name):
    from matplotlib.colors import to_rgb

    FIGURES[name][0](tmp_path / "figure.png")
    palette = {tuple(np.round(to_rgb(c), 4)) for c in plots.PALETTE}
    for ax in [ax for ax in kept().axes if not hasattr(ax, "_colorbar")]:  # a colour scale is a colour map
        assert _data_colours(ax) <= palette, (ax.get_title(), _data_colours(ax) - palette)


def _intervals(ax) -> int:
    """Bands (fill_between), interval bars (vlines), error bars and spans (a reference's CI) on the axis."""
    from matplotlib.collections import FillBetweenPolyCollection, LineCollection

    return sum(isinstance(c, FillBetweenPolyCollection | LineCollection) for c in ax.collections) + len(ax.patches)


@pytest.mark.parametrize("name", [name for name, (_, mean) in FIGURES.items() if mean])
def test_every_axis_that_draws_a_mean_draws_its_interval(tmp_path, kept, name):
    FIGURES[name][0](tmp_path / "figure.png")
    for ax in kept().axes:
        means = [line for line in ax.get_lines() if not line.get_label().startswith("_") and len(line.get_xdata()) > 1]
        assert not means or _intervals(ax) >= len(means), (ax.get_title(), [line.get_label() for line in means])


def test_the_representation_figure_draws_the_rewinds_it_names_and_a_legend_in_each_panel(tmp_path, kept):
    texts = plots.plot_representation(*representation_tables(), tmp_path / "representation.png")
    cka_ax, weight_ax, critical_ax = kept().axes
    dashed = [line for line in critical_ax.get_lines() if line.get_linestyle() == "--"]
    assert dashed and all("rewound to its start" in line.get_label() for line in dashed)
    assert all(ax.get_legend() is not None for ax in (cka_ax, weight_ax, critical_ax))
    assert "dashed" in kept()._suptitle.get_text()
    cka, weights, criticality = representation_tables()
    unchanged = criticality.assign(drop=lambda t: t.groupby(["k", "trial", "layer"])["drop"].transform("min"))
    texts = plots.plot_representation(cka, weights, unchanged, tmp_path / "representation.png")
    assert not any("dashed" in text for text in texts)  # nothing differs from pretrained: no dashed line promised
