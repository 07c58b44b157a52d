"""The claims report as Markdown and as one standalone HTML page (figures inlined)."""

from __future__ import annotations

import base64
import html
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from src.claims.claim import PAPERS, interval_text, number, p_text
from src.claims.evidence import (
    NEAR_COLLAPSE_SHARE,
    CollapseCount,
    MetricPoint,
    collapse_counts,
    other_metrics,
    permutation_trials,
)
from src.claims.planner import plan_text
from src.claims.registry import CLAIMS
from src.claims.summary import (
    ClaimRow,
    StudySummary,
    WhatRan,
    anchor,
    claim_rows,
    design_lines,
    error_text,
    needs_text,
    shown,
    study_summaries,
    tally_text,
    training_lines,
    verdict_tally,
    what_ran_lines,
)
from src.claims.units import COLLAPSE_LABEL, Unit
from src.claims.verdicts import NO_VERDICT, NOT_RUN, RULE, Verdict, holm_families
from src.config.schema import ReportConfig, help_text
from src.core.files import write_text_atomically
from src.stats import validity

VERDICT_COLOURS = {  # by the verdict as printed (summary.shown)
    shown("supported"): "#d4edda",
    shown("contradicted"): "#f8d7da",
    "inconclusive": "#fff3cd",
    NO_VERDICT: "#fde2c8",
    NOT_RUN: "#e2e3e5",
}
TITLE = "Claims: Tamkin et al. 2020 and follow-ups"


def cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def unit_rows(verdicts: list[Verdict]) -> list[list]:
    """One row per unit: claim, unit, test, estimate, the interval its test for reads (or — and why), margin, n, the raw
    one-sided p for and against, the Holm p of the one test in its paper's family, status, notes."""
    rows = []
    for verdict in verdicts:
        every = verdict.claim.every
        for judged in verdict.units:
            u = judged.unit
            in_family = (
                ""
                if u.refused or u.test_type in validity.ALPHA_ONLY
                else f"{p_text(judged.adjusted)} ({'against' if every else 'for'})"
            )
            rows.append(
                [
                    verdict.id,
                    u.name,
                    u.test,
                    number(u.estimate),
                    interval_text(u),
                    "" if u.margin is None else u.margin,
                    u.n,
                    p_text(u.p_for) + (" (raw, exact)" if u.raw else " (raw)"),
                    p_text(u.p_against) + (" (raw, exact)" if u.raw else " (raw)"),
                    in_family,
                    f"{NO_VERDICT}: {u.refused.reason}"
                    if u.refused
                    else UNIT_VERDICT.get(judged.status, judged.status),
                    "; ".join([*u.notes, *outcome_notes(u)]),
                ]
            )
    return rows


def outcome_notes(unit: Unit) -> list[str]:
    """A contrast unit's collapse outcome (each condition's rate with its exact 95% interval; two conditions' rates
    compared paired by trial) and its robustness readings, for the notes column."""
    if not unit.collapse:
        return []
    rates = ", ".join(
        f"{slug} {r.collapsed}/{r.runs} [{r.interval[0]:.2f}, {r.interval[1]:.2f}]" for slug, r in unit.collapse.items()
    )
    compared = unit.collapse_comparison
    paired = f"; {compared.test} p {compared.p:.3g}" if compared is not None else ""
    robust = [unit.robustness.text()] if unit.robustness is not None and not unit.refused else []
    return [f"{COLLAPSE_LABEL}: {rates}{paired}", *robust]


UNIT_HEADER = [
    "claim",
    "unit",
    "test",
    "estimate",
    "interval (its test for, raw α: a one-sided bound; TOST 1 − 2α)",
    "margin",
    "n",
    "p for",
    "p against",
    "Holm p (in its paper's family)",
    "verdict at this unit",
    "notes",
]
# A unit's status (verdicts.unit_status: which of its tests is significant) in the verdicts' words.
UNIT_VERDICT = {"for": shown("supported"), "against": shown("contradicted"), "unresolved": "inconclusive"}
VERDICT_COLUMNS = ("verdict", "verdict at this unit")


