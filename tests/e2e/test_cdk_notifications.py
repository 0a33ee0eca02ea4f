"""`BakeoffPipeline(notify=topic)` / `add_notification`: each execution's outcome told from SageMaker's own
pipeline events. The synthesized rules are put into EventBridge (moto, over HTTP) as deployed, and events
shaped as AWS documents them (docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html)
are sent: moto's EventBridge matches the patterns and renders each rule's InputTransformer, and delivers to
SQS but not to SNS, so a queue receives what the topic would."""
import json

import aws_cdk as cdk  # noqa: E402
import boto3
from aws_cdk import aws_sns as sns  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402
from cdk_stacks import (
    ACCOUNT,
    QUICKSTART,
    assert_acknowledgments_exact,
    make_stack,
    mapping,
    nag_report,
    of_type,
    substitute,
)

from bakeoff.pipelines.spec.loader import load_spec  # noqa: E402
from bakeoff_cdk import BakeoffPipeline  # noqa: E402

REGION = "us-east-1"


def _resolve(node, values):
    """Every intrinsic in a template fragment, resolved as a deploy would (tests/cdk_stacks.substitute)."""
    if isinstance(node, dict):
        if set(node) <= {"Fn::Join", "Ref", "Fn::GetAtt"} and len(node) == 1:
            return substitute(node, values)
        return {k: _resolve(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, values) for v in node]
    return node


def _stack_with_topic():
    app = cdk.App()
    stack = cdk.Stack(app, "Notified", env=cdk.Environment(region=REGION, account=ACCOUNT))
    topic = sns.Topic(stack, "Outcomes", enforce_ssl=True)
    construct = BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART, ["seeds=3"]), notify=topic)
    return stack, construct, Template.from_stack(stack)


def _event(detail_type, **detail):
    return {"Source": "aws.sagemaker", "DetailType": detail_type, "Detail": json.dumps(detail),
            "Resources": [detail["pipelineArn"], detail["pipelineExecutionArn"]]}


def test_each_outcome_reaches_the_topic_as_one_line_and_nothing_else_does(aws_env):
    stack, construct, template = _stack_with_topic()
    rules = of_type(template, "AWS::Events::Rule")
    assert len(rules) == 4
    topic_ref = next(iter(of_type(template, "AWS::SNS::Topic")))
    assert all(r["Properties"]["Targets"][0]["Arn"] == {"Ref": topic_ref} for r in rules.values())
    # The topic lets EventBridge publish (the SnsTopic target's policy) and refuses publishing without TLS.
    policy = json.dumps(of_type(template, "AWS::SNS::TopicPolicy"))
    assert "events.amazonaws.com" in policy and "aws:SecureTransport" in policy

    values = mapping(template)
    events, sqs = (boto3.client(n, region_name=REGION) for n in ("events", "sqs"))
    queue = sqs.create_queue(QueueName="outcomes")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for name, rule in rules.items():
        props = rule["Properties"]
        events.put_rule(Name=name, EventPattern=json.dumps(_resolve(props["EventPattern"], values)), State="ENABLED")
        transformer = _resolve(props["Targets"][0]["InputTransformer"], values)
        events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": queue_arn, "InputTransformer": transformer}])

    pipeline = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/{construct.pipeline_name.lower()}"
    execution = f"{pipeline}/execution/abc123"
    step = "SageMaker Model Building Pipeline Execution Step Status Change"
    status = "SageMaker Model Building Pipeline Execution Status Change"
    sent = [
        _event(status, pipelineArn=pipeline, pipelineExecutionArn=execution, currentPipelineExecutionStatus="Succeeded",
               previousPipelineExecutionStatus="Executing", pipelineExecutionDisplayName="round-1-seeds-0-2"),
        _event(step, pipelineArn=pipeline, pipelineExecutionArn=execution, stepName="ParityFailed", stepType="Fail",
               currentStepStatus="Failed", previousStepStatus="Executing",
               failureReason="parity failed: trn1 val_loss is 0.031 above p4d's, beyond the margin 0.02."),
        _event(step, pipelineArn=pipeline, pipelineExecutionArn=execution, stepName="ParityInconclusive",
               stepType="Fail", currentStepStatus="Failed", failureReason="inconclusive: 9 seeds would decide it."),
        _event(step, pipelineArn=pipeline, pipelineExecutionArn=execution, stepName="Train-trn1-s2",
               stepType="Training", currentStepStatus="Failed",
               failureReason="ClientError: InsufficientInstanceCapacity"),
        # Not outcomes: a step that succeeded, an execution still running, another pipeline's verdict.
        _event(step, pipelineArn=pipeline, pipelineExecutionArn=execution, stepName="Evaluate", stepType="Processing",
               currentStepStatus="Succeeded"),
        _event(status, pipelineArn=pipeline, pipelineExecutionArn=execution,
               currentPipelineExecutionStatus="Executing"),
        _event(step, pipelineArn=pipeline.replace("bakeoff-", "other-"), pipelineExecutionArn=execution,
               stepName="ParityFailed", currentStepStatus="Failed", failureReason="someone else's"),
    ]
    assert events.put_events(Entries=sent)["FailedEntryCount"] == 0
    got = []
    while True:
        batch = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            break
        got += [json.loads(m["Body"]) for m in batch]
    assert len(got) == 4, got
    text = "\n".join(sorted(got))
    assert f"bakeoff verdict: pass. Execution round-1-seeds-0-2 ({execution}) succeeded." in text
    assert "bakeoff verdict: fail. parity failed: trn1 val_loss is 0.031 above p4d's" in text
    assert "bakeoff verdict: inconclusive. inconclusive: 9 seeds would decide it." in text
    assert "step Train-trn1-s2 failed" in text and "InsufficientInstanceCapacity" in text
    assert text.count(f"bakeoff report {execution}") == 3 and f"bakeoff retry {execution}" in text
    assert "someone else's" not in text


def test_a_notified_stack_passes_cdk_nag(tmp_path):
    def build(stack):
        topic = sns.Topic(stack, "Outcomes", enforce_ssl=True)
        return BakeoffPipeline(stack, "Bakeoff", spec=load_spec(QUICKSTART, ["seeds=3"]), notify=topic)

    plugin, construct = nag_report(tmp_path, build, region=REGION)
    assert_acknowledgments_exact(plugin, construct)


def test_any_eventbridge_target_gets_the_events_themselves():
    from aws_cdk import aws_events_targets as targets
    from aws_cdk import aws_sqs as sqs

    _, stack, construct = make_stack(load_spec(QUICKSTART, ["seeds=3"]), region=REGION)
    queue = sqs.Queue(stack, "Q", enforce_ssl=True)
    rules = construct.add_notification(targets.SqsQueue(queue))
    template = Template.from_stack(stack)
    assert len(rules) == 4
    for rule in of_type(template, "AWS::Events::Rule").values():
        if "EventPattern" in rule["Properties"]:
            assert "InputTransformer" not in rule["Properties"]["Targets"][0]  # the event as SageMaker sent it
