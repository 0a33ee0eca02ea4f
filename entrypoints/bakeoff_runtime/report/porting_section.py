"""The report's "What porting cost" section, from the evaluation's `porting` part
(bakeoff_runtime.verdict.porting computes it)."""
from __future__ import annotations

import html

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report.formatting import md, md_block, md_row


def _n(v, spec="{:.3g}") -> str:
    return "-" if v is None else spec.format(v)


def _rows(ev: Evaluation) -> tuple[list[tuple[str, list[str]]], list[str]]:
    p = ev.get("porting") or {}
    legs = p.get("legs") or {}
    names = list(legs)

    def col(fn):
        return [fn(legs[n]) for n in names]

    def pre(e):
        f = e.get("preflight")
        if not f:
            return p.get("preflight_note") or "not run (preflight.enabled or `bakeoff preflight`)"
        return f"{f['verdict']}, {f['blockers']} blocker(s), {len(f['findings'])} finding(s)"

    def saved(e):
        c = e["compile"]
        if c.get("saved_s") is None:
            return c.get("note", "-")
        return f"{_n(c['saved_s'])} s ({_n(100 * (c['saved_fraction'] or 0), '{:.0f}')}% of a cold start)"

    def coll(e):
        c = e.get("collective")
        if not c:
            return "not run"
        if not c.get("ok"):
            return f"FAILED: {c.get('reason', '?')}"
        bus = (c.get("bandwidth") or {}).get("all_reduce", {}).get("busbw_GBps")
        return f"exact at {c.get('world_size')} processes; all-reduce bus bandwidth {_n(bus)} GB/s"

    return [
        ("against", [p.get("baseline", "-")] * len(names)),
        ("lines of training code that differ", col(lambda e: str(e["code"]["lines_differ"]))),
        ("spec lines for this leg alone", col(lambda e: "; ".join(e.get("spec_lines") or []) or "none")),
        ("preflight", col(pre)),
        ("compile time (mean, s)", col(lambda e: _n(e["compile"]["compile_time_s"]))),
        ("saved by a warm cache", col(saved)),
        ("numerics that differ", col(lambda e: ", ".join(
            f"{k}: {e['numerics'][k]} vs {e['baseline_numerics'][k]}" for k in e["numerics_differ"]) or "none")),
        ("collective check", col(coll)),
    ], names


def section_markdown(ev: Evaluation) -> list[str]:
    p = ev.get("porting")
    if not p or not p.get("legs"):
        return []
    rows, names = _rows(ev)
    out = ["", "## What porting cost", "", md(p.get("code_note", "")), "",
           md_row(["", *names]), "|---|" + "---|" * len(names)]
    out += [md_row([label, *values]) for label, values in rows]
    for name, e in p["legs"].items():
        for f in (e.get("preflight") or {}).get("findings", []):
            out.append(f"- {md(name)}: {'blocker' if f['blocker'] else 'finding'} {md(f['kind'])} at "
                       f"{md(f['where'])}: fix: {md(f['fix'])}")
        if e["code"].get("diff"):
            out += ["", md(f"Diff of {name}'s script against {p['baseline']}'s:"), "",
                    *md_block(e["code"]["diff"], "diff")]
    return out


def section_html(ev: Evaluation) -> str:
    p = ev.get("porting")
    if not p or not p.get("legs"):
        return ""
    e = html.escape
    rows, names = _rows(ev)
    table = "<table><tr><th></th>" + "".join(f"<th>{e(n)}</th>" for n in names) + "</tr>" + "".join(
        f"<tr><th>{e(label)}</th>" + "".join(f"<td>{e(v)}</td>" for v in values) + "</tr>"
        for label, values in rows) + "</table>"
    findings = "".join(
        f"<li>{e(name)}: <b>{'blocker' if f['blocker'] else 'finding'}</b> {e(str(f['kind']))} at "
        f"<code>{e(str(f['where']))}</code>: fix: {e(str(f['fix']))}</li>"
        for name, leg in p["legs"].items() for f in (leg.get("preflight") or {}).get("findings", []))
    diffs = "".join(f"<h3>{e(name)} against {e(p['baseline'])}</h3><pre>{e(leg['code']['diff'])}</pre>"
                    for name, leg in p["legs"].items() if leg["code"].get("diff"))
    return (f"<h2>What porting cost</h2><p>{e(p.get('code_note', ''))}</p><div class=\"scroll\">{table}</div>"
            + (f"<ul>{findings}</ul>" if findings else "") + diffs)
