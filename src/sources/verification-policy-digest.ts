/**
 * The digest a verification policy is bound by: the SHA-256 of the canonical JSON of the ConfigMap's
 * `data`, every key included. The manager computes it from the ConfigMap it read, the Verify runner from
 * the bytes it was handed, and a plan binds it beside the ConfigMap's UID: one function, so they agree.
 */
import { canonicalDigest, type Sha256Digest } from '../api/digest.ts';

/** The most a policy ConfigMap may hold; a larger one is refused before it reaches a Job. */
export const MAX_POLICY_DATA_BYTES = 64 * 1024;

export function verificationPolicyDigest(data: Readonly<Record<string, string>>): Sha256Digest {
  return canonicalDigest(
    Object.fromEntries(
      Object.keys(data)
        .sort()
        .map((k) => [k, data[k]!]),
    ),
  );
}

/** The policy's data as the Verify Job receives it (env), or why it cannot be one. */
export function encodePolicyData(
  data: Readonly<Record<string, string>> | undefined,
): { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string } {
  if (data === undefined || Object.keys(data).length === 0) {
    return { ok: false, message: 'it holds no data; put the policy under policy.yaml' };
  }
  const text = JSON.stringify(data);
  if (Buffer.byteLength(text) > MAX_POLICY_DATA_BYTES) {
    return { ok: false, message: `it holds more than ${MAX_POLICY_DATA_BYTES} bytes` };
  }
  return { ok: true, text };
}

/** The data map encodePolicyData wrote, or undefined when the text is not one. */
export function decodePolicyData(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined || Buffer.byteLength(text) > MAX_POLICY_DATA_BYTES) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.every(([, value]) => typeof value === 'string')) return undefined;
    return Object.fromEntries(entries) as Record<string, string>;
  } catch {
    return undefined;
  }
}
