/**
 * The Job an operation runs in, for either family: a PtahSchema's Observe, Plan and Apply, a PtahMigration's
 * History and Apply. One Pod skeleton serves both, and one function per family fills it from the claim, so a
 * restarted manager builds the same Job for the same claim.
 *
 * Shape, and why:
 * - no ServiceAccount token, no service links: the process that holds the database URL holds no
 *   Kubernetes credential;
 * - non-root, read-only root filesystem, every capability dropped, no privilege escalation;
 * - backoffLimit 0 and restartPolicy Never: an operation runs at most once per claim; a retry is a new claim;
 * - activeDeadlineSeconds on the Job and the Pod;
 * - an init container checks the snapshot against the content digest the operation is bound to and copies
 *   the files; it holds no credential, and a refusal stops the Pod before the container with the URL starts;
 * - for an OCI source, two init containers instead (`oci-job-source.ts`): the credential-free authority
 *   guard, then the fetch with the registry credential; the container with the URL mounts only the fetched
 *   files, read-only, and never the registry Secret. Resolve and Verify hold the registry credential and no
 *   database credential at all;
 * - for a Git source, one init container (`git-job-source.ts`): the fetch with the Git credential, held to
 *   the bound commit and content digest; a Git Resolve holds the Git credential and no database credential;
 * - the main container runs `ptah-runner`, which reads the URL from PTAH_DB_URL (a secretKeyRef): env only,
 *   never argv;
 * - the annotation envelope names the claim and the manager that built the Job; the owner reference ties it
 *   to the resource, so deleting the resource collects it.
 */
import type {
  V1Container,
  V1Job,
  V1EnvVar,
  V1Volume,
  V1VolumeMount,
  V1SecurityContext,
} from '@kubernetes/client-node';
import { API_GROUP, LABELS, MANAGED_BY } from '../../api/meta.ts';
import type { Claim } from '../../api/ptah-schema.ts';
import type { MigrationClaim, TransactionMode } from '../../api/ptah-migration.ts';
import { RUNNER_PROTOCOL_VERSION, type RunnerOperation } from '../../protocol/result.ts';
import {
  artifactContainer,
  ociSourceParts,
  OCI_SOURCE_DIR,
  type ArtifactJobSource,
  type OciJobSource,
} from './oci-job-source.ts';
import { gitResolveContainer, gitSourceParts, type GitJobSource } from './git-job-source.ts';
import { commitOfPinnedReference } from '../snapshot/git-reference.ts';
import {
  JOB_ANNOTATIONS,
  JOB_FAMILIES,
  MAIN_CONTAINER,
  RUNNER_UID,
  SNAPSHOT_CHECK_CONTAINER,
} from '../../api/job-envelope.ts';

export const OPERATION_COMPONENT = JOB_FAMILIES.schema.component;
export const MIGRATION_OPERATION_COMPONENT = JOB_FAMILIES.migration.component;
export { MAIN_CONTAINER, RUNNER_UID, SNAPSHOT_CHECK_CONTAINER };
export const ANNOTATIONS = JOB_ANNOTATIONS;

/** Which manager builds the Job; recorded, never a credential. */
export interface ManagerIdentity {
  readonly managerImage: string;
  readonly managerRevision: string;
  readonly controllerStateVersion: number;
  readonly ptahVersion: string;
  /** The image whose entry point is `ptah-runner` (and which carries `ptah`). */
  readonly runnerImage: string;
}

export interface PlanChunkMount {
  /** The immutable ConfigMap projecting the chunk (plan-store/plan-projection.ts). */
  readonly configMapName: string;
  /** The key inside it that holds the chunk bytes. */
  readonly key: string;
  readonly index: number;
}

