"""The HTML report in a real browser (Debian's Chromium, headless, a 1,400 x 900 window): a report written from
hand-built runs (tests/fake_evidence.py) shows in its first screen the tally, the headline numbers and Fig. 1; with
its details folded the whole page is at most MAX_SCREENS screens tall; with every details section open, and with its
full-size figure opened, it fits 1,400 px without horizontal scrolling; and its visible text holds no raw Markdown
(`**`, backticks). A script added to a copy of the page writes what it measured into the title, which --dump-dom
prints; the page itself has no script."""

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
WINDOW, SCREEN = 1400, 900
# The bound on the page's height with its details folded (docs/claims.md states it): 8 screens of 900 px. The
# synthetic design of every study family (tests/unit/claims/test_report_golden.py: 63 claims, 50 of them
# inconclusive, each with its reason beside it) is the tallest report measured.
MAX_SCREENS = 8
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
)
# Measured in the page, first with every details section as written (folded), then with each opened: the first
# screen's tally (the verdict counts it shows), headline numbers and Fig. 1 (its rendered size), each counted only
# where the element ends within the first screen; the page's height; its width and the widest element's right
# edge; the raw Markdown markers left in the text a reader sees (innerText: code spans included, since a command has
# neither marker); the section that holds the fragment's target, open or not. It runs once the page has loaded and
# the browser has opened the section a fragment points into (--virtual-time-budget lets that timer run).
MEASURE = """<script>
window.addEventListener('load', () => setTimeout(() => {
const SCREEN = SCREEN_PX;
const first = e => e !== null && e.getBoundingClientRect().bottom <= SCREEN && e.getBoundingClientRect().height > 0;
const tally = document.getElementById('tally'), headline = document.getElementById('headline');
const figure = document.querySelector('#fig1 img');
const VERDICTS = /\\d+ (supported here|not supported here|inconclusive|no verdict|not run)/g;
const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
const seen = {
  tally: first(tally) ? (tally.innerText.match(VERDICTS) || []).length : 0,
  numbers: first(headline) ? (headline.innerText.match(/\\d\\.\\d{3}/g) || []).length : 0,
  figure: first(figure) && figure.complete ? Math.round(figure.getBoundingClientRect().width) : 0,
  height: document.documentElement.scrollHeight,
  target_open: target === null || target.closest('details') === null || target.closest('details').open,
};
document.querySelectorAll('details').forEach(d => { d.open = true; });
const text = document.body.innerText;
const right = Math.max(...Array.from(document.querySelectorAll('body *'), e => e.getBoundingClientRect().right));
Object.assign(seen, {
  open_height: document.documentElement.scrollHeight,
  width: document.documentElement.scrollWidth, right: Math.ceil(right),
  bold: (text.match(/\\*\\*/g) || []).length, backticks: (text.match(/`/g) || []).length,
  claims: document.querySelectorAll('tr[id^="claim-"]').length,
  thumbnails: document.querySelectorAll('.figures figure img').length,
});
document.title = JSON.stringify(seen);
}, 0));
</script>""".replace("SCREEN_PX", str(SCREEN))


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
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={WINDOW},{SCREEN}"]
        + ["--hide-scrollbars", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri() + fragment],
        capture_output=True,
        text=True,
        timeout=120,
    )
    title = re.search(r"<title>(.*?)</title>", dom.stdout, re.S)
    assert title and title[1].startswith("{"), dom.stderr[-2000:]
    return json.loads(html.unescape(title[1]))


def test_the_html_report_shows_its_numbers_first_fits_its_bound_and_1400_px(tmp_path):
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
    seen = measure(page)
    # the first screen: every verdict's count, full / scratch / gap each with its two interval ends, Fig. 1
    assert seen["tally"] == 5 and seen["numbers"] >= 9 and seen["figure"] >= 400, seen
    assert seen["height"] <= MAX_SCREENS * SCREEN, seen
    for fragment, shown in (("", seen), ("#figure-progressive", measure(page, "#figure-progressive"))):
        assert shown["target_open"], (fragment, shown)  # a link into a folded section opens it
        assert shown["width"] <= WINDOW and shown["right"] <= WINDOW, (fragment, shown)
        assert shown["bold"] == 0 and shown["backticks"] == 0, shown
        assert shown["claims"] >= 25 and shown["thumbnails"] == 1, shown
