"""The claims report as Markdown and as one standalone HTML page (figures inlined)."""

from __future__ import annotations

import base64
import html
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from src.claims.claim import p_text
from src.claims.registry import CLAIMS
from src.claims.units import Unit
from src.claims.verdicts import NO_VERDICT, NOT_RUN, RULE
from src.config.schema import ReportConfig, help_text

VERDICT_COLOURS = {
    "supported": "#d4edda",
    "contradicted": "#f8d7da",
    "inconclusive": "#fff3cd",
    NO_VERDICT: "#fde2c8",
    NOT_RUN: "#e2e3e5",
}
TITLE = "Claims: Tamkin et al. 2020 and follow-ups"


def number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:+.3f}"


def cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def interval_text(unit: Unit) -> str:
    """[low, high], or a one-sided bound as [low, +∞) or (−∞, high]; "—" (and why) without one."""
    low, high = unit.interval
    if np.isnan(low) or np.isnan(high):
        return f"— ({unit.interval_note})" if unit.interval_note else "—"
    opening = "(−∞" if low == -math.inf else f"[{number(low)}"
    closing = "+∞)" if high == math.inf else f"{number(high)}]"
    return f"{opening}, {closing}"


def unit_rows(verdicts: list[dict]) -> list[list]:
    """One row per unit: claim, unit, test, estimate, the interval its test for reads (or — and why), margin, n, the raw
    one-sided p for and against, the Holm p of the one test in the family, status, notes."""
    rows = []
    for verdict in verdicts:
        every = verdict["claim"].every
        for u in verdict["units"]:
            in_family = "" if u.refused else f"{p_text(u.adjusted)} ({'against' if every else 'for'})"
            rows.append(
                [
                    verdict["id"],
                    u.name,
                    u.test,
                    number(u.estimate),
                    interval_text(u),
                    "" if u.margin is None else u.margin,
                    u.n,
                    p_text(u.p_for) + (" (raw, exact)" if u.raw else " (raw)"),
                    p_text(u.p_against) + (" (raw, exact)" if u.raw else " (raw)"),
                    in_family,
                    f"{NO_VERDICT}: {u.refused}" if u.refused else u.status,
                    "; ".join(u.notes),
                ]
            )
    return rows


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
    "Holm p (in the family)",
    "status",
    "notes",
]


NAMED_UNITS = 3  # units a summary cell names per distinct text; the units table lists every one


def by_text(entries: list[str]) -> str:
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


def summary_rows(verdicts: list[dict]) -> list[list]:
    rows = []
    for v in verdicts:
        claim, plan = v["claim"], v["plan"] or {}
        decide = f"{plan['trials']} trials: `{plan['command']}`" if plan.get("trials") else ""
        if plan.get("ranges"):
            decide += " [per unit, low–high (point): " + by_text(plan["ranges"]) + "]"
        if plan.get("reasons"):
            decide += (" " if decide else "") + "(" + by_text(plan["reasons"]) + ")"
        verdict = f"{NOT_RUN}: needs `{v['needs']}`" if v["verdict"] == NOT_RUN else v["verdict"]
        p = "" if v["verdict"] == NOT_RUN else f"{p_text(v['p'])} ({v['p_label']})"
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


