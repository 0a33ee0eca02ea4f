"""Secrets found by what a file holds, not by what it is called: pure functions over text and bytes
(nothing here reads a file or prints).

The token formats (AWS access key ids, GitHub, GitLab, Slack, Hugging Face, OpenAI, Anthropic, PyPI, npm,
Stripe and Google keys, JWTs and bearer tokens, PEM/PuTTY private keys, URLs with a password) are
`bakeoff.pipelines.spec.fields.SECRET_RULES`, where each cites the maintained scanner rule it follows (gitleaks'
rules, detect-secrets' plugins): the spec's environment values are checked with the same rules, and the
spec layer cannot import this one. Here: a file's head, bounded and skipped when binary, and the one line
that says what was found. A finding never holds the secret: its kind, its line, and at most the format's
marker (4 characters) and an ellipsis.
"""
from __future__ import annotations

from collections.abc import Iterable

from bakeoff.pipelines.spec.fields import SECRET_RULES as SECRET_RULES
from bakeoff.pipelines.spec.fields import SecretFinding as Finding
from bakeoff.pipelines.spec.fields import secret_findings

# How much of each file is read: a secret pasted into a config or a script sits near its top, and the
# bundle packer reads this much of every file it packs (a source tree of thousands of files stays fast).
HEAD_BYTES = 64 * 1024
# A file whose head has a NUL byte is binary (a wheel, a checkpoint, an image): not scanned. Text in
# UTF-16/32 has NULs too, and is taken as binary here; secrets in it go unseen.
_BINARY_MARK = b"\0"

__all__ = ["HEAD_BYTES", "SECRET_RULES", "Finding", "describe", "is_binary", "scan_head", "scan_text"]


def scan_text(text: str, most: int = 5) -> list[Finding]:
    """The secrets `text` holds, in order (at most `most`), each as (kind, `line N`, marker)."""
    return secret_findings(text, most)


def is_binary(head: bytes) -> bool:
    return _BINARY_MARK in head


def scan_head(head: bytes, most: int = 3) -> list[Finding]:
    """The secrets in the first HEAD_BYTES of a file (`head`: what the caller read of it); none for a binary
    file. Bytes that are not UTF-8 are replaced, so a Latin-1 file is still read."""
    head = head[:HEAD_BYTES]
    if is_binary(head):
        return []
    return secret_findings(head.decode("utf-8", "replace"), most)


def describe(findings: Iterable[Finding], most: int = 2) -> str:
    """`a GitHub token (ghp_…, line 3); a URL with a password (post…, line 9)`: for one line of output."""
    found = list(findings)
    shown = "; ".join(str(f) for f in found[:most])
    return shown + (f" and {len(found) - most} more" if len(found) > most else "")
