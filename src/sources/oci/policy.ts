/**
 * The verification policy: what an OCI artifact must be before the operator plans from it. It lives in an
 * immutable ConfigMap (public keys are not secrets, so no Secret is involved) as YAML or JSON under one key:
 *
 *   version: 1
 *   artifact_types: [application/vnd.ptah.schema.v1]
 *   require_annotations: [org.opencontainers.image.source]   # or a map: name → exact value
 *   require_digest_pin: false
 *   signatures:
 *     required_signers: 1
 *     keys:
 *       - name: release-2026
 *         public_key: |
 *           -----BEGIN PUBLIC KEY-----
 *           …
 *
 * Parsing is strict: an unknown field, a key that is not a public key, or a signer count the keys cannot
 * meet is an error naming the field, since a typo in a policy must not silently relax it.
 */
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { parse } from 'yaml';

export const POLICY_KEYS = ['policy.yaml', 'policy.yml', 'policy.json'] as const;
const MAX_POLICY_BYTES = 256 * 1024;
const MAX_KEYS = 32;
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export interface RequiredAnnotation {
  readonly name: string;
  /** When set, the annotation must have exactly this value. */
  readonly value?: string;
}

export interface PolicyKey {
  readonly name: string;
  readonly publicKeyPem: string;
  /** `sha256:` of the key's DER SubjectPublicKeyInfo: the same key gives the same id however it is wrapped. */
  readonly keyId: string;
  readonly algorithm: 'ecdsa-p256' | 'ecdsa-p384' | 'ecdsa-p521' | 'ed25519' | 'rsa';
}

export interface SignatureRule {
  readonly requiredSigners: number;
  readonly keys: readonly PolicyKey[];
}

export interface VerificationPolicy {
  readonly version: 1;
  /** The ConfigMap key the policy was read from. */
  readonly sourceKey: string;
  readonly artifactTypes: readonly string[];
  readonly requiredAnnotations: readonly RequiredAnnotation[];
  readonly requireDigestPin: boolean;
  /** Absent: no signature is required. */
  readonly signatures?: SignatureRule;
}

export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

/** The ConfigMap key holding the policy: one of POLICY_KEYS, or the only key there is. */
export function selectPolicyKey(data: Readonly<Record<string, string>>): string {
  const present = POLICY_KEYS.filter((k) => data[k] !== undefined);
  if (present.length === 1) return present[0]!;
  if (present.length > 1)
    throw new PolicyError(`the policy ConfigMap has ${present.join(' and ')}; keep exactly one`);
  const keys = Object.keys(data);
  if (keys.length === 1) return keys[0]!;
  throw new PolicyError(
    `the policy ConfigMap has no key ${POLICY_KEYS.join(', ')}${keys.length > 1 ? ` among ${keys.length} keys` : ''}; put the policy under policy.yaml`,
  );
}

export function parseVerificationPolicy(data: Readonly<Record<string, string>>): VerificationPolicy {
  const sourceKey = selectPolicyKey(data);
  const text = data[sourceKey]!;
  if (text.length > MAX_POLICY_BYTES)
    throw new PolicyError(`the policy in ${sourceKey} is over ${MAX_POLICY_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 10 });
  } catch (error) {
    throw new PolicyError(
      `the policy in ${sourceKey} is not YAML or JSON: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const at = (field: string) => `${sourceKey}: ${field}`;
  const root = object(doc, at('the document'));
  allowOnly(
    root,
    ['version', 'artifact_types', 'require_annotations', 'require_digest_pin', 'signatures'],
    at('the top level'),
  );
  if (root['version'] !== 1) throw new PolicyError(`${at('version')} must be 1`);

  const types = root['artifact_types'];
  if (!Array.isArray(types) || types.length === 0) {
    throw new PolicyError(
      `${at('artifact_types')} must list at least one artifact type, e.g. application/vnd.ptah.schema.v1`,
    );
  }
  const artifactTypes = types.map((t, i) => {
    if (typeof t !== 'string' || !MEDIA_TYPE.test(t))
      throw new PolicyError(`${at(`artifact_types[${i}]`)} is not a media type`);
    return t;
  });

  const requiredAnnotations = parseAnnotations(root['require_annotations'], at('require_annotations'));
  const pin = root['require_digest_pin'] ?? false;
  if (typeof pin !== 'boolean') throw new PolicyError(`${at('require_digest_pin')} must be true or false`);
  const signatures =
    root['signatures'] === undefined || root['signatures'] === null
      ? undefined
      : parseSignatures(root['signatures'], at('signatures'));
  return {
    version: 1,
    sourceKey,
    artifactTypes,
    requiredAnnotations,
    requireDigestPin: pin,
    ...(signatures !== undefined ? { signatures } : {}),
  };
}

function parseAnnotations(value: unknown, where: string): RequiredAnnotation[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) {
    return value.map((v, i) => {
      if (typeof v !== 'string' || v.length === 0 || v.length > 253)
        throw new PolicyError(`${where}[${i}] is not an annotation name`);
      return { name: v };
    });
  }
  const map = object(value, where);
  return Object.entries(map).map(([name, v]) => {
    if (typeof v !== 'string')
      throw new PolicyError(`${where}.${name} must be a string (the exact value required)`);
    return { name, value: v };
  });
}

