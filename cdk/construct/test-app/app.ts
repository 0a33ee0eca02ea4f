// A TypeScript app that deploys a bake-off from a bundle, with cdk-nag's AwsSolutions checks on every synth:
//   bakeoff synth SPEC --region us-west-2 --cdk-out bundle
//   npm run test-app && npx cdk synth --app 'node test-app/app.js' -c bundleDir=bundle -c region=us-west-2
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BakeoffPipeline, Verdict } from '../lib';

const app = new App();
const bundleDir = app.node.tryGetContext('bundleDir');
const region = app.node.tryGetContext('region');
if (!bundleDir || !region) throw new Error('pass -c bundleDir=DIR -c region=REGION');
const stack = new Stack(app, app.node.tryGetContext('stackName') ?? 'Bakeoff-ts', { env: { region } });
const pipeline = new BakeoffPipeline(stack, 'Bakeoff', { bundleDir });
pipeline.addSchedule(events.Schedule.cron({ hour: '3', minute: '0' }), { MaxSteps: '100' });

const starters = new iam.Role(stack, 'Starters', { assumedBy: new iam.AccountRootPrincipal() });
pipeline.grantStartExecution(starters);
pipeline.onVerdict('OnFail', { verdict: Verdict.FAIL, description: 'the bake-off failed parity' });
pipeline.onExecutionStatusChange('OnStatus');
new cloudwatch.Alarm(stack, 'Failures', {
  metric: pipeline.metricExecutionFailed({ period: Duration.hours(1) }), threshold: 1, evaluationPeriods: 1,
});
const other = BakeoffPipeline.fromPipelineName(stack, 'Other', 'bakeoff-elsewhere');
other.grantStartExecution(starters);

// Any unacknowledged finding stops the synth (cdk-nag 3: a CDK validation plugin).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
