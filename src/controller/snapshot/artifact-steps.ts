/**
 * Resolve → Verify for an OCI source, and Resolve alone for a Git source, for both families: the steps each
 * family's `decide` takes before it reads the database (Observe for a schema, History for a migration). A
 * family supplies its own claim, fail, block and retire through `ArtifactFamily`; the decisions about the
 * source are made here once.
 *
 * - Resolve records the digest behind the requested reference. A digest other than the recorded one is a
 *   new source: the plan retires (its approvals go Stale). A resource that came from a ConfigMap loses its
 *   last snapshot with this first resolution.
 * - Verify evaluates the policy bound by UID and digest. Satisfied, the read follows; refused, the
 *   resource is Blocked with the finding named, and the interval still runs the whole pipeline again.
 * - A registry that cannot be reached leaves what was recorded and says the source's freshness is unknown.
 * - A policy replaced in the cluster (another UID or other bytes) is a changed input: the plan made under
 *   the old one retires and the pipeline runs again at once.
 * - A Git Resolve records the commit the ref names and the content digest of the selected files; the read
 *   follows directly (no verification policy). Another content digest, repository or path retires the plan;
 *   a commit that leaves the selected files as they were keeps it. A refused source (a submodule, an LFS
 *   pointer, an unpinned host key, a commit the server does not give) fails with Ptah's last line.
 * - A Git source may name a source policy (source-policy.ts): a host it refuses fails before any Resolve
 *   Job is made, and a commit whose selected files are over its size fails before the commit is recorded;
 *   either retires the plan and plans nothing. The policy is recorded beside the commit; one replaced in
 *   the cluster retires the plan made under the old one, and the commit is resolved again under the new.
 */
import type { DesiredSource, Resolution } from '../../api/ptah-schema.ts';
import type { GitJobSource } from '../jobs/git-job-source.ts';
import { gitPinnedReference, gitRequestedReference } from './git-reference.ts';
import { MAX_FINDING_MESSAGE, type RunnerResult } from '../../protocol/result.ts';
import type { CollectSnapshots } from './record-resolution.ts';
import {
  checkSource,
  gitHostCheck,
  samePolicy,
  selectedSizeCheck,
  type SourcePolicyRead,
} from './source-policy.ts';

/** spec.desired.oci as both families' views carry it: names only, never a credential. */
export interface OciSourceView {
  readonly reference: string;
  readonly credentialsSecretName?: string;
  readonly ca?: { readonly name: string; readonly key: string };
  readonly plainHttp: boolean;
}

export function ociSourceView(desired: DesiredSource): OciSourceView | undefined {
  const oci = desired.oci;
  if (oci === undefined) return undefined;
  return {
    reference: oci.reference,
    ...(oci.credentialsSecretRef !== undefined
      ? { credentialsSecretName: oci.credentialsSecretRef.name }
      : {}),
    ...(oci.caConfigMapRef !== undefined
      ? { ca: { name: oci.caConfigMapRef.name, key: oci.caConfigMapRef.key } }
      : {}),
    plainHttp: oci.plainHttp === true,
  };
}

/** spec.desired.git as both families' views carry it: names only, the ref spelled as the runner reads it. */
export type GitSourceView = GitJobSource;

export function gitSourceView(desired: DesiredSource): GitSourceView | undefined {
  const git = desired.git;
  if (git === undefined) return undefined;
  const ref =
    git.branch !== undefined
      ? `refs/heads/${git.branch}`
      : git.tag !== undefined
        ? `refs/tags/${git.tag}`
        : (git.commit ?? '');
  return {
    kind: 'git',
    repository: git.repository,
    ref,
    path: git.path ?? '.',
    ...(git.credentialsSecretRef !== undefined
      ? { credentialsSecretName: git.credentialsSecretRef.name }
      : {}),
    ...(git.caConfigMapRef !== undefined
      ? { ca: { name: git.caConfigMapRef.name, key: git.caConfigMapRef.key } }
      : {}),
    ...(git.knownHostsConfigMapRef !== undefined
      ? { knownHosts: { name: git.knownHostsConfigMapRef.name, key: git.knownHostsConfigMapRef.key } }
      : {}),
    plainHttp: git.plainHttp === true,
  };
}

