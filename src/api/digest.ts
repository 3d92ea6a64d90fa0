/**
 * SHA-256 helpers. Every digest the operator stores or compares is written `sha256:<64 lowercase hex>`,
 * so a reader never has to guess the algorithm.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, type CanonicalValue } from './canonical-json.ts';

export const SHA256_DIGEST_PATTERN = '^sha256:[0-9a-f]{64}$';
const digestRe = new RegExp(SHA256_DIGEST_PATTERN);

export type Sha256Digest = `sha256:${string}`;

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function sha256Digest(data: string | Uint8Array): Sha256Digest {
  return `sha256:${sha256Hex(data)}`;
}

/** The digest of a value's canonical JSON. */
export function canonicalDigest(value: CanonicalValue): Sha256Digest {
  return sha256Digest(canonicalJson(value));
}

export function isSha256Digest(value: unknown): value is Sha256Digest {
  return typeof value === 'string' && digestRe.test(value);
}
