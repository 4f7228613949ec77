"""The report's HTML tables: short headers with units, one number format per column (chosen
from the column's values, with thousands separators), so that a campaign's tables fit a
1,400-px browser window; the full-precision values stay in ``metrics.csv``. Number cells
(class ``n``) do not wrap, text cells do; a table still too wide for the page (many
policies' long names) scrolls inside its own box rather than widening the page."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Column:
    """How a metric is shown: header text (unit included) and the factor applied before
    formatting (utilisations are shown in percent)."""

    header: str
    scale: float = 1.0
    integer: bool = False


#: metric columns of ``metrics_table`` -> their display; other columns keep their name
COLUMNS = {
    "runs": Column("runs", integer=True),
    "seed": Column("seed", integer=True),
    "n_jobs": Column("jobs", integer=True),
    "n_rejected": Column("rejected", integer=True),
    "n_killed": Column("killed", integer=True),
    "makespan": Column("makespan (s)"),
    "mean_waiting_time": Column("mean wait (s)"),
    "median_waiting_time": Column("median wait (s)"),
    "max_waiting_time": Column("max wait (s)"),
    "mean_turnaround_time": Column("mean turn\u00adaround (s)"),
    "mean_slowdown": Column("mean slowdown"),
    "mean_bounded_slowdown": Column("mean bounded slowdown"),
    "max_bounded_slowdown": Column("max bounded slowdown"),
    "utilisation_nodes": Column("nodes used (%)", scale=100.0),
    "utilisation_burst_buffer": Column("burst buffer used (%)", scale=100.0),
    "utilisation_gpus": Column("GPUs used (%)", scale=100.0),
    "platform_name": Column("platform"),
    "workload_name": Column("workload"),
    "variant": Column("policy"),
    "run_id": Column("run"),
    "wall_time": Column("run wall (s)"),
    "cpu_time": Column("run CPU (s)"),
    "peak_memory_mb": Column("run peak memory (MB)"),
}


def decimals_for(values) -> int:
    """Decimals giving the column's largest magnitude about 3 significant digits (0 from 100
    up): one count for the whole column, so its numbers line up."""
    x = np.abs(np.asarray(values, dtype=float))
    x = x[np.isfinite(x)]
    top = float(x.max()) if x.size else 0.0
    if top >= 100 or top == 0:
        return 0
    if top >= 10:
        return 1
    if top >= 1:
        return 2
    return 3


def format_number(value, decimals: int) -> str:
    """``value`` with thousands separators and ``decimals`` decimals; NaN is blank."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or pd.isna(value):
        return ""
    v = float(value)
    if not np.isfinite(v):
        return "∞" if v > 0 else "-∞"
    text = f"{v:,.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text   # no "-0"


def _header(name: str) -> str:
    col = COLUMNS.get(name)
    return col.header if col is not None else name.replace("_", " ")


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def frame_html(df: pd.DataFrame) -> str:
    """A plain table (one value per cell): numeric columns formatted with one decimal count
    each (integers for counts), text escaped."""
    head = "".join(f'<th class="n">{html.escape(_header(c))}</th>' if _is_numeric(df[c])
                   else f"<th>{html.escape(_header(c))}</th>" for c in df.columns)
    cells = []
    for name in df.columns:
        series = df[name]
        col = COLUMNS.get(name, Column(name))
        if _is_numeric(series):
            values = series.astype(float) * col.scale
            digits = 0 if col.integer else decimals_for(values)
            cells.append([format_number(v, digits) for v in values])
        else:
            cells.append([html.escape("" if pd.isna(v) else str(v)) for v in series])
    numeric = [_is_numeric(df[name]) for name in df.columns]
    rows = ["<tr>" + "".join(f'<td class="n">{col[i]}</td>' if num else f"<td>{col[i]}</td>"
                             for col, num in zip(cells, numeric)) + "</tr>"
            for i in range(len(df))]
    return (f'<div class="wide"><table class="data"><thead><tr>{head}</tr></thead><tbody>'
            + "\n".join(rows) + "</tbody></table></div>")


@dataclass
class Interval:
    """One summary cell: a mean and its interval (NaN bounds: none); ``mark`` flags how it
    was computed (``*``: bootstrap over jobs) or that it was clipped (``‡``)."""

    mean: float
    low: float = np.nan
    high: float = np.nan
    mark: str = ""


def summary_html(rows: list[dict], metrics: list[str], keys: list[str]) -> str:
    """The per-policy summary: ``keys`` columns as text, then per metric the mean on one line
    and its interval below it in small type; every number of a metric column (means and
    bounds) shares that column's format."""
    head = ("".join(f"<th>{html.escape(_header(c))}</th>" for c in keys)
            + "".join(f'<th class="n">{html.escape(_header(c))}</th>' for c in metrics))
    formats = {}
    for metric in metrics:
        col = COLUMNS.get(metric, Column(metric))
        vals = [x * col.scale for r in rows if isinstance(r.get(metric), Interval)
                for x in (r[metric].mean, r[metric].low, r[metric].high)]
        formats[metric] = (col.scale, 0 if col.integer else decimals_for(vals))
    body = []
    for r in rows:
        cells = [html.escape(str(r.get(k, ""))) for k in keys]
        for metric in metrics:
            cell = r.get(metric)
            if not isinstance(cell, Interval):
                cells.append("")
                continue
            scale, digits = formats[metric]
            text = format_number(cell.mean * scale, digits)
            low, high = format_number(cell.low * scale, digits), format_number(cell.high * scale, digits)
            if low and high and not (low == high == text):
                text += f'<br><span class="ci">{low}\u2009–\u2009{high}{html.escape(cell.mark)}</span>'
            cells.append(text)
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells[:len(keys)])
                    + "".join(f'<td class="n">{c}</td>' for c in cells[len(keys):]) + "</tr>")
    return (f'<div class="wide"><table class="data summary"><thead><tr>{head}</tr></thead>'
            "<tbody>" + "\n".join(body) + "</tbody></table></div>")
