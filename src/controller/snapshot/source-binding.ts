/**
 * What a plan of either family binds of its source: the ConfigMap's UID and the content digest for a
 * ConfigMap source; the artifact digest and the verification policy's UID and digest for an OCI source
 * (tag → digest → policy UID + digest → plan fingerprint); the SHA-256 of the repository URL and path with
 * the content digest for a Git source, so another repository or path retires a plan even when the files
 * match, and a commit that leaves the selected files as they were keeps it. A ConfigMap or Git source checked
 * against a source policy binds its UID and digest too, so an edited policy retires the plan. One function,
 * so both families bind alike.
 */
import type { Resolution } from '../../api/ptah-schema.ts';

export interface SourceBinding {
  readonly sourceType: Resolution['sourceType'];
  readonly configMapUID?: string;
  readonly contentDigest: string;
  readonly verificationPolicyUID?: string;
  readonly verificationPolicyDigest?: string;
  readonly sourceDigest?: string;
  readonly sourcePolicyUID?: string;
  readonly sourcePolicyDigest?: string;
}

/** The binding as it stands now, each member undefined when status does not record it (live comparison). */
export function liveSourceBinding(res: Resolution | undefined): {
  readonly [K in keyof Required<SourceBinding>]: SourceBinding[K] | undefined;
} {
  return {
    sourceType: res?.sourceType,
    configMapUID: res?.configMapUID,
    contentDigest: res?.contentDigest,
    verificationPolicyUID: res?.verification?.policyUID,
    verificationPolicyDigest: res?.verification?.policyDigest,
    sourceDigest: res?.sourceDigest,
    sourcePolicyUID: res?.sourcePolicy?.uid,
    sourcePolicyDigest: res?.sourcePolicy?.digest,
  };
}

/** The binding a plan publishes, or the members its source type needs and status does not record. */
export function sourceBinding(
  res: Resolution | undefined,
): { readonly ok: true; readonly value: SourceBinding } | { readonly ok: false; readonly missing: string[] } {
  if (res === undefined) return { ok: false, missing: ['resolution'] };
  if (res.sourceType === 'ConfigMap') {
    if (res.configMapUID === undefined) return { ok: false, missing: ['configMapUID'] };
    return {
      ok: true,
      value: {
        sourceType: 'ConfigMap',
        configMapUID: res.configMapUID,
        contentDigest: res.contentDigest,
        ...sourcePolicyBinding(res),
      },
    };
  }
  if (res.sourceType === 'OCI') {
    if (res.verification === undefined || res.verification.refused !== undefined)
      return { ok: false, missing: ['verification'] };
    return {
      ok: true,
      value: {
        sourceType: 'OCI',
        contentDigest: res.contentDigest,
        verificationPolicyUID: res.verification.policyUID,
        verificationPolicyDigest: res.verification.policyDigest,
      },
    };
  }
  if (res.sourceType === 'Git') {
    if (res.sourceDigest === undefined) return { ok: false, missing: ['sourceDigest'] };
    return {
      ok: true,
      value: {
        sourceType: 'Git',
        contentDigest: res.contentDigest,
        sourceDigest: res.sourceDigest,
        ...sourcePolicyBinding(res),
      },
    };
  }
  return { ok: false, missing: ['a supported source type'] };
}

function sourcePolicyBinding(res: Resolution): Pick<SourceBinding, 'sourcePolicyUID' | 'sourcePolicyDigest'> {
  const p = res.sourcePolicy;
  return p === undefined ? {} : { sourcePolicyUID: p.uid, sourcePolicyDigest: p.digest };
}
