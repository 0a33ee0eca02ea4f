"""Security checks built in: cdk-nag's AwsSolutions rules as a validation plugin of the app. The construct
acknowledges each finding it accepts by its exact rule and evidence, with its reason from one table
(REASONS); a wildcard's acknowledgment sits on the one IAM policy that holds the statement, never on a role."""
from __future__ import annotations

from typing import Any

from aws_cdk import Validations

from bakeoff.pipelines.sagemaker.cdk.reasons import REASONS

__all__ = ["REASONS", "add_security_checks"]


def add_security_checks(app: Any) -> None:
    """Run cdk-nag's AwsSolutions pack on every synth of `app`: any unacknowledged finding stops the synth."""
    from cdk_nag import AwsSolutionsChecks

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
