/**
 * The source policy: what a ConfigMap or Git source may be before the operator snapshots or fetches it. It
 * lives in a ConfigMap the resource names in spec.sourcePolicyFrom, as YAML or JSON under the one key
 * `source-policy.yaml`:
 *
 *   version: 1
 *   git:
 *     allowed_hosts: [git.example.com, "*.corp.example.com", "127.0.0.1:8443"]
 *   config_map:
 *     allowed_names: [app-schema, "app-*"]
 *   max_selected_bytes: 1048576
 *
 * Every rule is optional; an absent one restricts nothing. Parsing is strict (an unknown field is an error
 * naming it) because a typo in a policy must not silently relax it. Unlike a verification policy the
 * ConfigMap may be mutable: it is bound by UID and the digest of its data, so an edit is a new policy.
 */
import { parse } from 'yaml';
import { canonicalDigest, type Sha256Digest } from '../api/digest.ts';
import { parseRemote } from './git/remote.ts';

export const SOURCE_POLICY_KEY = 'source-policy.yaml';
/** The most the policy text may hold; the manager reads nothing larger. */
export const MAX_SOURCE_POLICY_BYTES = 32 * 1024;
const MAX_PATTERNS = 64;
const HOST_PATTERN =
  /^(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::[0-9]{1,5})?$/;
const NAME_PATTERN = /^[a-z0-9*]([-a-z0-9.*]{0,251}[a-z0-9*])?$/;

/** The rules a refusal names, as they are spelled in the document. */
export type SourcePolicyRule = 'git.allowed_hosts' | 'config_map.allowed_names' | 'max_selected_bytes';

export interface SourcePolicy {
  readonly version: 1;
  /** Absent: any host. An entry is a host, `*.` and a domain, either with `:port` to pin the port too. */
  readonly allowedGitHosts?: readonly string[];
  /** Absent: any name. `*` matches any run of characters; the whole name must match. */
  readonly allowedConfigMapNames?: readonly string[];
  /** Absent: no limit beyond the operator's own. Total bytes of the files a source selects. */
  readonly maxSelectedBytes?: number;
}

export class SourcePolicyError extends Error {
  override readonly name = 'SourcePolicyError';
}

/** A refusal: the rule, and what it refused, said for a person. */
export interface SourcePolicyRefusal {
  readonly rule: SourcePolicyRule;
  readonly message: string;
}

/** The digest a source policy is bound by: the SHA-256 of the canonical JSON of the ConfigMap's data. */
export function sourcePolicyDigest(data: Readonly<Record<string, string>>): Sha256Digest {
  return canonicalDigest(
    Object.fromEntries(
      Object.keys(data)
        .sort()
        .map((k) => [k, data[k]!]),
    ),
  );
}

export function parseSourcePolicy(data: Readonly<Record<string, string>>): SourcePolicy {
  const keys = Object.keys(data);
  if (keys.length !== 1 || keys[0] !== SOURCE_POLICY_KEY) {
    throw new SourcePolicyError(
      `it must hold exactly one key, ${SOURCE_POLICY_KEY}${keys.length > 0 ? `, not ${keys.slice(0, 5).join(', ')}` : ''}`,
    );
  }
  const text = data[SOURCE_POLICY_KEY]!;
  if (Buffer.byteLength(text) > MAX_SOURCE_POLICY_BYTES)
    throw new SourcePolicyError(`${SOURCE_POLICY_KEY} is over ${MAX_SOURCE_POLICY_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 10 });
  } catch (error) {
    throw new SourcePolicyError(
      `${SOURCE_POLICY_KEY} is not YAML or JSON: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const at = (field: string) => `${SOURCE_POLICY_KEY}: ${field}`;
  const root = mapping(doc, at('the document'));
  allowOnly(root, ['version', 'git', 'config_map', 'max_selected_bytes'], at('the top level'));
  if (root['version'] !== 1) throw new SourcePolicyError(`${at('version')} must be 1`);

  let allowedGitHosts: string[] | undefined;
  if (root['git'] !== undefined && root['git'] !== null) {
    const git = mapping(root['git'], at('git'));
    allowOnly(git, ['allowed_hosts'], at('git'));
    allowedGitHosts = patterns(git['allowed_hosts'], at('git.allowed_hosts'), HOST_PATTERN, 'a host').map(
      (h) => h.toLowerCase(),
    );
  }
  let allowedConfigMapNames: string[] | undefined;
  if (root['config_map'] !== undefined && root['config_map'] !== null) {
    const cm = mapping(root['config_map'], at('config_map'));
    allowOnly(cm, ['allowed_names'], at('config_map'));
    allowedConfigMapNames = patterns(
      cm['allowed_names'],
      at('config_map.allowed_names'),
      NAME_PATTERN,
      'a ConfigMap name pattern',
    );
  }
  const max = root['max_selected_bytes'];
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1))
    throw new SourcePolicyError(`${at('max_selected_bytes')} must be a whole number of bytes, at least 1`);
  return {
    version: 1,
    ...(allowedGitHosts !== undefined ? { allowedGitHosts } : {}),
    ...(allowedConfigMapNames !== undefined ? { allowedConfigMapNames } : {}),
    ...(typeof max === 'number' ? { maxSelectedBytes: max } : {}),
  };
}

