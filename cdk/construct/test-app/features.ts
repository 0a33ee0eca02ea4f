// A TypeScript app with the construct's options, each switched on from the context, with cdk-nag's
// AwsSolutions checks on every synth:
//   bakeoff synth SPEC --region us-west-2 --cdk-out bundle [--mlflow-server]
//   npm run test-app && npx cdk synth --app 'node test-app/features.js' -c bundleDir=bundle -c region=us-west-2 \
//     [-c notify=1] [-c allowedDataUris=s3://a/b/,s3://c/d/] [-c givenRole=1] [-c mlflowVersion=3.0]
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BakeoffPipeline } from '../lib';

const app = new App();
const context = (key: string): string | undefined => app.node.tryGetContext(key);
const bundleDir = context('bundleDir');
const region = context('region');
if (!bundleDir || !region) throw new Error('pass -c bundleDir=DIR -c region=REGION');
const stack = new Stack(app, context('stackName') ?? 'Bakeoff-ts', { env: { region } });
new BakeoffPipeline(stack, 'Bakeoff', {
  bundleDir,
  notify: context('notify') ? new sns.Topic(stack, 'Outcomes', { enforceSSL: true }) : undefined,
  allowedDataUris: context('allowedDataUris')?.split(','),
  role: context('givenRole') ?
    new iam.Role(stack, 'Team', { assumedBy: new iam.ServicePrincipal('sagemaker.amazonaws.com') }) : undefined,
  mlflowVersion: context('mlflowVersion'),
});
// Any unacknowledged finding stops the synth (cdk-nag 3: a CDK validation plugin).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
