/**
 * The Job an operation of a PtahSchema runs in. One function builds it from the claim, so a restarted
 * manager builds the same Job for the same claim.
 *
 * Shape, and why:
 * - no ServiceAccount token, no service links: the process that holds the database URL holds no
 *   Kubernetes credential;
 * - non-root, read-only root filesystem, every capability dropped, no privilege escalation;
 * - backoffLimit 0 and restartPolicy Never: an operation runs at most once per claim; a retry is a new claim;
 * - activeDeadlineSeconds on the Job and the Pod;
 * - an init container checks the snapshot against the content digest the operation is bound to and copies
 *   the files; it holds no credential, and a refusal stops the Pod before the container with the URL starts;
 * - the main container runs `ptah-runner`, which reads the URL from PTAH_DB_URL (a secretKeyRef): env only,
 *   never argv;
 * - the annotation envelope names the claim and the manager that built the Job; the owner reference ties it
 *   to the resource, so deleting the resource collects it.
 */
import type { V1Job, V1EnvVar, V1Volume, V1VolumeMount, V1SecurityContext } from '@kubernetes/client-node';
import { API_GROUP, LABELS, MANAGED_BY } from '../../api/meta.ts';
import type { Claim } from '../../api/ptah-schema.ts';
import { RUNNER_PROTOCOL_VERSION } from '../../protocol/result.ts';

export const OPERATION_COMPONENT = 'schema-operation';
export const RUNNER_UID = 65532;
export const MAIN_CONTAINER = 'ptah';
export const SNAPSHOT_CHECK_CONTAINER = 'check-snapshot';

export const ANNOTATIONS = {
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
  /** The immutable chunk ConfigMap. */
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
  readonly manager: ManagerIdentity;
  readonly now: Date;
}

// Everything the Pod mounts lives under /ptah, so no mount hides a directory the image ships.
export const POD_PATHS = {
  root: '/ptah',
  work: '/ptah/work',
  snapshot: '/ptah/snapshot',
  schema: '/ptah/work/schema',
  plan: '/ptah/plan',
  tmp: '/ptah/work',
} as const;
const SNAPSHOT_DIR = POD_PATHS.snapshot;
const SCHEMA_DIR = POD_PATHS.schema;
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
  if (operation !== 'apply' && (claim.snapshotName === undefined || claim.contentDigest === undefined)) {
    throw new Error(`a ${operation} Job needs the snapshot and the content digest it is bound to`);
  }

  const labels = {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.component]: OPERATION_COMPONENT,
    [LABELS.schema]: schema.name,
    [LABELS.operation]: operation,
    [LABELS.operationId]: claim.operationId.replace(/^sha256:/, '').slice(0, 16),
  };
  const annotations: Record<string, string> = {
    [ANNOTATIONS.operationId]: claim.operationId,
    [ANNOTATIONS.inputsFingerprint]: claim.inputsFingerprint,
    [ANNOTATIONS.ptahVersion]: input.manager.ptahVersion,
    [ANNOTATIONS.managerImage]: input.manager.managerImage,
    [ANNOTATIONS.managerRevision]: input.manager.managerRevision,
    [ANNOTATIONS.controllerStateVersion]: String(input.manager.controllerStateVersion),
    [ANNOTATIONS.runnerProtocolVersion]: String(RUNNER_PROTOCOL_VERSION),
    ...(claim.contentDigest !== undefined ? { [ANNOTATIONS.contentDigest]: claim.contentDigest } : {}),
    ...(input.plan !== undefined
      ? {
          [ANNOTATIONS.planFingerprint]: input.plan.fingerprint,
          [ANNOTATIONS.planContentDigest]: input.plan.contentDigest,
        }
      : {}),
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
  const initContainers = [];

  if (operation !== 'apply') {
    volumes.push({ name: 'snapshot', configMap: { name: claim.snapshotName!, defaultMode: 0o444 } });
    initContainers.push({
      name: SNAPSHOT_CHECK_CONTAINER,
      image: input.manager.runnerImage,
      args: [
        'check-snapshot',
        '--snapshot',
        SNAPSHOT_DIR,
        '--digest',
        claim.contentDigest!,
        '--out',
        SCHEMA_DIR,
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
  } else {
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

  const notAfter = new Date(input.now.getTime() + input.activeDeadlineSeconds * 1000).toISOString();
  const env: V1EnvVar[] = [
    { name: 'PTAH_OPERATION', value: operation },
    { name: 'PTAH_OPERATION_ID', value: claim.operationId },
    { name: 'PTAH_RUNNER_PROTOCOL_VERSION', value: String(RUNNER_PROTOCOL_VERSION) },
    { name: 'PTAH_EXPECTED_DATABASE_ENGINE', value: input.engine },
    // The one credential in the Pod, resolved by Kubernetes from the Secret; the manager never reads it.
    {
      name: 'PTAH_DB_URL',
      valueFrom: { secretKeyRef: { name: input.urlFrom.name, key: input.urlFrom.key, optional: false } },
    },
    { name: 'PTAH_SCHEMA_DIR', value: SCHEMA_DIR },
    { name: 'PTAH_WORK_DIR', value: WORK_DIR },
    { name: 'PTAH_EXCLUDE', value: JSON.stringify([...input.exclude].sort()) },
    { name: 'PTAH_PROTECTED_TABLES', value: JSON.stringify([...input.protectedTables].sort()) },
    { name: 'PTAH_EXECUTION_NOT_AFTER', value: notAfter },
    ...(input.plan !== undefined
      ? [
          { name: 'PTAH_PLAN_DIR', value: PLAN_DIR },
          { name: 'PTAH_EXPECTED_PLAN_CONTENT_DIGEST', value: input.plan.contentDigest },
          // The runner refuses to start ptah when PTAH_DB_URL now names another database than this one.
          { name: 'PTAH_EXPECTED_TARGET_IDENTITY', value: input.plan.targetIdentityDigest },
        ]
      : []),
  ];

  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: claim.jobName,
      namespace: schema.namespace,
      labels,
      annotations,
      ownerReferences: [
        {
          apiVersion: `${API_GROUP}/v1alpha1`,
          kind: 'PtahSchema',
          name: schema.name,
          uid: schema.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 0,
      activeDeadlineSeconds: input.activeDeadlineSeconds,
      template: {
        metadata: { labels, annotations },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          activeDeadlineSeconds: input.activeDeadlineSeconds,
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
              image: input.manager.runnerImage,
              args: ['run', '--operation', operation],
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