export interface SchemaJobInput {
  readonly schema: { readonly name: string; readonly namespace: string; readonly uid: string };
  readonly claim: Claim;
  readonly engine: 'postgres' | 'mysql';
  readonly urlFrom: { readonly name: string; readonly key: string };
  readonly exclude: readonly string[];
  readonly protectedTables: readonly string[];
  readonly activeDeadlineSeconds: number;
  /** Apply only: the plan's chunks, projected as `000.plan`, `001.plan`… */
  readonly plan?: {
    readonly fingerprint: string;
    readonly contentDigest: string;
    /** The credential-free identity of the database the plan was computed against (its binding). */
    readonly targetIdentityDigest: string;
    readonly chunks: readonly PlanChunkMount[];
  };
  /** An OCI source: Observe and Plan fetch the pinned artifact the claim names instead of a snapshot. */
  readonly oci?: OciJobSource;
  /** A Git source: Observe and Plan fetch the commit the claim names again instead of a snapshot. */
  readonly git?: GitJobSource;
  readonly manager: ManagerIdentity;
  readonly now: Date;
}

// Everything the Pod mounts lives under /ptah, so no mount hides a directory the image ships.
export const POD_PATHS = {
  root: '/ptah',
  work: '/ptah/work',
  snapshot: '/ptah/snapshot',
  schema: '/ptah/work/schema',
  migrations: '/ptah/work/migrations',
  plan: '/ptah/plan',
  tmp: '/ptah/work',
} as const;
const SNAPSHOT_DIR = POD_PATHS.snapshot;
const SCHEMA_DIR = POD_PATHS.schema;
const MIGRATIONS_DIR = POD_PATHS.migrations;
const PLAN_DIR = POD_PATHS.plan;
const WORK_DIR = POD_PATHS.tmp;

export function buildSchemaJob(input: SchemaJobInput): V1Job {
  const { schema, claim } = input;
  const operation = claim.type.toLowerCase();
  if (operation !== 'observe' && operation !== 'plan' && operation !== 'apply') {
    throw new Error(`a schema Job runs observe, plan or apply, not ${claim.type}`);
  }
  if (operation === 'apply' && input.plan === undefined)
    throw new Error('an apply Job needs the plan chunks');
  const source = sourceOf(operation !== 'apply', claim, input.oci ?? input.git, SCHEMA_DIR);

  const volumes: V1Volume[] = [];
  const mainMounts: V1VolumeMount[] = [];
  if (operation === 'apply') {
    volumes.push({
      name: 'plan',
      projected: {
        defaultMode: 0o440,
        sources: [...input.plan!.chunks]
          .sort((a, b) => a.index - b.index)
          .map((c) => ({
            configMap: {
              name: c.configMapName,
              items: [{ key: c.key, path: `${String(c.index).padStart(3, '0')}.plan` }],
            },
          })),
      },
    });
    mainMounts.push({ name: 'plan', mountPath: PLAN_DIR, readOnly: true });
  }
  return operationJob({
    owner: { kind: 'PtahSchema', ...schema },
    claim,
    component: OPERATION_COMPONENT,
    ownerLabel: LABELS.schema,
    operationLabel: operation,
    runnerOperation: operation,
    database: { engine: input.engine, urlFrom: input.urlFrom },
    activeDeadlineSeconds: input.activeDeadlineSeconds,
    manager: input.manager,
    now: input.now,
    // An Apply reads the plan chunks, not the source.
    ...(source !== undefined ? { source } : {}),
    extraAnnotations:
      input.plan !== undefined
        ? {
            [ANNOTATIONS.planFingerprint]: input.plan.fingerprint,
            [ANNOTATIONS.planContentDigest]: input.plan.contentDigest,
          }
        : {},
    extraVolumes: volumes,
    extraMounts: mainMounts,
    env: [
      {
        name: 'PTAH_SCHEMA_DIR',
        value: source?.kind === 'snapshot' || source === undefined ? SCHEMA_DIR : OCI_SOURCE_DIR,
      },
      { name: 'PTAH_WORK_DIR', value: WORK_DIR },
      { name: 'PTAH_EXCLUDE', value: JSON.stringify([...input.exclude].sort()) },
      { name: 'PTAH_PROTECTED_TABLES', value: JSON.stringify([...input.protectedTables].sort()) },
      executionNotAfter(input.now, input.activeDeadlineSeconds),
      ...(input.plan !== undefined
        ? [
            { name: 'PTAH_PLAN_DIR', value: PLAN_DIR },
            { name: 'PTAH_EXPECTED_PLAN_CONTENT_DIGEST', value: input.plan.contentDigest },
            // The runner refuses to start ptah when PTAH_DB_URL now names another database than this one.
            { name: 'PTAH_EXPECTED_TARGET_IDENTITY', value: input.plan.targetIdentityDigest },
          ]
        : []),
    ],
  });
}

