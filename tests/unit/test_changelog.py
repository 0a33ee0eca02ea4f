"""The release convention (CONTRIBUTING.md, "Releasing"): the newest release in CHANGELOG.md is the version the
package carries, with a date, and "Unreleased" stays on top for what comes next."""
import re
from datetime import date

from conftest import ROOT


def _releases(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^## (\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$", text, re.M)


def test_the_newest_release_is_the_packages_version_and_unreleased_sits_above_it():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    headings = re.findall(r"^## (.+)$", changelog, re.M)
    assert headings[0] == "Unreleased", headings[:2]
    releases = _releases(changelog)
    assert releases and releases[0][0] == version, (releases[:1], version)
    assert len(headings) == 1 + len(releases), [h for h in headings[1:] if not re.match(r"\d+\.\d+\.\d+ - ", h)]
    for _, day in releases:
        date.fromisoformat(day)  # a real date, not a placeholder


def test_the_check_reads_release_headings_as_written():
    # The check can fail: a heading without its date, or a version the package does not carry, is not a release.
    assert _releases("## Unreleased\n\n## 0.2.0\n\n## 0.1.0 - 2026-12-07\n") == [("0.1.0", "2026-12-07")]


def test_the_cdk_extra_names_the_construct_version_the_checkout_builds():
    # A release publishes the jsii construct's Python package beside the wheel (CONTRIBUTING.md, "Releasing"):
    # the `cdk` and `dev` extras must name the version cdk/construct/package.json builds, or installing
    # `bakeoff[cdk]` would pull another construct than the one bakeoff_cdk was tested on.
    import json

    built = json.loads((ROOT / "cdk" / "construct" / "package.json").read_text())["version"]
    pins = re.findall(r'"bakeoff-cdk-construct==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins and set(pins) == {built}, (pins, built)
