// Granting the start of a pipeline's executions. Internal.
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { Acknowledger, nagId, nagText } from './nag';

/** Why the executions' wildcard is accepted (pipelines/sagemaker/cdk/reasons.py "executions"). */
export const EXECUTIONS_REASON = 'executions of the one pipeline (<pipeline-arn>/execution/*) are created at run time';

const policies = new WeakMap<Construct, number>();

/**
 * `actions` on the pipeline and its executions, and `more` statements (each with the wildcards cdk-nag will name
 * and why they are accepted). A role, user or group gets a policy of its own under `scope`, with the findings
 * acknowledged on it by their exact evidence; another principal gets the statements directly.
 */
export function grantStart(scope: Construct, grantee: iam.IGrantable, pipelineArn: string, actions: string[],
  more: { statements: iam.PolicyStatement[]; wildcards: string[]; reason: string }[] = []): iam.Grant {
  const resourceArns = [pipelineArn, `${pipelineArn}/execution/*`];
  const principal = grantee.grantPrincipal as any;
  if (typeof principal.attachInlinePolicy !== 'function') {
    const grant = named(iam.Grant.addToPrincipal({ grantee, actions, resourceArns }));
    for (const m of more) for (const s of m.statements) grantee.grantPrincipal.addToPrincipalPolicy(s);
    return grant;
  }
  const index = (policies.get(scope) ?? 0) + 1;
  policies.set(scope, index);
  const policy = new iam.Policy(scope, `StartExecution${index}`);
  principal.attachInlinePolicy(policy);
  const grant = named(iam.Grant.addToPrincipal({ grantee: policy, actions, resourceArns }));
  const stack = Stack.of(scope);
  const ack = new Acknowledger();
  ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${nagText(stack, resourceArns[1])}`),
    EXECUTIONS_REASON);
  for (const m of more) {
    policy.addStatements(...m.statements);
    for (const w of m.wildcards) {
      ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${nagText(stack, w)}`), m.reason);
    }
  }
  return grant;
}

/** The start-and-watch statement keeps the Sid the bundle's startGrants give it (pipelines/sagemaker/cdk/grants.py). */
function named(grant: iam.Grant): iam.Grant {
  for (const s of grant.principalStatements) s.sid = 'StartWatch';
  return grant;
}