/** One migration of the approved sequence, as Ptah compares it under the migration lock. */
export interface ExpectedMigration {
  readonly version: string;
  readonly checksum: string;
}

export interface MigrationJobInput {
  readonly migration: { readonly name: string; readonly namespace: string; readonly uid: string };
  readonly claim: MigrationClaim;
  readonly engine: 'postgres' | 'mysql';
  readonly urlFrom: { readonly name: string; readonly key: string };
  readonly activeDeadlineSeconds: number;
  /** Apply only: the approved plan, which the run must match exactly or change nothing. */
  readonly plan?: {
    readonly fingerprint: string;
    readonly sequence: readonly ExpectedMigration[];
    /** The history fingerprint the sequence was selected against (`sha256:<hex>`). */
    readonly historyFingerprint: string;
    /** The database the plan was computed against; the runner refuses a URL that names another. */
    readonly targetIdentityDigest: string;
    /** spec.policy.transactionMode as the plan binds it; `unset` passes no mode and lets Ptah choose. */
    readonly transactionMode: TransactionMode;
    readonly lockTimeoutSeconds: number;
  };
  /** An OCI source: History and Apply fetch the pinned migration directory the claim names. */
  readonly oci?: OciJobSource;
  /** A Git source: History and Apply fetch the commit the claim names again. */
  readonly git?: GitJobSource;
  readonly manager: ManagerIdentity;
  readonly now: Date;
}

/**
 * A migration's History or Apply. Both read the checked snapshot as a migration directory; only an Apply
 * carries the sequence, handed to `ptah migrations up --expect-sequence` by the runner.
 */
export function buildMigrationJob(input: MigrationJobInput): V1Job {
  const { migration, claim } = input;
  if (claim.type !== 'History' && claim.type !== 'Apply') {
    throw new Error(`a migration Job runs History or Apply, not ${claim.type}`);
  }
  const source = sourceOf(true, claim, input.oci ?? input.git, MIGRATIONS_DIR)!;
  if (claim.type === 'Apply' && input.plan === undefined) throw new Error('a migration apply needs its plan');
  const operation = claim.type === 'History' ? 'history' : 'apply';
  const plan = claim.type === 'Apply' ? input.plan : undefined;
  return operationJob({
    owner: { kind: 'PtahMigration', ...migration },
    claim,
    component: MIGRATION_OPERATION_COMPONENT,
    ownerLabel: LABELS.migration,
    operationLabel: operation,
    runnerOperation: operation === 'history' ? 'migration-history' : 'migration-apply',
    database: { engine: input.engine, urlFrom: input.urlFrom },
    activeDeadlineSeconds: input.activeDeadlineSeconds,
    manager: input.manager,
    now: input.now,
    source,
    // The envelope's eight and no more: the inputs fingerprint binds the plan, and the sequence is in env.
    extraAnnotations: {},
    extraVolumes: [],
    extraMounts: [],
    env: [
      { name: 'PTAH_MIGRATIONS_DIR', value: source.kind === 'snapshot' ? MIGRATIONS_DIR : OCI_SOURCE_DIR },
      { name: 'PTAH_WORK_DIR', value: WORK_DIR },
      executionNotAfter(input.now, input.activeDeadlineSeconds),
      ...(plan !== undefined
        ? [
            {
              name: 'PTAH_EXPECTED_SEQUENCE',
              value: JSON.stringify(plan.sequence.map((m) => ({ version: m.version, checksum: m.checksum }))),
            },
            { name: 'PTAH_EXPECTED_HISTORY_FINGERPRINT', value: plan.historyFingerprint },
            { name: 'PTAH_EXPECTED_TARGET_IDENTITY', value: plan.targetIdentityDigest },
            { name: 'PTAH_LOCK_TIMEOUT', value: `${plan.lockTimeoutSeconds}s` },
            ...(plan.transactionMode !== 'unset'
              ? [{ name: 'PTAH_TRANSACTION_MODE', value: plan.transactionMode }]
              : []),
          ]
        : []),
    ],
  });
}

