"""What every call to AWS shares, below the SageMaker engine, the price list and the quotas alike: boto3's
failures as one line that says what to do (`aws()`, raising AwsError or SpecError), and the region an ARN
names. botocore is imported only when a call is made."""
from __future__ import annotations

from contextlib import contextmanager

from bakeoff.pipelines.errors import AwsError, SpecError, words
from bakeoff.pipelines.params import PROFILE, REGION


def _hint(code: str, message: str, action: str) -> str:
    low = message.lower()
    if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "403"):
        return f"access denied while trying to {action}: {message}; grant the caller that permission"
    if code in ("ThrottlingException", "Throttling", "TooManyRequestsException", "SlowDown",
                "RequestLimitExceeded"):
        return f"AWS kept throttling while trying to {action} (retried with backoff); try again in a minute"
    if code in ("NoSuchBucket",):
        return f"the S3 bucket does not exist ({message}); create it or pass --bucket with one that does"
    if code in ("ResourceInUse", "ConflictException"):
        return f"cannot {action}: the pipeline is in use ({message}); wait for its running execution to finish"
    if code in ("ResourceNotFound", "ResourceNotFoundException") or any(
            w in low for w in ("not found", "could not find", "does not exist")):
        return f"cannot {action}: {message}; check the name or ARN (and the region)"
    if "role" in low and code == "ValidationException":
        return f"cannot {action}: {message}; check that the role exists and trusts sagemaker.amazonaws.com"
    return f"cannot {action}: {code}: {message}"


@contextmanager
def aws(action: str):
    """Turn boto3 failures into one clear line."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        ParamValidationError,
        ProfileNotFound,
    )

    try:
        yield
    except ClientError as exc:
        err = exc.response.get("Error", {})
        code = str(err.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        message = " ".join(str(err.get("Message") or exc).split())  # one line, whatever the service sent
        raise AwsError(_hint(code, message, action), code=code, operation=action) from None
    except NoCredentialsError:
        raise AwsError(f"cannot {action}: no AWS credentials found; configure them (aws configure, "
                       "AWS_PROFILE or an instance role)", code="NoCredentials", operation=action) from None
    except NoRegionError:
        raise AwsError(words(f"cannot {action}: no AWS region set; pass ", REGION, " or set AWS_DEFAULT_REGION"),
                       code="NoRegion", operation=action) from None
    except EndpointConnectionError as exc:
        raise AwsError(f"cannot {action}: cannot reach {exc.kwargs.get('endpoint_url')}; "
                       "check the network/region", code="EndpointConnectionError", operation=action) from None
    except ProfileNotFound as exc:
        raise SpecError(f"no AWS profile named {exc.kwargs.get('profile')!r} in the AWS config files",
                        field=PROFILE) from None
    except ParamValidationError as exc:
        raise AwsError(f"cannot {action}: request refused before sending: {' '.join(str(exc).split())}",
                       code="ParamValidation", operation=action) from None


def region_of(arn: str | None) -> str | None:
    """The region an ARN names (arn:PARTITION:SERVICE:REGION:ACCOUNT:...), or None."""
    parts = (arn or "").split(":")
    return parts[3] if len(parts) > 5 and parts[0] == "arn" and parts[3] else None