/** The Git host rule, before anything reaches the server. */
export function checkGitHost(policy: SourcePolicy, repository: string): SourcePolicyRefusal | undefined {
  const allowed = policy.allowedGitHosts;
  if (allowed === undefined) return undefined;
  let remote: { host: string; port: number };
  try {
    remote = parseRemote(repository, { allowPlainHttp: true });
  } catch {
    return { rule: 'git.allowed_hosts', message: 'the repository URL names no host the policy can check' };
  }
  const host = remote.host.toLowerCase();
  const authority = `${host}:${remote.port}`;
  const matches = (entry: string) => {
    const i = entry.lastIndexOf(':');
    const pattern = i < 0 ? entry : entry.slice(0, i);
    if (i >= 0 && Number(entry.slice(i + 1)) !== remote.port) return false;
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
  };
  if (allowed.some(matches)) return undefined;
  return {
    rule: 'git.allowed_hosts',
    message: `host ${authority} is not among ${allowed.join(', ') || 'no hosts'}`,
  };
}

/** The ConfigMap name rule. */
export function checkConfigMapName(policy: SourcePolicy, name: string): SourcePolicyRefusal | undefined {
  const allowed = policy.allowedConfigMapNames;
  if (allowed === undefined || allowed.some((p) => globMatches(p, name))) return undefined;
  return {
    rule: 'config_map.allowed_names',
    message: `ConfigMap name ${name} matches none of ${allowed.join(', ') || 'no names'}`,
  };
}

/** The size rule, on the total bytes of the files a source selects. */
export function checkSelectedSize(policy: SourcePolicy, bytes: number): SourcePolicyRefusal | undefined {
  const max = policy.maxSelectedBytes;
  if (max === undefined || bytes <= max) return undefined;
  return {
    rule: 'max_selected_bytes',
    message: `the selected files hold ${bytes} bytes, over the limit of ${max}`,
  };
}

function globMatches(pattern: string, name: string): boolean {
  // Names hold only [a-z0-9.-]: escaping the dot is all a literal part needs.
  const parts = pattern.split('*').map((p) => p.replace(/[.]/g, '\\.'));
  return new RegExp(`^${parts.join('.*')}$`).test(name);
}

function patterns(value: unknown, where: string, shape: RegExp, what: string): string[] {
  if (!Array.isArray(value)) throw new SourcePolicyError(`${where} must be a list`);
  if (value.length > MAX_PATTERNS) throw new SourcePolicyError(`${where} lists more than ${MAX_PATTERNS}`);
  return value.map((v, i) => {
    if (typeof v !== 'string' || !shape.test(v)) throw new SourcePolicyError(`${where}[${i}] is not ${what}`);
    return v;
  });
}

function mapping(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SourcePolicyError(`${where} must be a mapping`);
  return value as Record<string, unknown>;
}

function allowOnly(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new SourcePolicyError(
        `${where} has the unknown field ${JSON.stringify(key.slice(0, 80))} (allowed: ${allowed.join(', ')})`,
      );
  }
}