export interface ArtifactJobInput {
  readonly owner: {
    readonly kind: 'PtahSchema' | 'PtahMigration';
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
  };
  /** A Resolve or Verify claim of either family; `artifactReference` names what it reads. */
  readonly claim: Pick<
    Claim,
    'operationId' | 'inputsFingerprint' | 'jobName' | 'contentDigest' | 'snapshotName' | 'artifactReference'
  > & { readonly type: string };
  /** The registry for an OCI source; the repository for a Git source (which has a Resolve and no Verify). */
  readonly source: ArtifactJobSource | GitJobSource;
  readonly activeDeadlineSeconds: number;
  readonly manager: ManagerIdentity;
  readonly now: Date;
}

/**
 * Resolve or Verify, for either family: the registry (or Git) credential and no database credential. The
 * main container runs `ptah-runner resolve|verify`, or `resolve-git`; a Verify carries the policy bytes it
 * evaluates.
 */
export function buildArtifactJob(input: ArtifactJobInput): V1Job {
  const { claim } = input;
  if (claim.type !== 'Resolve' && claim.type !== 'Verify') {
    throw new Error(`an artifact Job runs Resolve or Verify, not ${claim.type}`);
  }
  if (claim.artifactReference === undefined) throw new Error('an artifact Job needs the reference it reads');
  const schema = input.owner.kind === 'PtahSchema';
  const operation = claim.type === 'Resolve' ? 'resolve' : 'verify';
  const source = input.source;
  let main: ReturnType<typeof artifactContainer>;
  if ('kind' in source) {
    if (operation !== 'resolve') throw new Error('a Git source has a Resolve and no Verify');
    main = gitResolveContainer(source);
  } else {
    main = artifactContainer(operation, claim.artifactReference, source);
  }
  return operationJob({
    owner: input.owner,
    claim,
    component: schema ? OPERATION_COMPONENT : MIGRATION_OPERATION_COMPONENT,
    ownerLabel: schema ? LABELS.schema : LABELS.migration,
    operationLabel: operation,
    runnerOperation: operation,
    activeDeadlineSeconds: input.activeDeadlineSeconds,
    manager: input.manager,
    now: input.now,
    mainArgs: main.args,
    extraAnnotations: {},
    extraVolumes: main.volumes,
    extraMounts: main.mounts,
    env: main.env,
  });
}

type JobSource =
  | { readonly kind: 'snapshot'; readonly out: string }
  | (OciJobSource & { readonly kind: 'oci' })
  | (GitJobSource & { readonly commit: string });

/**
 * What an operation reads its files from: the checked snapshot, the pinned artifact the claim names, or the
 * commit the claim names.
 */
