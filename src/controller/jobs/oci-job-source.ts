/**
 * The Pod parts an OCI source adds, one row of the credential routing table each:
 *
 * | container              | registry credential           | database credential | reads                    |
 * | ---------------------- | ----------------------------- | ------------------- | ------------------------ |
 * | Resolve / Verify main  | the whole Secret              | none                | requested / pinned ref   |
 * | `guard-source`         | grant keys only (no password) | none                | pinned ref, CA ConfigMap |
 * | `fetch-source`         | the whole Secret              | none                | pinned ref, CA snapshot  |
 * | `ptah` (main)          | none                          | the target          | fetched files, read-only |
 *
 * The guard copies the CA's exact bytes into an EmptyDir before the credentialed fetch starts, so the
 * fetch trusts what the grant named and not whatever the ConfigMap holds by then. The Secret is known by
 * name only: Kubernetes mounts it in the Pod, the manager never reads it.
 */
import type {
  V1Container,
  V1EnvVar,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';

export const GUARD_CONTAINER = 'guard-source';
export const FETCH_CONTAINER = 'fetch-source';

/** Where the fetched files are, read-only, for the operation container. */
export const OCI_SOURCE_DIR = '/ptah/source';
const AUTH_DIR = '/ptah/registry-auth';
const GRANTS_DIR = '/ptah/registry-grants';
const CA_DIR = '/ptah/registry-ca';
const CA_FILE = `${CA_DIR}/ca.crt`;
const CA_SNAPSHOT_DIR = '/ptah/registry-ca-snapshot';
const CA_SNAPSHOT_FILE = `${CA_SNAPSHOT_DIR}/ca.crt`;

/** How the registry is reached, from spec.desired.oci: names only, never a value. */
export interface ArtifactJobSource {
  readonly credentialsSecretName?: string;
  readonly ca?: { readonly name: string; readonly key: string };
  readonly plainHttp: boolean;
  /** The family's artifact type (Verify and fetch check it). */
  readonly artifactType: string;
  /** Verify only: the reference spec names (for require_digest_pin) and the policy it evaluates. */
  readonly requestedReference?: string;
  readonly policy?: { readonly data: string; readonly digest: string };
}

/** What an Observe, Plan, History or migration Apply needs to fetch the pinned artifact. */
export type OciJobSource = Omit<ArtifactJobSource, 'requestedReference' | 'policy'>;

const registryAuthVolume = (secret: string): V1Volume => ({
  name: 'registry-auth',
  secret: { secretName: secret, defaultMode: 0o440 },
});
const caVolume = (ca: { name: string; key: string }): V1Volume => ({
  name: 'registry-ca',
  configMap: { name: ca.name, items: [{ key: ca.key, path: 'ca.crt' }], defaultMode: 0o444 },
});

function transportArgs(source: ArtifactJobSource, caFile: string | undefined): string[] {
  return [
    ...(caFile !== undefined ? ['--ca-file', caFile] : []),
    ...(source.plainHttp ? ['--plain-http'] : []),
  ];
}

/** Resolve or Verify's main container parts: the whole Secret, the CA ConfigMap, the policy bytes. */
export function artifactContainer(
  operation: 'resolve' | 'verify',
  reference: string,
  source: ArtifactJobSource,
): { args: string[]; volumes: V1Volume[]; mounts: V1VolumeMount[]; env: V1EnvVar[] } {
  const volumes: V1Volume[] = [];
  const mounts: V1VolumeMount[] = [];
  if (source.credentialsSecretName !== undefined) {
    volumes.push(registryAuthVolume(source.credentialsSecretName));
    mounts.push({ name: 'registry-auth', mountPath: AUTH_DIR, readOnly: true });
  }
  if (source.ca !== undefined) {
    volumes.push(caVolume(source.ca));
    mounts.push({ name: 'registry-ca', mountPath: CA_DIR, readOnly: true });
  }
  const args = [
    operation,
    '--reference',
    reference,
    ...(source.credentialsSecretName !== undefined ? ['--auth-dir', AUTH_DIR] : []),
    ...transportArgs(source, source.ca !== undefined ? CA_FILE : undefined),
  ];
  const env: V1EnvVar[] = [];
  if (operation === 'verify') {
    if (source.policy === undefined) throw new Error('a Verify Job needs the policy it evaluates');
    args.push('--artifact-type', source.artifactType, '--policy-digest', source.policy.digest);
    if (source.requestedReference !== undefined) args.push('--requested', source.requestedReference);
    // Not a credential: the policy is a ConfigMap anyone who may read the resource may read.
    env.push({ name: 'PTAH_VERIFICATION_POLICY', value: source.policy.data });
  }
  return { args, volumes, mounts, env };
}

/** The guard and the fetch, their volumes, and the read-only mount of the fetched files. */
export function ociSourceParts(
  pinnedReference: string,
  source: OciJobSource,
  hardened: V1SecurityContext,
  operationId: string,
  image: string,
): { volumes: V1Volume[]; initContainers: V1Container[]; mainMount: V1VolumeMount } {
  const secret = source.credentialsSecretName;
  const volumes: V1Volume[] = [
    { name: 'source', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
    { name: 'registry-ca-snapshot', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } },
  ];
  const guardMounts: V1VolumeMount[] = [{ name: 'registry-ca-snapshot', mountPath: CA_SNAPSHOT_DIR }];
  const fetchMounts: V1VolumeMount[] = [
    { name: 'source', mountPath: OCI_SOURCE_DIR },
    { name: 'registry-ca-snapshot', mountPath: CA_SNAPSHOT_DIR, readOnly: true },
  ];
  if (secret !== undefined) {
    // The guard's projection of the Secret: the grant keys, never .dockerconfigjson.
    const items = [
      { key: 'registry', path: 'registry' },
      ...(source.ca !== undefined ? [{ key: 'caSHA256', path: 'caSHA256' }] : []),
      ...(source.plainHttp ? [{ key: 'allowPlainHTTP', path: 'allowPlainHTTP' }] : []),
    ];
    volumes.push({ name: 'registry-grants', secret: { secretName: secret, items, defaultMode: 0o440 } });
    guardMounts.push({ name: 'registry-grants', mountPath: GRANTS_DIR, readOnly: true });
    volumes.push(registryAuthVolume(secret));
    fetchMounts.push({ name: 'registry-auth', mountPath: AUTH_DIR, readOnly: true });
  }
  if (source.ca !== undefined) {
    volumes.push(caVolume(source.ca));
    guardMounts.push({ name: 'registry-ca', mountPath: CA_DIR, readOnly: true });
  }
  const env: V1EnvVar[] = [{ name: 'PTAH_OPERATION_ID', value: operationId }];
  const common = {
    image,
    securityContext: hardened,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    env,
  };
  const guard: V1Container = {
    name: GUARD_CONTAINER,
    args: [
      'guard-oci-source',
      '--reference',
      pinnedReference,
      ...(secret !== undefined ? ['--auth-dir', GRANTS_DIR] : []),
      ...transportArgs(source, source.ca !== undefined ? CA_FILE : undefined),
      ...(source.ca !== undefined ? ['--ca-out', CA_SNAPSHOT_FILE] : []),
    ],
    volumeMounts: guardMounts,
    ...common,
  };
  const fetch: V1Container = {
    name: FETCH_CONTAINER,
    args: [
      'fetch-oci',
      '--reference',
      pinnedReference,
      '--artifact-type',
      source.artifactType,
      '--out',
      OCI_SOURCE_DIR,
      ...(secret !== undefined ? ['--auth-dir', AUTH_DIR] : []),
      ...transportArgs(source, source.ca !== undefined ? CA_SNAPSHOT_FILE : undefined),
    ],
    volumeMounts: fetchMounts,
    ...common,
  };
  return {
    volumes,
    initContainers: [guard, fetch],
    mainMount: { name: 'source', mountPath: OCI_SOURCE_DIR, readOnly: true },
  };
}
