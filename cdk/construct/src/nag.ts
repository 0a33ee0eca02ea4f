// cdk-nag acknowledgments, each by its exact finding (rule and evidence) and only where the finding is: a
// wildcard (IAM5) on the one IAM policy that holds it, never on a role (where it would also hide a later
// wildcard grant). Internal.
import { DefaultStackSynthesizer, Stack, Validations } from 'aws-cdk-lib';
import { IConstruct } from 'constructs';

/** A value the way cdk-nag prints evidence: intrinsics as <AWS::Region>, <Logical.Arn>. */
export function nagText(stack: Stack, value: string): string {
  const render = (v: any): string => {
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object') {
      if ('Ref' in v) return `<${v.Ref}>`;
      if ('Fn::GetAtt' in v) return `<${v['Fn::GetAtt'][0]}.${v['Fn::GetAtt'][1]}>`;
      if ('Fn::Join' in v) return (v['Fn::Join'][1] as any[]).map(render).join(v['Fn::Join'][0]);
    }
    throw new Error(`cannot render ${JSON.stringify(v)} as cdk-nag evidence`);
  };
  return render(stack.resolve(value));
}

export function nagId(rule: string, evidence?: string): string {
  return evidence ? `AwsSolutions::${rule}[${evidence}]` : `AwsSolutions::${rule}`;
}

/** Acknowledges findings, each (construct, finding) once per stack, whichever construct asks first. */
export class Acknowledger {
  private static readonly done = new WeakMap<Stack, Set<string>>();

  public acknowledge(construct: IConstruct, finding: string, reason: string): void {
    const stack = Stack.of(construct);
    let done = Acknowledger.done.get(stack);
    if (!done) {
      done = new Set();
      Acknowledger.done.set(stack, done);
    }
    const key = `${construct.node.path}\0${finding}`;
    if (done.has(key)) return;
    done.add(key);
    Validations.of(construct).acknowledge({ id: finding, reason });
  }
}

/**
 * The findings on CDK's own BucketDeployment handlers (stack-level singletons, one per memory/storage size):
 * each finding once, and the write to `bucketObjects` (this construct's bucket) by this construct.
 */
export function acknowledgeDeployment(ack: Acknowledger, stack: Stack, bucketObjects: string,
  reasons: Record<string, string>): void {
  let assetsBucket: string | undefined;
  if (stack.synthesizer instanceof DefaultStackSynthesizer) {
    const qualifier = stack.node.tryGetContext('@aws-cdk/core:bootstrapQualifier') ??
      DefaultStackSynthesizer.DEFAULT_QUALIFIER;
    assetsBucket = DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME
      .replace('${Qualifier}', qualifier)
      .replace('${AWS::AccountId}', nagText(stack, stack.account))
      .replace('${AWS::Region}', nagText(stack, stack.region));
  }
  for (const handler of stack.node.children.filter(c => c.node.id.startsWith('Custom::CDKBucketDeployment'))) {
    const role = handler.node.findChild('ServiceRole');
    const policy = role.node.findChild('DefaultPolicy');
    ack.acknowledge(role, nagId('AwsSolutions-IAM4', 'Policy::arn:<AWS::Partition>:iam::aws:policy/' +
      'service-role/AWSLambdaBasicExecutionRole'), reasons['deployment-managed-policy']);
    for (const action of ['s3:GetObject*', 's3:GetBucket*', 's3:List*', 's3:DeleteObject*', 's3:Abort*']) {
      ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Action::${action}`), reasons['deployment-actions']);
    }
    const objects = [nagText(stack, bucketObjects)];
    if (assetsBucket) objects.push(`arn:<AWS::Partition>:s3:::${assetsBucket}/*`);
    for (const evidence of objects) {
      ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${evidence}`), reasons['deployment-objects']);
    }
    ack.acknowledge(handler, nagId('AwsSolutions-L1'), reasons['deployment-runtime']);
  }
}
