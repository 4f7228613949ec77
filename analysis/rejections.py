"""Rejected jobs grouped by kind: a reason with its numbers named (N, M, ...), so that a run
with 400 distinct numbers in two kinds of reason reports two kinds, each with a count and one
example. Written into a run's manifest (``mrsched.expe.manifest``) and read back by the
report."""

from __future__ import annotations

import re

#: a number in a rejection reason: 12, 4e10, 1e+15, 12.5, an instance path 0.1.2; digits
#: inside a word (node_8, seed002) are part of a name, not a number
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)*(?:[eE][+-]?\d+)?")
#: a number right after these words cites a paper (seed 004 Sect. 5.3.1): it stays
_CITATION = re.compile(r"(?:\bseed|\bSects?\.|\bFigs?\.|\bEqs?\.|\bTable|\bCh\.|\bAlg\.|"
                       r"\bSection|\bChapter)\s*$")
#: the names given to a reason's numbers, in order of appearance
PLACEHOLDERS = ("N", "M", "K", "L", "P", "Q", "R", "S", "T", "U", "V", "W")


def _numbers(reason: str) -> list[re.Match]:
    return [m for m in _NUMBER.finditer(reason) if not _CITATION.search(reason, 0, m.start())]


def _placeholder(i: int) -> str:
    return PLACEHOLDERS[i] if i < len(PLACEHOLDERS) else f"N{i + 1}"


def rejection_kind(reason: str) -> str:
    """A rejection reason with its numbers named N, M, K... in order: the reasons "asks 4e15
    bytes of burst buffer per node, the largest storage node holds 4e10" and "asks 8e15
    bytes ... holds 4e10" are one kind, "asks N bytes of burst buffer per node, the largest
    storage node holds M". Numbers citing a paper (after "seed", "Sect.", "Fig.", ...) stay."""
    out, last = [], 0
    for i, m in enumerate(_numbers(reason)):
        out += [reason[last:m.start()], _placeholder(i)]
        last = m.end()
    return "".join(out) + reason[last:]


def rejection_values(reason: str) -> str:
    """The numbers ``rejection_kind`` named, as "N = 4e15, M = 4e10" (the example's values)."""
    return ", ".join(f"{_placeholder(i)} = {m.group()}" for i, m in enumerate(_numbers(reason)))


def group_rejections(rejected) -> list[dict]:
    """``rejected``: (job id, reason) pairs in file order -> one entry per kind, ``{"kind",
    "count", "example", "job"}`` (the first reason of that kind and its job), most frequent
    first (ties by kind): a run with 400 distinct numbers in two kinds of reason has 2 entries."""
    kinds: dict[str, dict] = {}
    for job, reason in rejected:
        kind = rejection_kind(reason)
        entry = kinds.get(kind)
        if entry is None:
            kinds[kind] = {"kind": kind, "count": 1, "example": reason, "job": str(job)}
        else:
            entry["count"] += 1
    return sorted(kinds.values(), key=lambda e: (-e["count"], e["kind"]))


def rejection_kinds(rejected: dict | None) -> list[dict]:
    """The kinds of a manifest's ``rejected``: its ``kinds``, or, in a manifest written before
    kinds existed, its ``reasons`` ({reason: count}) grouped here (no job recorded)."""
    rejected = rejected if isinstance(rejected, dict) else {}
    kinds = rejected.get("kinds")
    if isinstance(kinds, list):
        return [k for k in kinds if isinstance(k, dict) and "kind" in k]
    reasons = rejected.get("reasons")
    if not isinstance(reasons, dict):
        return []
    merged: dict[str, dict] = {}
    for reason, n in reasons.items():
        kind = rejection_kind(str(reason))
        entry = merged.setdefault(kind, {"kind": kind, "count": 0, "example": str(reason), "job": ""})
        entry["count"] += int(n) if isinstance(n, (int, float)) else 0
    return sorted(merged.values(), key=lambda e: (-e["count"], e["kind"]))


def kind_example(kind: dict) -> str:
    """A kind's example in a few words: "job 7: N = 200, M = 96" (its job and the values of
    its numbers; either may be absent)."""
    values = rejection_values(str(kind.get("example", "")))
    job = f"job {kind['job']}" if kind.get("job") else ""
    return ": ".join(p for p in (job, values) if p)


def rejections_line(rejected: dict | None, *, kinds_shown: int = 3) -> str:
    """One line for a run's summary: "5 job(s) rejected: asks N nodes, the machine has M (4
    jobs, e.g. job 7: N = 200, M = 96); ..."; beyond ``kinds_shown`` kinds, how many more."""
    rejected = rejected if isinstance(rejected, dict) else {}
    count = int(rejected.get("count") or 0)
    if not count:
        return ""
    kinds = rejection_kinds(rejected)
    parts = []
    for k in kinds[:kinds_shown]:
        example = kind_example(k)
        n = int(k.get("count") or 0)
        parts.append(f"{k['kind']} ({n} job{'s' if n != 1 else ''}"
                     + (f", e.g. {example})" if example else ")"))
    more = len(kinds) - kinds_shown
    tail = f"; and {more} more kind(s), see manifest.json" if more > 0 else ""
    return f"{count} job(s) rejected: " + "; ".join(parts) + tail
