// Each execution's outcome told to a target: the same rules, ids, patterns and messages as bakeoff_cdk 0.1.0's
// notifications (a stack moving from it keeps them). Internal.
//
// The verdict lives in the steps: a pass is the execution Succeeded (only a pass gets past the gate), a fail or
// an inconclusive verdict is the gate's Fail step failing with the gate's message as its failureReason; any other
// failed step leaves the execution without a verdict
// (docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html).
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';

export const SOURCE = 'aws.sagemaker';
export const EXECUTION_EVENT = 'SageMaker Model Building Pipeline Execution Status Change';
export const STEP_EVENT = 'SageMaker Model Building Pipeline Execution Step Status Change';

/** The pattern's `detail` for one pipeline: its ARN compared ignoring case (pipeline ARNs carry the name in lower
 * case; equals-ignore-case, docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html). */
export function forPipeline(pipelineArn: string, detail: Record<string, any>): Record<string, any> {
  return { pipelineArn: [{ 'equals-ignore-case': pipelineArn }], ...detail };
}

interface Outcome {
  readonly name: string;
  readonly detailType: string;
  readonly detail: Record<string, any>;
  readonly text: string;
}

function outcomes(pipelineArn: string, gate: { fail: string; inconclusive: string }): Outcome[] {
  const execution = events.EventField.fromPath('$.detail.pipelineExecutionArn');
  const label = events.EventField.fromPath('$.detail.pipelineExecutionDisplayName');
  const reason = events.EventField.fromPath('$.detail.failureReason');
  const step = events.EventField.fromPath('$.detail.stepName');
  const report = `Report: bakeoff report ${execution}`;
  const failed = (steps: any) => forPipeline(pipelineArn, { stepName: steps, currentStepStatus: ['Failed'] });
  return [
    { name: 'Pass', detailType: EXECUTION_EVENT,
      detail: forPipeline(pipelineArn, { currentPipelineExecutionStatus: ['Succeeded'] }),
      text: `bakeoff verdict: pass. Execution ${label} (${execution}) succeeded. ${report}` },
    { name: 'Fail', detailType: STEP_EVENT, detail: failed([gate.fail]),
      text: `bakeoff verdict: fail. ${reason} Execution ${execution}. ${report}` },
    { name: 'Inconclusive', detailType: STEP_EVENT, detail: failed([gate.inconclusive]),
      text: `bakeoff verdict: inconclusive. ${reason} Execution ${execution}. ${report}` },
    { name: 'NoVerdict', detailType: STEP_EVENT, detail: failed([{ 'anything-but': [gate.fail, gate.inconclusive] }]),
      text: `bakeoff: step ${step} failed, so execution ${execution} will end without a verdict: ${reason} ` +
        `(bakeoff status ${execution}; bakeoff retry ${execution} runs what failed again)` },
  ];
}

/** Whether `target` is an SNS topic (jsii passes interfaces, so the check is by the topic's own attribute). */
function isTopic(target: sns.ITopic | events.IRuleTarget): target is sns.ITopic {
  return typeof (target as any).topicArn === 'string';
}

/** One rule per outcome to `target`: a topic gets the outcome's line, another target the event itself. A text with
 * EventField values becomes the target's InputTransformer (docs.aws.amazon.com/cdk/api/v2/docs/
 * aws-cdk-lib.aws_events.RuleTargetInput.html; SnsTopicProps.message, default the entire event). */
export function addOutcomeRules(scope: Construct, pipelineArn: string, description: string,
  gate: { fail: string; inconclusive: string }, target: sns.ITopic | events.IRuleTarget): events.Rule[] {
  return outcomes(pipelineArn, gate).map(o => {
    const rule = new events.Rule(scope, `Notify${o.name}`, {
      description: `${description}: ${o.name.toLowerCase()}`,
      eventPattern: { source: [SOURCE], detailType: [o.detailType], detail: o.detail },
    });
    rule.addTarget(isTopic(target) ?
      new targets.SnsTopic(target, { message: events.RuleTargetInput.fromText(o.text) }) : target);
    return rule;
  });
}
