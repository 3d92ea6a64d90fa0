/**
 * Cosign's classic signatures: the manifest tagged `sha256-<hex>.sig` beside the signed artifact has one
 * layer per signature, whose blob is the "simple signing" JSON payload naming the signed digest and whose
 * `dev.cosignproject.cosign/signature` annotation is the base64 signature over those exact payload bytes.
 * A signature counts only if it verifies under a policy key and its payload names this artifact's digest.
 */
import { createPublicKey, verify } from 'node:crypto';
import type { RegistryClient } from './client.ts';
import type { Descriptor } from './manifest.ts';
import type { PolicyKey } from './policy.ts';
import type { ArtifactReference } from './reference.ts';
import type { VerificationFinding } from './verify.ts';

export const SIMPLE_SIGNING_MEDIA_TYPE = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
const SIMPLE_SIGNING_TYPE = 'cosign container image signature';

export type SignatureCheck =
  | { readonly verdict: 'valid'; readonly key: PolicyKey }
  | { readonly verdict: 'untrusted' }
  | { readonly verdict: 'otherDigest'; readonly key: PolicyKey; readonly signedDigest: string }
  | { readonly verdict: 'malformed'; readonly why: string };

export function signatureTag(digest: string): string {
  return `${digest.replace(':', '-')}.sig`;
}

const HASH: Readonly<Record<PolicyKey['algorithm'], string | null>> = {
  'ecdsa-p256': 'sha256',
  'ecdsa-p384': 'sha384',
  'ecdsa-p521': 'sha512',
  rsa: 'sha256',
  ed25519: null,
};

/** Which listed key (if any) made `signature` over `payload`; the first that verifies wins. */
export function keyThatSigned(
  payload: Uint8Array,
  signature: Uint8Array,
  keys: readonly PolicyKey[],
): PolicyKey | undefined {
  return keys.find((key) => {
    try {
      return verify(HASH[key.algorithm], payload, createPublicKey(key.publicKeyPem), signature);
    } catch {
      return false;
    }
  });
}

/** The digest a simple-signing payload names, or why it names none. */
export function signedDigestOf(payload: Uint8Array): { digest: string } | { why: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    return { why: 'the payload is not UTF-8 JSON' };
  }
  const critical = (
    doc as { critical?: { type?: unknown; image?: { 'docker-manifest-digest'?: unknown } } } | null
  )?.critical;
  if (critical?.type !== SIMPLE_SIGNING_TYPE)
    return { why: `the payload's critical.type is not "${SIMPLE_SIGNING_TYPE}"` };
  const digest = critical.image?.['docker-manifest-digest'];
  if (typeof digest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(digest))
    return { why: "the payload's critical.image.docker-manifest-digest is not a sha256 digest" };
  return { digest };
}

/** Checks one signature layer: its payload blob is fetched (digest-verified, bounded) only if it is well formed. */
export async function checkSimpleSignature(
  client: RegistryClient,
  ref: ArtifactReference,
  layer: Descriptor,
  artifactDigest: string,
  keys: readonly PolicyKey[],
  signal?: AbortSignal,
): Promise<SignatureCheck> {
  if (layer.mediaType !== SIMPLE_SIGNING_MEDIA_TYPE)
    return { verdict: 'malformed', why: `its media type is ${layer.mediaType.slice(0, 100)}` };
  const encoded = layer.annotations?.[SIGNATURE_ANNOTATION];
  if (encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length > 8192) {
    return { verdict: 'malformed', why: `it has no base64 ${SIGNATURE_ANNOTATION} annotation` };
  }
  const payload = await client.getBlob(ref, layer, client.limits.signatureBytes, signal);
  const key = keyThatSigned(payload, Buffer.from(encoded, 'base64'), keys);
  if (key === undefined) return { verdict: 'untrusted' };
  const signed = signedDigestOf(payload);
  if ('why' in signed) return { verdict: 'malformed', why: signed.why };
  if (signed.digest !== artifactDigest) return { verdict: 'otherDigest', key, signedDigest: signed.digest };
  return { verdict: 'valid', key };
}

/**
 * What a signature that does not count says, for a cosign signature and a Sigstore bundle alike; a valid one
 * gives no finding. `what` names the thing checked, `signed` what a changed one had changed.
 */
export function signatureFinding(
  check: SignatureCheck,
  where: string,
  digest: string,
  what: { readonly signed: string; readonly kind: string },
): VerificationFinding | undefined {
  switch (check.verdict) {
    case 'valid':
      return undefined;
    case 'untrusted':
      return {
        rule: 'signature-untrusted',
        message: `${where} verifies under none of the policy's keys: it was made by another key, or its ${what.signed} was changed`,
        blocking: true,
      };
    case 'otherDigest':
      return {
        rule: 'signature-digest',
        message: `${where} by key ${check.key.name} covers ${check.signedDigest}, not ${digest}`,
        blocking: true,
      };
    case 'malformed':
      return {
        rule: 'signature-malformed',
        message: `${where} is not ${what.kind}: ${check.why}`,
        blocking: true,
      };
  }
}
