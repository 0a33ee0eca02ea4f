// The BakeoffPipeline construct: deploys what `bakeoff synth --cdk-out DIR` wrote (a Python app's cdk/bakeoff_cdk
// writes it from the spec at synth time and deploys it with this construct): the bucket, the least-privilege
// execution role, the content-addressed assets and the pipeline.
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Annotations, CfnOutput, Duration, RemovalPolicy, Size, Stack, Token } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct, IConstruct } from 'constructs';
import { BakeoffPipelineBase, GATE_STEPS, IBakeoffPipeline, START_ACTIONS } from './base';
import { Bundle, GrantJson, fill, pythonJson, readBundle, replaceAll } from './bundle';
import { checkDataUri, s3Read } from './data';
import { EXECUTIONS_REASON, grantStart } from './grant';
import { trackingServer } from './mlflow';
import { Acknowledger, acknowledgeDeployment, nagId, nagText } from './nag';
import { addOutcomeRules } from './notify';
import { addSchedule, checkParameters } from './schedule';

// Inline definitions count against the template (CloudFormation: 1 MB from S3); larger ones go through S3.
const INLINE_DEFINITION_LIMIT = 40_000;
// CreatePipeline.PipelineDefinition: 1-1048576 characters (botocore sagemaker model).
const MAX_DEFINITION_CHARS = 1_048_576;
// SageMaker's PipelineName: 1-256 of this pattern (botocore sagemaker model).
const NAME_PATTERN = /^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$/;
// Deployed lengths bound the definition before deploy: bucket names are at most 63 characters, a role this
// construct creates has a name of at most 64.
const LONGEST_BUCKET = 63;
const LONGEST_ROLE_ARN = 'arn:aws-us-gov:iam::123456789012:role/'.length + 64;
// An IAM ARN is at most 2048 characters (a given role whose ARN is not known at synth).
const LONGEST_ANY_ROLE_ARN = 2048;
// CDK's BucketDeployment handler keeps each source zip in /tmp and unpacks it next to it (aws-s3-deployment
// bucket-deployment-handler): twice the assets, plus room; Lambda's /tmp is 512 MiB to 10 GiB.
const STORAGE_MIB = [512, 10_240];
const HEADROOM_MIB = 256;
const MIB = 1024 * 1024;

/** Properties of a BakeoffPipeline. */
export interface BakeoffPipelineProps {
  /** The directory `bakeoff synth SPEC --region REGION --cdk-out DIR` wrote; the stack deploys to REGION. */
  readonly bundleDir: string;
  /**
   * The SageMaker pipeline's name.
   * @default `bakeoff-<spec name>-<8 hex of the stack name and construct path>`: stable for a stack, distinct
   * between stacks
   */
  readonly pipelineName?: string;
  /**
   * The artifacts bucket.
   * @default an encrypted, versioned, TLS-only bucket with access logs
   */
  readonly bucket?: s3.IBucket;
  /**
   * The SageMaker execution role. A given role gets no grants from this construct: it must already allow what
   * the bundle's `manifest.json` lists under `executionGrants` (with this stack's bucket, its own ARN and the
   * pipeline's ARN for the `${...}` placeholders), and read any `allowedDataUris` (a synth warning names them).
   * @default a role with exactly what the definition uses
   */
  readonly role?: iam.IRole;
  /**
   * `s3://bucket/prefix` locations a `*DataUri` pipeline parameter may be pointed at when an execution starts
   * (`bakeoff start --param TrainDataUri=...`): the execution role may read them. The bundle's own channels and
   * the values in `scheduleParameters` are allowed without being listed.
   * @default none
   */
  readonly allowedDataUris?: string[];
  /**
   * An SNS topic, or any EventBridge target, told each execution's outcome (see `addNotification`).
   * @default no notification
   */
  // A jsii type union (aws.github.io/jsii/specification/2-type-system): each language passes either.
  readonly notify?: sns.ITopic | events.IRuleTarget;
  /**
   * Create a SageMaker MLflow tracking server the jobs track to (named as the pipeline, its artifacts under
   * `<prefix>/mlflow/` of the bucket). The bundle must be written for it: `bakeoff synth SPEC --region REGION
   * --cdk-out DIR --mlflow-server`.
   * @default whether the bundle was written with `--mlflow-server`
   */
  readonly mlflowTrackingServer?: boolean;
  /**
   * The tracking server's size (CloudFormation `TrackingServerSize`: Small, Medium or Large).
   * @default 'Small'
   */
  readonly mlflowServerSize?: string;
  /**
   * The tracking server's MLflow version (CloudFormation `MlflowVersion`); another than the bundle's is created
   * as given, with a synth warning when the jobs' client is not the one AWS names for it.
   * @default the version the jobs' MLflow client is paired with (the bundle's, "3.0")
   */
  readonly mlflowVersion?: string;
  /**
   * How long compile caches are kept in the bucket this construct creates.
   * @default Duration.days(30)
   */
  readonly compileCacheExpiry?: Duration;
  /**
   * What happens to the buckets this construct creates when the stack is deleted: RETAIN keeps them and
   * their TLS-only policies, DESTROY empties them (every version) and deletes them.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * The longest definition (characters, deploy-time values included) written into the template; a longer
   * one is deployed to the bucket.
   * @default 40000
   */
  readonly inlineDefinitionLimit?: number;
  /**
   * The asset deployment Lambda's memory (MiB).
   * @default 512
   */
  readonly deploymentMemoryLimit?: number;
  /**
   * The asset deployment Lambda's /tmp.
   * @default twice the assets plus 256 MiB, 512 MiB to 10 GiB
   */
  readonly deploymentStorage?: Size;
  /**
   * Start the pipeline on this schedule (see `addSchedule`).
   * @default no schedule
   */
  readonly schedule?: events.Schedule;
  /**
   * The pipeline parameters a scheduled execution starts with (see `addSchedule`).
   * @default the pipeline's defaults
   */
  readonly scheduleParameters?: Record<string, string>;
}

