// The SageMaker MLflow tracking server the jobs track to (mlflowTrackingServer; a Python app's
// mlflow_tracking_server=True): its own role, writing artifacts under <prefix>/mlflow/ only. Internal.
import { Annotations, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import { Construct } from 'constructs';
import { Acknowledger, nagId, nagText } from './nag';

// CloudFormation AWS::SageMaker::MlflowTrackingServer MlflowVersion: ^\d+(\.\d+)+$, 1-32 characters.
const VERSION_PATTERN = /^\d+(\.\d+)+$/;

export interface ServerOptions {
  readonly name: string;
  readonly specName: string;
  readonly bucket: s3.IBucket;
  readonly prefix: string;
  readonly size: string;
  readonly version: string;
  /** The bundle's pinned server version and AWS's client release for each (pipelines/sagemaker/cdk/mlflow_server.py). */
  readonly pinned: string;
  readonly clientForServer: Record<string, string>;
  readonly artifactsReason: string;
}

export function checkVersion(scope: Construct, o: ServerOptions): void {
  if (typeof o.version !== 'string' || o.version.length > 32 || !VERSION_PATTERN.test(o.version)) {
    throw new Error(`mlflowVersion ${JSON.stringify(o.version)} is not an MLflow version such as ` +
      `${JSON.stringify(o.pinned)} (CloudFormation's MlflowVersion: digits and dots, at most 32 characters)`);
  }
  const server = o.version.split('.').slice(0, 2).join('.');
  const client = o.clientForServer[server];
  const pinnedClient = o.clientForServer[o.pinned];
  if (client !== pinnedClient) {
    Annotations.of(scope).addWarningV2('bakeoff:mlflow-version',
      `the jobs install MLflow client ${pinnedClient}, which AWS pairs with tracking server ${o.pinned}.x; for a ` +
      `${server}.x server AWS names ${client ? 'mlflow==' + client : 'no client release'} ` +
      '(mlflow-track-experiments): logging may fail (the jobs train regardless and Evaluate back-fills their runs)');
  }
}

/** The server and its role; returns the server (CfnMlflowTrackingServerProps: trackingServerName, artifactStoreUri,
 * roleArn required; docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_sagemaker.CfnMlflowTrackingServerProps.html). */
export function trackingServer(scope: Construct, ack: Acknowledger, o: ServerOptions): sagemaker.CfnMlflowTrackingServer {
  checkVersion(scope, o);
  const role = new iam.Role(scope, 'MlflowRole', {
    assumedBy: new iam.ServicePrincipal('sagemaker.amazonaws.com'),
    description: `MLflow tracking server of bake-off ${o.specName}`,
  });
  const artifacts = o.bucket.arnForObjects(`${o.prefix}/mlflow/*`);
  const policy = new iam.Policy(role, 'Artifacts', {
    statements: [new iam.PolicyStatement({
      sid: 'MlflowArtifacts', resources: [artifacts],
      actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
    })],
  });
  role.attachInlinePolicy(policy);
  ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${nagText(Stack.of(scope), artifacts)}`),
    o.artifactsReason);
  role.addToPrincipalPolicy(new iam.PolicyStatement({
    actions: ['s3:ListBucket', 's3:GetBucketLocation'], resources: [o.bucket.bucketArn],
  }));
  return new sagemaker.CfnMlflowTrackingServer(scope, 'MlflowServer', {
    trackingServerName: o.name, artifactStoreUri: `s3://${o.bucket.bucketName}/${o.prefix}/mlflow`,
    roleArn: role.roleArn, trackingServerSize: o.size, mlflowVersion: o.version, automaticModelRegistration: false,
  });
}
