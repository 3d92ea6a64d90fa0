/**
 * The contract of an operation Job that the builder (src/controller/jobs/operation-job.ts) and admission
 * (src/admission/policies/job-shape.ts) share: its annotation envelope, its labels by family, and the names
 * of the containers and volumes it may have. Defined here so admission holds the Job to the same names the
 * builder writes without importing the controller.
 */
import { API_GROUP } from './meta.ts';

export const JOB_ANNOTATIONS = {
  operationId: `${API_GROUP}/operation-id`,
  inputsFingerprint: `${API_GROUP}/input-fingerprint`,
  ptahVersion: `${API_GROUP}/ptah-version`,
  managerImage: `${API_GROUP}/controller-image`,
  managerRevision: `${API_GROUP}/controller-revision`,
  controllerStateVersion: `${API_GROUP}/controller-state-version`,
  runnerProtocolVersion: `${API_GROUP}/runner-protocol-version`,
  contentDigest: `${API_GROUP}/content-digest`,
  planFingerprint: `${API_GROUP}/plan-fingerprint`,
  planContentDigest: `${API_GROUP}/plan-content-digest`,
} as const;

/**
 * The eight annotations every operation Job carries, checked by admission as a set: which claim it runs
 * (operation id, inputs fingerprint, the content digest it is bound to) and which manager built it (image,
 * revision, controller-state version, Ptah version, runner protocol). Recorded, never a credential.
 */
export const JOB_ENVELOPE: readonly string[] = [
  JOB_ANNOTATIONS.operationId,
  JOB_ANNOTATIONS.inputsFingerprint,
  JOB_ANNOTATIONS.ptahVersion,
  JOB_ANNOTATIONS.managerImage,
  JOB_ANNOTATIONS.managerRevision,
  JOB_ANNOTATIONS.controllerStateVersion,
  JOB_ANNOTATIONS.runnerProtocolVersion,
  JOB_ANNOTATIONS.contentDigest,
];

/** The two a schema Apply adds: the plan it executes and the digest of that plan's bytes. */
export const SCHEMA_APPLY_ENVELOPE: readonly string[] = [
  JOB_ANNOTATIONS.planFingerprint,
  JOB_ANNOTATIONS.planContentDigest,
];

/** The three that say which manager built the Job: a Job without them is refused on create and update. */
export const CONTROLLER_IDENTITY: readonly string[] = [
  JOB_ANNOTATIONS.managerImage,
  JOB_ANNOTATIONS.managerRevision,
  JOB_ANNOTATIONS.controllerStateVersion,
];

export type JobFamily = 'schema' | 'migration';

/** Per family: the component label, the owner kind, the operations (the operation label) and name prefix. */
export const JOB_FAMILIES: Readonly<
  Record<
    JobFamily,
    {
      readonly component: string;
      readonly ownerKind: 'PtahSchema' | 'PtahMigration';
      readonly ownerLabel: string;
      readonly operations: readonly string[];
      readonly namePrefix: string;
    }
  >
> = {
  schema: {
    component: 'schema-operation',
    ownerKind: 'PtahSchema',
    ownerLabel: `${API_GROUP}/schema`,
    operations: ['resolve', 'verify', 'observe', 'plan', 'apply'],
    namePrefix: 'ptah-',
  },
  migration: {
    component: 'migration-operation',
    ownerKind: 'PtahMigration',
    ownerLabel: `${API_GROUP}/migration`,
    operations: ['resolve', 'verify', 'history', 'apply'],
    namePrefix: 'ptah-m-',
  },
};

export const RUNNER_UID = 65532;
export const MAIN_CONTAINER = 'ptah';
export const SNAPSHOT_CHECK_CONTAINER = 'check-snapshot';
/** Resolve and Verify read the registry only: they are bound to no content yet. */
export const ARTIFACT_OPERATIONS: readonly string[] = ['resolve', 'verify'];
/**
 * Every init container an operation Job may have (the snapshot check; for an OCI source the credential-free
 * authority guard and the fetch, src/controller/jobs/oci-job-source.ts; for a Git source the fetch alone,
 * src/controller/jobs/git-job-source.ts); none takes a value from a Secret.
 */
export const INIT_CONTAINERS: readonly string[] = [SNAPSHOT_CHECK_CONTAINER, 'guard-source', 'fetch-source'];

/** The volumes an operation Job may mount, by name, and the one source each may be. */
export const JOB_VOLUMES: Readonly<Record<string, 'emptyDir' | 'configMap' | 'projected' | 'secret'>> = {
  work: 'emptyDir',
  snapshot: 'configMap',
  plan: 'projected',
  // An OCI source (src/controller/jobs/oci-job-source.ts): the fetched files, the guard's CA copy, the
  // Secret's grants and credential, the CA bundle.
  source: 'emptyDir',
  'registry-ca-snapshot': 'emptyDir',
  'registry-grants': 'secret',
  'registry-auth': 'secret',
  'registry-ca': 'configMap',
  // A Git source (src/controller/jobs/git-job-source.ts): the credential, the CA bundle, the known hosts,
  // and the directory only the container holding the credential mounts (Ptah's private copies and objects).
  'git-auth': 'secret',
  'git-ca': 'configMap',
  'git-known-hosts': 'configMap',
  'git-private': 'emptyDir',
};
