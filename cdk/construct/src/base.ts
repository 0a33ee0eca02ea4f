// What every bakeoff pipeline offers, whether this stack deploys it or imports it by name.
import { IResource, Resource } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import { grantStart } from './grant';

// SageMaker sends "SageMaker Model Building Pipeline Execution Status Change" and "... Execution Step Status
// Change" events (source aws.sagemaker) to the default bus; a failed step's event carries failureReason
// (docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html). SageMaker may send
// more than one event per change (same page).
const SOURCE = 'aws.sagemaker';
const EXECUTION_EVENT = 'SageMaker Model Building Pipeline Execution Status Change';
const STEP_EVENT = 'SageMaker Model Building Pipeline Execution Step Status Change';
// SageMaker Pipelines' CloudWatch metrics: namespace AWS/Sagemaker/ModelBuildingPipeline, dimension PipelineName
// (docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html, "SageMaker pipelines metrics"; the
// namespace and its PipelineName dimension as yet-another-cloudwatch-exporter maps them).
const METRICS_NAMESPACE = 'AWS/Sagemaker/ModelBuildingPipeline';
/** The gate's Fail steps (pipelines/names.py FAIL_STEP, INCONCLUSIVE_STEP; a bundle names them, checked). */
export const GATE_STEPS = { fail: 'ParityFailed', inconclusive: 'ParityInconclusive' };
/**
 * Starting, watching, stopping and retrying an execution (`bakeoff start/status/wait/stop/retry`), on the
 * pipeline and its executions (pipelines/sagemaker/cdk/reads.py START_ACTIONS; a bundle names them, checked).
 */
export const START_ACTIONS = [
  'sagemaker:StartPipelineExecution', 'sagemaker:DescribePipeline', 'sagemaker:ListPipelineExecutions',
  'sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps',
  'sagemaker:ListPipelineParametersForExecution', 'sagemaker:StopPipelineExecution',
  'sagemaker:RetryPipelineExecution',
];

/** A bake-off's verdict, as SageMaker's events tell it. */
export enum Verdict {
  /** The execution succeeded: only a pass gets past the parity gate. */
  PASS = 'PASS',
  /** The gate's ParityFailed step failed, with the gate's reason as its failure reason. */
  FAIL = 'FAIL',
  /** The gate's ParityInconclusive step failed, with the gate's reason as its failure reason. */
  INCONCLUSIVE = 'INCONCLUSIVE',
}

/** Options of `onVerdict`. */
export interface VerdictRuleOptions extends events.OnEventOptions {
  /** Which verdict the rule matches. */
  readonly verdict: Verdict;
}

/** A SageMaker pipeline compiled by bakeoff. */
export interface IBakeoffPipeline extends IResource {
  /** The pipeline's name. @attribute */
  readonly pipelineName: string;
  /** The pipeline's ARN (its name in lower case, as SageMaker writes it). @attribute */
  readonly pipelineArn: string;

  /** Let `grantee` start, watch and stop executions of this pipeline. */
  grantStartExecution(grantee: iam.IGrantable): iam.Grant;
  /** A rule on each change of an execution's status (Executing, Stopping, Stopped, Failed, Succeeded). */
  onExecutionStatusChange(id: string, options?: events.OnEventOptions): events.Rule;
  /** A rule on one verdict of the parity gate. */
  onVerdict(id: string, options: VerdictRuleOptions): events.Rule;
  /** A metric of SageMaker's for this pipeline (namespace AWS/Sagemaker/ModelBuildingPipeline). */
  metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Executions that succeeded (a pass), summed over 5 minutes. */
  metricExecutionSucceeded(props?: cloudwatch.MetricOptions): cloudwatch.Metric;
  /** Executions that failed (a fail, an inconclusive verdict, or a failed step), summed over 5 minutes. */
  metricExecutionFailed(props?: cloudwatch.MetricOptions): cloudwatch.Metric;
}

/** What a deployed and an imported bakeoff pipeline share. */
export abstract class BakeoffPipelineBase extends Resource implements IBakeoffPipeline {
  public abstract readonly pipelineName: string;
  public abstract readonly pipelineArn: string;

  /**
   * Let `grantee` start, watch and stop executions of this pipeline. A role, user or group gets a policy of its
   * own, with cdk-nag's finding on the executions' wildcard acknowledged on it.
   */
  public grantStartExecution(grantee: iam.IGrantable): iam.Grant {
    return grantStart(this, grantee, this.pipelineArn, START_ACTIONS);
  }

  public onExecutionStatusChange(id: string, options: events.OnEventOptions = {}): events.Rule {
    return this.rule(id, options, EXECUTION_EVENT, {});
  }

  public onVerdict(id: string, options: VerdictRuleOptions): events.Rule {
    if (options.verdict === Verdict.PASS) {
      return this.rule(id, options, EXECUTION_EVENT, { currentPipelineExecutionStatus: ['Succeeded'] });
    }
    const step = options.verdict === Verdict.FAIL ? GATE_STEPS.fail : GATE_STEPS.inconclusive;
    return this.rule(id, options, STEP_EVENT, { stepName: [step], currentStepStatus: ['Failed'] });
  }

  public metric(metricName: string, props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE, metricName, dimensionsMap: { PipelineName: this.pipelineName },
      statistic: cloudwatch.Stats.SUM, ...props,
    }).attachTo(this);
  }

  public metricExecutionSucceeded(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric('ExecutionSucceeded', props);
  }

  public metricExecutionFailed(props?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.metric('ExecutionFailed', props);
  }

  private rule(id: string, options: events.OnEventOptions, detailType: string, detail: Record<string, any>):
  events.Rule {
    const rule = new events.Rule(this, id, {
      description: options.description, ruleName: options.ruleName, crossStackScope: options.crossStackScope,
    });
    // Pipeline ARNs carry the name in lower case; compared ignoring case (equals-ignore-case,
    // docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html).
    rule.addEventPattern({
      source: [SOURCE], detailType: [detailType],
      detail: { pipelineArn: [{ 'equals-ignore-case': this.pipelineArn }], ...detail },
    });
    rule.addEventPattern(options.eventPattern);
    if (options.target) rule.addTarget(options.target);
    return rule;
  }
}
