// `ptah oci resolve|inspect|verify` and `ptah schema|migrations push|pull`: parse flags, call the OCI
// source library (src/sources/oci), print one result as JSON or text, map it to an exit code. Registry
// credentials come from a file (--registry-config or PTAH_REGISTRY_CONFIG), never from argv, and no
// message prints them.
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parse } from 'yaml';
import { EXIT, type ExitCode } from './exit-codes.ts';
import {
  ARTIFACT_TYPE,
  OciError,
  PolicyError,
  RegistryClient,
  parseReference,
  parseVerificationPolicy,
  pullArtifact,
  pushArtifact,
  readLocalFiles,
  resolveArtifact,
  verifyArtifact,
  writeLocalFiles,
  type ArtifactKind,
  type RegistryAccess,
} from '../sources/oci/index.ts';
import { describeManifest } from '../sources/oci/artifacts.ts';
import { signatureTag } from '../sources/oci/cosign.ts';
import { TITLE_ANNOTATION } from '../sources/oci/artifact-format.ts';

const ACCESS_OPTIONS = `registry options:
  --registry-config FILE    Docker config.json with the registry's credentials (default: the file named by
                            the PTAH_REGISTRY_CONFIG environment variable; none: anonymous)
  --ca-file FILE            PEM CA to trust for the registry, besides the system roots
  --plain-http              reach the registry over plain HTTP (never implied)
  --json                    print one JSON document on stdout (same as --format json)
  -h, --help                show this help`;

const OCI_USAGE = `usage: ptah oci <command> REFERENCE [options]

commands:
  resolve   read the manifest a tag or digest names; print its digest, media type, artifact type, size
  inspect   print the manifest's files (layers), annotations and the signatures and referrers attached
  verify    evaluate a verification policy against a digest-pinned artifact

options:
  --policy FILE             the verification policy (verify): the policy YAML/JSON, or a ConfigMap holding it
  --requested-reference REF the reference the resource asked for, for require_digest_pin (verify)
  --no-referrers            do not list referrers and signatures (inspect)

${ACCESS_OPTIONS}

exit codes: 0 success (verify: the policy is satisfied), 1 failed (registry error, invalid input),
2 usage error, 4 the policy refused the artifact (verify)

See docs/oci.md.`;

function artifactUsage(kind: ArtifactKind): string {
  const what = kind === 'schema' ? 'schema files' : 'a migration directory';
  return `usage: ptah ${kind} push REFERENCE:TAG PATH... [options]
       ptah ${kind} pull REFERENCE@DIGEST --dir DIR [options]

push uploads ${what} as an OCI artifact (artifactType ${ARTIFACT_TYPE[kind]}), one layer per file;
a PATH that is a directory contributes its files under their relative paths (dot-files are skipped).
pull downloads a digest-pinned artifact, checks every byte, and writes its files into the empty DIR.

options:
  --annotation KEY=VALUE    a manifest annotation (push; repeatable)
  --dir DIR                 where to write the files (pull)

${ACCESS_OPTIONS}

See docs/oci.md.`;
}

class UsageError extends Error {}

interface Flags {
  readonly values: Map<string, string[]>;
  readonly bools: Set<string>;
  readonly positional: string[];
}