/** The verification policy as the manager read it: bound by UID and digest, or why it cannot be used. */
export type PolicyRead =
  | { readonly ok: true; readonly name: string; readonly uid: string; readonly digest: string }
  | {
      readonly ok: false;
      readonly reason: 'PolicyNotFound' | 'PolicyMutable' | 'PolicyInvalid';
      readonly message: string;
    };

/** What a decision knows of an OCI source. */
export interface OciArtifactInput {
  readonly kind: 'oci';
  readonly reference: string;
  /** The family's artifact type, which Verify checks independently of the policy. */
  readonly artifactType: string;
  readonly policy: PolicyRead;
}

/** What a decision knows of a Git source: what it names, and the reference a Resolve claim binds. */
export interface GitArtifactInput {
  readonly kind: 'git';
  /** `<repository>#<ref>:<path>` (git-reference.ts). */
  readonly reference: string;
  readonly repository: string;
  readonly ref: string;
  readonly path: string;
  /** The source policy spec.sourcePolicyFrom names, as read now; absent when it names none. */
  readonly sourcePolicy?: SourcePolicyRead | undefined;
}

/** A source resolved by a Job: an OCI artifact, or a Git commit. */
export type ArtifactInput = OciArtifactInput | GitArtifactInput;

export function gitArtifactInput(git: GitSourceView, sourcePolicy?: SourcePolicyRead): GitArtifactInput {
  return {
    kind: 'git',
    reference: gitRequestedReference(git),
    repository: git.repository,
    ref: git.ref,
    path: git.path,
    ...(sourcePolicy !== undefined ? { sourcePolicy } : {}),
  };
}

/** The host check a Git Resolve must pass before its Job is made. */
function gitHostVerdict(artifact: GitArtifactInput): ReturnType<typeof checkSource> {
  return checkSource(artifact.sourcePolicy, gitHostCheck(artifact.repository));
}

/** The source inputs a Resolve or Verify claim binds (a read after them binds the resolution itself). */
export interface ArtifactClaimInputs {
  readonly artifactReference: string;
  readonly contentDigest?: string;
  readonly verificationPolicy?: { readonly name: string; readonly uid: string; readonly digest: string };
}

interface ArtifactBuilder {
  readonly status: { resolution?: Resolution | undefined };
  readonly now: string;
  readonly post: { push(action: CollectSnapshots): unknown };
  cond(type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string): unknown;
  event(type: 'Normal' | 'Warning', reason: string, message: string): unknown;
}

/** What differs between the families: how they claim, fail, block, retire and say freshness is unknown. */
export interface ArtifactFamily {
  claim(type: 'Resolve' | 'Verify', inputs: ArtifactClaimInputs): void;
  /** The read that follows a satisfied Verify: Observe, or History. */
  claimRead(): void;
  fail(operation: 'Resolve' | 'Verify', reason: string, message: string): void;
  /** Blocked, with the condition the family names the refusal in. */
  block(reason: string, message: string): void;
  retirePlan(message: string, reason: string): void;
  /** The conditions that depend on a fresh source, Unknown while the registry cannot be read. */
  freshnessUnknown(message: string): void;
}

/** The source a read binds, either family: the snapshot, or the verified artifact by pinned reference and policy. */
export function resolutionInputs(res: Resolution): {
  contentDigest: string;
  snapshotName?: string;
  configMapUID?: string;
  artifactReference?: string;
  verificationPolicy?: { name: string; uid: string; digest: string };
} {
  const v = res.verification;
  return {
    contentDigest: res.contentDigest,
    ...(res.snapshotName !== undefined ? { snapshotName: res.snapshotName } : {}),
    ...(res.configMapUID !== undefined ? { configMapUID: res.configMapUID } : {}),
    ...(res.resolvedReference !== undefined ? { artifactReference: res.resolvedReference } : {}),
    ...(v !== undefined
      ? { verificationPolicy: { name: v.policyName, uid: v.policyUID, digest: v.policyDigest } }
      : {}),
  };
}

