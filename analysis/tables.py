"""The report's tables: plain names with units in the headers, one number format (thousands
separators; per column, about 3 significant digits of its largest value: 0 decimals from 100
up, 1 from 10, 2 from 1, 3 below), ids never wrapped, and tables too wide for a 1,366-px window
cut into several that each repeat the row's identifying columns, so that nothing is hidden;
the full-precision values stay in ``metrics.csv``. The per-policy summary is also written as
LaTeX (booktabs) and CSV."""

from __future__ import annotations

import html
import re
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


#: metric columns of ``metrics_table`` -> their display; other columns keep their name, with
#: spaces for underscores (``header``)
COLUMNS = {
    "runs": Column("Runs", integer=True),
    "seed": Column("Seed", integer=True),
    "n_jobs": Column("Jobs", integer=True),
    "n_rejected": Column("Rejected jobs", integer=True),
    "n_killed": Column("Killed jobs", integer=True),
    "makespan": Column("Makespan (s)"),
    "mean_waiting_time": Column("Mean waiting time (s)"),
    "median_waiting_time": Column("Median waiting time (s)"),
    "max_waiting_time": Column("Max. waiting time (s)"),
    "mean_turnaround_time": Column("Mean turn\u00adaround time (s)"),
    "mean_slowdown": Column("Mean slowdown"),
    "mean_bounded_slowdown": Column("Mean bounded slowdown"),
    "max_bounded_slowdown": Column("Max. bounded slowdown"),
    "utilisation_nodes": Column("Nodes used (%)", scale=100.0),
    "utilisation_burst_buffer": Column("Burst buffer used (%)", scale=100.0),
    "utilisation_gpus": Column("GPUs used (%)", scale=100.0),
    "utilisation_io_bandwidth": Column("PFS bandwidth asked (%)", scale=100.0),
    # seed 002 on per-core CPU+GPU platforms (analysis/cpugpu.py)
    "energy_j": Column("Energy (MJ)", scale=1e-6),
    "mean_power_w": Column("Mean power (kW)", scale=1e-3),
    "peak_power_w": Column("Peak power (kW)", scale=1e-3),
    "edp_js": Column("Energy-delay product (GJ s)", scale=1e-9),
    "energy_per_job_j": Column("Energy per job (kJ)", scale=1e-3),
    "energy_measured": Column("Energy measured (-E)", integer=True),
    "sleep_saved_j": Column("Energy saved asleep (MJ)", scale=1e-6),
    "seed002_utilisation": Column("Core-time used, seed 002 (%)", scale=100.0),
    "packing_factor": Column("Packing factor"),
    "fragmentation": Column("Node blocks per job"),
    "spread": Column("Node spread"),
    "window_halvings": Column("MILP window halvings", integer=True),
    # seed 004 on bandwidth trees (analysis/iocontention.py, analysis/ioknowledge.py)
    "goodput": Column("Goodput (%)", scale=100.0),
    "computing_fraction_min": Column("Least computing share of a job (%)", scale=100.0),
    "runtime_accuracy_mean": Column("Runtime estimate accuracy (%)", scale=100.0),
    "io_rate_accuracy_mean": Column("I/O rate estimate accuracy (%)", scale=100.0),
    "sysio_accuracy_mean_et": Column("System I/O estimate accuracy (%)", scale=100.0),
    "burst_sensitivity_5min_et": Column("I/O bursts foreseen, 5 min (%)", scale=100.0),
    "burst_precision_5min_et": Column("I/O burst forecasts right, 5 min (%)", scale=100.0),
    "platform_name": Column("Platform"),
    "workload_name": Column("Workload"),
    "workload": Column("Workload"),
    "variant": Column("Policy"),
    "policy": Column("Policy"),
    "run_id": Column("Run"),
    "status": Column("Status"),
    "error": Column("Error"),
    "warnings": Column("Warnings"),
    "wall_time": Column("Run wall time (s)"),
    "cpu_time": Column("Run CPU time (s)"),
    "peak_memory_mb": Column("Run peak memory (MB)"),
}

