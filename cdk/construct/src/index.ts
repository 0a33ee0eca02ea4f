export { BakeoffPipelineBase, IBakeoffPipeline, Verdict, VerdictRuleOptions } from './base';
export { BakeoffPipeline, BakeoffPipelineProps } from './pipeline';
