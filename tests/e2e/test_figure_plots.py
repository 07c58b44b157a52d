"""The figures as DVC plots, through `dvc plots diff` and `dvc plots show` in a scratch repository holding the
real aggregate stage's declarations and the real .dvc/ templates: each figure that draws means compares as data
(both revisions' numbers, in the `figure` template), its SVG is no plot (each figure is shown once), and the page
fits a picture wider than the window (Debian's Chromium, headless, where installed). Both: 60 s on 2 loaded cores."""

import html
import json
import re
import shutil
import subprocess
import sys

import matplotlib
import pandas as pd
import pytest
import yaml

from src.figures import plots
from tests.support import REPO, build_scratch_repo, commit

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

CHROMIUM = shutil.which("chromium")
WINDOW = 1400
# each picture's natural width and its right edge as laid out, once the page has loaded
WIDEST = """<script>window.addEventListener('load', () => { document.title = JSON.stringify({
  images: Array.from(document.images, i => [i.naturalWidth, Math.ceil(i.getBoundingClientRect().right)]),
}); });</script>"""


def draw_weight_change(root, shift: float) -> None:
    """The weight-change figure into the repository's figure folders, its means moved by `shift`."""
    rows = pd.DataFrame(
        [
            {"task": "rt_sentiment", "size": size, "layer": layer, "sublayer": "output", "n": 3}
            | {"mean": layer + shift, "ci_low": layer - 0.2 + shift, "ci_high": layer + 0.2 + shift}
            for size in (64, 128)
            for layer in (1, 2, 3)
        ]
    )
    folders = [root / "plots" / name for name in ("figures", "vector", "data")]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    png, svg, csv = (folder / f"weight_change.{suffix}" for folder, suffix in zip(folders, ("png", "svg", "csv")))
    plots.plot_weight_change(rows, (png, svg, csv))


def dvc_plots(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", "plots", *args], cwd=root, capture_output=True, text=True)


@pytest.fixture
def two_revisions(tmp_path):
    """A repository whose committed weight-change figure is the workspace's moved up by 0.5, and a picture
    2,000 px wide among the figures."""
    aggregate = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["aggregate"]
    root = build_scratch_repo(tmp_path, {}, stages={"aggregate": aggregate}, message=None)
    (root / "plots").mkdir()
    pd.DataFrame(columns=["task", "series", "curve", "k", "mean", "ci_low", "ci_high"]).to_csv(
        root / "plots/progressive.csv", index=False
    )
    draw_weight_change(root, 0.5)
    figure, axes = plt.subplots(figsize=(20, 5), dpi=100)
    axes.plot([0, 1, 2], [0.5, 0.7, 0.8])
    figure.savefig(root / "plots/figures/wide.png")
    plt.close(figure)
    commit(root, "the committed figures")
    draw_weight_change(root, 0.0)
    return root


def test_dvc_plots_diff_compares_a_figures_means_as_data_and_shows_no_svg(two_revisions):
    run = dvc_plots(two_revisions, "diff", "HEAD", "--json")
    assert run.returncode == 0, run.stderr[-3000:]
    shown = json.loads(run.stdout)
    assert not shown.get("errors"), shown["errors"]
    assert not [name for name in shown["data"] if name.endswith(".svg")]
    (plot,) = shown["data"]["plots/data/weight_change.csv"]
    assert plot["type"] == "vega" and set(plot["revisions"]) == {"workspace", "HEAD"}
    values = pd.DataFrame(plot["content"]["data"]["values"])
    raw = values[values["panel"].str.contains("raw")].astype({"x": float, "mean": float})
    means = raw.pivot(index=["series", "x"], columns="rev", values="mean")
    assert (means["HEAD"] - means["workspace"]).round(6).eq(0.5).all() and len(means) == 6  # 2 sizes x 3 layers
    assert {"ci_low", "ci_high", "n"} <= set(values.columns)
    assert plot["content"]["facet"]["field"] == "panel"  # the `figure` template, not DVC's default


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_dvc_plots_show_fits_a_picture_wider_than_the_window(two_revisions, tmp_path):
    run = dvc_plots(two_revisions, "show", "-o", str(tmp_path / "shown"))
    assert run.returncode == 0, run.stderr[-3000:]
    page = tmp_path / "shown" / "index.html"
    probe = page.with_name("measured.html")
    probe.write_text(page.read_text().replace("</body>", WIDEST + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={WINDOW},900"]
        + ["--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    title = re.search(r"<title>(.*?)</title>", dom.stdout, re.S)
    assert title and title[1].startswith("{"), dom.stderr[-2000:]
    measured = json.loads(html.unescape(title[1]))
    assert max(width for width, _ in measured["images"]) == 2000  # the wide picture is on the page
    assert all(right <= WINDOW for _, right in measured["images"]), measured  # scaled to fit, not cut
