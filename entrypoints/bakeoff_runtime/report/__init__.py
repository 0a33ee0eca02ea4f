"""The report: report.md and report.html from evaluation.json, and the charts in them.

Standard library only (the charts are SVG written here): the Evaluate step writes the report, and
`bakeoff report` re-renders it on the host.
"""
