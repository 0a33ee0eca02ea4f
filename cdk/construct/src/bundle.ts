// The bundle `bakeoff synth --cdk-out DIR` writes (pipelines/sagemaker/cdk/bundle.py, format 2). Internal.
import * as fs from 'fs';
import * as path from 'path';

/** One group of IAM statements and the cdk-nag reason that accepts its wildcards (pipelines/sagemaker/cdk/grants.py). */
export interface GrantJson {
  readonly name: string;
  readonly statements: any[];
  readonly reason: string | null;
  readonly wildcards: string[];
}

export interface Manifest {
  readonly format: number;
  readonly name: string;
  readonly description: string;
  readonly region: string;
  readonly prefix: string;
  readonly maxParallelSteps: number | null;
  readonly sentinels: { bucket: string; role: string; mlflow: string | null };
  readonly parameters: Record<string, string>;
  readonly dataParameters: Record<string, string>;
  readonly executionGrants: GrantJson[];
  readonly startGrants: GrantJson[];
  readonly reasons: Record<string, string>;
  readonly gateSteps: { fail: string; inconclusive: string };
  readonly definition: string;
  readonly assets: string;
  readonly assetKeys: string[];
  /** The folder of the assets that name the tracking server, each with the sha256 of its bundled body. */
  readonly rendered: string;
  readonly renderedAssets: { key: string; sha256: string }[];
  /** With `--mlflow-server`: the server version the jobs' client is paired with, AWS's client for each. */
  readonly mlflowServer: { version: string; clientForServer: Record<string, string> } | null;
}

export const FORMAT = 2;

export interface Bundle {
  readonly dir: string;
  readonly manifest: Manifest;
  /** The definition, compact JSON with the bucket and role as sentinels. */
  readonly text: string;
  readonly assetsDir: string;
  /** Total bytes of the assets, to size the deployment's Lambda storage. */
  readonly assetBytes: number;
  /** The assets rendered per stack (they name the tracking server). */
  readonly rendered: { key: string; sha256: string; body: string }[];
}

export function readBundle(dir: string): Bundle {
  const file = path.join(dir, 'manifest.json');
  if (!fs.existsSync(file)) {
    throw new Error(`${dir} is not a bakeoff bundle (no manifest.json): write one with ` +
      '`bakeoff synth SPEC --region REGION --cdk-out DIR`');
  }
  const manifest: Manifest = JSON.parse(fs.readFileSync(file, 'utf-8'));
  if (manifest.format !== FORMAT) {
    throw new Error(`${dir}: bundle format ${manifest.format}, this construct reads format ${FORMAT}; ` +
      'rewrite it with the matching bakeoff');
  }
  const assetsDir = path.join(dir, manifest.assets);
  let assetBytes = 0;
  for (const key of manifest.assetKeys) {
    assetBytes += fs.statSync(path.join(assetsDir, key)).size;
  }
  const rendered = manifest.renderedAssets.map(a => ({
    ...a, body: fs.readFileSync(path.join(dir, manifest.rendered, a.key), 'utf-8'),
  }));
  return {
    dir, manifest, text: fs.readFileSync(path.join(dir, manifest.definition), 'utf-8'), assetsDir, assetBytes, rendered,
  };
}

/** Replace `${Name}` placeholders by `values[Name]` (CDK tokens stay tokens inside the string). */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z:]+)\}/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined) {
      throw new Error(`the bundle names an unknown placeholder ${whole}`);
    }
    return value;
  });
}

/** Every occurrence of `sentinel` in `text` replaced by `value` (a token string joins in). */
export function replaceAll(text: string, sentinel: string, value: string): string {
  return text.split(sentinel).join(value);
}

/**
 * `value` as Python's `json.dumps(value, sort_keys=True)` writes it (", " and ": " separators, non-ASCII escaped):
 * what a stack renders is keyed by this text, as bakeoff_cdk 0.1.0 (Python) keyed it, so a stack moving from it
 * keeps its deployed keys.
 */
export function pythonJson(value: any): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') {
    return JSON.stringify(value).replace(/[\u0080-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  return `{${Object.keys(value).sort().map(k => `${pythonJson(k)}: ${pythonJson(value[k])}`).join(', ')}}`;
}