/**
 * A bake-off as a SageMaker pipeline, from a bundle bakeoff's compiler wrote (`bakeoff synth --cdk-out`).
 *
 * Creates the artifacts bucket (or takes one), the SageMaker execution role with exactly what the definition
 * uses, deploys the content-addressed assets and defines the `AWS::SageMaker::Pipeline`. The deployed
 * definition is the compiler's, byte for byte, with this stack's bucket and role. The stack's region must be
 * the bundle's.
 */
export class BakeoffPipeline extends BakeoffPipelineBase {
  /** A bakeoff pipeline deployed elsewhere, by its name. */
  public static fromPipelineName(scope: Construct, id: string, pipelineName: string): IBakeoffPipeline {
    class Import extends BakeoffPipelineBase {
      public readonly pipelineName = pipelineName;
      public readonly pipelineArn = Stack.of(scope).formatArn({
        service: 'sagemaker', resource: 'pipeline', resourceName: pipelineName.toLowerCase(),
      });
    }
    return new Import(scope, id);
  }

  public readonly pipelineName: string;
  public readonly pipelineArn: string;
  /** The artifacts bucket. */
  public readonly bucket: s3.IBucket;
  /** The SageMaker execution role. */
  public readonly role: iam.IRole;
  /** Whether the definition sits in the template (else in the bucket). */
  public readonly definitionInline: boolean;
  /**
   * The MLflow tracking server's ARN, when this construct creates one.
   * @default no tracking server
   */
  public readonly mlflowTrackingServerArn?: string;

  private readonly bundle: Bundle;
  private readonly pipeline: sagemaker.CfnPipeline;
  private readonly ack = new Acknowledger();
  private readonly ownRole: boolean;
  private readonly allowed = new Set<string>();
  private readGrants = 0;
  private notifications = 0;