#: columns whose values are identifiers: never wrapped (a run id cut over three lines reads
#: as three runs)
NOWRAP = ("run_id", "variant", "policy", "platform_name", "workload_name")


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


def header(name: str) -> str:
    """The plain name of a column, with its unit."""
    col = COLUMNS.get(name)
    if col is not None:
        return col.header
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


#: px per character at the report's table font (0.85em sans-serif; bold headers): an upper
#: bound of digit and letter widths, so that a table estimated to fit does fit
PX_PER_CHAR = 8.0
#: px per cell beyond its text: padding and border
CELL_PX = 14.0
#: the widest a table may be: the report's body at 1366 px (its CSS: 1,200 px at most)
TABLE_PX = 1180.0


def _pieces(text: str, kind: str) -> list[str]:
    """The unbreakable pieces of a cell: a number cell's lines, an id's whole text, else words
    (a browser also breaks after '-')."""
    if kind == "n":
        return text.split("\n")
    if kind == "id":
        return [text]
    return re.split(r"(?<=-)|[\s\u00ad\u2009]+", text)


def column_px(head: str, cells: list[str], kind: str) -> float:
    """The narrowest a column can be laid out: its longest unbreakable piece (header words
    wrap) times ``PX_PER_CHAR``, plus padding."""
    chars = max((len(p) for p in re.split(r"[\s\u00ad]+", head)), default=0)
    for c in cells:
        chars = max(chars, max((len(p) for p in _pieces(c, kind)), default=0))
    return chars * PX_PER_CHAR + CELL_PX


def split_columns(widths: dict[str, float], keys: list[str], budget: float = TABLE_PX) -> list[list[str]]:
    """Columns per table so that each fits ``budget`` px: the ``keys`` columns (identifying the
    row) start every table, the others follow in order, a new table when the next would not
    fit (one column per table at least)."""
    key_px = sum(widths[k] for k in keys)
    tables: list[list[str]] = []
    current: list[str] = []
    used = key_px
    for col in widths:
        if col in keys:
            continue
        if current and used + widths[col] > budget:
            tables.append(current)
            current, used = [], key_px
        current.append(col)
        used += widths[col]
    if current or not tables:
        tables.append(current)
    return [list(keys) + t for t in tables]


def _frame_cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[str]]:
    """(headers, cell texts per column, kind per column: ``n`` number, ``id``, ``t`` text)."""
    heads, cells, kinds = [], [], []
    for name in df.columns:
        series = df[name]
        col = COLUMNS.get(name, Column(name))
        heads.append(header(name))
        if _is_numeric(series):
            values = series.astype(float) * col.scale
            digits = 0 if col.integer or pd.api.types.is_integer_dtype(series) else decimals_for(values)
            cells.append([format_number(v, digits) for v in values])
            kinds.append("n")
        else:
            cells.append(["" if pd.isna(v) else str(v) for v in series])
            kinds.append("id" if name in NOWRAP else "t")
    return heads, cells, kinds


def frame_html(df: pd.DataFrame, *, keys: list[str] | None = None, budget: float = TABLE_PX) -> str:
    """A plain table (one value per cell): numeric columns formatted with one decimal count
    each (integers for counts), text escaped, ids unwrapped. With ``keys``, a table too wide
    for ``budget`` px is cut into several, each starting with the ``keys`` columns."""
    heads, cells, kinds = _frame_cells(df)
    names = list(df.columns)
    if keys:
        widths = {n: column_px(h, c, k) for n, h, c, k in zip(names, heads, cells, kinds)}
        groups = split_columns(widths, [k for k in keys if k in names], budget)
    else:
        groups = [names]
    out = []
    for group in groups:
        idx = [names.index(n) for n in group]
        head = "".join(f'<th class="n">{html.escape(heads[i])}</th>' if kinds[i] == "n"
                       else f"<th>{html.escape(heads[i])}</th>" for i in idx)
        cls = {"n": ' class="n"', "id": ' class="id"', "t": ""}
        rows = ["<tr>" + "".join(f"<td{cls[kinds[i]]}>{html.escape(cells[i][r])}</td>" for i in idx)
                + "</tr>" for r in range(len(df))]
        out.append(f'<div class="wide"><table class="data"><thead><tr>{head}</tr></thead><tbody>'
                   + "\n".join(rows) + "</tbody></table></div>")
    return "\n".join(out)


