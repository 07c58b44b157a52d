"""The HTML report in a real browser (Debian's Chromium, headless): a report written from hand-built runs
(tests/fake_evidence.py) fits a 1,400 px window without horizontal scrolling, with its full-size figure opened
too, and its visible text holds no raw Markdown (`**`, backticks). A script added to a copy of the page writes
what it measured into the title, which --dump-dom prints; the page itself has no script."""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from tests.fake_evidence import Builder, render

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

CHROMIUM = shutil.which("chromium")
WINDOW = 1400
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
)
# Measured in the page: the document's width, the widest element's right edge, and the raw Markdown markers left
# in the text a reader sees (innerText: code spans included, since a command has neither marker).
MEASURE = """<script>
const text = document.body.innerText;
const right = Math.max(...Array.from(document.querySelectorAll('body *'), e => e.getBoundingClientRect().right));
document.title = JSON.stringify({
  width: document.documentElement.scrollWidth, right: Math.ceil(right),
  bold: (text.match(/\\*\\*/g) || []).length, backticks: (text.match(/`/g) || []).length,
  claims: document.querySelectorAll('tr[id^="claim-"]').length,
  thumbnails: document.querySelectorAll('figure img').length,
});
</script>"""


# The widest table the report prints (metrics/variance_components.csv: 18 columns of snake_case names)
COLUMNS = "study task size slug runs subsets seeds ms_subset ms_draws ms_residual p_subset p_draws var_subset".split()
COLUMNS += "var_draws var_residual share_subset share_draws share_residual".split()
WIDE = (
    "Variance components",
    pd.DataFrame(
        [["progressive_seed_design", "tweet_sentiment", 128, "k0_e3_lr5_keepln"] + [0.123456] * 14], columns=COLUMNS
    ),
)


def measure(page: Path, fragment: str = "") -> dict:
    probe = page.with_name("measured.html")
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={WINDOW},900", "--dump-dom"]
        + [probe.as_uri() + fragment],
        capture_output=True,
        text=True,
        timeout=120,
    )
    title = re.search(r"<title>(.*?)</title>", dom.stdout, re.S)
    assert title and title[1].startswith("{"), dom.stderr[-2000:]
    return json.loads(html.unescape(title[1]))


def test_the_html_report_fits_1400_px_and_shows_no_raw_markdown(tmp_path):
    figure, axes = plt.subplots(figsize=(20, 5), dpi=100)  # 2,000 px wide: wider than the window
    axes.plot([0, 1, 2, 3, 4], [0.5, 0.7, 0.8, 0.85, 0.9])
    figure.savefig(tmp_path / "progressive.png")
    plt.close(figure)
    # three trials: every kind of row (supported, undecided with its command, not run with its command)
    evidence = Builder().curve([0.50, 0.70, 0.80, 0.85, 0.90], trials=3).evidence()
    render(
        evidence,
        tmp_path,
        [("progressive", tmp_path / "progressive.png"), ("heads", "not run: no rows")],
        [WIDE],
    )
    page = tmp_path / "r.html"
    for fragment in ("", "#figure-progressive"):  # the figure opened full width too
        seen = measure(page, fragment)
        assert seen["width"] <= WINDOW and seen["right"] <= WINDOW, (fragment, seen)
        assert seen["bold"] == 0 and seen["backticks"] == 0, seen
        assert seen["claims"] >= 25 and seen["thumbnails"] == 1, seen
