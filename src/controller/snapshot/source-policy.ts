/**
 * The source policy of a ConfigMap or Git source (spec.sourcePolicyFrom), for both families: read from its
 * ConfigMap with a size limit, bound by UID and the digest of its data (the ConfigMap may be edited, and an
 * edit is another policy), and the three checks Resolve makes with it, each refusal naming the rule, the
 * policy and the value refused:
 *
 * - a ConfigMap source's name and the size of its selected keys, before the snapshot is written;
 * - a Git source's host, before the Resolve Job is made;
 * - the size of the files a commit holds at the path, before the commit is recorded.
 *
 * The decision side is pure: what the I/O side read is handed to `decide` as a `SourcePolicyRead`.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import {
  checkConfigMapName,
  checkGitHost,
  checkSelectedSize,
  MAX_SOURCE_POLICY_BYTES,
  parseSourcePolicy,
  SOURCE_POLICY_KEY,
  SourcePolicyError,
  sourcePolicyDigest,
  type SourcePolicy,
  type SourcePolicyRefusal,
} from '../../sources/source-policy.ts';
import { readConfigMap } from '../runtime/kube.ts';

/** The policy as bound into status and plans. */
export interface SourcePolicyRef {
  readonly name: string;
  readonly uid: string;
  readonly digest: string;
}

/** The reasons a source policy gives: it could not be read, or it refused the source. */
export const SOURCE_POLICY_REASONS = [
  'SourcePolicyNotFound',
  'SourcePolicyInvalid',
  'SourcePolicyRefused',
] as const;
export type SourcePolicyReason = (typeof SOURCE_POLICY_REASONS)[number];

export type SourcePolicyRead =
  | ({ readonly ok: true; readonly policy: SourcePolicy } & SourcePolicyRef)
  | {
      readonly ok: false;
      readonly reason: Exclude<SourcePolicyReason, 'SourcePolicyRefused'>;
      readonly message: string;
    };

/** A check's verdict, ready for a condition: the reason and the message naming rule, policy and value. */
export type SourcePolicyVerdict =
  | { readonly ok: true; readonly policy: SourcePolicyRef | undefined }
  | { readonly ok: false; readonly reason: SourcePolicyReason; readonly message: string };

export async function readSourcePolicy(
  core: CoreV1Api,
  namespace: string,
  name: string | undefined,
): Promise<SourcePolicyRead | undefined> {
  if (name === undefined) return undefined;
  const cm = await readConfigMap(core, namespace, name);
  const fix = `put the policy under data.${SOURCE_POLICY_KEY}, or remove spec.sourcePolicyFrom`;
  if (cm === undefined) {
    return {
      ok: false,
      reason: 'SourcePolicyNotFound',
      message: `source policy ConfigMap ${name} does not exist; create it (${fix})`,
    };
  }
  const data = cm.data ?? {};
  const invalid = (detail: string): SourcePolicyRead => ({
    ok: false,
    reason: 'SourcePolicyInvalid',
    message: `source policy ConfigMap ${name}: ${detail} (${fix})`.slice(0, 1024),
  });
  if (Object.keys(cm.binaryData ?? {}).length > 0) return invalid('it holds binaryData');
  // The API server already caps an object; the policy is held to far less before anything parses it.
  if (Buffer.byteLength(JSON.stringify(data)) > MAX_SOURCE_POLICY_BYTES + 64)
    return invalid(`it holds more than ${MAX_SOURCE_POLICY_BYTES} bytes`);
  let policy: SourcePolicy;
  try {
    policy = parseSourcePolicy(data);
  } catch (error) {
    if (error instanceof SourcePolicyError) return invalid(error.message);
    throw error;
  }
  return { ok: true, name, uid: cm.metadata?.uid ?? '', digest: sourcePolicyDigest(data), policy };
}

/** The policy as status and plans bind it, without the parsed rules. */
export function sourcePolicyRef(read: Extract<SourcePolicyRead, { ok: true }>): SourcePolicyRef {
  return { name: read.name, uid: read.uid, digest: read.digest };
}

/** Whether the policy recorded beside a resolution is the one read now (both absent agree). */
export function samePolicy(
  recorded: SourcePolicyRef | undefined,
  now: SourcePolicyRead | undefined,
): boolean {
  if (recorded === undefined || now === undefined) return recorded === undefined && now === undefined;
  return now.ok && recorded.uid === now.uid && recorded.digest === now.digest;
}

/** One rule applied to one source: what a refusal names as refused, and the rule's verdict. */
export interface SourcePolicyCheck {
  readonly subject: string;
  apply(policy: SourcePolicy): SourcePolicyRefusal | undefined;
}

export function configMapNameCheck(name: string): SourcePolicyCheck {
  return { subject: `ConfigMap ${name}`, apply: (p) => checkConfigMapName(p, name) };
}

export function gitHostCheck(repository: string): SourcePolicyCheck {
  return { subject: repository.slice(0, 300), apply: (p) => checkGitHost(p, repository) };
}

/** `subject` says whose files they are: a ConfigMap's selected keys, or a commit at a path. */
export function selectedSizeCheck(bytes: number, subject: string): SourcePolicyCheck {
  return { subject, apply: (p) => checkSelectedSize(p, bytes) };
}

/**
 * Checks a source against the policy read now: no policy named passes; a policy that could not be read
 * refuses, since a source that names one must not be read as though it named none.
 */
export function checkSource(
  read: SourcePolicyRead | undefined,
  ...checks: readonly SourcePolicyCheck[]
): SourcePolicyVerdict {
  if (read === undefined) return { ok: true, policy: undefined };
  if (!read.ok) return read;
  for (const check of checks) {
    const refusal = check.apply(read.policy);
    if (refusal !== undefined) {
      return {
        ok: false,
        reason: 'SourcePolicyRefused',
        message: `source policy ${read.name} refused ${check.subject}: ${refusal.rule}: ${refusal.message}`,
      };
    }
  }
  return { ok: true, policy: sourcePolicyRef(read) };
}

export function isSourcePolicyReason(reason: string): reason is SourcePolicyReason {
  return (SOURCE_POLICY_REASONS as readonly string[]).includes(reason);
}
