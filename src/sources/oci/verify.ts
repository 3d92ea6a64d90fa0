/**
 * Evaluates a verification policy against a digest-pinned artifact. Every rule that fails adds a finding
 * with the rule's name, so a Blocked status can say which one; a finding that does not block (a signature
 * that does not count, beside enough that do) is reported too.
 */
import { describeManifest, type ResolvedArtifact } from './artifacts.ts';
import { RegistryClient, type RegistryAccess } from './client.ts';
import { checkSimpleSignature, signatureFinding, signatureTag } from './cosign.ts';
import { checkBundleReferrers } from './bundle.ts';
import type { VerificationPolicy } from './policy.ts';
import { parseReference, type ArtifactReference } from './reference.ts';

/** The rule names a finding can carry. */
export type VerificationRule =
  | 'artifact-type'
  | 'required-annotation'
  | 'digest-pin'
  | 'signature-missing'
  | 'signature-untrusted'
  | 'signature-digest'
  | 'signature-malformed'
  | 'signer-count';

export interface VerificationFinding {
  readonly rule: VerificationRule;
  readonly message: string;
  /** False for a finding that does not refuse the artifact by itself. */
  readonly blocking: boolean;
}

export interface VerificationOutcome {
  readonly satisfied: boolean;
  readonly artifact: ResolvedArtifact;
  readonly findings: readonly VerificationFinding[];
  /** Names of the policy keys with a valid signature over this digest, sorted. */
  readonly signers: readonly string[];
}

export interface VerifyOptions {
  /** The reference the resource asked for (a tag, maybe), for `require_digest_pin`; default: the one verified. */
  readonly requestedReference?: string;
}

export async function verifyArtifact(
  pinnedReference: string,
  access: RegistryAccess,
  policy: VerificationPolicy,
  signal?: AbortSignal,
  options: VerifyOptions = {},
): Promise<VerificationOutcome> {
  const ref = parseReference(pinnedReference);
  const client = new RegistryClient(access);
  const fetched = await client.getManifest(ref, ref.digest ?? ref.tag ?? 'latest', signal);
  const artifact = describeManifest(pinnedReference, ref, fetched);
  const findings: VerificationFinding[] = [];
  const block = (rule: VerificationRule, message: string) => findings.push({ rule, message, blocking: true });

  const requested = options.requestedReference ?? pinnedReference;
  if (policy.requireDigestPin && parseReference(requested).digest === undefined) {
    block(
      'digest-pin',
      `the policy requires a digest-pinned reference, and ${requested.slice(0, 200)} names a tag; use ${artifact.resolvedReference}`,
    );
  }
  if (!policy.artifactTypes.includes(artifact.artifactType)) {
    block(
      'artifact-type',
      `the artifact type is ${JSON.stringify(artifact.artifactType)}; the policy allows ${policy.artifactTypes.join(', ')}`,
    );
  }
  for (const required of policy.requiredAnnotations) {
    const actual = artifact.annotations[required.name];
    if (actual === undefined) block('required-annotation', `the manifest has no annotation ${required.name}`);
    else if (required.value !== undefined && actual !== required.value) {
      block(
        'required-annotation',
        `the annotation ${required.name} is ${JSON.stringify(actual.slice(0, 200))}, not ${JSON.stringify(required.value)}`,
      );
    }
  }

  const signers = new Set<string>();
  if (policy.signatures !== undefined) {
    const found = await collectSignatures(
      client,
      { ...ref, digest: artifact.digest },
      artifact.digest,
      policy,
      signal,
    );
    for (const s of found.signers) signers.add(s);
    findings.push(...found.findings);
    const required = policy.signatures.requiredSigners;
    if (found.examined === 0) {
      block(
        'signature-missing',
        `no cosign signature (tag ${signatureTag(artifact.digest)}) or Sigstore bundle referrer is attached to ${artifact.digest}`,
      );
    }
    if (signers.size < required) {
      block(
        'signer-count',
        `${signers.size} of the policy's keys signed ${artifact.digest}${signers.size > 0 ? ` (${[...signers].sort().join(', ')})` : ''}; ${required} required`,
      );
    } else {
      // Enough signers: the signatures that did not count are reported, not blocking.
      for (let i = 0; i < findings.length; i++) {
        const f = findings[i]!;
        if (f.rule.startsWith('signature-')) findings[i] = { ...f, blocking: false };
      }
    }
  }
  return {
    satisfied: findings.every((f) => !f.blocking),
    artifact,
    findings,
    signers: [...signers].sort(),
  };
}

interface CollectedSignatures {
  readonly examined: number;
  readonly signers: readonly string[];
  readonly findings: readonly VerificationFinding[];
}

async function collectSignatures(
  client: RegistryClient,
  ref: ArtifactReference,
  digest: string,
  policy: VerificationPolicy,
  signal: AbortSignal | undefined,
): Promise<CollectedSignatures> {
  const keys = policy.signatures?.keys ?? [];
  const signers: string[] = [];
  const findings: VerificationFinding[] = [];
  let examined = 0;
  const limit = client.limits.signatures;
  const sigManifest = await client.getManifestIfPresent(ref, signatureTag(digest), signal);
  if (sigManifest !== undefined && sigManifest.manifest.kind === 'manifest') {
    for (const [i, layer] of sigManifest.manifest.layers.entries()) {
      if (examined >= limit) break;
      examined++;
      const where = `cosign signature ${i} (tag ${signatureTag(digest)})`;
      const check = await checkSimpleSignature(client, ref, layer, digest, keys, signal);
      if (check.verdict === 'valid') signers.push(check.key.name);
      const finding = signatureFinding(check, where, digest, {
        signed: 'payload',
        kind: 'a cosign signature',
      });
      if (finding !== undefined) findings.push(finding);
    }
  }
  const bundles = await checkBundleReferrers(client, ref, digest, keys, limit - examined, signal);
  examined += bundles.examined;
  signers.push(...bundles.signers);
  findings.push(...bundles.findings);
  return { examined, signers: [...new Set(signers)], findings };
}
