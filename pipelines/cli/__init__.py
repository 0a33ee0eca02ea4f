"""The command line. `bakeoff` is `bakeoff.pipelines.cli.main:main`; its commands import what they need inside the
function (`pipelines/cli/main.py`), so `bakeoff --help` stays fast. This package re-exports nothing: import its
modules themselves."""
