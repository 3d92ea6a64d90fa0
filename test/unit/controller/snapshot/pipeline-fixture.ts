/**
 * What the source pipeline tests share: a PtahSchema and a PtahMigration view over any source, each family's
 * decide input around an artifact input, and a finished Job with its harvested runner result.
 */
import type { DecideInput } from '../../../../src/controller/schema/decide.ts';
import type { MigrationDecideInput } from '../../../../src/controller/migration/decide.ts';
import type { SchemaSpecView, SchemaStatus, SchemaView } from '../../../../src/controller/schema/model.ts';
import type {
  MigrationSpecView,
  MigrationStatus,
  MigrationView,
} from '../../../../src/controller/migration/model.ts';
import type { ArtifactInput } from '../../../../src/controller/snapshot/artifact-steps.ts';
import type { Resolution } from '../../../../src/api/ptah-schema.ts';
import type { RunnerOutputs, RunnerResult } from '../../../../src/protocol/result.ts';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const digest = (c: string) => `sha256:${c.repeat(64)}`;

export const executionBinding = {
  epoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'manager:1',
  managerRevision: 'rev-1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'runner:1',
  runnerProtocolVersion: 1,
};

/** A spec's source fields: the ConfigMap (empty for an artifact source), the artifact and its policy. */
export type SourceSpec<S extends { configMap: unknown }> = Pick<S, 'configMap'> & Partial<S>;

const common = {
  engine: 'postgres',
  realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
  urlFrom: { name: 'db', key: 'url' },
  intervalMs: 600_000,
  failureRetryIntervalMs: 30_000,
  activeDeadlineSeconds: 900,
  suspend: false,
} as const;

const meta = (uid: string, generation: number) => ({
  namespace: 'ns',
  name: 'orders',
  uid,
  generation,
  deleting: false,
  hasFinalizer: true,
});

export function schemaViewOf(
  source: SourceSpec<SchemaSpecView>,
  status: SchemaStatus,
  generation = 1,
): SchemaView {
  const spec: SchemaSpecView = {
    ...common,
    policy: { apply: 'OnApproval', allowDestructive: false, protectedTables: [], exclude: [] },
    ...source,
  };
  return { ...meta('uid-1', generation), spec, status };
}

export function migrationViewOf(
  source: SourceSpec<MigrationSpecView>,
  status: MigrationStatus,
  uid: string,
): MigrationView {
  const spec: MigrationSpecView = {
    ...common,
    policy: { apply: 'OnApproval', lockTimeoutSeconds: 300, transactionMode: 'unset' },
    ...source,
  };
  return { ...meta(uid, 1), spec, status };
}

/** The resolution status recorded, as the reconciler hands it to decide: only one of the source's type. */
export function recordedAs(type: Resolution['sourceType'], res: Resolution | undefined) {
  return res?.sourceType === type
    ? { ok: true as const, value: res }
    : { ok: false as const, reason: 'SourceUnresolved', message: 'not yet' };
}

export function schemaInputOf(
  view: SchemaView,
  at: number,
  type: Resolution['sourceType'],
  artifact: ArtifactInput,
  extra: Partial<DecideInput>,
): DecideInput {
  return {
    now: new Date(at),
    schema: view,
    engineSupported: true,
    engine: 'postgres',
    realm: { admitted: true },
    coordinationDigest: digest('c'),
    executionBinding,
    resolution: recordedAs(type, view.status.resolution),
    artifact,
    approvals: [],
    ...extra,
  };
}

export function migrationInputOf(
  view: MigrationView,
  at: number,
  type: Resolution['sourceType'],
  artifact: ArtifactInput,
  extra: Partial<MigrationDecideInput>,
) {
  return {
    now: new Date(at),
    migration: view,
    engineSupported: true,
    engine: 'postgres' as const,
    realm: { admitted: true },
    coordinationDigest: digest('c'),
    executionBinding,
    resolution: recordedAs(type, view.status.resolution),
    artifact,
    approvals: [],
    acknowledgments: [],
    ...extra,
  } satisfies MigrationDecideInput;
}

/** A Job that finished, with the runner result its frame carried. */
export function finishedJob(
  claim: { operationId: string },
  operation: RunnerResult['operation'],
  outputs: RunnerOutputs,
  outcome: RunnerResult['outcome'] = 'succeeded',
  error?: { code: string; message: string },
) {
  return {
    job: {
      state: 'finished' as const,
      uid: 'job-1',
      succeeded: outcome === 'succeeded',
      finishedAt: new Date(T0).toISOString(),
    },
    harvest: {
      kind: 'accepted' as const,
      result: {
        protocolVersion: 1,
        operation,
        operationId: claim.operationId,
        exitCode: outcome === 'succeeded' ? 0 : 1,
        childExitCode: -1,
        outcome,
        startedAt: 'x',
        finishedAt: 'y',
        outputs,
        ...(error !== undefined ? { error } : {}),
      },
    },
  };
}