function sourceOf(
  readsFiles: boolean,
  claim: Pick<Claim, 'snapshotName' | 'contentDigest' | 'artifactReference'> & { readonly type: string },
  oci: OciJobSource | GitJobSource | undefined,
  out: string,
): JobSource | undefined {
  if (!readsFiles) return undefined;
  if (oci !== undefined && 'kind' in oci) {
    const commit =
      claim.artifactReference !== undefined ? commitOfPinnedReference(claim.artifactReference) : undefined;
    if (commit === undefined || claim.contentDigest === undefined) {
      throw new Error(`a ${claim.type} Job needs the commit and the content digest it is bound to`);
    }
    return { ...oci, commit };
  }
  if (oci !== undefined) {
    if (claim.artifactReference === undefined || claim.contentDigest === undefined) {
      throw new Error(`a ${claim.type} Job needs the pinned artifact and the digest it is bound to`);
    }
    return { kind: 'oci', ...oci };
  }
  if (claim.snapshotName === undefined || claim.contentDigest === undefined) {
    throw new Error(`a ${claim.type} Job needs the snapshot and the content digest it is bound to`);
  }
  return { kind: 'snapshot', out };
}

/** The instant after which the runner stops its child: the deadline counted from when the Job is built. */
function executionNotAfter(now: Date, activeDeadlineSeconds: number): V1EnvVar {
  return {
    name: 'PTAH_EXECUTION_NOT_AFTER',
    value: new Date(now.getTime() + activeDeadlineSeconds * 1000).toISOString(),
  };
}

interface OperationJobParts {
  readonly owner: {
    readonly kind: 'PtahSchema' | 'PtahMigration';
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
  };
  readonly claim: Pick<
    Claim,
    'operationId' | 'inputsFingerprint' | 'jobName' | 'contentDigest' | 'snapshotName' | 'artifactReference'
  >;
  readonly component: string;
  /** The label naming the owning resource, by family. */
  readonly ownerLabel: string;
  readonly operationLabel: string;
  readonly runnerOperation: RunnerOperation;
  /** The database the operation reads or changes; absent for Resolve and Verify, which touch none. */
  readonly database?: {
    readonly engine: 'postgres' | 'mysql';
    readonly urlFrom: { readonly name: string; readonly key: string };
  };
  readonly activeDeadlineSeconds: number;
  readonly manager: ManagerIdentity;
  readonly now: Date;
  /** Where the files come from; absent, the Pod mounts no source (an Apply, a Resolve, a Verify). */
  readonly source?: JobSource;
  /** The main container's arguments, when not `run --operation <op>`. */
  readonly mainArgs?: readonly string[];
  readonly extraAnnotations: Readonly<Record<string, string>>;
  readonly extraVolumes: readonly V1Volume[];
  readonly extraMounts: readonly V1VolumeMount[];
  /** The operation's own inputs, after the variables every operation gets. */
  readonly env: readonly V1EnvVar[];
}

