// Starting a pipeline on a schedule. Internal.
import * as crypto from 'crypto';
import { Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { checkDataUri } from './data';

const RULE_NAME_MAX = 64; // EventBridge rule names: 1-64 of [.-_A-Za-z0-9]
const VALUE_MAX = 1024; // StartPipelineExecution: Parameter.Value 0-1024

/** `parameters` checked against the pipeline's (name -> type), a `*DataUri`'s (`dataParameters`) as an S3 URI; the
 * construct lets its role read a `*DataUri`'s. */
export function checkParameters(parameters: Record<string, string>, known: Record<string, string>,
  dataParameters: Record<string, string>): void {
  for (const [name, value] of Object.entries(parameters)) {
    const type = known[name];
    if (type === undefined) {
      throw new Error(`${name} is not a parameter of this pipeline (${Object.keys(known).sort().join(', ')})`);
    }
    if (value.length > VALUE_MAX) throw new Error(`${name}: the value is longer than ${VALUE_MAX} characters`);
    if ((type === 'Integer' && !/^[-+]?\d+$/.test(value.trim())) || (type === 'Float' && isNaN(Number(value)))) {
      throw new Error(`${name} takes a ${type.toLowerCase()}, not ${JSON.stringify(value)}`);
    }
    if (name in dataParameters) checkDataUri(value, `scheduleParameters.${name}`);
  }
}

/**
 * An EventBridge rule on the default bus that starts the pipeline with `parameters`, through a role EventBridge
 * may assume for this one rule only: for event bus rule targets "the value of aws:SourceArn must be the rule
 * ARN" (AWS docs, "Cross-service confused deputy prevention in Amazon EventBridge"); the ARN is built from the
 * rule's fixed name, so the trust policy does not depend on the rule (no cycle).
 */
export function addSchedule(scope: Construct, pipeline: Construct, pipelineName: string, pipelineArn: string,
  description: string, schedule: events.Schedule, parameters: Record<string, string>): events.CfnRule {
  const stack = Stack.of(scope);
  let ruleName = pipelineName;
  if (ruleName.length > RULE_NAME_MAX) {
    const digest = crypto.createHash('sha256').update(ruleName).digest('hex').slice(0, 8);
    ruleName = `${ruleName.slice(0, RULE_NAME_MAX - 9)}-${digest}`;
  }
  const ruleArn = stack.formatArn({ service: 'events', resource: 'rule', resourceName: ruleName });
  const role = new iam.Role(scope, 'ScheduleRole', {
    description,
    assumedBy: new iam.ServicePrincipal('events.amazonaws.com', {
      conditions: { StringEquals: { 'aws:SourceAccount': stack.account, 'aws:SourceArn': ruleArn } },
    }),
  });
  // A scheduled start needs nothing else (no wildcard, no acknowledgment).
  role.addToPrincipalPolicy(new iam.PolicyStatement({
    actions: ['sagemaker:StartPipelineExecution'], resources: [pipelineArn],
  }));
  const names = Object.keys(parameters).sort();
  const rule = new events.CfnRule(scope, 'Schedule', {
    name: ruleName, scheduleExpression: schedule.expressionString, state: 'ENABLED',
    description: `start bakeoff pipeline ${pipelineName}`,
    targets: [{
      id: 'bakeoff', arn: pipelineArn, roleArn: role.roleArn,
      sageMakerPipelineParameters: names.length ? {
        pipelineParameterList: names.map(name => ({ name, value: parameters[name] })),
      } : undefined,
    }],
  });
  rule.node.addDependency(pipeline);
  for (const child of role.node.children) {
    if (child.node.id !== 'Resource') rule.node.addDependency(child);
  }
  return rule;
}
