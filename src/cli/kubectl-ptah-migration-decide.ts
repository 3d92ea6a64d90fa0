/**
 * The two decisions a person makes about a migration. `approve` shows the current plan's sequence and
 * creates the PtahMigrationApproval naming exactly that plan by name, UID and fingerprint; `acknowledge`
 * shows the run the migration records as unresolved and creates the PtahMigrationRunAcknowledgment
 * naming exactly its operation id. Who decided is never written here: the mutating webhooks stamp it from
 * the authenticated request, and the command prints what they stamped.
 */
import { GROUP_VERSION } from '../api/meta.ts';
import { UNRESOLVED_RUN_ANNOTATION } from '../api/ptah-migration.ts';
import type {
  PtahMigrationApproval,
  PtahMigrationRunAcknowledgment,
} from '../api/ptah-migration-approval.ts';
import {
  confirmed,
  connect,
  createOurObject,
  listOurObjects,
  needsTerminalOrYes,
  PLUGIN_EXIT,
  PluginError,
  type ConnectionFlags,
  type PluginExit,
} from './kubectl-ptah-context.ts';
import { readCurrentMigrationPlan, readMigration, renderMigrationPlan } from './kubectl-ptah-migration.ts';

interface DecideFlags extends ConnectionFlags {
  readonly yes?: boolean | undefined;
  readonly operation?: string | undefined;
}

/** generateName keeps the whole name within 63 characters. */
const namePrefix = (name: string) => `${name.slice(0, 50)}-`;

export async function runApproveMigration(name: string, flags: DecideFlags): Promise<PluginExit> {
  const yes = flags.yes === true;
  needsTerminalOrYes(
    yes,
    `migration approve ${name}`,
    `read the plan with \`kubectl ptah migration plan ${name}\``,
  );
  const ctx = connect(flags);
  const migration = await readMigration(ctx, name);
  const plan = await readCurrentMigrationPlan(ctx, migration);
  process.stdout.write(renderMigrationPlan(migration, plan));
  const existing = (await listOurObjects<PtahMigrationApproval>(ctx, 'ptahmigrationapprovals')).find(
    (a) => a.spec.planRef.uid === plan.metadata.uid && a.spec.planFingerprint === plan.spec.fingerprint,
  );
  if (existing !== undefined) {
    process.stdout.write(
      `plan ${plan.metadata.name} is already approved by ${existing.spec.approver?.username ?? '(not stamped)'} (approval ${existing.metadata.name})\n`,
    );
    return PLUGIN_EXIT.ok;
  }
  if (!yes && !(await confirmed(`approve plan ${plan.metadata.name} for PtahMigration ${name}? [y/N] `))) {
    process.stderr.write('not approved\n');
    return PLUGIN_EXIT.failed;
  }
  const created = await createOurObject<PtahMigrationApproval>(
    ctx,
    'ptahmigrationapprovals',
    {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigrationApproval',
      metadata: { generateName: namePrefix(name) },
      spec: {
        migrationRef: { name, uid: migration.metadata.uid ?? '' },
        planRef: { name: plan.metadata.name, uid: plan.metadata.uid ?? '' },
        planFingerprint: plan.spec.fingerprint,
      },
    },
    `the approval of plan ${plan.metadata.name}`,
  );
  process.stdout.write(
    `approval ${created.metadata.name} created for plan ${plan.metadata.name}, approver ${created.spec.approver?.username ?? '(not stamped)'}\n`,
  );
  return PLUGIN_EXIT.ok;
}

export async function runAcknowledgeRun(name: string, flags: DecideFlags): Promise<PluginExit> {
  const yes = flags.yes === true;
  needsTerminalOrYes(
    yes,
    `migration acknowledge ${name}`,
    `read the run with \`kubectl ptah migration status ${name}\`, check the database`,
  );
  const ctx = connect(flags);
  const migration = await readMigration(ctx, name);
  const run = migration.status?.unresolvedRun;
  if (run === undefined)
    throw new PluginError(
      PLUGIN_EXIT.absent,
      migration.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] !== undefined
        ? `PtahMigration ${name} records no unresolved run in its status yet, but its ${UNRESOLVED_RUN_ANNOTATION} annotation holds one: the manager brings it back into status at its next pass; acknowledge it then`
        : `PtahMigration ${name} records no unresolved run (phase ${migration.status?.phase ?? 'no status yet'}): nothing to acknowledge`,
    );
  if (flags.operation !== undefined && flags.operation !== run.operationId)
    throw new PluginError(
      PLUGIN_EXIT.failed,
      `--operation ${flags.operation} is not the unresolved run of PtahMigration ${name}, which is operation ${run.operationId} (Job ${run.jobName}); nothing acknowledged`,
    );
  process.stdout.write(
    `unresolved run of PtahMigration ${name}: ${run.outcome}, operation ${run.operationId}, Job ${run.jobName}` +
      (run.planRef ? `, plan ${run.planRef.name}` : '') +
      `, recorded ${run.recordedAt}\n` +
      `Acknowledging says you checked the database and settled what this run may have left half done; ` +
      `the next history read then decides what is pending.\n`,
  );
  if (
    !yes &&
    !(await confirmed(`acknowledge operation ${run.operationId} of PtahMigration ${name}? [y/N] `))
  ) {
    process.stderr.write('not acknowledged\n');
    return PLUGIN_EXIT.failed;
  }
  const created = await createOurObject<PtahMigrationRunAcknowledgment>(
    ctx,
    'ptahmigrationrunacknowledgments',
    {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigrationRunAcknowledgment',
      metadata: { generateName: namePrefix(name) },
      spec: { migrationRef: { name, uid: migration.metadata.uid ?? '' }, operationId: run.operationId },
    },
    `the acknowledgment of operation ${run.operationId}`,
  );
  process.stdout.write(
    `acknowledgment ${created.metadata.name} created for operation ${run.operationId}, acknowledged by ${created.spec.acknowledgedBy?.username ?? '(not stamped)'}\n`,
  );
  return PLUGIN_EXIT.ok;
}
