"""`make linkcheck`: every link from the built site to another site, fetched once each; exit 1 if one fails.

Needs the network, so it is not part of `make docs` (links within the site, #anchors included, are checked by
every strict build). Usage: python -m bakeoff.pipelines.reference.external_links SITE_DIR
"""
from __future__ import annotations

import sys
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

TIMEOUT_S = 20


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("href", "src") and value and value.startswith(("http://", "https://")):
                self.found.add(value.split("#", 1)[0])


def external_links(site: Path) -> dict[str, list[str]]:
    """Each external URL in the built site's pages, with the pages that link to it."""
    pages: dict[str, list[str]] = {}
    for page in sorted(site.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(errors="replace"))
        for url in parser.found:
            pages.setdefault(url, []).append(str(page.relative_to(site)))
    return pages


def broken(url: str) -> str | None:
    """Why the URL does not answer (None: it does)."""
    request = urllib.request.Request(url, headers={"User-Agent": "bakeoff-linkcheck"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S):
            return None
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python -m bakeoff.pipelines.reference.external_links SITE_DIR (build it first: make docs)",
              file=sys.stderr)
        return 2
    links = external_links(Path(argv[0]))
    failed = 0
    for url, pages in sorted(links.items()):
        why = broken(url)
        where = ", ".join(pages[:3]) + (f" and {len(pages) - 3} more pages" if len(pages) > 3 else "")
        print(f"{'ok  ' if why is None else 'FAIL'} {url}" + (f"  ({why}; linked from {where})" if why else ""))
        failed += why is not None
    print(f"{len(links)} external links, {failed} broken", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