@dataclass
class Interval:
    """One summary cell: a mean and its interval (NaN bounds: none); ``mark`` flags that it
    was clipped to the metric's domain (``‡``)."""

    mean: float
    low: float = np.nan
    high: float = np.nan
    mark: str = ""


def _summary_formats(rows: list[dict], metrics: list[str]) -> dict[str, tuple[float, int]]:
    """Per metric: (scale, decimals) shared by its means and bounds."""
    formats = {}
    for metric in metrics:
        col = COLUMNS.get(metric, Column(metric))
        vals = [x * col.scale for r in rows if isinstance(r.get(metric), Interval)
                for x in (r[metric].mean, r[metric].low, r[metric].high)]
        formats[metric] = (col.scale, 0 if col.integer else decimals_for(vals))
    return formats


def _summary_texts(rows: list[dict], metrics: list[str]) -> list[dict[str, tuple[str, str, str, str]]]:
    """Per row and metric: (mean, low, high, mark) as formatted text ("" where none)."""
    formats = _summary_formats(rows, metrics)
    out = []
    for r in rows:
        texts = {}
        for metric in metrics:
            cell = r.get(metric)
            if not isinstance(cell, Interval):
                texts[metric] = ("", "", "", "")
                continue
            scale, digits = formats[metric]
            mean = format_number(cell.mean * scale, digits)
            low, high = format_number(cell.low * scale, digits), format_number(cell.high * scale, digits)
            if not (low and high) or low == high == mean:
                low = high = ""
            texts[metric] = (mean, low, high, cell.mark if low else "")
        out.append(texts)
    return out


def summary_groups(rows: list[dict], metrics: list[str], keys: list[str],
                   budget: float = TABLE_PX) -> list[list[str]]:
    """The summary's metrics per table (``split_columns``), each table after the ``keys``."""
    texts = _summary_texts(rows, metrics)
    widths = {k: column_px(header(k), [str(r.get(k, "")) for r in rows], "id" if k in NOWRAP else "t")
              for k in keys}
    for metric in metrics:
        cells = [f"{t[metric][0]}\n{t[metric][1]}\u2009–\u2009{t[metric][2]}{t[metric][3]}"
                 for t in texts]
        widths[metric] = column_px(header(metric), cells, "n")
    return [g[len(keys):] for g in split_columns(widths, keys, budget)]


def summary_html(rows: list[dict], metrics: list[str], keys: list[str], *,
                 budget: float = TABLE_PX) -> str:
    """The per-policy summary: ``keys`` columns as text, then per metric the mean on one line
    and its interval below it in small type; every number of a metric column (means and
    bounds) shares that column's format. Cut into several tables when wider than ``budget``."""
    texts = _summary_texts(rows, metrics)
    out = []
    for group in summary_groups(rows, metrics, keys, budget):
        head = ("".join(f"<th>{html.escape(header(c))}</th>" for c in keys)
                + "".join(f'<th class="n">{html.escape(header(c))}</th>' for c in group))
        body = []
        for r, t in zip(rows, texts):
            cells = [f'<td class="id">{html.escape(str(r.get(k, "")))}</td>' if k in NOWRAP
                     else f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in keys]
            for metric in group:
                mean, low, high, mark = t[metric]
                text = mean + (f'<br><span class="ci">{low}\u2009–\u2009{high}{html.escape(mark)}</span>'
                               if low else "")
                cells.append(f'<td class="n">{text}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        out.append(f'<div class="wide"><table class="data summary"><thead><tr>{head}</tr></thead>'
                   "<tbody>" + "\n".join(body) + "</tbody></table></div>")
    return "\n".join(out)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "\u00ad": "", "\u2009": r"\,", "‡": r"$^\ddagger$",
                  "<": r"\textless{}", ">": r"\textgreater{}", "≥": r"$\geq$", "≤": r"$\leq$",
                  "–": "--", "τ": r"$\tau$", "∞": r"$\infty$"}

