"""A script's requirements.txt as pip reads it, for what bakeoff says before any job installs it:
the distributions it names, and each line that takes packages from somewhere other than PyPI (another
index, a host trusted without TLS checks, a VCS checkout, a download, a folder or file outside the source
dir). Pure: it reads the bundle's files (name -> bytes) that the caller gives, nothing else.

It follows pip's own reader (pip 26.3, pip/_internal/req/req_file.py, as installed in .venv):
* lines: `preprocess` splits them, joins a line ending in `\\` with the next (`join_lines`), and strips
  comments with COMMENT_RE `(^|\\s+)#.*$` (`ignore_comments`);
* `break_args_options` takes the words before the first one starting with `-` as the requirement and
  shlex-splits the rest as options, parsed with optparse (so `--opt=value`, `--opt value`, `-iVALUE` and an
  unambiguous prefix of a long option, `--extra`, all work);
* the options a file may hold are SUPPORTED_OPTIONS (+ SUPPORTED_OPTIONS_REQ), whose names are in
  pip/_internal/cli/cmdoptions.py: `-i/--index-url/--pypi-url`, `--extra-index-url`, `--no-index`,
  `-c/--constraint`, `-r/--requirement`, `-e/--editable`, `-f/--find-links`, `--trusted-host`, ...;
* a nested `-r`/`-c` path is joined to the including file's folder (`_parse_and_recurse`), or fetched when
  it is a URL (SCHEME_RE `^(http|https|file):`); a relative `--find-links` is taken beside the file when it
  exists there (`handle_option_line`);
* VCS requirements are `git+`, `hg+`, `svn+` and `bzr+` URLs (the `schemes` of pip/_internal/vcs/git.py,
  mercurial.py, subversion.py, bazaar.py); `name @ URL` is a PEP 508 direct reference.
"""
from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

# pip's long options a requirements file may use (cmdoptions.py), for optparse's prefix matching; and the
# short ones. Each maps to what it is; options that take a value are those in _TAKES_VALUE.
_LONG = {"--index-url": "index", "--pypi-url": "index", "--extra-index-url": "extra-index", "--no-index": None,
         "--constraint": "constraint", "--requirement": "requirement", "--editable": "editable",
         "--find-links": "find-links", "--no-binary": None, "--only-binary": None, "--prefer-binary": None,
         "--require-hashes": None, "--no-require-hashes": None, "--pre": None, "--all-releases": None,
         "--only-final": None, "--trusted-host": "trusted-host", "--use-feature": None, "--hash": None,
         "--config-settings": None}
_SHORT = {"-i": "--index-url", "-c": "--constraint", "-r": "--requirement", "-e": "--editable",
          "-f": "--find-links", "-C": "--config-settings"}
_TAKES_VALUE = {"--index-url", "--pypi-url", "--extra-index-url", "--constraint", "--requirement", "--editable",
                "--find-links", "--no-binary", "--only-binary", "--all-releases", "--only-final", "--trusted-host",
                "--use-feature", "--hash", "--config-settings"}
_COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's COMMENT_RE
_URL_SCHEME = re.compile(r"^(http|https|file):", re.I)  # pip's SCHEME_RE (what pip fetches as a URL)
_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.I)
_DIRECT = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*@\s*(?P<url>\S+)")
_NAME = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)")
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9._-]+)")
PYPI = ("https://pypi.org/simple", "https://pypi.python.org/simple")  # pip's default index (cmdoptions.index_url)
MAX_INCLUDES = 32  # nested -r/-c files followed, at most


@dataclass(frozen=True)
class PackageSource:
    """A line that takes packages from somewhere other than PyPI."""

    file: str  # the requirements file, as the bundle names it
    line: int
    what: str  # as written, any password in a URL left out
    why: str  # "another index", "a git checkout", ...
    beyond: bool  # it needs the network, or a path outside the source dir: what an isolated job cannot reach

    def __str__(self) -> str:
        return f"{self.file}:{self.line} `{self.what}` ({self.why})"


@dataclass(frozen=True)
class Requirements:
    names: tuple[str, ...]  # distributions named (by name, a direct reference's name, a VCS URL's #egg=)
    sources: tuple[PackageSource, ...]


def _lines(text: str) -> list[tuple[int, str]]:
    """pip's preprocess (less its ${VAR} expansion: the variables are the job's, not this machine's)."""
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    first = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.endswith("\\") or _COMMENT.match(line):
            if _COMMENT.match(line):
                line = " " + line
            if pending:
                pending.append(line)
                joined.append((first, "".join(pending)))
                pending = []
            else:
                joined.append((number, line))
        else:
            if not pending:
                first = number
            pending.append(line.strip("\\"))
    if pending:
        joined.append((first, "".join(pending)))
    out = []
    for number, line in joined:
        line = _COMMENT.sub("", line).strip()
        if line:
            out.append((number, line))
    return out