/** Whether the recorded resolution answers the spec's reference under the policy as it is now. */
export function artifactCurrent(res: Resolution | undefined, artifact: ArtifactInput): boolean {
  if (artifact.kind === 'git')
    return (
      res?.sourceType === 'Git' &&
      res.requestedReference === artifact.reference &&
      samePolicy(res.sourcePolicy, artifact.sourcePolicy)
    );
  const v = res?.verification;
  return (
    res?.sourceType === 'OCI' &&
    res.requestedReference === artifact.reference &&
    artifact.policy.ok &&
    v !== undefined &&
    v.policyUID === artifact.policy.uid &&
    v.policyDigest === artifact.policy.digest
  );
}

/**
 * An idle pass with an OCI source: the policy gate, and whether the recorded verdict still answers the
 * policy. `proceed: false` means the family stops here (Blocked on the policy). A verdict under a policy
 * since replaced is a changed input: the plan made under it retires and the pipeline runs now.
 */
export function artifactIdle(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  artifact: ArtifactInput,
): { readonly proceed: boolean; readonly inputsChanged: boolean } {
  if (artifact.kind === 'git') return gitIdle(b, family, artifact);
  const policy = artifact.policy;
  if (!policy.ok) {
    b.cond('ArtifactVerified', 'False', policy.reason, policy.message);
    family.retirePlan(policy.message, 'PolicyChanged');
    family.block(policy.reason, policy.message);
    return { proceed: false, inputsChanged: false };
  }
  const res = b.status.resolution;
  if (artifactCurrent(res, artifact)) return { proceed: true, inputsChanged: false };
  const v = res?.verification;
  if (res?.sourceType === 'OCI' && v !== undefined && res.requestedReference === artifact.reference) {
    // Once: the verdict under the old policy goes with the plan, and the pipeline runs again now. Until a
    // new Verify records one, nothing reads from the artifact (a refresh always starts with Resolve).
    const { verification: _void, ...unverified } = res;
    b.status.resolution = unverified;
    family.retirePlan(
      `the verification policy ${policy.name} was replaced; plans made under the old one retire`,
      'PolicyChanged',
    );
    return { proceed: true, inputsChanged: true };
  }
  // Not resolved yet (or from another source or reference): the next read, when due, starts with Resolve.
  return { proceed: true, inputsChanged: false };
}

/**
 * An idle pass with a Git source: the source policy gate (a host it refuses gets no Resolve Job), and
 * whether the recorded commit was resolved under the policy as it is now. Without a source policy the
 * recorded commit answers, or the next read starts with Resolve.
 */
function gitIdle(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  artifact: GitArtifactInput,
): { readonly proceed: boolean; readonly inputsChanged: boolean } {
  const verdict = gitHostVerdict(artifact);
  if (!verdict.ok) {
    b.cond('ArtifactResolved', 'False', verdict.reason, verdict.message);
    family.retirePlan(verdict.message, verdict.reason);
    family.fail('Resolve', verdict.reason, verdict.message);
    return { proceed: false, inputsChanged: false };
  }
  const res = b.status.resolution;
  if (
    res?.sourceType === 'Git' &&
    res.requestedReference === artifact.reference &&
    res.sourcePolicy !== undefined &&
    !samePolicy(res.sourcePolicy, artifact.sourcePolicy)
  ) {
    // Once: the commit recorded under the old policy loses it, the plan goes, and Resolve runs now under
    // the new one (which records it again). A failed Resolve meanwhile keeps its retry delay.
    const { sourcePolicy: old, ...unbound } = res;
    b.status.resolution = unbound;
    family.retirePlan(
      verdict.policy === undefined
        ? `the source policy ${old.name} is no longer named; plans made under it retire`
        : `the source policy ${verdict.policy.name} was replaced; plans made under the old one retire`,
      'SourcePolicyChanged',
    );
    return { proceed: true, inputsChanged: true };
  }
  return { proceed: true, inputsChanged: false };
}

/** Starts the pipeline: Resolve the requested reference. */
export function startResolve(family: ArtifactFamily, artifact: ArtifactInput): void {
  family.claim('Resolve', { artifactReference: artifact.reference });
}