  constructor(scope: Construct, id: string, props: BakeoffPipelineProps) {
    super(scope, id);
    const bundle = this.bundle = readBundle(props.bundleDir);
    const m = bundle.manifest;
    const stack = Stack.of(this);
    if (Token.isUnresolved(stack.region) || stack.region !== m.region) {
      throw new Error(`stack ${stack.node.path} must deploy to ${m.region}, the region bundle ${props.bundleDir} ` +
        'was compiled for (SageMaker pulls images only from its own region); give the stack env: { region }');
    }
    const startWatch = m.startGrants[0]?.statements[0]?.Action;
    if (JSON.stringify(m.gateSteps) !== JSON.stringify(GATE_STEPS) ||
      JSON.stringify(startWatch) !== JSON.stringify(START_ACTIONS)) {
      throw new Error(`bundle ${props.bundleDir} was written by a bakeoff this construct does not match`);
    }
    this.pipelineName = props.pipelineName ?? defaultName(stack, this, m.name);
    if (!NAME_PATTERN.test(this.pipelineName)) {
      throw new Error(`pipeline name ${this.pipelineName} must be 1-256 letters, digits and hyphens, starting ` +
        'and ending with a letter or digit');
    }
    this.pipelineArn = stack.formatArn({
      service: 'sagemaker', resource: 'pipeline', resourceName: this.pipelineName.toLowerCase(),
    });
    this.node.setContext('@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy', true);
    this.bucket = props.bucket ?? this.makeBucket(props);
    const server = m.sentinels.mlflow && m.mlflowServer;
    if ((props.mlflowTrackingServer ?? !!server) !== !!server) {
      throw new Error(server ?
        `bundle ${props.bundleDir} was written for an MLflow tracking server (--mlflow-server): leave ` +
        'mlflowTrackingServer unset, or write the bundle without --mlflow-server' :
        `bundle ${props.bundleDir} was written without an MLflow tracking server: write it with ` +
        '`bakeoff synth SPEC --region REGION --cdk-out DIR --mlflow-server`');
    }
    if (server) {
      this.mlflowTrackingServerArn = trackingServer(this, this.ack, {
        name: this.pipelineName, specName: m.name, bucket: this.bucket, prefix: m.prefix,
        size: props.mlflowServerSize ?? 'Small', version: props.mlflowVersion ?? server.version,
        pinned: server.version, clientForServer: server.clientForServer, artifactsReason: m.reasons['mlflow-artifacts'],
      }).attrTrackingServerArn;
    }

    // --- the execution role: made with exactly what the definition uses, or given ---------
    this.ownRole = props.role === undefined;
    let role: iam.IRole;
    if (props.role) {
      role = props.role;
    } else {
      const own = new iam.Role(this, 'ExecutionRole', {
        assumedBy: new iam.ServicePrincipal('sagemaker.amazonaws.com'),
        description: `SageMaker execution role of bake-off ${m.name}`,
      });
      role = own;
    }
    this.role = role;
    if (role instanceof iam.Role && this.ownRole) for (const g of m.executionGrants) this.attach(role, g);
    const scheduled = props.scheduleParameters ?? {};
    checkParameters(scheduled, m.parameters, m.dataParameters);
    this.allowDataUris(...(props.allowedDataUris ?? []).map(u => checkDataUri(u, 'allowedDataUris')),
      ...Object.keys(scheduled).filter(k => k in m.dataParameters).map(k => scheduled[k]));

    // --- the definition and the assets ---------------------------------------------------
    const bucketName = this.bucket.bucketName;
    const values: Record<string, string> = { [m.sentinels.bucket]: bucketName, [m.sentinels.role]: role.roleArn };
    if (m.sentinels.mlflow && this.mlflowTrackingServerArn) values[m.sentinels.mlflow] = this.mlflowTrackingServerArn;
    // What names this stack's values is keyed per stack, so a shared bucket never mixes two stacks'.
    const identity = [m.region, nagText(stack, stack.account), this.pipelineName,
      pythonJson(stack.resolve(values))].join('\0');
    const render = (body: string) => Object.entries(values).reduce((t, [k, v]) => replaceAll(t, k, v), body);
    // One BucketDeployment marker per deploy-time value, however often it occurs (as bakeoff_cdk 0.1.0 wrote
    // them): the template carries at most three, not one per occurrence in the definition.
    const markers = Object.entries(values).map(([sentinel, value], i) => ({ sentinel, value, marker: MARKER(i) }));
    const mark = (body: string) => markers.reduce((t, m) => replaceAll(t, m.sentinel, m.marker), body);
    let sentinelText = bundle.text;
    const rendered: { key: string; body: string }[] = [];
    for (const asset of bundle.rendered) {
      // The evaluation config names the tracking server: deployed under a key of this stack's own.
      const key = asset.key.replace(/\/[0-9a-f]{64}\//, `/${sha256(asset.sha256 + '\0' + identity)}/`);
      sentinelText = replaceAll(sentinelText, asset.key, key);
      rendered.push({ key, body: mark(asset.body) });
    }
    const longestMlflow = `arn:aws-us-gov:sagemaker:${m.region}:123456789012:mlflow-tracking-server/${this.pipelineName}`;
    const roleLength = this.ownRole ? LONGEST_ROLE_ARN :
      Token.isUnresolved(role.roleArn) ? LONGEST_ANY_ROLE_ARN : role.roleArn.length;
    const bound = sentinelText.length +
      count(sentinelText, m.sentinels.bucket) * Math.max(0, LONGEST_BUCKET - m.sentinels.bucket.length) +
      count(sentinelText, m.sentinels.role) * Math.max(0, roleLength - m.sentinels.role.length) +
      (m.sentinels.mlflow ? count(sentinelText, m.sentinels.mlflow) *
        Math.max(0, longestMlflow.length - m.sentinels.mlflow.length) : 0);
    if (bound > MAX_DEFINITION_CHARS) {
      throw new Error(`the pipeline definition could be ${bound} characters once deployed, more than ` +
        `CreatePipeline takes (${MAX_DEFINITION_CHARS}); use fewer seeds or legs`);
    }
    const text = render(sentinelText);
    const size = JSON.stringify(stack.resolve(text)).length;
    this.definitionInline = size <= (props.inlineDefinitionLimit ?? INLINE_DEFINITION_LIMIT);
    let definitionKey: string | undefined;
    if (!this.definitionInline) {
      definitionKey = `${m.prefix}/${m.name}/definition/${sha256(sentinelText + '\0' + identity)}.json`;
      rendered.push({ key: definitionKey, body: mark(sentinelText) });
    }
    // Deploy-time values are BucketDeployment markers the handler replaces as it unpacks: a source's SourceConfig
    // carries them as `markers` (aws-cdk-lib aws-s3-deployment source.d.ts, SourceConfig.markers "A set of markers
    // to substitute in the source content").
    const used = markers.filter(m => rendered.some(r => r.body.includes(m.marker)));
    const sources: s3deploy.ISource[] = [s3deploy.Source.asset(bundle.assetsDir)];
    if (rendered.length) {
      sources.push(new MarkedSource(stage(rendered), Object.fromEntries(used.map(m => [m.marker, m.value]))));
    }
    const total = bundle.assetBytes + rendered.reduce((n, r) => n + Buffer.byteLength(r.body), 0);
    const assets = new s3deploy.BucketDeployment(this, 'Assets', {
      sources, destinationBucket: this.bucket, prune: false, retainOnDelete: true, extract: true,
      memoryLimit: props.deploymentMemoryLimit ?? 512,
      ephemeralStorageSize: storage(this, total, props.deploymentStorage),
    });
    acknowledgeDeployment(this.ack, stack, this.bucket.arnForObjects('*'), m.reasons);

    // --- the pipeline --------------------------------------------------------------------
    const pipeline = this.pipeline = new sagemaker.CfnPipeline(this, 'Pipeline', {
      pipelineName: this.pipelineName, roleArn: role.roleArn,
      pipelineDefinition: this.definitionInline ? { PipelineDefinitionBody: text } :
        { PipelineDefinitionS3Location: { Bucket: bucketName, Key: definitionKey } },
      pipelineDescription: `bakeoff ${m.name}: ${m.description}`.slice(0, 3072),
      // A JSON-typed property of the L1, written as given (AWS::SageMaker::Pipeline ParallelismConfiguration).
      parallelismConfiguration: m.maxParallelSteps == null ? undefined :
        { MaxParallelExecutionSteps: m.maxParallelSteps },
      tags: [{ key: 'bakeoff:name', value: m.name }, { key: 'bakeoff:stack', value: stack.stackName }],
    });
    pipeline.node.addDependency(assets);
    if (role instanceof iam.Role && this.ownRole) dependOnPolicies(pipeline, role);
    if (props.schedule) this.addSchedule(props.schedule, props.scheduleParameters);
    if (props.notify) this.addNotification(props.notify);

    new CfnOutput(this, 'PipelineName', {
      value: this.pipelineName, description: "the SageMaker pipeline's name (bakeoff start NAME --region REGION)",
    });
    new CfnOutput(this, 'PipelineArn', { value: this.pipelineArn });
    new CfnOutput(this, 'StartCommand', { value: `bakeoff start ${this.pipelineName} --region ${m.region}` });
    new CfnOutput(this, 'BucketName', { value: bucketName });
    new CfnOutput(this, 'RoleArn', { value: role.roleArn });
    if (this.mlflowTrackingServerArn) new CfnOutput(this, 'MlflowTrackingServerArn', { value: this.mlflowTrackingServerArn });
  }

  /**
   * Let the execution role read these `s3://bucket/prefix` locations, so a `*DataUri` pipeline parameter may
   * point at them when an execution starts. A given role is not changed: a synth warning names what it must read.
   */
  public allowDataUris(...uris: string[]): void {
    const m = this.bundle.manifest;
    const known = new Set([...Object.values(m.dataParameters), ...this.allowed]);
    const fresh = [...new Set(uris.map(u => checkDataUri(u, 'allowedDataUris')))].filter(u => !known.has(u)).sort();
    if (!fresh.length) return;
    for (const u of fresh) this.allowed.add(u);
    if (!this.ownRole || !(this.role instanceof iam.Role)) {
      Annotations.of(this).addWarningV2('bakeoff:data-uris',
        `the execution role was given, not made: let it read ${fresh.join(', ')}`);
      return;
    }
    this.readGrants += 1;
    const read = s3Read(fresh);
    const policy = new iam.Policy(this.role, `ReadAllowedData${this.readGrants > 1 ? this.readGrants : ''}`,
      { statements: read.statements });
    this.role.attachInlinePolicy(policy);
    const stack = Stack.of(this);
    for (const w of read.wildcards) {
      this.ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${nagText(stack, w)}`),
        m.reasons['data-prefixes']);
    }
  }

  /**
   * Tell `target` each execution's outcome, from SageMaker's own pipeline events: a topic gets one line per
   * outcome (pass; fail or inconclusive with the gate's reason; a failed step that leaves the execution without a
   * verdict), another EventBridge target the event itself. Call it again for another target.
   */
  public addNotification(target: sns.ITopic | events.IRuleTarget): events.Rule[] {
    const scope = new Construct(this, `Notify${this.notifications || ''}`);
    this.notifications += 1;
    return addOutcomeRules(scope, this.pipelineArn, `bakeoff pipeline ${this.pipelineName}`,
      this.bundle.manifest.gateSteps, target);
  }

  /**
   * Let `grantee` start, watch, stop and report executions of this pipeline (`bakeoff start/status/wait/report`)
   * and nothing else: the pipeline and its executions, the pipelines-* jobs' descriptions and the evaluations.
   * A role, user or group gets a policy of its own, with cdk-nag's findings acknowledged on it by their exact
   * evidence; another principal gets the statements directly.
   */
  public grantStartExecution(grantee: iam.IGrantable): iam.Grant {
    const m = this.bundle.manifest;
    const [startWatch, ...others] = m.startGrants;
    if (m.reasons[startWatch.reason!] !== EXECUTIONS_REASON) {
      throw new Error('the bundle accepts the executions wildcard for another reason than this construct');
    }
    return grantStart(this, grantee, this.pipelineArn, START_ACTIONS, others.map(g => ({
      statements: this.statements(g), reason: g.reason ? m.reasons[g.reason] : '',
      wildcards: g.wildcards.map(w => fill(w, this.values())),
    })));
  }

  /**
   * Start the pipeline on `schedule` (an EventBridge rule on the default bus) with `parameters`, checked against
   * the pipeline's, through a role EventBridge assumes for this one rule only. Once per pipeline.
   */
  public addSchedule(schedule: events.Schedule, parameters: Record<string, string> = {}): events.CfnRule {
    const m = this.bundle.manifest;
    checkParameters(parameters, m.parameters, m.dataParameters);
    this.allowDataUris(...Object.keys(parameters).filter(k => k in m.dataParameters).map(k => parameters[k]));
    return addSchedule(this, this.pipeline, this.pipelineName, this.pipelineArn,
      `Starts bake-off ${m.name} on a schedule`, schedule, parameters);
  }

  private makeBucket(props: BakeoffPipelineProps): s3.Bucket {
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const destroy = removalPolicy === RemovalPolicy.DESTROY;
    const logs = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true, objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED, versioned: true,
      removalPolicy, autoDeleteObjects: destroy,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
    });
    const prefix = this.bundle.manifest.prefix;
    const bucket = new s3.Bucket(this, 'Artifacts', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true, versioned: true, serverAccessLogsBucket: logs, serverAccessLogsPrefix: 'artifacts/',
      removalPolicy, autoDeleteObjects: destroy,
      lifecycleRules: [
        { id: 'expire-compile-caches', prefix: `${prefix}/compile-cache/`,
          expiration: props.compileCacheExpiry ?? Duration.days(30), noncurrentVersionExpiration: Duration.days(1) },
        { id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(30),
          abortIncompleteMultipartUploadAfter: Duration.days(7) },
      ],
    });
    // A retained bucket keeps its policy (TLS only, log delivery): else the orphan accepts plain HTTP.
    for (const b of [bucket, logs]) b.policy?.applyRemovalPolicy(removalPolicy);
    return bucket;
  }

  private values(): Record<string, string> {
    const stack = Stack.of(this);
    return {
      'AWS::Partition': stack.partition, 'AWS::AccountId': stack.account, 'BucketArn': this.bucket.bucketArn,
      'RoleArn': this.role?.roleArn ?? '', 'PipelineArn': this.pipelineArn,
      'MlflowArn': this.mlflowTrackingServerArn ?? '',
    };
  }

  private statements(g: GrantJson): iam.PolicyStatement[] {
    const values = this.values();
    return g.statements.map(s => iam.PolicyStatement.fromJson(JSON.parse(fill(JSON.stringify(s), values))));
  }

  /** Statements without wildcards go to the role's default policy; a group with wildcards to a policy of its own,
   * with cdk-nag's findings acknowledged on that policy only. */
  private attach(role: iam.Role, g: GrantJson): void {
    if (!g.reason) {
      for (const s of this.statements(g)) role.addToPrincipalPolicy(s);
      return;
    }
    const policy = new iam.Policy(role, g.name, { statements: this.statements(g) });
    role.attachInlinePolicy(policy);
    this.acknowledgeWildcards(policy, g);
  }

  private acknowledgeWildcards(policy: iam.Policy, g: GrantJson): void {
    if (!g.reason) return;
    const stack = Stack.of(this);
    for (const resource of g.wildcards) {
      const evidence = nagText(stack, fill(resource, this.values()));
      this.ack.acknowledge(policy, nagId('AwsSolutions-IAM5', `Resource::${evidence}`),
        this.bundle.manifest.reasons[g.reason]);
    }
  }
}

/** CDK's BucketDeployment marker format (aws-s3-deployment render-data). */
function MARKER(i: number): string {
  return `<<marker:0xbaba:${i}>>`;
}

/** A folder for CDK's BucketDeployment whose files carry deploy-time markers the handler replaces as it unpacks. */
class MarkedSource implements s3deploy.ISource {
  constructor(private readonly directory: string, private readonly markers: Record<string, string>) {}

  public bind(scope: Construct, context?: s3deploy.DeploymentSourceContext): s3deploy.SourceConfig {
    const config = s3deploy.Source.asset(this.directory).bind(scope, context);
    return { bucket: config.bucket, zipObjectKey: config.zipObjectKey, markers: this.markers };
  }
}

/** The rendered files in a fresh folder of this process's own (as CDK's Source.data stages its files). */
function stage(files: { key: string; body: string }[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bakeoff-rendered-'));
  for (const f of files) {
    const target = path.join(dir, f.key);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, f.body);
  }
  return dir;
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}

function count(text: string, sentinel: string): number {
  return text.split(sentinel).length - 1;
}

/** `bakeoff-<name>-<8 hex>` of the stack's name and the construct's path in it. */
function defaultName(stack: Stack, scope: IConstruct, name: string): string {
  const stackId = Token.isUnresolved(stack.stackName) ? stack.node.path : stack.stackName;
  const inside = scope.node.path.slice(stack.node.path.length).replace(/^\/+/, '');
  return `bakeoff-${name}-${sha256(`${stackId}\0${inside}`).slice(0, 8)}`;
}

function storage(scope: IConstruct, totalBytes: number, given?: Size): Size {
  const needed = Math.ceil(2 * totalBytes / MIB) + HEADROOM_MIB;
  if (given) {
    if (given.toMebibytes() < needed) {
      Annotations.of(scope).addWarningV2('bakeoff:deployment-storage', `deploymentStorage=${given.toMebibytes()} MiB ` +
        `is less than the ${needed} MiB the asset deployment needs (its zip and the unpacked files); it may fail`);
    }
    return given;
  }
  if (needed > STORAGE_MIB[1]) {
    throw new Error(`the local data and code (${(totalBytes / MIB / 1024).toFixed(1)} GiB) are too large for CDK's ` +
      'asset deployment (at most 10 GiB of /tmp, twice the assets needed); name the data as an s3:// channel');
  }
  return Size.mebibytes(Math.max(STORAGE_MIB[0], Math.ceil(needed / 64) * 64));
}

/** `resource` is created after the role's policies. */
function dependOnPolicies(resource: IConstruct, role: iam.Role): void {
  for (const child of role.node.children) {
    if (child.node.id !== 'Resource') resource.node.addDependency(child);
  }
}
