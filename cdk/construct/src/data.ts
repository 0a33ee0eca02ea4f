// Reading S3 locations a `*DataUri` parameter may point at, as pipelines/sagemaker/cdk/grants.py s3_read grants
// them (the same Sids, statements and wildcard). Internal.
import * as crypto from 'crypto';
import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';

// pipelines/spec/fields.py S3_URI_RE.
const S3_URI = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(\/[^\s]*)?$/;

export function checkDataUri(uri: string, where: string): string {
  if (typeof uri !== 'string' || !S3_URI.test(uri)) {
    throw new Error(`${where}: ${JSON.stringify(uri)} is not an s3://bucket/prefix URI`);
  }
  return uri;
}

/** GetObject under each prefix and ListBucket limited to it (SageMaker lists an S3Prefix channel with its
 * prefix); returns the statements and the wildcard resources cdk-nag will name. */
export function s3Read(uris: string[]): { statements: iam.PolicyStatement[]; wildcards: string[] } {
  const statements: iam.PolicyStatement[] = [];
  const wildcards: string[] = [];
  for (const uri of [...new Set(uris)].sort()) {
    const rest = uri.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const keyPrefix = slash < 0 ? '' : rest.slice(slash + 1);
    const sid = crypto.createHash('sha256').update(uri).digest('hex').slice(0, 8);
    const objects = `arn:${Aws.PARTITION}:s3:::${bucket}/${keyPrefix}*`;
    statements.push(new iam.PolicyStatement({ sid: `ReadObjects${sid}`, actions: ['s3:GetObject'], resources: [objects] }));
    wildcards.push(objects);
    statements.push(new iam.PolicyStatement({
      sid: `ListPrefix${sid}`, actions: ['s3:ListBucket'], resources: [`arn:${Aws.PARTITION}:s3:::${bucket}`],
      conditions: keyPrefix ? { StringLike: { 's3:prefix': [`${keyPrefix}*`] } } : undefined,
    }));
  }
  return { statements, wildcards };
}