NAMED_UNITS = 3  # units a summary cell names per distinct text; the units table lists every one


def by_text(entries: Sequence[str]) -> str:
    """The planner's "unit: text" entries as one clause per distinct text, naming its first
    NAMED_UNITS units: a study of every head (72 here, 144 in BERT-base) would otherwise fill
    the claim's cell with one line per head that says the same thing."""
    units_of: dict[str, list[str]] = {}
    for entry in entries:
        unit, _, text = entry.partition(": ")
        units_of.setdefault(text, []).append(unit)
    clauses = []
    for text, units in units_of.items():
        more = f" and {len(units) - NAMED_UNITS} more" if len(units) > NAMED_UNITS else ""
        clauses.append(f"{', '.join(units[:NAMED_UNITS])}{more}: {text}")
    return "; ".join(clauses)


def summary_rows(verdicts: list[Verdict]) -> list[list]:
    rows = []
    for v in verdicts:
        claim, plan = v.claim, v.plan
        decide = plan_text(plan) if plan is not None else ""
        if plan is not None and plan.reasons:
            decide += (" " if decide else "") + "(" + by_text(plan.reasons) + ")"
        verdict = f"{NOT_RUN}: {needs_text(v.needs)}" if v.needs is not None else shown(v.text)
        p = "" if v.text == NOT_RUN else f"{p_text(v.p)} ({v.p_label})"
        rows.append(
            [
                f"{claim.hypothesis} ({claim.id})" + (" [secondary analysis]" if claim.secondary else ""),
                claim.source,
                claim.operationalisation,
                claim.test,
                verdict,
                p,
                decide,
            ]
        )
    return rows


def declared_inputs(settings: ReportConfig) -> list[list]:
    """Every `report:` knob with its value and what it decides."""
    helps = help_text(ReportConfig)
    return [[f"report.{name}", getattr(settings, name), helps[name]] for name in helps]


Table = tuple[str, list[str], list[list]]  # heading, header, rows

FIRST_FIGURE = "progressive"  # Fig. 1 (plots/figures/progressive.png), which the first screen shows


@dataclass(frozen=True)
class Sections:
    """What both renderings of the report show, in order. The first screen: what ran, the tally, the headline
    numbers and Fig. 1 (`drawn[FIRST_FIGURE]`, where drawn); then the bound on a wrong verdict per paper and per
    paper its verdicts, their effects and why the undecided ones are undecided (src/claims/summary.py); then the
    details, each folded away: the design, one row per claim by study, the training-length check, the rule, the
    detail tables and the figures (`drawn`: the ones drawn, by name)."""

    ran: list[str]
    tally: dict[str, int]
    headline: list[str]
    studies: list[StudySummary]
    design: list[str]
    claims: list[tuple[str, list[ClaimRow]]]
    training: list[str]
    rule: list[str]  # paragraphs
    errors: str  # the bound on a wrong verdict under a global null of this design (summary.error_text)
    tables: list[Table]
    figures: list[tuple[str, Path | str]]
    drawn: dict[str, Path]


def write_report(
    verdicts: list[Verdict],
    settings: ReportConfig,
    ran: WhatRan,
    extra_tables: list[tuple[str, pd.DataFrame]],
    figures: list[tuple[str, Path | str]],
    md_path: Path,
    html_path: Path,
) -> None:
    """Sections in order, as Markdown (figures linked relative to md_path, details in <details> blocks) and as a
    standalone HTML page built from the same rows (figures inlined; details collapsed, with a table of contents)."""
    md_path, html_path = Path(md_path), Path(html_path)
    sections = report_sections(verdicts, settings, ran, extra_tables, figures)
    # Both rendered before either is written, and each written whole or not at all: a report stage that fails or is
    # killed leaves the previous report.md and report.html as they were.
    texts = {md_path: markdown(sections, md_path), html_path: html_page(sections)}
    for path, text in texts.items():
        write_text_atomically(path, text)


