/**
 * The runner's four OCI commands, one per row of the credential routing table that touches a registry:
 *
 * - `resolve` (Resolve's main container): the digest behind the requested reference. Registry credential,
 *   no database credential.
 * - `verify` (Verify's main container): the policy evaluated against the pinned artifact, and the
 *   artifact's type read from its manifest independently of that evaluation. Registry credential only.
 * - `guard-oci-source` (first init container of Observe, Plan, History and a migration's Apply): holds no
 *   credential; sees only the Secret's grant keys (`registry`, `caSHA256`, `allowPlainHTTP`), checks them
 *   against the pinned reference and the CA bytes, and copies those exact CA bytes into an EmptyDir.
 * - `fetch-oci` (second init container): with the registry credential, pulls the pinned artifact's files
 *   (every byte checked against its digest) into the EmptyDir the operation container mounts read-only.
 *
 * A credential is refused before any request unless the Secret's `registry` grant names the reference's
 * registry; a custom CA with a credential needs the `caSHA256` grant of its exact bytes; plain HTTP with a
 * credential needs `allowPlainHTTP: "true"`. Every text that leaves goes through the redactor, which knows
 * the registry passwords and tokens of the mounted Docker config.
 */
import { readSourceFlags, SourceOptionsError } from './source-flags.ts';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  OciError,
  parseReference,
  parseVerificationPolicy,
  pullArtifact,
  resolveArtifact,
  verifyArtifact,
  writeLocalFiles,
  type RegistryAccess,
} from '../sources/oci/index.ts';
import { MAX_FINDING_MESSAGE, MAX_VERIFICATION_FINDINGS, type RunnerOperation } from '../protocol/result.ts';
import { decodePolicyData, verificationPolicyDigest } from '../sources/verification-policy-digest.ts';
import { failed, refused, RUNNER_EXIT, type OperationReport } from './operation.ts';

export const OCI_COMMANDS = ['resolve', 'verify', 'guard-oci-source', 'fetch-oci'] as const;
export type OciCommand = (typeof OCI_COMMANDS)[number] & RunnerOperation;

export function isOciCommand(value: string | undefined): value is OciCommand {
  return (OCI_COMMANDS as readonly (string | undefined)[]).includes(value);
}

/** Where a Job mounts what these commands read (fixed by the Job builder, passed as flags). */
export interface OciCommandOptions {
  readonly command: OciCommand;
  readonly reference: string;
  /** Verify: the reference the resource asked for (a tag, maybe), for require_digest_pin. */
  readonly requestedReference?: string;
  /** The mounted registry Secret (whole for resolve/verify/fetch; grant keys only for the guard). */
  readonly authDir?: string;
  /** Resolve, verify and the guard: the mounted CA ConfigMap file. Fetch: the guard's snapshot of it. */
  readonly caFile?: string;
  /** The guard: where the exact CA bytes go. */
  readonly caOut?: string;
  readonly plainHttp: boolean;
  /** Verify and fetch: the family's artifact type. */
  readonly artifactType?: string;
  /** Fetch: the EmptyDir the files go to. */
  readonly outDir?: string;
  /** Verify: the policy's data and the digest it must give. */
  readonly policyData?: string;
  readonly policyDigest?: string;
}

const FLAGS = [
  'reference',
  'requested',
  'auth-dir',
  'ca-file',
  'ca-out',
  'artifact-type',
  'out',
  'policy-digest',
] as const;

export function compileOciOptions(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): OciCommandOptions {
  const command = argv[0];
  if (!isOciCommand(command)) throw new SourceOptionsError('invalid_option', 'unknown OCI command');
  const { values, plainHttp } = readSourceFlags(argv.slice(1), FLAGS);
  const reference = values.reference;
  if (reference === undefined) throw new SourceOptionsError('invalid_option', '--reference is missing');
  const pinned = command !== 'resolve';
  if (pinned && !/@sha256:[0-9a-f]{64}$/.test(reference)) {
    throw new SourceOptionsError('reference_not_pinned', `${command} reads a digest-pinned reference only`);
  }
  const need = (flag: (typeof FLAGS)[number]): string => {
    const v = values[flag];
    if (v === undefined)
      throw new SourceOptionsError('invalid_option', `--${flag} is missing for ${command}`);
    return v;
  };
  return {
    command,
    reference,
    plainHttp,
    ...(values.requested !== undefined ? { requestedReference: values.requested } : {}),
    ...(values['auth-dir'] !== undefined ? { authDir: values['auth-dir'] } : {}),
    ...(values['ca-file'] !== undefined ? { caFile: values['ca-file'] } : {}),
    ...(command === 'guard-oci-source' && values['ca-file'] !== undefined ? { caOut: need('ca-out') } : {}),
    ...(command === 'verify' || command === 'fetch-oci' ? { artifactType: need('artifact-type') } : {}),
    ...(command === 'fetch-oci' ? { outDir: need('out') } : {}),
    ...(command === 'verify'
      ? {
          policyDigest: need('policy-digest'),
          ...(env['PTAH_VERIFICATION_POLICY'] !== undefined
            ? { policyData: env['PTAH_VERIFICATION_POLICY'] }
            : {}),
        }
      : {}),
  };
}

