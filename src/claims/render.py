"""The claims report as Markdown and as one standalone HTML page (figures inlined)."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

import pandas as pd

from src.claims.registry import NOT_RUN, cell, estimate_of, interval_of, n_of, number, p_text
from src.config.schema import ReportConfig

VERDICT_COLOURS = {"supported": "#d4edda", "contradicted": "#f8d7da", "inconclusive": "#fff3cd", NOT_RUN: "#e2e3e5"}
TITLE = "Claims: Tamkin et al. 2020 and follow-ups"


def unit_rows(verdicts: list[dict], settings: ReportConfig) -> list[list]:
    """One row per unit: claim, unit, test, estimate, 95% CI, margin, n, raw and Holm-adjusted p, status, notes."""
    rows = []
    for verdict in verdicts:
        for u in verdict["units"]:
            low, high = interval_of(u)
            margin = (
                settings.single_layer_margin
                if u.kind == "equivalence"
                else settings.correlation_margin
                if u.kind == "bootstrap-equivalence"
                else ""
            )
            status = u.status if u.counted else "not counted"
            rows.append(
                [
                    verdict["id"],
                    u.name,
                    u.kind,
                    number(estimate_of(u)),
                    f"[{number(low)}, {number(high)}]",
                    margin,
                    n_of(u),
                    p_text(u.p_for),
                    p_text(u.adjusted_for),
                    p_text(u.adjusted_against) if u.kind.endswith("equivalence") else "",
                    status,
                    "; ".join(u.notes),
                ]
            )
    return rows


UNIT_HEADER = [
    "claim",
    "unit",
    "test",
    "estimate",
    "95% CI",
    "margin",
    "n trials",
    "p",
    "Holm p (for)",
    "Holm p (against)",
    "unit",
    "notes",
]


def summary_rows(verdicts: list[dict]) -> list[list]:
    rows = []
    for v in verdicts:
        plan = v["plan"] or {}
        decide = f"{plan['trials']} trials: `{plan['command']}`" if plan.get("trials") else ""
        if plan.get("reasons"):
            decide += (" " if decide else "") + "(" + "; ".join(plan["reasons"]) + ")"
        rows.append([f"{v['claim']} ({v['id']})", v["source"], v["test"], v["verdict"], decide])
    return rows


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
    rule = (
        f"Every p-value below is one of a single family, Holm-adjusted at α = {settings.alpha}. Directional units use "
        "the paired "
        "multi-bootstrap (trials and eval examples resampled together; t interval with n − 1 df); equivalence units "
        "a TOST against "
        f"the margin declared in params.yaml before the runs (single layer ±{settings.single_layer_margin}, "
        f"correlations ±{settings.correlation_margin}); "
        "k90 and correlations of curves a percentile bootstrap over trials (and eval examples), which needs ≥ "
        f"{settings.bootstrap_min_trials} trials. "
        "A claim is supported when every counted unit is resolved for it, contradicted when any is resolved against "
        "it, else inconclusive. "
        "Units of claims that need the full-vs-scratch gap are not counted where that gap is unresolved. Collapsed "
        "runs (one class predicted) are kept; "
        "only runs whose loss became non-finite are left out, and counted."
    )
    tables = [
        ("Claims", ["claim", "source", "test", "verdict", "trials that would decide it"], summary_rows(verdicts)),
        ("Tests, per unit", UNIT_HEADER, unit_rows(verdicts, settings)),
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
        colour = VERDICT_COLOURS.get(value) if name == "verdict" else None
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


def report_tables(agreement: pd.DataFrame, tables: Path) -> list[tuple[str, pd.DataFrame]]:
    """The tables the report shows after the claims: agreement, Table 1, collapse, other metrics."""
    points = pd.read_csv(tables / "points.csv")
    every_metric = points[~points["headline"].astype(bool)]
    table1 = pd.read_csv(tables / "permutation_correlations.csv")
    table1_title = (
        "Table 1: cross-task correlation over the same permutations, and its control (unpermuted runs by trial)"
    )
    extra = [
        ("Probing vs finetuning agreement", agreement.round(4)),
        (table1_title + ("" if len(table1) else ": no rows (no permutation study ran)"), table1),
        ("Collapsed runs (one class predicted; kept in every mean)", collapse_rates(points)),
    ]
    if len(every_metric):
        shown = every_metric[["study", "task", "size", "slug", "metric", "mean", "ci_low", "ci_high", "n"]]
        extra.append(("Other metrics the tasks declare (headline metric in the tables above)", shown))
    return extra


def figure_list(tables: Path, figures: Path) -> list[tuple[str, Path | str]]:
    """(title, png) of each drawn figure, (title, why not) of the others (figures.csv)."""
    return [
        (row.figure.replace("_", " "), figures / f"{row.figure}.png" if row.status == "drawn" else row.status)
        for row in pd.read_csv(tables / "figures.csv").itertuples()
    ]