#: a LaTeX table is cut narrower than the page's: about 6 metric columns fit a paper's text width
LATEX_PX = 700.0


def latex_escape(text: str) -> str:
    text = str(text).replace(">=", "≥").replace("<=", "≤")
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def summary_latex(rows: list[dict], metrics: list[str], keys: list[str], caption: str, *,
                  label: str = "tab:summary", budget: float = LATEX_PX) -> str:
    """The summary as LaTeX (booktabs): the numbers and marks of the HTML table, cut to fit a
    paper's text width (``budget``), the interval under each mean in small type
    (``\\makecell`` from the makecell package), and ``caption`` (what the intervals are)
    under each table."""
    texts = _summary_texts(rows, metrics)
    groups = summary_groups(rows, metrics, keys, budget)
    out = ["% mrsched report: summary per policy. Needs \\usepackage{booktabs,makecell}.", ""]
    for n, group in enumerate(groups, 1):
        spec = "l" * len(keys) + "r" * len(group)
        head = " & ".join([latex_escape(header(k)) for k in keys]
                          + [f"\\makecell[r]{{{latex_escape(header(m))}}}" for m in group])
        out += ["\\begin{table}[htbp]", "\\centering", "\\small", f"\\begin{{tabular}}{{{spec}}}",
                "\\toprule", head + " \\\\", "\\midrule"]
        for r, t in zip(rows, texts):
            cells = [latex_escape(r.get(k, "")) for k in keys]
            for metric in group:
                mean, low, high, mark = (latex_escape(x) for x in t[metric])
                if low:
                    cells.append(f"\\makecell[r]{{{mean}\\\\\\scriptsize {low}--{high}{mark}}}")
                else:
                    cells.append(mean)
            out.append(" & ".join(cells) + " \\\\")
        suffix = f" ({n}/{len(groups)})" if len(groups) > 1 else ""
        out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{latex_escape(caption)}{suffix}}}",
                f"\\label{{{label}{'-' + str(n) if len(groups) > 1 else ''}}}", "\\end{table}", ""]
    return "\n".join(out)


def summary_csv(rows: list[dict], metrics: list[str], keys: list[str], interval: str) -> str:
    """The summary as CSV, one row per group: the ``keys``, then per metric its mean and
    interval bounds (``<metric>``, ``<metric>_low``, ``<metric>_high``; utilisations as
    fractions, as in metrics.csv) at full precision, and what the interval is."""
    out = []
    for r in rows:
        rec = {k: r.get(k, "") for k in keys}
        for metric in metrics:
            cell = r.get(metric)
            ok = isinstance(cell, Interval)
            rec[metric] = cell.mean if ok else np.nan
            rec[f"{metric}_low"] = cell.low if ok else np.nan
            rec[f"{metric}_high"] = cell.high if ok else np.nan
        rec["interval"] = interval
        out.append(rec)
    return pd.DataFrame(out).to_csv(index=False, float_format=CSV_FLOAT)


#: floats in the report's CSV files: 12 significant digits (6337.490832, not the binary
#: noise 6337.4908319999995), more than any input carries (Batsim prints 6 decimals)
CSV_FLOAT = "%.12g"