function parseSignatures(value: unknown, where: string): SignatureRule {
  const sig = object(value, where);
  allowOnly(sig, ['required_signers', 'keys'], where);
  const keys = sig['keys'];
  if (!Array.isArray(keys) || keys.length === 0)
    throw new PolicyError(`${where}.keys must list at least one public key`);
  if (keys.length > MAX_KEYS) throw new PolicyError(`${where}.keys lists more than ${MAX_KEYS} keys`);
  const parsed = keys.map((k, i) => parseKey(k, `${where}.keys[${i}]`));
  const names = new Set<string>();
  const ids = new Set<string>();
  for (const k of parsed) {
    if (names.has(k.name)) throw new PolicyError(`${where}.keys names ${k.name} twice`);
    if (ids.has(k.keyId))
      throw new PolicyError(
        `${where}.keys lists the same public key twice (${k.name}); a signer counts once`,
      );
    names.add(k.name);
    ids.add(k.keyId);
  }
  const required = sig['required_signers'] ?? 1;
  if (typeof required !== 'number' || !Number.isInteger(required) || required < 1) {
    throw new PolicyError(`${where}.required_signers must be a whole number of at least 1`);
  }
  if (required > parsed.length)
    throw new PolicyError(
      `${where}.required_signers is ${required} but only ${parsed.length} keys are listed`,
    );
  return { requiredSigners: required, keys: parsed };
}

function parseKey(value: unknown, where: string): PolicyKey {
  const entry = object(value, where);
  allowOnly(entry, ['name', 'public_key'], where);
  const name = entry['name'];
  if (typeof name !== 'string' || !KEY_NAME.test(name))
    throw new PolicyError(`${where}.name must be a short name ([A-Za-z0-9._-], at most 63)`);
  const pem = entry['public_key'];
  if (typeof pem !== 'string' || !pem.includes('-----BEGIN PUBLIC KEY-----')) {
    throw new PolicyError(
      `${where}.public_key must be a PEM public key (-----BEGIN PUBLIC KEY-----), as cosign.pub holds`,
    );
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    throw new PolicyError(`${where}.public_key (${name}) is not a readable PEM public key`);
  }
  return {
    name,
    publicKeyPem: pem,
    keyId: keyIdOf(key),
    algorithm: algorithmOf(key, `${where}.public_key (${name})`),
  };
}

export function keyIdOf(key: KeyObject): string {
  return `sha256:${createHash('sha256')
    .update(key.export({ format: 'der', type: 'spki' }))
    .digest('hex')}`;
}

function algorithmOf(key: KeyObject, where: string): PolicyKey['algorithm'] {
  const type = key.asymmetricKeyType;
  if (type === 'ed25519') return 'ed25519';
  if (type === 'rsa') {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
      throw new PolicyError(`${where} is an RSA key under 2048 bits`);
    return 'rsa';
  }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ecdsa-p256';
    if (curve === 'secp384r1') return 'ecdsa-p384';
    if (curve === 'secp521r1') return 'ecdsa-p521';
  }
  throw new PolicyError(
    `${where} is a ${type ?? 'unknown'} key; use ECDSA (P-256, P-384, P-521), Ed25519 or RSA`,
  );
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new PolicyError(`${where} must be a mapping`);
  return value as Record<string, unknown>;
}

function allowOnly(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new PolicyError(
        `${where} has the unknown field ${JSON.stringify(key.slice(0, 80))} (allowed: ${allowed.join(', ')})`,
      );
  }
}