def report_sections(
    verdicts: list[Verdict],
    settings: ReportConfig,
    ran: WhatRan,
    extra_tables: list[tuple[str, pd.DataFrame]],
    figures: list[tuple[str, Path | str]],
) -> Sections:
    drawn = {name: png for name, png in figures if isinstance(png, Path)}
    rows = claim_rows(verdicts, set(drawn), ran)
    by_study = [(PAPERS[seed], [r for r in rows if r.seed == seed]) for seed in PAPERS]
    return Sections(
        what_ran_lines(ran),
        verdict_tally(v.text for v in verdicts),
        ran.headline.lines() if ran.headline else [NO_HEADLINE],
        study_summaries(verdicts, ran.model_name),
        design_lines(ran),
        [(study, study_rows) for study, study_rows in by_study if study_rows],
        training_lines(verdicts),
        rule_paragraphs(verdicts, settings),
        error_text(verdicts, settings.alpha),
        detail_tables(verdicts, settings, extra_tables),
        figures,
        drawn,
    )


NO_HEADLINE = "**Full and scratch**: not run at the focus task and size (params.yaml `task`, `size`)."
RULE_PARTS = re.compile(r" (?=\*\*[A-Z][^*]*\*\*: )")  # the rule's parts, each opening with its bold name


def rule_paragraphs(verdicts: list[Verdict], settings: ReportConfig) -> list[str]:
    """RULE, a paragraph per part, then this report's level, the size of each paper's Holm family and its number
    of claims."""
    families = "; ".join(f"{paper} {PAPERS[paper]}: {n} tests" for paper, n in holm_families(verdicts).items())
    return [
        *RULE_PARTS.split(RULE),
        f"**This report**: level α = {settings.alpha}; the Holm families, one per paper: {families}. "
        f"{len(verdicts)} claims (of {len(CLAIMS)} in the registry). Every margin and threshold is a params.yaml "
        "`report:` input, printed in its table.",
    ]


def detail_tables(
    verdicts: list[Verdict], settings: ReportConfig, extra_tables: list[tuple[str, pd.DataFrame]]
) -> list[Table]:
    """The tables after the rule: the claims in detail, every unit's test, the declared inputs, then `extra_tables`."""
    return [
        (
            "Claims in detail: source, operationalisation, test, p and the chance that more trials decide each",
            [
                "claim",
                "source",
                "operationalisation",
                "test",
                "verdict",
                "claim p",
                "the chance that N trials decide it",
            ],
            summary_rows(verdicts),
        ),
        ("Tests, per unit", UNIT_HEADER, unit_rows(verdicts)),
        ("Declared inputs (params.yaml report:)", ["key", "value", "what it decides"], declared_inputs(settings)),
        *[
            (title, list(table.columns), [[cell(v) for v in row] for row in table.itertuples(index=False)])
            for title, table in extra_tables
        ],
    ]


def detail_titles(sections: Sections) -> list[str]:
    """The folded sections' titles, in order: the table of contents."""
    return [
        DESIGN,
        CLAIMS_TITLE,
        TRAINING_TITLE,
        RULE_TITLE,
        *(heading for heading, _, _ in sections.tables),
        FIGURES_TITLE,
    ]


PER_PAPER = "Per paper: what held, what did not, what is undecided and why"
DESIGN = "The studies as params.yaml declared them"
CLAIMS_TITLE = "Claims, one row each: verdict, effect, the paper's number, figure"
TRAINING_TITLE = "Training length"
RULE_TITLE = "How a verdict is decided"
FIGURES_TITLE = "Figures"


def details_id(title: str) -> str:
    """A folded section's anchor: its title's first words, lower case, joined by hyphens."""
    return "details-" + "-".join(re.findall(r"[a-z0-9]+", title.lower())[:5])