const VALUE_FLAGS = [
  'registry-config',
  'ca-file',
  'policy',
  'requested-reference',
  'annotation',
  'dir',
  'format',
] as const;
const BOOL_FLAGS = ['json', 'plain-http', 'no-referrers'] as const;
const OPTIONS = {
  ...Object.fromEntries(VALUE_FLAGS.map((n) => [n, { type: 'string', multiple: true }])),
  ...Object.fromEntries(BOOL_FLAGS.map((n) => [n, { type: 'boolean' }])),
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

/** node:util's parser; value flags are collected as lists so `one` can refuse a repeated one by name. */
function parseFlags(argv: readonly string[]): Flags {
  const { values: parsed, positionals } = parseArgs({
    args: [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const values = new Map<string, string[]>();
  const bools = new Set<string>();
  for (const [name, value] of Object.entries(parsed)) {
    if (Array.isArray(value)) values.set(name, value.map(String));
    else if (value === true) bools.add(name);
  }
  return { values, bools, positional: positionals };
}

function one(f: Flags, name: string): string | undefined {
  const v = f.values.get(name);
  if (v && v.length > 1) throw new UsageError(`--${name} may be given once`);
  return v?.[0];
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read ${what} ${file}; check the path`);
  }
}

function accessFrom(f: Flags): RegistryAccess {
  const configFile = one(f, 'registry-config') ?? (process.env['PTAH_REGISTRY_CONFIG'] || undefined);
  const caFile = one(f, 'ca-file');
  return {
    ...(configFile !== undefined ? { dockerConfigJson: readText(configFile, 'the registry config') } : {}),
    ...(caFile !== undefined ? { caPem: readText(caFile, 'the CA file') } : {}),
    ...(f.bools.has('plain-http') ? { plainHttp: true } : {}),
  };
}

/** A policy file is the policy itself, or a ConfigMap manifest whose data holds it. */
function policyData(file: string): Record<string, string> {
  const text = readText(file, 'the policy file');
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    doc = undefined;
  }
  const cm = doc as { kind?: unknown; data?: unknown } | undefined;
  if (cm?.kind === 'ConfigMap' && typeof cm.data === 'object' && cm.data !== null) {
    return Object.fromEntries(
      Object.entries(cm.data as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  }
  return { 'policy.yaml': text };
}

async function run(
  label: string,
  usage: string,
  argv: readonly string[],
  body: (f: Flags, json: boolean) => Promise<ExitCode>,
): Promise<number> {
  let flags: Flags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    process.stderr.write(`${label}: ${(error as Error).message}\n\n${usage}\n`);
    return EXIT.usage;
  }
  if (flags.bools.has('help')) {
    process.stdout.write(usage + '\n');
    return EXIT.ok;
  }
  const format = flags.values.get('format')?.at(-1);
  if (format !== undefined && format !== 'json' && format !== 'text') {
    process.stderr.write(`${label}: --format must be json or text\n`);
    return EXIT.usage;
  }
  const json = flags.bools.has('json') || format === 'json';
  try {
    return await body(flags, json);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${label}: ${error.message}\n\n${usage}\n`);
      return EXIT.usage;
    }
    const known = error instanceof OciError || error instanceof PolicyError;
    const message = known
      ? (error as Error).message
      : `unexpected error: ${(error as Error).message ?? String(error)}`;
    const reason =
      error instanceof OciError
        ? error.reason
        : error instanceof PolicyError
          ? 'InvalidPolicy'
          : 'Unexpected';
    if (json)
      process.stdout.write(
        JSON.stringify({ command: label, outcome: 'error', reason, error: message }) + '\n',
      );
    process.stderr.write(`${label}: ${message}\n`);
    return EXIT.failed;
  }
}

function print(json: boolean, doc: unknown, text: string): void {
  process.stdout.write(json ? JSON.stringify(doc) + '\n' : text);
}

function onlyReference(f: Flags, command: string): string {
  if (f.positional.length !== 1) throw new UsageError(`${command} takes one REFERENCE`);
  return f.positional[0]!;
}

export async function runOciCommand(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(OCI_USAGE + '\n');
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  return run(`ptah oci ${command}`, OCI_USAGE, rest, async (f, json) => {
    switch (command) {
      case 'resolve': {
        const artifact = await resolveArtifact(onlyReference(f, command), accessFrom(f));
        print(
          json,
          artifact,
          `${artifact.resolvedReference}\n  media type     ${artifact.mediaType}\n  artifact type  ${artifact.artifactType || '(none)'}\n  size           ${artifact.size}\n`,
        );
        return EXIT.ok;
      }
      case 'inspect':
        return inspect(onlyReference(f, command), f, json);
      case 'verify': {
        const reference = onlyReference(f, command);
        const policyFile = one(f, 'policy');
        if (policyFile === undefined) throw new UsageError('verify needs --policy FILE');
        const policy = parseVerificationPolicy(policyData(policyFile));
        const requested = one(f, 'requested-reference');
        const outcome = await verifyArtifact(
          reference,
          accessFrom(f),
          policy,
          undefined,
          requested !== undefined ? { requestedReference: requested } : {},
        );
        const lines = [
          `${outcome.artifact.resolvedReference}: ${outcome.satisfied ? 'satisfies the policy' : 'REFUSED by the policy'}`,
          ...(outcome.signers.length > 0 ? [`  signed by ${outcome.signers.join(', ')}`] : []),
          ...outcome.findings.map((x) => `  ${x.blocking ? 'refused' : 'note'} [${x.rule}] ${x.message}`),
        ];
        print(json, outcome, lines.join('\n') + '\n');
        return outcome.satisfied ? EXIT.ok : EXIT.refused;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  });
}

async function inspect(reference: string, f: Flags, json: boolean): Promise<ExitCode> {
  const ref = parseReference(reference);
  const client = new RegistryClient(accessFrom(f));
  const fetched = await client.getManifest(ref, ref.digest ?? ref.tag ?? 'latest');
  const artifact = describeManifest(reference, ref, fetched);
  const m = fetched.manifest;
  const entries = (m.kind === 'manifest' ? m.layers : m.manifests).map((d) => ({
    ...(d.annotations?.[TITLE_ANNOTATION] !== undefined ? { path: d.annotations[TITLE_ANNOTATION] } : {}),
    mediaType: d.mediaType,
    digest: d.digest,
    size: d.size,
    ...(d.artifactType !== undefined ? { artifactType: d.artifactType } : {}),
  }));
  let attached: { referrers: unknown[]; referrersVia: string; signatureTag: string | null } | undefined;
  if (!f.bools.has('no-referrers')) {
    const referrers = await client.referrers(ref, artifact.digest);
    const sig = await client.getManifestIfPresent(ref, signatureTag(artifact.digest));
    attached = {
      referrers: referrers.descriptors.map((d) => ({
        digest: d.digest,
        mediaType: d.mediaType,
        artifactType: d.artifactType ?? '',
        size: d.size,
      })),
      referrersVia: referrers.via,
      signatureTag: sig !== undefined ? signatureTag(artifact.digest) : null,
    };
  }
  const doc = {
    artifact,
    kind: m.kind,
    ...(m.kind === 'manifest'
      ? { config: { mediaType: m.config.mediaType, digest: m.config.digest, size: m.config.size } }
      : {}),
    [m.kind === 'manifest' ? 'layers' : 'manifests']: entries,
    ...(m.subject !== undefined ? { subject: m.subject.digest } : {}),
    ...(attached ?? {}),
  };
  const text = [
    `${artifact.resolvedReference} (${m.kind}, ${artifact.size} bytes)`,
    `  artifact type  ${artifact.artifactType || '(none)'}`,
    ...Object.entries(artifact.annotations).map(([k, v]) => `  annotation     ${k}=${v}`),
    ...entries.map(
      (e) =>
        `  ${m.kind === 'manifest' ? 'layer' : 'entry'}          ${'path' in e ? e.path : e.mediaType}  ${e.size} bytes  ${e.digest}`,
    ),
    ...(attached
      ? [
          `  signatures     ${attached.signatureTag ?? 'none (no .sig tag)'}`,
          `  referrers      ${attached.referrers.length} (via ${attached.referrersVia === 'api' ? 'the referrers API' : 'the fallback tag'})`,
        ]
      : []),
  ];
  print(json, doc, text.join('\n') + '\n');
  return EXIT.ok;
}

/** `ptah schema push|pull` and `ptah migrations push|pull`. */
export async function runArtifactCommand(kind: ArtifactKind, argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const usage = artifactUsage(kind);
  return run(`ptah ${kind} ${command ?? ''}`, usage, rest, async (f, json) => {
    const artifactType = ARTIFACT_TYPE[kind];
    if (command === 'push') {
      const [reference, ...paths] = f.positional;
      if (reference === undefined || paths.length === 0)
        throw new UsageError('push takes REFERENCE:TAG and at least one PATH');
      const annotations: Record<string, string> = {};
      for (const a of f.values.get('annotation') ?? []) {
        const eq = a.indexOf('=');
        if (eq <= 0) throw new UsageError(`--annotation ${a} is not KEY=VALUE`);
        annotations[a.slice(0, eq)] = a.slice(eq + 1);
      }
      const pushed = await pushArtifact(reference, artifactType, readLocalFiles(paths), accessFrom(f), {
        annotations,
      });
      print(
        json,
        pushed,
        `pushed ${pushed.artifact.resolvedReference}\n  content digest ${pushed.contentDigest}\n  files          ${pushed.files.join(', ')}\n`,
      );
      return EXIT.ok;
    }
    if (command === 'pull') {
      const reference = onlyReference(f, 'pull');
      const dir = one(f, 'dir');
      if (dir === undefined) throw new UsageError('pull needs --dir DIR');
      const pulled = await pullArtifact(reference, accessFrom(f), artifactType);
      writeLocalFiles(dir, pulled.files);
      const files = pulled.files.map((x) => x.path);
      print(
        json,
        { artifact: pulled.artifact, contentDigest: pulled.contentDigest, files },
        `pulled ${pulled.artifact.resolvedReference} into ${dir}\n  content digest ${pulled.contentDigest}\n  files          ${files.join(', ')}\n`,
      );
      return EXIT.ok;
    }
    throw new UsageError(`unknown command "${command ?? ''}"`);
  });
}
