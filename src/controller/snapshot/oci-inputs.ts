/**
 * The I/O side of an OCI source, for both reconcilers: the verification policy read from its ConfigMap
 * (the manager may read ConfigMaps, never Secrets), what a decision is given, and the Resolve and Verify
 * Jobs built from a claim.
 *
 * The policy must be an immutable ConfigMap: a mutable one could change between the Verify that read it
 * and the plan that binds it, so it is refused with the fix named. It is bound by its UID and the SHA-256
 * of its data; the Verify Job carries those exact bytes and the runner refuses any that do not give the
 * digest the claim bound.
 */
import type { CoreV1Api, V1Job } from '@kubernetes/client-node';
import type { Resolution } from '../../api/ptah-schema.ts';
import { ARTIFACT_TYPE } from '../../sources/oci/index.ts';
import { encodePolicyData, verificationPolicyDigest } from '../../sources/verification-policy-digest.ts';
import { buildArtifactJob, type ManagerIdentity } from '../jobs/operation-job.ts';
import { readConfigMap, type ConfigMapReader } from '../runtime/kube.ts';
import { readSourcePolicy } from './source-policy.ts';
import {
  gitArtifactInput,
  type ArtifactInput,
  type GitSourceView,
  type OciSourceView,
  type PolicyRead,
} from './artifact-steps.ts';

export type PolicyReadWithData =
  Extract<PolicyRead, { ok: false }> | (Extract<PolicyRead, { ok: true }> & { readonly data: string });

/** The artifact type each family's source must carry. */
export const FAMILY_ARTIFACT_TYPE = {
  PtahSchema: ARTIFACT_TYPE.schema,
  PtahMigration: ARTIFACT_TYPE.migrations,
} as const;

export async function readVerificationPolicy(
  core: ConfigMapReader,
  namespace: string,
  name: string | undefined,
): Promise<PolicyReadWithData> {
  if (name === undefined) {
    return {
      ok: false,
      reason: 'PolicyNotFound',
      message: 'an OCI source needs spec.verificationPolicyFrom naming an immutable ConfigMap',
    };
  }
  const cm = await readConfigMap(core, namespace, name);
  if (cm === undefined) {
    return {
      ok: false,
      reason: 'PolicyNotFound',
      message: `verification policy ConfigMap ${name} does not exist; create it with immutable: true`,
    };
  }
  if (cm.immutable !== true) {
    return {
      ok: false,
      reason: 'PolicyMutable',
      message: `verification policy ConfigMap ${name} is mutable; it must be created with immutable: true (to change a policy, create a new ConfigMap and name it in spec.verificationPolicyFrom)`,
    };
  }
  if (Object.keys(cm.binaryData ?? {}).length > 0) {
    return {
      ok: false,
      reason: 'PolicyInvalid',
      message: `verification policy ConfigMap ${name} holds binaryData; put the policy under data.policy.yaml`,
    };
  }
  const data = cm.data ?? {};
  const encoded = encodePolicyData(data);
  if (!encoded.ok) {
    return {
      ok: false,
      reason: 'PolicyInvalid',
      message: `verification policy ConfigMap ${name}: ${encoded.message}`,
    };
  }
  return {
    ok: true,
    name,
    uid: cm.metadata?.uid ?? '',
    digest: verificationPolicyDigest(data),
    data: encoded.text,
  };
}

/** What a decision is given for a source a Job resolves (OCI or Git); nothing for a ConfigMap source. */
export async function artifactDecideInputs(
  core: CoreV1Api,
  kind: keyof typeof FAMILY_ARTIFACT_TYPE,
  view: {
    readonly namespace: string;
    readonly spec: {
      readonly oci?: OciSourceView;
      readonly git?: GitSourceView;
      readonly verificationPolicyName?: string;
      readonly sourcePolicyName?: string;
    };
    readonly status: { readonly resolution?: Resolution | undefined };
  },
): Promise<
  | {
      readonly artifact: ArtifactInput;
      readonly resolution:
        | { readonly ok: true; readonly value: Resolution }
        | { readonly ok: false; readonly reason: string; readonly message: string };
    }
  | undefined