/** A Resolve claim of the current inputs, or a Verify claim under the policy as it is now. */
export function artifactClaimMoved(
  claim: {
    readonly type: string;
    readonly artifactReference?: string | undefined;
    readonly verificationPolicy?: { readonly uid: string; readonly digest: string } | undefined;
  },
  artifact: ArtifactInput | undefined,
): boolean {
  if (artifact === undefined) return true;
  if (claim.type === 'Resolve')
    return (
      claim.artifactReference !== artifact.reference ||
      (artifact.kind === 'git' && !gitHostVerdict(artifact).ok)
    );
  if (artifact.kind === 'git') return true;
  const p = artifact.policy;
  return !p.ok || claim.verificationPolicy?.uid !== p.uid || claim.verificationPolicy.digest !== p.digest;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function resolveResult(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  artifact: ArtifactInput,
  result: RunnerResult,
): void {
  if (artifact.kind === 'git') {
    gitResolveResult(b, family, artifact, result);
    return;
  }
  const st = b.status;
  const previous = st.resolution;
  const out = result.outputs.artifact;
  if (
    result.outcome !== 'succeeded' ||
    out === undefined ||
    !DIGEST.test(out.digest) ||
    out.requestedReference !== artifact.reference ||
    !out.resolvedReference.endsWith(`@${out.digest}`)
  ) {
    const detail = result.error?.message ?? 'the registry gave no digest for the reference';
    registryUnreadable(b, family, 'Resolve', `${artifact.reference} could not be resolved: ${detail}`);
    return;
  }
  const same =
    previous?.sourceType === 'OCI' &&
    previous.digest === out.digest &&
    previous.requestedReference === out.requestedReference;
  st.resolution = {
    sourceType: 'OCI',
    requestedReference: out.requestedReference,
    resolvedReference: out.resolvedReference,
    digest: out.digest,
    contentDigest: out.digest,
    mediaType: out.mediaType.slice(0, 255),
    artifactType: out.artifactType.slice(0, 255),
    size: Math.max(0, Math.floor(out.size)),
    resolvedAt: same ? previous.resolvedAt : b.now,
    // The same digest keeps its verdict until Verify says it again, so a plan bound to it stays current.
    ...(same && previous.verification !== undefined ? { verification: previous.verification } : {}),
  };
  if (previous !== undefined && !same) {
    family.retirePlan(
      `${artifact.reference} now names ${out.digest}; the plan describes another artifact`,
      'PlanNoLongerCurrent',
    );
    b.event('Normal', 'ArtifactChanged', `${artifact.reference} resolved to ${out.digest}`);
  }
  b.cond('ArtifactResolved', 'True', 'DigestPinned', `${artifact.reference} resolved to ${out.digest}`);
  // A source that moved here from a ConfigMap keeps no snapshot.
  b.post.push({ kind: 'collectSnapshots', keep: [] });
  const policy = artifact.policy;
  if (!policy.ok) {
    family.block(policy.reason, policy.message);
    return;
  }
  family.claim('Verify', {
    artifactReference: out.resolvedReference,
    contentDigest: out.digest,
    verificationPolicy: { name: policy.name, uid: policy.uid, digest: policy.digest },
  });
}

export function verifyResult(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  artifact: ArtifactInput,
  claim: {
    readonly verificationPolicy?: { readonly name: string; readonly uid: string; readonly digest: string };
  },
  result: RunnerResult,
): void {
  const st = b.status;
  const res = st.resolution;
  const out = result.outputs.verification;
  const policy = claim.verificationPolicy;
  if (
    artifact.kind !== 'oci' ||
    res?.sourceType !== 'OCI' ||
    res.digest === undefined ||
    policy === undefined
  ) {
    family.fail('Verify', 'SourceUnresolved', 'the artifact was not resolved before its verification');
    return;
  }
  if (result.outcome !== 'succeeded' || out === undefined) {
    if (result.outcome === 'refused') {
      // The Job itself was refused (policy bytes, a grant): nothing to do with the registry's health.
      const message = `verification of ${res.digest} was refused: ${result.error?.message ?? 'no reason given'}`;
      b.cond('ArtifactVerified', 'False', 'VerifyFailed', message);
      family.fail('Verify', 'VerifyFailed', message);
      return;
    }
    const detail = result.error?.message ?? 'no verdict came back';
    registryUnreadable(b, family, 'Verify', `${res.digest} could not be verified: ${detail}`);
    return;
  }
  if (out.policyDigest !== policy.digest || out.digest !== res.digest) {
    const message = 'the verdict names another policy or artifact than the Verify was bound to';
    b.cond('ArtifactVerified', 'False', 'VerifyFailed', message);
    family.fail('Verify', 'VerifyFailed', message);
    return;
  }
  const typeOk = out.inspectedArtifactType === artifact.artifactType;
  const first =
    out.findings[0] ??
    (typeOk
      ? undefined
      : {
          rule: 'artifact-type',
          message: `the artifact type is ${JSON.stringify(out.inspectedArtifactType.slice(0, 100))}, not ${artifact.artifactType}`,
        });
  const base = {
    policyName: policy.name,
    policyUID: policy.uid,
    policyDigest: policy.digest,
    verifiedAt: b.now,
    ...(out.signers.length > 0 ? { signers: out.signers.slice(0, 16).map((s) => s.slice(0, 128)) } : {}),
  };
  if (out.satisfied && typeOk && first === undefined) {
    st.resolution = { ...res, verification: base };
    b.cond(
      'ArtifactVerified',
      'True',
      'PolicySatisfied',
      `${res.digest} satisfies policy ${policy.name}${out.signers.length > 0 ? `, signed by ${out.signers.join(', ')}` : ''}`,
    );
    family.claimRead();
    return;
  }
  const rule = /^[a-z][a-z0-9-]{0,63}$/.test(first?.rule ?? '') ? first!.rule : 'policy';
  const finding = (first?.message ?? 'the policy is not satisfied').slice(0, MAX_FINDING_MESSAGE);
  const message = `policy ${policy.name} refused ${res.digest}: ${rule}: ${finding}`;
  st.resolution = { ...res, verification: { ...base, refused: { rule, message: finding } } };
  b.cond('ArtifactVerified', 'False', 'PolicyRefused', message);
  family.retirePlan(message, 'PolicyRefused');
  family.block('PolicyRefused', message);
}

const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * A Git Resolve's answer. The commit and content digest are recorded with the repository, ref and path;
 * the read follows directly. Other files, or another repository or path, retire the plan; a new commit
 * that leaves the selected files as they were keeps it (the plan binds the files, not the commit).
 */
function gitResolveResult(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  artifact: GitArtifactInput,
  result: RunnerResult,
): void {
  const st = b.status;
  const previous = st.resolution;
  const out = result.outputs.gitCommit;
  const valid =
    result.outcome === 'succeeded' &&
    out !== undefined &&
    COMMIT.test(out.commit) &&
    DIGEST.test(out.contentDigest) &&
    DIGEST.test(out.sourceDigest) &&
    out.repository === artifact.repository &&
    out.ref === artifact.ref &&
    out.path === artifact.path;
  if (!valid) {
    const detail = result.error?.message ?? 'the Resolve gave no commit for the ref';
    const message = `${artifact.ref} of ${artifact.repository} could not be resolved: ${detail}`.slice(
      0,
      1024,
    );
    if (result.outcome === 'refused') {
      // The source itself was refused (a submodule, an LFS pointer, an unpinned host key, a grant …): the
      // answer will not change by asking again soon, and the recorded commit is no longer what the ref names.
      b.cond('ArtifactResolved', 'False', 'SourceRefused', message);
      family.fail('Resolve', 'SourceRefused', message);
      return;
    }
    gitUnreadable(b, family, message);
    return;
  }
  // Before the commit is recorded: the policy as it is now, on the host and on the files the commit holds.
  const verdict = checkSource(
    artifact.sourcePolicy,
    gitHostCheck(artifact.repository),
    selectedSizeCheck(Math.max(0, Math.floor(out.size)), `commit ${out.commit} at ${out.path}`),
  );
  if (!verdict.ok) {
    b.cond('ArtifactResolved', 'False', verdict.reason, verdict.message);
    family.retirePlan(verdict.message, verdict.reason);
    family.fail('Resolve', verdict.reason, verdict.message);
    return;
  }
  const same =
    previous?.sourceType === 'Git' &&
    previous.contentDigest === out.contentDigest &&
    previous.sourceDigest === out.sourceDigest;
  // A policy replaced since the commit was recorded (and not yet retired by an idle pass) retires too.
  const policyMoved =
    previous?.sourceType === 'Git' &&
    previous.sourcePolicy !== undefined &&
    (previous.sourcePolicy.uid !== verdict.policy?.uid ||
      previous.sourcePolicy.digest !== verdict.policy.digest);
  st.resolution = {
    sourceType: 'Git',
    requestedReference: artifact.reference,
    resolvedReference: gitPinnedReference({ repository: out.repository, commit: out.commit, path: out.path }),
    repository: out.repository,
    ref: out.ref,
    path: out.path,
    commit: out.commit,
    sourceDigest: out.sourceDigest,
    contentDigest: out.contentDigest,
    fileCount: Math.max(0, Math.floor(out.files)),
    size: Math.max(0, Math.floor(out.size)),
    ...(verdict.policy !== undefined ? { sourcePolicy: verdict.policy } : {}),
    resolvedAt: same && previous.commit === out.commit ? previous.resolvedAt : b.now,
  };
  if (previous !== undefined && !same) {
    family.retirePlan(
      `${artifact.ref} of ${artifact.repository} now gives ${out.contentDigest} at ${out.path} (commit ${out.commit}); the plan describes other files`,
      'PlanNoLongerCurrent',
    );
    b.event(
      'Normal',
      'ArtifactChanged',
      `${artifact.ref} resolved to commit ${out.commit}, files ${out.contentDigest}`,
    );
  }
  if (policyMoved) {
    family.retirePlan(
      `the source policy ${previous.sourcePolicy!.name} was replaced; plans made under the old one retire`,
      'SourcePolicyChanged',
    );
  }
  b.cond(
    'ArtifactResolved',
    'True',
    'CommitResolved',
    `${artifact.ref} of ${artifact.repository} resolved to commit ${out.commit}`,
  );
  // A source that moved here from a ConfigMap keeps no snapshot.
  b.post.push({ kind: 'collectSnapshots', keep: [] });
  family.claimRead();
}

/** The Git server could not be read: what was recorded stays, and what depends on its freshness is Unknown. */
function gitUnreadable(b: ArtifactBuilder, family: ArtifactFamily, message: string): void {
  if (b.status.resolution?.sourceType === 'Git') {
    b.cond('ArtifactResolved', 'Unknown', 'RefreshFailed', message);
    family.freshnessUnknown(message);
    family.fail('Resolve', 'RefreshFailed', message);
    return;
  }
  b.cond('ArtifactResolved', 'False', 'ResolveFailed', message);
  family.fail('Resolve', 'ResolveFailed', message);
}

/** The registry could not be read: what was recorded stays, and what depends on its freshness is Unknown. */
function registryUnreadable(
  b: ArtifactBuilder,
  family: ArtifactFamily,
  operation: 'Resolve' | 'Verify',
  message: string,
): void {
  const recorded = b.status.resolution?.sourceType === 'OCI';
  const type = operation === 'Resolve' ? 'ArtifactResolved' : 'ArtifactVerified';
  if (recorded) {
    b.cond(type, 'Unknown', 'RefreshFailed', message);
    family.freshnessUnknown(message);
    family.fail(operation, 'RefreshFailed', message);
    return;
  }
  const reason = operation === 'Resolve' ? 'ResolveFailed' : 'VerifyFailed';
  b.cond(type, 'False', reason, message);
  family.fail(operation, reason, message);
}

/**
 * What status says when a source init container stopped the Pod: which one, the runner's code, that nothing
 * ran, and why in the runner's words (for a Git fetch, the last line Ptah wrote), as a Resolve's refusal does.
 */
export function sourceRefusalMessage(harvest: {
  readonly container: string;
  readonly code?: string;
  readonly detail?: string;
}): string {
  const code = harvest.code !== undefined ? ` (${harvest.code})` : '';
  const detail = harvest.detail !== undefined ? `: ${harvest.detail}` : '';
  return `the ${harvest.container} init container stopped the Pod${code}; nothing ran${detail}`;
}
