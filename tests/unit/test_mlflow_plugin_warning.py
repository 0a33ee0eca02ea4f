"""bakeoff's MLflow clients drop sagemaker-mlflow's header warning where the tracking URI is not a SageMaker ARN
(bakeoff_runtime/tracking/plugins.py), and keep it, and every other message, where it is."""
import logging

import pytest

from bakeoff_runtime.tracking import plugins


@pytest.fixture
def header_logger():
    logger = logging.getLogger(plugins.HEADER_LOGGER)
    saved = list(logger.filters)
    logger.filters = []
    yield logger
    logger.filters = saved


def _passes(logger, message, *args):
    record = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, message, args, None)
    return bool(logger.filter(record))


def test_the_header_warning_is_dropped_for_a_server_that_is_not_a_sagemaker_arn(header_logger):
    # As MLflow logs it: mlflow/tracking/request_header/registry.py, `_logger.warning("...: %s", e)`.
    assert _passes(header_logger, plugins.HEADER_WARNING + ": %s", IndexError("list index out of range"))
    plugins.quiet_header_provider("http://127.0.0.1:5000")
    plugins.quiet_header_provider("http://127.0.0.1:5000")  # idempotent: one filter
    assert len(header_logger.filters) == 1
    assert not _passes(header_logger, plugins.HEADER_WARNING + ": %s", IndexError("list index out of range"))
    assert _passes(header_logger, "another warning of the registry's")


def test_with_a_sagemaker_arn_the_warning_is_kept(header_logger):
    plugins.quiet_header_provider("arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/team")
    assert header_logger.filters == []
    assert _passes(header_logger, plugins.HEADER_WARNING + ": %s", RuntimeError("Unable to locate credentials"))