const DOCKER_CONFIG_KEY = '.dockerconfigjson';
const MAX_SECRET_FILE_BYTES = 64 * 1024;
const MAX_CA_BYTES = 1024 * 1024;

/** The registry passwords and tokens of the mounted Docker config, for the redactor. */
export function registrySecrets(options: OciCommandOptions): string[] {
  const text = readBounded(options.authDir, DOCKER_CONFIG_KEY, MAX_SECRET_FILE_BYTES);
  if (text === undefined) return [];
  const out: string[] = [];
  try {
    const doc = JSON.parse(text) as { auths?: Record<string, Record<string, unknown>> };
    for (const entry of Object.values(doc.auths ?? {})) {
      for (const field of ['auth', 'password', 'identitytoken', 'registrytoken']) {
        const v = entry[field];
        if (typeof v === 'string' && v !== '') out.push(v);
      }
      if (typeof entry['auth'] === 'string') {
        const decoded = Buffer.from(entry['auth'], 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon >= 0 && colon < decoded.length - 1) out.push(decoded.slice(colon + 1));
      }
    }
  } catch {
    // Not JSON: the client refuses it with its own message; nothing here to learn.
  }
  out.push(text.trim());
  return out;
}

export async function runOciCommand(
  options: OciCommandOptions,
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<OperationReport> {
  try {
    const ref = parseReference(options.reference);
    const ca = readCa(options.caFile);
    const credential = readBounded(options.authDir, DOCKER_CONFIG_KEY, MAX_SECRET_FILE_BYTES);
    const grantRefusal = checkGrants(options, ref.registry, ca, credential !== undefined);
    if (grantRefusal !== undefined) {
      say(`refused: ${grantRefusal.message}`);
      return refused(grantRefusal.code, grantRefusal.message);
    }
    const access: RegistryAccess = {
      ...(credential !== undefined ? { dockerConfigJson: credential } : {}),
      ...(ca !== undefined ? { caPem: ca.toString('utf8') } : {}),
      ...(options.plainHttp ? { plainHttp: true } : {}),
    };
    return await COMMANDS[options.command](options, access, ca, say, signal);
  } catch (error) {
    if (error instanceof OciError) {
      say(`${options.command} failed: ${error.message}`);
      return failed(snake(error.reason), error.message.slice(0, 512), -1);
    }
    throw error;
  }
}

type CommandRun = (
  options: OciCommandOptions,
  access: RegistryAccess,
  ca: Buffer | undefined,
  say: (line: string) => void,
  signal?: AbortSignal,
) => Promise<OperationReport>;

const COMMANDS: Readonly<Record<OciCommand, CommandRun>> = {
  async resolve(options, access, _ca, say, signal) {
    const a = await resolveArtifact(options.reference, access, signal);
    say(`resolved ${options.reference} to ${a.digest}`);
    return succeeded({
      artifact: {
        requestedReference: options.reference,
        resolvedReference: a.resolvedReference,
        digest: a.digest,
        mediaType: a.mediaType,
        artifactType: a.artifactType,
        size: a.size,
      },
    });
  },

  async verify(options, access, _ca, say, signal) {
    const data = decodePolicyData(options.policyData);
    if (data === undefined) return refused('policy_missing', 'the Job carries no readable policy');
    const digest = verificationPolicyDigest(data);
    if (digest !== options.policyDigest) {
      return refused('policy_digest_mismatch', 'the policy bytes do not give the digest the Job is bound to');
    }
    let policy;
    try {
      policy = parseVerificationPolicy(data);
    } catch (error) {
      return refused('policy_invalid', (error as Error).message.slice(0, 512));
    }
    const pinnedDigest = options.reference.slice(options.reference.lastIndexOf('@') + 1);
    const outcome = await verifyArtifact(options.reference, access, policy, signal, {
      requestedReference: options.requestedReference ?? options.reference,
    });
    // The artifact's type, read from the pinned manifest on its own: not the policy's word for it.
    const inspected = await resolveArtifact(options.reference, access, signal);
    const findings = outcome.findings
      .filter((f) => f.blocking)
      .map((f) => ({ rule: f.rule as string, message: f.message.slice(0, MAX_FINDING_MESSAGE) }));
    if (inspected.digest !== pinnedDigest || outcome.artifact.digest !== pinnedDigest) {
      findings.unshift({
        rule: 'digest',
        message: `the registry served another manifest than ${pinnedDigest}`,
      });
    }
    if (inspected.artifactType !== options.artifactType) {
      findings.unshift({
        rule: 'artifact-type',
        message: `the artifact type is ${JSON.stringify(inspected.artifactType.slice(0, 100))}, not ${options.artifactType}`,
      });
    }
    const satisfied = outcome.satisfied && findings.length === 0;
    say(
      satisfied
        ? `${pinnedDigest} satisfies the policy${outcome.signers.length > 0 ? ` (signed by ${outcome.signers.join(', ')})` : ''}`
        : `${pinnedDigest} refused: ${findings.map((f) => f.rule).join(', ')}`,
    );
    return succeeded({
      verification: {
        satisfied,
        policyDigest: digest,
        digest: inspected.digest,
        inspectedArtifactType: inspected.artifactType,
        findings: findings.slice(0, MAX_VERIFICATION_FINDINGS),
        signers: outcome.signers.slice(0, 16),
      },
    });
  },

  async 'guard-oci-source'(options, _access, ca, say) {
    // Holds no credential and reaches no registry: the grants were checked above; the CA goes as bytes.
    if (ca !== undefined && options.caOut !== undefined) {
      mkdirSync(dirname(options.caOut), { recursive: true });
      writeFileSync(options.caOut, ca, { mode: 0o444, flag: 'wx' });
    }
    say(`source authority checked for ${options.reference}`);
    return succeeded({});
  },

  async 'fetch-oci'(options, access, _ca, say, signal) {
    const pulled = await pullArtifact(options.reference, access, options.artifactType!, signal);
    writeLocalFiles(options.outDir!, pulled.files);
    say(`fetched ${pulled.files.length} files of ${pulled.artifact.digest}`);
    return succeeded({
      fetch: {
        digest: pulled.artifact.digest,
        contentDigest: pulled.contentDigest,
        files: pulled.files.length,
      },
    });
  },
};

function succeeded(outputs: OperationReport['outputs']): OperationReport {
  return { outcome: 'succeeded', exitCode: RUNNER_EXIT.succeeded, childExitCode: -1, outputs };
}

/**
 * The Secret's grants, checked before any request: a credential goes only to the registry the Secret
 * names, over a CA whose exact bytes it names, and over plain HTTP only when it says so.
 */
function checkGrants(
  options: OciCommandOptions,
  registry: string,
  ca: Buffer | undefined,
  hasCredential: boolean,
): { code: string; message: string } | undefined {
  // The guard sees only the grant keys; resolve, verify and fetch see the whole Secret. Either way, a
  // Secret mounted means a credential the grants must cover.
  const mounted = options.authDir !== undefined && existsSync(options.authDir);
  if (!hasCredential && !(options.command === 'guard-oci-source' && mounted)) return undefined;
  const granted = readBounded(options.authDir, 'registry', 1024)?.trim();
  if (granted === undefined || granted === '') {
    return {
      code: 'registry_grant_missing',
      message: 'the registry Secret has no key registry naming the host[:port] its credential may be sent to',
    };
  }
  if (granted.toLowerCase() !== registry.toLowerCase()) {
    return {
      code: 'registry_grant_mismatch',
      message: `the registry Secret grants ${granted.slice(0, 100)}, not ${registry}; the credential is not sent`,
    };
  }
  if (ca !== undefined) {
    const want = `sha256:${createHash('sha256').update(ca).digest('hex')}`;
    const grantedCa = readBounded(options.authDir, 'caSHA256', 256)?.trim();
    if (grantedCa !== want) {
      return {
        code: 'ca_grant_mismatch',
        message: `the registry Secret's caSHA256 does not name the CA bundle's bytes (${want})`,
      };
    }
  }
  if (options.plainHttp && readBounded(options.authDir, 'allowPlainHTTP', 16)?.trim() !== 'true') {
    return {
      code: 'plain_http_not_granted',
      message: 'plain HTTP with a credential needs allowPlainHTTP: "true" in the registry Secret',
    };
  }
  return undefined;
}

function readCa(file: string | undefined): Buffer | undefined {
  if (file === undefined || !existsSync(file)) return undefined;
  // One read: what is checked is what is used, whatever happens to the mount afterwards.
  const bytes = readFileSync(file);
  if (bytes.length > MAX_CA_BYTES)
    throw new OciError('TooLarge', `the CA bundle is over ${MAX_CA_BYTES} bytes`);
  return bytes;
}

function readBounded(dir: string | undefined, key: string, limit: number): string | undefined {
  if (dir === undefined) return undefined;
  const file = join(dir, key);
  if (!existsSync(file)) return undefined;
  const bytes = readFileSync(file);
  if (bytes.length > limit)
    throw new OciError('TooLarge', `${key} in the registry Secret is over ${limit} bytes`);
  return bytes.toString('utf8');
}

function snake(reason: string): string {
  return reason.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}