def markdown(sections: Sections, md_path: Path) -> str:
    """The report as Markdown, in Sections' order; figures linked relative to md_path's folder, the details in
    <details> blocks after their table of contents."""

    def figure_path(name: str) -> str:
        return Path(os.path.relpath(sections.drawn[name], md_path.parent)).as_posix()

    def folded(title: str, body: list[str]) -> list[str]:
        return ["", f'<details id="{details_id(title)}"><summary><strong>{title}</strong></summary>', "", *body]

    md = [f"# {TITLE}", "", "\n".join(f"- {line}" for line in sections.ran)]
    md += ["", f"**Verdicts**: {tally_text(sections.tally)}", "", "\n".join(f"- {line}" for line in sections.headline)]
    if FIRST_FIGURE in sections.drawn:
        md += ["", f"![Fig. 1: {FIRST_FIGURE}]({figure_path(FIRST_FIGURE)})"]
    md += ["", f"## {PER_PAPER}"]
    md += ["", sections.errors] if sections.errors else []
    for study in sections.studies:
        md += ["", study.heading, "", *(f"- {line}" for line in study.lines)]
        if study.not_run:
            summary = f"Not run: the commands that add their runs ({len(study.not_run)})"
            md += ["", f"<details><summary>{summary}</summary>", "", *(f"- {line}" for line in study.not_run)]
            md += ["", "</details>"]
    md += ["", "## Details", "", *(f"- [{title}](#{details_id(title)})" for title in detail_titles(sections))]
    md += folded(DESIGN, ["\n".join(f"- {line}" for line in sections.design), "", "</details>"])
    claims: list[str] = []
    for heading, rows in sections.claims:
        claim_cells = [
            [
                f'<a id="{anchor(r.id)}"></a>{r.claim} ({r.id})',
                r.verdict,
                r.effect,
                f"[{r.figure}]({figure_path(r.figure)})" if r.figure else "",
            ]
            for r in rows
        ]
        claims += [f"### {heading}", "", _pipe_table(CLAIM_HEADER, claim_cells), ""]
    md += folded(CLAIMS_TITLE, [*claims, "</details>"])
    training = [TRAINING_NOTE, "", "\n".join(f"- {line}" for line in sections.training), "", "</details>"]
    md += folded(TRAINING_TITLE, training)
    rule = [*(part for paragraph in sections.rule for part in (paragraph, ""))]
    md += folded(RULE_TITLE, [*rule, "</details>"])
    for heading, header, table_rows in sections.tables:
        md += folded(heading, [_pipe_table(header, table_rows) if table_rows else "(none)", "", "</details>"])
    figures = [
        f"![{name.replace('_', ' ')}]({figure_path(name)})" if name in sections.drawn else f"{name}: {png}"
        for name, png in sections.figures
    ]
    md += folded(FIGURES_TITLE, [*(part for line in figures for part in (line, "")), "</details>"])
    return "\n".join(md) + "\n"


def html_page(sections: Sections) -> str:
    """The report as one standalone HTML page: the first screen (what ran, the tally and the headline numbers beside
    Fig. 1), per paper its verdicts, then the details, folded, after their table of contents."""
    page = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(TITLE)}</title>",
        f"<meta name='viewport' content='width=device-width'><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(TITLE)}</h1>",
        "<section id='first-screen'><div>",
        _html_list(sections.ran),
        f"<div id='tally'>{_tally_chips(sections.tally)}</div>",
        f"<div id='headline'>{_html_list(sections.headline)}</div></div>",
        _first_figure(sections.drawn),
        "</section>",
        f"<h2>{PER_PAPER}</h2>",
        *([f"<p>{inline_html(sections.errors)}</p>"] if sections.errors else []),
    ]
    for study in sections.studies:
        page += [f"<p>{inline_html(study.heading)}</p>", _html_list(study.lines)]
        if study.not_run:
            page += [
                f"<details><summary>Not run: the commands that add their runs ({len(study.not_run)})</summary>",
                _html_list(study.not_run),
                "</details>",
            ]
    titles = detail_titles(sections)
    page += ["<h2>Details</h2>", "<nav><ul>"]
    page += [f"<li><a href='#{details_id(title)}'>{html.escape(title)}</a></li>" for title in titles]
    page.append("</ul></nav>")
    bodies = [
        _html_list(sections.design),
        "".join(f"<h3>{html.escape(heading)}</h3>{_claims_table(rows)}" for heading, rows in sections.claims),
        f"<p>{inline_html(TRAINING_NOTE)}</p>{_html_list(sections.training)}",
        "".join(f"<p>{inline_html(part)}</p>" for part in sections.rule),
        *(_html_table(header, rows) if rows else "<p>(none)</p>" for _, header, rows in sections.tables),
        "<div class='figures'>"
        + "".join(_html_figure(name, png, sections.drawn) for name, png in sections.figures)
        + "</div><p>Click a figure to open it full width.</p>",
    ]
    page += [
        f"<details id='{details_id(title)}'><summary>{html.escape(title)}</summary>{body}</details>"
        for title, body in zip(titles, bodies)
    ]
    page.append("</body></html>")
    return "\n".join(page)