/** The Pod skeleton every operation shares: the hardening, the envelope, the snapshot check, the URL. */
function operationJob(parts: OperationJobParts): V1Job {
  const { owner, claim } = parts;
  const labels = {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.component]: parts.component,
    [parts.ownerLabel]: owner.name,
    [LABELS.operation]: parts.operationLabel,
    [LABELS.operationId]: claim.operationId.replace(/^sha256:/, '').slice(0, 16),
  };
  const annotations: Record<string, string> = {
    [ANNOTATIONS.operationId]: claim.operationId,
    [ANNOTATIONS.inputsFingerprint]: claim.inputsFingerprint,
    [ANNOTATIONS.ptahVersion]: parts.manager.ptahVersion,
    [ANNOTATIONS.managerImage]: parts.manager.managerImage,
    [ANNOTATIONS.managerRevision]: parts.manager.managerRevision,
    [ANNOTATIONS.controllerStateVersion]: String(parts.manager.controllerStateVersion),
    [ANNOTATIONS.runnerProtocolVersion]: String(RUNNER_PROTOCOL_VERSION),
    ...(claim.contentDigest !== undefined ? { [ANNOTATIONS.contentDigest]: claim.contentDigest } : {}),
    ...parts.extraAnnotations,
  };

  const hardened: V1SecurityContext = {
    runAsNonRoot: true,
    runAsUser: RUNNER_UID,
    runAsGroup: RUNNER_UID,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    privileged: false,
    capabilities: { drop: ['ALL'] },
  };

  const volumes: V1Volume[] = [{ name: 'work', emptyDir: { medium: 'Memory', sizeLimit: '128Mi' } }];
  const mainMounts: V1VolumeMount[] = [{ name: 'work', mountPath: POD_PATHS.work }];
  const initContainers: V1Container[] = [];

  if (parts.source?.kind === 'oci') {
    const oci = ociSourceParts(
      claim.artifactReference!,
      parts.source,
      hardened,
      claim.operationId,
      parts.manager.runnerImage,
    );
    volumes.push(...oci.volumes);
    initContainers.push(...oci.initContainers);
    mainMounts.push(oci.mainMount);
  }
  if (parts.source?.kind === 'git') {
    const git = gitSourceParts(
      parts.source,
      { commit: parts.source.commit, contentDigest: claim.contentDigest! },
      hardened,
      claim.operationId,
      parts.manager.runnerImage,
    );
    volumes.push(...git.volumes);
    initContainers.push(...git.initContainers);
    mainMounts.push(git.mainMount);
  }
  if (parts.source?.kind === 'snapshot') {
    volumes.push({ name: 'snapshot', configMap: { name: claim.snapshotName!, defaultMode: 0o444 } });
    initContainers.push({
      name: SNAPSHOT_CHECK_CONTAINER,
      image: parts.manager.runnerImage,
      args: [
        'check-snapshot',
        '--snapshot',
        SNAPSHOT_DIR,
        '--digest',
        claim.contentDigest!,
        '--out',
        parts.source.out,
      ],
      env: [{ name: 'PTAH_OPERATION_ID', value: claim.operationId }],
      volumeMounts: [
        { name: 'snapshot', mountPath: SNAPSHOT_DIR, readOnly: true },
        { name: 'work', mountPath: POD_PATHS.work },
      ],
      securityContext: hardened,
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    });
  }
  volumes.push(...parts.extraVolumes);
  mainMounts.push(...parts.extraMounts);

  const env: V1EnvVar[] = [
    { name: 'PTAH_OPERATION', value: parts.runnerOperation },
    { name: 'PTAH_OPERATION_ID', value: claim.operationId },
    { name: 'PTAH_RUNNER_PROTOCOL_VERSION', value: String(RUNNER_PROTOCOL_VERSION) },
    ...(parts.database !== undefined
      ? [
          { name: 'PTAH_EXPECTED_DATABASE_ENGINE', value: parts.database.engine },
          // The database credential, resolved by Kubernetes from the Secret; the manager never reads it.
          {
            name: 'PTAH_DB_URL',
            valueFrom: {
              secretKeyRef: {
                name: parts.database.urlFrom.name,
                key: parts.database.urlFrom.key,
                optional: false,
              },
            },
          },
        ]
      : []),
    ...parts.env,
  ];

  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: claim.jobName,
      namespace: owner.namespace,
      labels,
      annotations,
      ownerReferences: [
        {
          apiVersion: `${API_GROUP}/v1alpha1`,
          kind: owner.kind,
          name: owner.name,
          uid: owner.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 0,
      activeDeadlineSeconds: parts.activeDeadlineSeconds,
      template: {
        metadata: { labels, annotations },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          activeDeadlineSeconds: parts.activeDeadlineSeconds,
          terminationGracePeriodSeconds: 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUNNER_UID,
            runAsGroup: RUNNER_UID,
            fsGroup: RUNNER_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          volumes,
          initContainers,
          containers: [
            {
              name: MAIN_CONTAINER,
              image: parts.manager.runnerImage,
              args: [...(parts.mainArgs ?? ['run', '--operation', parts.runnerOperation])],
              env,
              volumeMounts: mainMounts,
              securityContext: hardened,
              terminationMessagePath: '/dev/termination-log',
              terminationMessagePolicy: 'File',
            },
          ],
        },
      },
    },
  };
}
