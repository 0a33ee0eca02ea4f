"""`make docs`'s build, strict and offline: the site builds with no warning (every link and #anchor resolves,
mkdocstrings reads every docstring) without the network, and the generated reference pages are in it."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _offline(command: list[str]) -> list[str]:
    # A network namespace of its own, where one can be made (root, util-linux): no address but loopback. Else
    # every HTTP(S) request goes to a closed port.
    probe = shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n", *command] if probe and probe.returncode == 0 else command


def test_the_site_builds_strictly_offline(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    mkdocs = str(Path(sys.executable).with_name("mkdocs"))
    proc = subprocess.run(_offline([mkdocs, "build", "--strict", "--site-dir", str(site)]), capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not re.search(r"^WARNING\b", proc.stderr, re.M), proc.stderr[-4000:]  # strict: belt and braces

    from bakeoff.pipelines.reference.api import exported

    api = (site / "reference" / "python-api.html").read_text()
    undocumented = [name for name, module in exported().items() if f'id="{module}.{name}"' not in api]
    assert undocumented == []  # mkdocstrings rendered an entry for every exported name
    assert 'id="bakeoff-run"' in (site / "reference" / "cli.html").read_text()
    assert 'id="training"' in (site / "reference" / "spec.html").read_text()
    assert "## Unreleased" not in (site / "changelog.html").read_text()  # CHANGELOG.md included, as HTML
    assert 'id="unreleased"' in (site / "changelog.html").read_text()
    assert "fonts.googleapis.com" not in (site / "index.html").read_text()


def test_a_broken_anchor_fails_the_build(tmp_path):
    """The strict build is not a formality: the same site with one link to a missing #anchor does not build."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    with (tmp_path / "docs" / "troubleshooting.md").open("a") as page:
        page.write("\n[a field](reference/spec.md#no-such-model)\n")
    config = (ROOT / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {tmp_path / 'docs'}").replace(
        "  - pipelines/reference/mkdocs_hook.py", f"  - {ROOT / 'pipelines' / 'reference' / 'mkdocs_hook.py'}").replace(
        "paths: [build/typecheck, entrypoints]", f"paths: [{ROOT / 'build' / 'typecheck'}, {ROOT / 'entrypoints'}]")
    (tmp_path / "mkdocs.yml").write_text(config)
    mkdocs = str(Path(sys.executable).with_name("mkdocs"))
    proc = subprocess.run([mkdocs, "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"), "--site-dir",
                           str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode != 0
    assert "does not contain an anchor '#no-such-model'" in proc.stderr, proc.stderr[-4000:]