def _options(words: list[str]) -> list[tuple[str, str | None]]:
    """(long option, value) as optparse would read them; an unknown or ambiguous one is skipped."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        value: str | None = None
        if word.startswith("--"):
            name, eq, given = word.partition("=")
            matches = [o for o in _LONG if o == name] or [o for o in _LONG if o.startswith(name)]
            if len(matches) != 1:
                continue
            name = matches[0]
            if name in _TAKES_VALUE:
                if eq:
                    value = given
                elif i < len(words):
                    value, i = words[i], i + 1
        elif word.startswith("-") and len(word) > 1:
            if word[:2] not in _SHORT:
                continue
            name = _SHORT[word[:2]]
            if len(word) > 2:
                value = word[2:]
            elif i < len(words):
                value, i = words[i], i + 1
        else:
            continue
        out.append((name, value))
    return out


def _hide_password(text: str) -> str:
    return re.sub(r"://[^/@\s]*@", "://\u2026@", text)


def _inside(folder: str, path: str) -> str | None:
    """`path` joined to the bundle folder `folder`, or None when it leaves the source dir (absolute, `..`
    past its top, `~`)."""
    if path.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return None
    joined = posixpath.normpath(posixpath.join(folder, path))
    return None if joined == ".." or joined.startswith("../") else joined.removeprefix("./")


def _where(value: str, folder: str) -> tuple[str, bool] | None:
    """(where, beyond) for a place pip takes packages from: "git" (a VCS URL), "url" (the network), "outside"
    (a path outside the source dir); None for a folder or file inside it (the bundle brings it)."""
    if _VCS.match(value):
        return value.split("+", 1)[0].lower(), True
    if value.lower().startswith("file:"):
        return "outside", True  # a file: URL names an absolute path
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value):
        return "url", True
    if _inside(folder, value) is None:
        return "outside", True
    return None


_SAID = {"url": "a download", "outside": "a path outside the source dir", "git": "a git checkout",
         "hg": "a Mercurial checkout", "svn": "a Subversion checkout", "bzr": "a Bazaar checkout"}


def _said(where: str) -> str:
    return _SAID[where]


def _looks_like_place(requirement: str) -> bool:
    """A requirement that is a URL or a path rather than a name (pip: a path has a separator or starts
    with a dot, constructors._looks_like_path; or it is an archive)."""
    return bool(_VCS.match(requirement)) or "://" in requirement or requirement.lower().startswith("file:") \
        or "/" in requirement or "\\" in requirement or requirement.startswith(".") \
        or requirement.endswith((".whl", ".tar.gz", ".zip"))


def read(files: Mapping[str, bytes], path: str) -> Requirements:
    """The requirements file `path` of a bundle (`files`: name -> bytes), with the requirements and
    constraints files it includes that the bundle holds."""
    names: list[str] = []
    sources: list[PackageSource] = []
    seen = {path}
    queue = [(path, False)]  # (file, a constraints file: its lines name no requirement)
    while queue:
        current, constraint = queue.pop(0)
        folder = posixpath.dirname(current)
        for number, line in _lines(files[current].decode("utf-8-sig", "replace")):
            words = line.split(" ")
            cut = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
            requirement, rest = " ".join(words[:cut]).strip(), " ".join(words[cut:])
            try:
                options = _options(shlex.split(rest))
            except ValueError:  # pip stops at such a line too ("Could not split options")
                options = []

            def add(what: str, why: str, beyond: bool, number: int = number, current: str = current) -> None:
                sources.append(PackageSource(current, number, _hide_password(what), why, beyond))

            if requirement:
                direct = _DIRECT.match(requirement)
                target = direct.group("url") if direct else requirement
                name: str | None = None
                if direct or _looks_like_place(target):
                    place = _where(target, folder)
                    if place:
                        add(requirement, _said(place[0]), place[1])
                    egg = _EGG.search(target)
                    name = direct.group("name") if direct else egg.group(1) if egg else None
                else:
                    plain = _NAME.match(target)
                    name = plain.group("name") if plain else None
                if name and not constraint:
                    names.append(name)
            for option, value in options:
                kind = _LONG.get(option)
                if kind is None or value is None:
                    continue
                shown = f"{option} {value}"
                if kind in ("index", "extra-index"):
                    if value.rstrip("/") not in PYPI:
                        add(shown, "another index" if kind == "index" else "an extra index", True)
                elif kind == "trusted-host":
                    add(shown, "a host pip trusts without checking its certificate", True)
                elif kind == "find-links":
                    place = _where(value, folder)
                    if place:
                        add(shown, "a page of links" if place[0] == "url" else _said(place[0]), place[1])
                elif kind == "editable":
                    place = _where(value, folder)
                    if place:
                        add(shown, f"an editable install from {_said(place[0])}", place[1])
                    else:
                        add(shown, "an editable install of a source dir folder, built as the job starts", False)
                    egg = _EGG.search(value)
                    if egg and not constraint:
                        names.append(egg.group(1))
                elif kind in ("requirement", "constraint"):
                    word = "requirements" if kind == "requirement" else "constraints"
                    if _URL_SCHEME.match(value) and not value.lower().startswith("file:"):
                        add(shown, f"a {word} file fetched from the network", True)
                        continue
                    nested = _inside(folder, value)
                    if nested is None or value.lower().startswith("file:"):
                        add(shown, f"a {word} file outside the source dir", True)
                    elif nested not in files:
                        add(shown, f"a {word} file the code bundle does not hold", False)
                    elif nested not in seen and len(seen) < MAX_INCLUDES:
                        seen.add(nested)
                        queue.append((nested, constraint or kind == "constraint"))
    return Requirements(tuple(dict.fromkeys(names)), tuple(sources))
