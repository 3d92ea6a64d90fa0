/**
 * The Pod parts a Git source adds, one row of the credential routing table each:
 *
 * | container             | Git credential   | database credential | reads                                   |
 * | --------------------- | ---------------- | ------------------- | --------------------------------------- |
 * | Resolve main          | the whole Secret | none                | repository, ref, path, CA / known hosts |
 * | `fetch-source` (init) | the whole Secret | none                | the bound commit and content digest     |
 * | `ptah` (main)         | none             | the target          | fetched files, read-only                |
 *
 * One init container replaces the OCI source's guard and fetch: the runner in it checks the Secret's grants
 * and copies the trust files privately before Ptah starts, and only the checked files reach the EmptyDir the
 * operation container mounts. Ptah's private copies live in `git-private`, which no other container mounts.
 * The Secret is known by name only: Kubernetes mounts it in the Pod, the manager never reads it.
 */
import type {
  V1Container,
  V1EnvVar,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { FETCH_CONTAINER, OCI_SOURCE_DIR } from './oci-job-source.ts';

/** Where the fetched files are, read-only, for the operation container: the same place as an OCI source's. */
export const GIT_SOURCE_DIR = OCI_SOURCE_DIR;
const AUTH_DIR = '/ptah/git-auth';
const CA_DIR = '/ptah/git-ca';
const KNOWN_HOSTS_DIR = '/ptah/git-known-hosts';
const PRIVATE_DIR = '/ptah/git-private';

/** How the repository is reached, from spec.desired.git: names only, never a value. */
export interface GitJobSource {
  readonly kind: 'git';
  readonly repository: string;
  /** refs/heads/<branch>, refs/tags/<tag> or a commit id. */
  readonly ref: string;
  readonly path: string;
  readonly credentialsSecretName?: string;
  readonly ca?: { readonly name: string; readonly key: string };
  readonly knownHosts?: { readonly name: string; readonly key: string };
  readonly plainHttp: boolean;
}

/** The Git objects Ptah fetches (a depth-1 pack, deeper along a ref's history) and its private copies. */
const privateVolume: V1Volume = { name: 'git-private', emptyDir: { sizeLimit: '512Mi' } };

function accessParts(
  source: GitJobSource,
  privateMount: V1VolumeMount,
): { args: string[]; volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const volumes: V1Volume[] = [];
  const mounts: V1VolumeMount[] = [privateMount];
  const args = [
    '--repository',
    source.repository,
    '--ref',
    source.ref,
    '--path',
    source.path,
    '--private-dir',
    privateMount.mountPath,
  ];
  if (source.credentialsSecretName !== undefined) {
    volumes.push({
      name: 'git-auth',
      secret: { secretName: source.credentialsSecretName, defaultMode: 0o440 },
    });
    mounts.push({ name: 'git-auth', mountPath: AUTH_DIR, readOnly: true });
    args.push('--auth-dir', AUTH_DIR);
  }
  if (source.ca !== undefined) {
    volumes.push({
      name: 'git-ca',
      configMap: {
        name: source.ca.name,
        items: [{ key: source.ca.key, path: 'ca.crt' }],
        defaultMode: 0o444,
      },
    });
    mounts.push({ name: 'git-ca', mountPath: CA_DIR, readOnly: true });
    args.push('--ca-file', `${CA_DIR}/ca.crt`);
  }
  if (source.knownHosts !== undefined) {
    volumes.push({
      name: 'git-known-hosts',
      configMap: {
        name: source.knownHosts.name,
        items: [{ key: source.knownHosts.key, path: 'known_hosts' }],
        defaultMode: 0o444,
      },
    });
    mounts.push({ name: 'git-known-hosts', mountPath: KNOWN_HOSTS_DIR, readOnly: true });
    args.push('--known-hosts', `${KNOWN_HOSTS_DIR}/known_hosts`);
  }
  if (source.plainHttp) args.push('--plain-http');
  return { args, volumes, mounts };
}

/** Resolve's main container parts: the whole Secret, the trust files, a private directory for Ptah. */
export function gitResolveContainer(source: GitJobSource): {
  args: string[];
  volumes: V1Volume[];
  mounts: V1VolumeMount[];
  env: V1EnvVar[];
} {
  const parts = accessParts(source, { name: 'git-private', mountPath: PRIVATE_DIR });
  return {
    args: ['resolve-git', ...parts.args],
    volumes: [privateVolume, ...parts.volumes],
    mounts: parts.mounts,
    env: [],
  };
}

/** The fetch init container, its volumes, and the read-only mount of the checked files. */
export function gitSourceParts(
  source: GitJobSource,
  bound: { readonly commit: string; readonly contentDigest: string },
  hardened: V1SecurityContext,
  operationId: string,
  image: string,
): { volumes: V1Volume[]; initContainers: V1Container[]; mainMount: V1VolumeMount } {
  const parts = accessParts(source, { name: 'git-private', mountPath: PRIVATE_DIR });
  const fetch: V1Container = {
    name: FETCH_CONTAINER,
    image,
    args: [
      'fetch-git',
      ...parts.args,
      '--commit',
      bound.commit,
      '--digest',
      bound.contentDigest,
      '--out',
      GIT_SOURCE_DIR,
    ],
    env: [{ name: 'PTAH_OPERATION_ID', value: operationId }],
    volumeMounts: [{ name: 'source', mountPath: GIT_SOURCE_DIR }, ...parts.mounts],
    securityContext: hardened,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
  };
  return {
    volumes: [
      { name: 'source', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
      privateVolume,
      ...parts.volumes,
    ],
    initContainers: [fetch],
    mainMount: { name: 'source', mountPath: GIT_SOURCE_DIR, readOnly: true },
  };
}