def write_report(
    verdicts: list[dict],
    settings: ReportConfig,
    extra_tables: list[tuple[str, pd.DataFrame]],
    figures: list[tuple[str, Path | str]],
    md_path: Path,
    html_path: Path,
) -> None:
    """The claims (verdict, test, trials that would decide it), every unit's statistics, the
    extra tables, and the figures (or why each was not drawn), as Markdown (figures linked
    relative to md_path) and a standalone HTML page (figures inlined)."""
    md_path, html_path = Path(md_path), Path(html_path)
    family = sum(1 for v in verdicts for u in v["units"] if not u.refused and math.isfinite(u.adjusted))
    rule = (
        f"{RULE} Level α = {settings.alpha}; the report's Holm family has {family} tests. {len(verdicts)} claims "
        f"(of {len(CLAIMS)} in the registry). Every margin and threshold is a params.yaml `report:` input, printed "
        "below."
    )
    tables = [
        (
            "Claims",
            ["claim", "source", "operationalisation", "test", "verdict", "claim p", "trials that would decide it"],
            summary_rows(verdicts),
        ),
        ("Tests, per unit", UNIT_HEADER, unit_rows(verdicts)),
        ("Declared inputs (params.yaml report:)", ["key", "value", "what it decides"], declared_inputs(settings)),
        *[
            (title, list(table.columns), [[cell(v) for v in row] for row in table.itertuples(index=False)])
            for title, table in extra_tables
        ],
    ]
    md = [f"# {TITLE}", "", rule]
    for heading, header, rows in tables:
        md += ["", f"## {heading}", "", _pipe_table(header, rows) if rows else "(none)"]
    md += ["", "## Figures", ""]
    for title, png in figures:
        png = Path(png) if not isinstance(png, str) else png
        md.append(
            f"![{title}]({Path(os.path.relpath(png, md_path.parent)).as_posix()})"
            if isinstance(png, Path)
            else f"{title}: {png}"
        )
        md.append("")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(md))

    page = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(TITLE)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #999;padding:4px 8px;vertical-align:top}img{max-width:100%}</style></head><body>",
        f"<h1>{html.escape(TITLE)}</h1>",
        f"<p>{html.escape(rule)}</p>",
    ]
    for heading, header, rows in tables:
        page += [f"<h2>{html.escape(heading)}</h2>", _html_table(header, rows)]
    page.append("<h2>Figures</h2>")
    for title, png in figures:
        if isinstance(png, Path) and png.is_file():
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            page.append(
                f"<figure><img alt='{html.escape(title)}' "
                f"src='data:image/png;base64,{data}'><figcaption>{html.escape(title)}</figcaption></figure>"
            )
        else:
            page.append(f"<p>{html.escape(title)}: {html.escape(str(png))}</p>")
    page.append("</body></html>")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text("\n".join(page))


def _pipe_table(header: list[str], rows: list[list]) -> str:
    """A Markdown pipe table (DataFrame.to_markdown needs tabulate, which is not installed)."""

    def line(cells):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def _html_table(header: list[str], rows: list[list]) -> str:
    def opening(name, value):
        colour = (
            next((c for v, c in VERDICT_COLOURS.items() if str(value).startswith(v)), None)
            if name == "verdict"
            else None
        )
        return f"<td style='background:{colour}'>" if colour else "<td>"

    head = "<tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in header) + "</tr>"
    body = [
        "<tr>"
        + "".join(f"{opening(name, value)}{html.escape(str(value))}</td>" for name, value in zip(header, row))
        + "</tr>"
        for row in rows
    ]
    return "<table>" + head + "".join(body) + "</table>"


def collapse_rates(points: pd.DataFrame) -> pd.DataFrame:
    """Per condition with a collapsed run: how many of its finished runs predicted one class."""
    headline = points[points["headline"] & (points["collapsed"] > 0)]
    return headline.assign(collapse_rate=headline["collapsed"] / headline["n"])[
        ["study", "task", "size", "slug", "n", "collapsed", "collapse_rate", "mean"]
    ]


def report_tables(agreement: pd.DataFrame, tables: Path, settings: ReportConfig) -> list[tuple[str, pd.DataFrame]]:
    """The tables the report shows after the claims: agreement, Table 1, collapse, other metrics."""
    points = pd.read_csv(tables / "points.csv")
    every_metric = points[~points["headline"].astype(bool)]
    table1 = pd.read_csv(tables / "permutation_correlations.csv")
    table1_title = (
        "Table 1: cross-task correlation over the same permutations, and its control (unpermuted runs by trial); "
        "p raw, exact, two-sided"
        + "".join(
            f"; at N = {n} trials the smallest p is 2/N! = {2 / math.factorial(n):.3g}"
            + (f", so it cannot reach {settings.alpha}" if 2 / math.factorial(n) >= settings.alpha else "")
            for n in sorted(set(table1["trials"].astype(int)))
        )
    )
    extra = [
        ("Probing vs finetuning agreement (p raw; interval only where valid: docs/claims.md)", agreement.round(4)),
        (table1_title + ("" if len(table1) else ": no rows (no permutation study ran)"), table1),
        ("Collapsed runs (one class predicted; kept in every mean)", collapse_rates(points)),
    ]
    if len(every_metric):
        shown = every_metric[["study", "task", "size", "slug", "metric", "mean", "ci_low", "ci_high", "n"]]
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
    "variance_components": (
        "Variance components of each crossed seed_design condition (subset, draws, residual; F-test p raw): "
        "where a run's spread comes from (Dodge et al. 2020)"
    ),
}


def figure_list(tables: Path, figures: Path) -> list[tuple[str, Path | str]]:
    """(title, png) of each drawn figure, (title, why not) of the others (figures.csv)."""
    return [
        (row.figure.replace("_", " "), figures / f"{row.figure}.png" if row.status == "drawn" else row.status)
        for row in pd.read_csv(tables / "figures.csv").itertuples()
    ]