> {
  const git = view.spec.git;
  if (git !== undefined) {
    const res = view.status.resolution;
    return {
      artifact: gitArtifactInput(
        git,
        await readSourcePolicy(core, view.namespace, view.spec.sourcePolicyName),
      ),
      // Resolve is a Job: what the decision reads from is what status recorded of it.
      resolution:
        res?.sourceType === 'Git'
          ? { ok: true, value: res }
          : { ok: false, reason: 'SourceUnresolved', message: 'the commit has not been resolved yet' },
    };
  }
  const oci = view.spec.oci;
  if (oci === undefined) return undefined;
  const read = await readVerificationPolicy(core, view.namespace, view.spec.verificationPolicyName);
  const policy: PolicyRead = read.ok
    ? { ok: true, name: read.name, uid: read.uid, digest: read.digest }
    : read;
  const res = view.status.resolution;
  return {
    artifact: { kind: 'oci', reference: oci.reference, artifactType: FAMILY_ARTIFACT_TYPE[kind], policy },
    // Resolve and Verify are Jobs: what the decision reads from is what status recorded of them.
    resolution:
      res?.sourceType === 'OCI'
        ? { ok: true, value: res }
        : { ok: false, reason: 'SourceUnresolved', message: 'the artifact has not been resolved yet' },
  };
}

/** The Job of a Resolve or Verify claim; a Verify carries the policy bytes its claim bound, read again now. */
export async function artifactJobFor(
  core: ConfigMapReader,
  owner: {
    readonly kind: keyof typeof FAMILY_ARTIFACT_TYPE;
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
  },
  claim: Parameters<typeof buildArtifactJob>[0]['claim'] & {
    readonly verificationPolicy?: { readonly name: string; readonly uid: string; readonly digest: string };
  },
  spec: {
    readonly oci?: OciSourceView;
    readonly git?: GitSourceView;
    readonly activeDeadlineSeconds: number;
  },
  manager: ManagerIdentity,
  now: Date,
): Promise<V1Job> {
  if (spec.git !== undefined) {
    return buildArtifactJob({
      owner,
      claim,
      source: spec.git,
      activeDeadlineSeconds: spec.activeDeadlineSeconds,
      manager,
      now,
    });
  }
  const oci = spec.oci;
  if (oci === undefined) throw new Error(`${claim.type} needs an OCI source`);
  let policy: { data: string; digest: string } | undefined;
  if (claim.type === 'Verify') {
    const bound = claim.verificationPolicy;
    const read = await readVerificationPolicy(core, owner.namespace, bound?.name);
    if (!read.ok || bound === undefined || read.uid !== bound.uid || read.digest !== bound.digest) {
      // The policy moved since the claim: the next pass withdraws the claim rather than verify under it.
      throw new Error(`verification policy ${bound?.name ?? ''} changed since the Verify was claimed`);
    }
    policy = { data: read.data, digest: read.digest };
  }
  return buildArtifactJob({
    owner,
    claim,
    source: {
      ...(oci.credentialsSecretName !== undefined
        ? { credentialsSecretName: oci.credentialsSecretName }
        : {}),
      ...(oci.ca !== undefined ? { ca: oci.ca } : {}),
      plainHttp: oci.plainHttp,
      artifactType: FAMILY_ARTIFACT_TYPE[owner.kind],
      requestedReference: oci.reference,
      ...(policy !== undefined ? { policy } : {}),
    },
    activeDeadlineSeconds: spec.activeDeadlineSeconds,
    manager,
    now,
  });
}

/** What a read's Job needs to fetch the pinned artifact; undefined for any other source. */
export function ociJobSource(
  kind: keyof typeof FAMILY_ARTIFACT_TYPE,
  oci: OciSourceView | undefined,
):
  | {
      credentialsSecretName?: string;
      ca?: { name: string; key: string };
      plainHttp: boolean;
      artifactType: string;
    }
  | undefined {
  if (oci === undefined) return undefined;
  return {
    ...(oci.credentialsSecretName !== undefined ? { credentialsSecretName: oci.credentialsSecretName } : {}),
    ...(oci.ca !== undefined ? { ca: oci.ca } : {}),
    plainHttp: oci.plainHttp,
    artifactType: FAMILY_ARTIFACT_TYPE[kind],
  };
}