def _first_figure(drawn: dict[str, Path]) -> str:
    """Fig. 1 inlined at the width the first screen leaves it, or why it is absent."""
    png = drawn.get(FIRST_FIGURE)
    if png is None or not png.is_file():
        return "<figure id='fig1'><figcaption>Fig. 1 (progressive): not drawn; see Figures below.</figcaption></figure>"
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (
        f"<figure id='fig1'><img alt='Fig. 1: progressive reinitialisation' src='data:image/png;base64,{data}'>"
        "<figcaption>Fig. 1: score against k, the layers kept pretrained (plots/figures/progressive.png)</figcaption>"
        "</figure>"
    )


def _html_figure(name: str, png: Path | str, drawn: dict[str, Path]) -> str:
    """A drawn figure inlined as a thumbnail that a click opens full width; else its name and why it is missing."""
    title = html.escape(name.replace("_", " "))
    if name in drawn and drawn[name].is_file():
        data = base64.b64encode(drawn[name].read_bytes()).decode("ascii")
        return (
            f"<figure id='{FIGURE_ANCHOR}{name}'><a href='#{FIGURE_ANCHOR}{name}'><img alt='{title}' "
            f"src='data:image/png;base64,{data}'></a><figcaption>{title}</figcaption></figure>"
        )
    return f"<p>{title}: {html.escape(str(png))}</p>"


TRAINING_NOTE = (
    "Per (task, size) the claims read: the gain of the longer-training runs over the default epochs, paired by "
    "trial (mean, 95% t interval). Where some k gains `report.modifier_margin` or more the runs had not reached a "
    "plateau, and every claim that reads them is marked *confounded by training length*: its verdict may say more "
    "about training length than about transfer. A check, not a test (the point estimate decides)."
)
CLAIM_HEADER = ["claim (the paper's words, source, id)", "verdict", "effect: estimate, interval, unit, test", "figure"]
FIGURE_ANCHOR = "figure-"
# A page that fits its window: tables as wide as the page (the claims' with fixed column widths), snake_case names
# breaking after an underscore (_html_table) and numbers never, images no wider than the page, figures as thumbnails
# that a click (:target) opens full width. The first screen (1,400 x 900 px) sets its text beside Fig. 1, whose
# height it caps; the details are folded, and a table's notes take a full-width row under their row.
STYLE = (
    "body{font-family:system-ui,sans-serif;line-height:1.4;margin:0 auto;padding:0.5em 1.5em;max-width:1320px}"
    "h1{font-size:1.5em;margin:0.3em 0}h2{font-size:1.25em;margin:1em 0 0.4em}"
    "#first-screen{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.1fr);gap:1.5em;align-items:start}"
    "#first-screen ul{margin:0.3em 0;padding-left:1.2em;overflow-wrap:anywhere}#headline li strong{font-size:1.15em}"
    "#fig1{width:auto;margin:0}#fig1 img{width:100%;max-height:620px;object-fit:contain}"
    "table{border-collapse:collapse;width:100%;margin-bottom:1.5em}table.claims{table-layout:fixed}"
    "td,th{border:1px solid #aaa;padding:4px 6px;vertical-align:top;text-align:left;overflow-wrap:break-word}"
    "th{background:#f0f0f0}code{background:#f3f3f3;font-size:90%}tr.notes td{border-top:0;color:#444;font-size:90%}"
    "img{max-width:100%}tr:target{outline:3px solid #1a5fb4}li{margin:0.2em 0}"
    "details{margin:0.4em 0}details>summary{cursor:pointer;font-weight:600}nav ul{columns:2}"
    ".chip{display:inline-block;padding:0.3em 0.8em;margin:0 0.5em 0.3em 0;border-radius:1em;border:1px solid #aaa}"
    ".claims col.claim{width:46%}.claims col.verdict{width:10%}.claims col.effect{width:34%}"
    ".claims col.figure{width:10%}"
    ".figures{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}"
    "figure{margin:0;width:300px}figure img{width:100%}figure:target{width:100%}"
)


