/**
 * Sigstore bundles attached as referrers (cosign's `--new-bundle-format`): a manifest whose subject is
 * the artifact, with artifactType `application/vnd.dev.sigstore.bundle.v0.3+json` and the bundle JSON as
 * its layer. Key-signed bundles carry either a DSSE envelope (an in-toto statement whose subject is the
 * artifact's digest, signed over DSSE's pre-authentication encoding) or a message signature over the
 * artifact's manifest bytes. Verification is against the policy's keys only: no transparency log, no
 * certificate chain, since the policy trusts keys, not identities.
 */
import { createHash } from 'node:crypto';
import type { RegistryClient } from './client.ts';
import { keyThatSigned, signatureFinding, type SignatureCheck } from './cosign.ts';
import { artifactTypeOf, MEDIA_TYPE } from './manifest.ts';
import type { PolicyKey } from './policy.ts';
import type { ArtifactReference } from './reference.ts';
import type { VerificationFinding } from './verify.ts';

export const BUNDLE_ARTIFACT_TYPES = [
  'application/vnd.dev.sigstore.bundle.v0.3+json',
  'application/vnd.dev.sigstore.bundle+json;version=0.3',
];

export interface BundleChecks {
  readonly examined: number;
  readonly signers: readonly string[];
  readonly findings: readonly VerificationFinding[];
}

export async function checkBundleReferrers(
  client: RegistryClient,
  ref: ArtifactReference,
  digest: string,
  keys: readonly PolicyKey[],
  budget: number,
  signal?: AbortSignal,
): Promise<BundleChecks> {
  const signers: string[] = [];
  const findings: VerificationFinding[] = [];
  let examined = 0;
  let fetched = 0;
  if (budget <= 0) return { examined, signers, findings };
  const { descriptors } = await client.referrers(ref, digest, undefined, signal);
  const manifestBytes = (await client.getManifest(ref, digest, signal)).bytes;
  for (const d of descriptors) {
    if (examined >= budget) break;
    // go-containerregistry (cosign) writes the config's media type, the empty one, as the entry's
    // artifactType in the fallback index; the referrer manifest itself names the bundle type.
    if (
      d.artifactType !== undefined &&
      d.artifactType !== MEDIA_TYPE.ociEmpty &&
      !BUNDLE_ARTIFACT_TYPES.includes(d.artifactType)
    )
      continue;
    // Each candidate costs a manifest read: bounded like the signatures themselves.
    if (++fetched > budget) break;
    const referrer = await client.getManifest(ref, d.digest, signal);
    if (
      referrer.manifest.kind !== 'manifest' ||
      !BUNDLE_ARTIFACT_TYPES.includes(artifactTypeOf(referrer.manifest))
    )
      continue;
    examined++;
    const where = `Sigstore bundle ${d.digest}`;
    const layer = referrer.manifest.layers[0];
    const subject = referrer.manifest.subject?.digest;
    let check: SignatureCheck;
    if (layer === undefined) check = { verdict: 'malformed', why: 'its manifest has no layer' };
    else if (subject !== digest)
      check = { verdict: 'malformed', why: `its manifest's subject is ${subject ?? 'absent'}` };
    else
      check = checkBundle(
        await client.getBlob(ref, layer, client.limits.signatureBytes, signal),
        digest,
        manifestBytes,
        keys,
      );
    if (check.verdict === 'valid') signers.push(check.key.name);
    const finding = signatureFinding(check, where, digest, { signed: 'content', kind: 'a usable bundle' });
    if (finding !== undefined) findings.push(finding);
  }
  return { examined, signers, findings };
}

/** DSSE's pre-authentication encoding: what a DSSE signature is over. */
export function dssePae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `),
    type,
    Buffer.from(` ${payload.length} `),
    payload,
  ]);
}

export function checkBundle(
  bytes: Uint8Array,
  digest: string,
  manifestBytes: Uint8Array,
  keys: readonly PolicyKey[],
): SignatureCheck {
  let doc: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return { verdict: 'malformed', why: 'it is not a JSON object' };
    doc = parsed as Record<string, unknown>;
  } catch {
    return { verdict: 'malformed', why: 'it is not UTF-8 JSON' };
  }
  const envelope = doc['dsseEnvelope'] as
    { payload?: unknown; payloadType?: unknown; signatures?: unknown } | undefined;
  if (envelope !== undefined && envelope !== null) {
    if (
      typeof envelope.payload !== 'string' ||
      typeof envelope.payloadType !== 'string' ||
      !Array.isArray(envelope.signatures)
    ) {
      return { verdict: 'malformed', why: 'its DSSE envelope lacks payload, payloadType or signatures' };
    }
    const payload = Buffer.from(envelope.payload, 'base64');
    const pae = dssePae(envelope.payloadType, payload);
    let key: PolicyKey | undefined;
    for (const s of envelope.signatures.slice(0, 8) as { sig?: unknown }[]) {
      if (typeof s?.sig !== 'string') continue;
      key = keyThatSigned(pae, Buffer.from(s.sig, 'base64'), keys);
      if (key !== undefined) break;
    }
    if (key === undefined) return { verdict: 'untrusted' };
    if (envelope.payloadType !== 'application/vnd.in-toto+json')
      return { verdict: 'malformed', why: `its payload type is ${envelope.payloadType.slice(0, 100)}` };
    const subjects = statementSubjects(payload);
    if (subjects === undefined)
      return { verdict: 'malformed', why: 'its payload is not an in-toto statement with subjects' };
    if (!subjects.includes(digest))
      return { verdict: 'otherDigest', key, signedDigest: subjects[0] ?? 'nothing' };
    return { verdict: 'valid', key };
  }
  const message = doc['messageSignature'] as
    { messageDigest?: { algorithm?: unknown; digest?: unknown }; signature?: unknown } | undefined;
  if (message !== undefined && message !== null && typeof message.signature === 'string') {
    const key = keyThatSigned(manifestBytes, Buffer.from(message.signature, 'base64'), keys);
    if (key === undefined) return { verdict: 'untrusted' };
    const claimed = message.messageDigest?.digest;
    if (typeof claimed === 'string') {
      const claimedHex = Buffer.from(claimed, 'base64').toString('hex');
      const actualHex = createHash('sha256').update(manifestBytes).digest('hex');
      if (claimedHex !== actualHex)
        return { verdict: 'otherDigest', key, signedDigest: `sha256:${claimedHex}` };
    }
    return { verdict: 'valid', key };
  }
  return { verdict: 'malformed', why: 'it has neither a DSSE envelope nor a message signature' };
}

function statementSubjects(payload: Uint8Array): string[] | undefined {
  try {
    const statement = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as {
      subject?: { digest?: { sha256?: unknown } }[];
    };
    if (!Array.isArray(statement.subject)) return undefined;
    return statement.subject.flatMap((s) =>
      typeof s?.digest?.sha256 === 'string' ? [`sha256:${s.digest.sha256}`] : [],
    );
  } catch {
    return undefined;
  }
}
