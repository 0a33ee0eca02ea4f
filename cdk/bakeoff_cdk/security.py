"""Security checks built in: cdk-nag's AwsSolutions rules as a validation plugin,
and every acknowledgment with its reason from one table. Each acknowledgment names
the exact finding (rule and evidence); a wildcard (IAM5) acknowledgment sits on the one
IAM policy that holds the statement it covers, never on a role, where it would also hide
a later wildcard grant to that role. The construct records what it acknowledged, so the
tests can assert the whole list and none is added silently."""
from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import Construct

from bakeoff.pipelines.sagemaker.cdk.reasons import REASONS


def nag_text(stack: Stack, value: Any) -> str:
    """A value the way cdk-nag prints evidence: intrinsics as <AWS::Region>, <Logical.Arn>."""
    resolved = stack.resolve(value)

    def render(v) -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            if "Ref" in v:
                return f"<{v['Ref']}>"
            if "Fn::GetAtt" in v:
                logical, attr = v["Fn::GetAtt"]
                return f"<{logical}.{attr}>"
            if "Fn::Join" in v:
                sep, parts = v["Fn::Join"]
                return sep.join(render(p) for p in parts)
        raise ValueError(f"cannot render {v!r} as cdk-nag evidence")

    return render(resolved)


def nag_id(rule: str, evidence: str | None = None) -> str:
    return f"AwsSolutions::{rule}[{evidence}]" if evidence else f"AwsSolutions::{rule}"


class Acknowledger:
    """Acknowledges findings and keeps the list (path, finding id, reason key)."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []

    def __call__(self, construct: Construct, finding: str, reason: str) -> None:
        Validations.of(construct).acknowledge(Acknowledgment(id=finding, reason=REASONS[reason]))
        self.records.append((construct.node.path, finding, reason))


def add_security_checks(app) -> None:
    """Run cdk-nag's AwsSolutions pack on every synth of `app`: any unacknowledged
    finding stops the synth."""
    from cdk_nag import AwsSolutionsChecks

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