def _claims_table(rows) -> str:
    cols = "".join(f"<col class='{name}'>" for name in ("claim", "verdict", "effect", "figure"))
    head = "<tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in CLAIM_HEADER) + "</tr>"
    body = [
        f"<tr id='{anchor(r.id)}'><td>{inline_html(r.claim)} <small>({html.escape(r.id)})</small></td>"
        f"{_verdict_cell(r.verdict)}{html.escape(r.verdict)}</td><td>{inline_html(r.effect)}</td>"
        f"<td>{_figure_link(r.figure)}</td></tr>"
        for r in rows
    ]
    return f"<table class='claims'><colgroup>{cols}</colgroup>{head}{''.join(body)}</table>"


def _tally_chips(tally: dict[str, int]) -> str:
    chips = "".join(
        f"<span class='chip' style='background:{VERDICT_COLOURS.get(shown(name), '#fff')}'><strong>{count}</strong> "
        f"{html.escape(shown(name))}</span>"
        for name, count in tally.items()
    )
    return f"<p>{chips}</p>"


def _html_list(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{inline_html(line)}</li>" for line in lines) + "</ul>"


def _figure_link(figure: str | None) -> str:
    return f"<a href='#{FIGURE_ANCHOR}{figure}'>{html.escape(figure)}</a>" if figure else ""


def _verdict_cell(value) -> str:
    colour = next((c for v, c in VERDICT_COLOURS.items() if str(value).startswith(v)), None)
    return f"<td style='background:{colour}'>" if colour else "<td>"


CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\[([^\]]+)\]\((#[^)\s]+)\)")  # links within the page only
BOLD = re.compile(r"\*\*(.+?)\*\*")
EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")


def inline_html(text: str) -> str:
    """The Markdown inline subset the report's text uses (`code`, **bold**, *emphasis*, [text](#anchor)) as HTML,
    everything else escaped; code spans are taken verbatim."""
    parts = CODE.split(str(text))
    for i, part in enumerate(parts):
        if i % 2:
            parts[i] = f"<code>{html.escape(part)}</code>"
        else:
            part = LINK.sub(lambda m: f"<a href='{m[2]}'>{m[1]}</a>", html.escape(part, quote=False))
            parts[i] = EMPHASIS.sub(r"<em>\1</em>", BOLD.sub(r"<strong>\1</strong>", part))
    return "".join(parts)


def _pipe_table(header: list[str], rows: list[list]) -> str:
    """A Markdown pipe table (DataFrame.to_markdown needs tabulate, which is not installed)."""

    def line(cells):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


NOTES = "notes"  # a table's column of free text, which the HTML page puts in a full-width row under its row


def _html_table(header: list[str], rows: list[list]) -> str:
    """A table; its NOTES column, where it has one, as a row under each row that has notes."""
    columns = [name for name in header if name != NOTES]
    head = "<tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in columns) + "</tr>"
    body = []
    for row in rows:
        cells = dict(zip(header, row))
        body.append(
            "<tr>"
            + "".join(
                f"{_verdict_cell(cells[name]) if name in VERDICT_COLUMNS else '<td>'}{inline_html(cells[name])}</td>"
                for name in columns
            )
            + "</tr>"
        )
        if cells.get(NOTES):
            body.append(f"<tr class='notes'><td colspan='{len(columns)}'>{inline_html(cells[NOTES])}</td></tr>")
    return "<table>" + TEXT.sub(lambda m: m[0].replace("_", "_<wbr>"), head + "".join(body)) + "</table>"


TEXT = re.compile(r">[^<]+")  # the text between tags: snake_case names may break after each underscore there


def report_tables(agreement: pd.DataFrame, tables: Path, settings: ReportConfig) -> list[tuple[str, pd.DataFrame]]:
    """The tables the report shows after the claims: agreement, Table 1, collapse, other metrics."""
    every_metric = other_metrics(pd.read_csv(tables / "points.csv"))
    table1 = pd.read_csv(tables / "permutation_correlations.csv")
    table1_title = (
        "Table 1: cross-task correlation over the same permutations, and its control (unpermuted runs by trial); "
        "p raw, exact, two-sided"
        + "".join(
            f"; at N = {n} trials the smallest p is 2/N! = {2 / math.factorial(n):.3g}"
            + (f", so it cannot reach {settings.alpha}" if 2 / math.factorial(n) >= settings.alpha else "")
            for n in permutation_trials(table1)
        )
    )
    collapses = collapse_counts(pd.read_csv(tables / "runs.csv"))
    extra = [
        ("Probing vs finetuning agreement (p raw; interval only where valid: docs/claims.md)", agreement.round(4)),
        (table1_title + ("" if len(table1) else ": no rows (no permutation study ran)"), table1),
        (
            f"(Nearly) collapsed runs (one class for at least {NEAR_COLLAPSE_SHARE:.0%} of the eval set): a contrast "
            "of conditions counts them in its collapse rates and leaves them out of its trained runs; every other "
            "test keeps them in its means",
            pd.DataFrame(collapses, columns=list(CollapseCount._fields)),
        ),
    ]
    if every_metric:
        shown = pd.DataFrame(every_metric, columns=list(MetricPoint._fields))
        extra.append(("Other metrics the tasks declare (headline metric in the tables above)", shown))
    for name, title in MEASURE_TABLES.items():
        table = pd.read_csv(tables / f"{name}.csv")
        if len(table):
            extra.append((title, table.round(4)))
    return extra


MEASURE_TABLES = {  # beyond the studies (docs/measures.md, docs/probes.md): shown where a run measured them
    "head_importance_vs_reinit": (
        "Head importance (Michel et al. 2019, train.head_importance) against the head-reinit effect: Spearman ρ "
        "over heads, its 95% interval over heads where one is calibrated at that number of heads (column interval: "
        "the method, or why none; docs/calibration.md), permutation p (raw); a secondary analysis beside "
        "specific_heads_matter, not in its verdict"
    ),
    "stale_measurements": (
        "Measurements made by older code than the finetune stages ran (stale; kept, as the runs kept no weights to "
        "measure again, docs/measures.md): which, on how many runs, and the command that trains those runs again"
    ),
    "variance_components": (
        "Variance components of each crossed seed_design condition (subset, draws, residual; F-test p raw): "
        "where a run's spread comes from (Dodge et al. 2020)"
    ),
}


def figure_list(tables: Path, figures: Path) -> list[tuple[str, Path | str]]:
    """(name, png) of each drawn figure, (name, why not) of the others (figures.csv)."""
    return [
        (row.figure, figures / f"{row.figure}.png" if row.status == "drawn" else row.status)
        for row in pd.read_csv(tables / "figures.csv").itertuples()
    ]
