/**
 * `kubectl ptah migration status|plan|approve|acknowledge <migration>`: a PtahMigration as a person reads
 * and decides about it. A migration plan stores no SQL (its files stay in the checked snapshot), so `plan`
 * prints the sequence the plan binds: versions, keys, descriptions, checksums, checkpoints and transaction
 * modes, and never a statement. The plan printed must be the one the migration's status names, by name,
 * UID and fingerprint, and belong to it by UID.
 */
import { parseArgs } from 'node:util';
import type { PtahMigration } from '../api/ptah-migration.ts';
import type { PtahMigrationPlan } from '../api/ptah-migration-plan.ts';
import {
  CONNECTION_OPTIONS,
  connect,
  getOurObject,
  PLUGIN_EXIT,
  PluginError,
  type PluginContext,
  type PluginExit,
} from './kubectl-ptah-context.ts';
import { conditionsAndJournal, table } from './kubectl-ptah-status.ts';

export const MIGRATION_SUBCOMMANDS = ['status', 'plan', 'approve', 'acknowledge'] as const;
export type MigrationSubcommand = (typeof MIGRATION_SUBCOMMANDS)[number];

export const MIGRATION_USAGE = `usage: kubectl ptah migration <command> <migration> [options] [-n namespace]

commands:
  status <migration>                        phase, history, plan, runs, conditions and journal
  plan <migration> [-o text|json]           the current plan's sequence (a migration plan holds no SQL)
  approve <migration> [--yes]               show the current plan, then approve exactly it
  acknowledge <migration> [--operation <id>] [--yes]
                                            settle the run the migration records as unresolved`;

export const MIGRATION_PLAN_FORMATS = ['text', 'json'] as const;
type MigrationPlanFormat = (typeof MIGRATION_PLAN_FORMATS)[number];

/** The migration, or exit 3 naming it and the namespace. */
export async function readMigration(ctx: PluginContext, name: string): Promise<PtahMigration> {
  const migration = await getOurObject<PtahMigration>(ctx, 'ptahmigrations', name);
  if (migration === undefined)
    throw new PluginError(PLUGIN_EXIT.absent, `no PtahMigration ${name} in namespace ${ctx.namespace}`);
  return migration;
}

/** The plan the migration waits on, checked to be exactly the one its status names. */
export async function readCurrentMigrationPlan(
  ctx: PluginContext,
  migration: PtahMigration,
): Promise<PtahMigrationPlan> {
  const name = migration.metadata.name;
  const pointer = migration.status?.plan;
  if (pointer === undefined)
    throw new PluginError(
      PLUGIN_EXIT.absent,
      `PtahMigration ${name} has no current plan (phase ${migration.status?.phase ?? 'no status yet'})`,
    );
  const plan = await getOurObject<PtahMigrationPlan>(ctx, 'ptahmigrationplans', pointer.name);
  if (plan === undefined)
    throw new PluginError(
      PLUGIN_EXIT.absent,
      `PtahMigration ${name} names plan ${pointer.name}, which no longer exists in namespace ${ctx.namespace}`,
    );
  const refuse = (why: string) =>
    new PluginError(
      PLUGIN_EXIT.failed,
      `plan ${pointer.name} of PtahMigration ${name}: ${why}; nothing printed`,
    );
  if (plan.metadata.uid !== pointer.uid)
    throw refuse('was replaced: its UID is not the one the migration records');
  if (plan.spec.fingerprint !== pointer.fingerprint)
    throw refuse('its fingerprint is not the one the migration records');
  if (plan.spec.migrationRef.name !== name || plan.spec.migrationRef.uid !== migration.metadata.uid)
    throw refuse('belongs to another PtahMigration');
  return plan;
}

export function renderMigrationPlan(migration: PtahMigration, plan: PtahMigrationPlan): string {
  const { binding, migrations } = plan.spec;
  const head = [
    `# plan ${plan.metadata.name} of PtahMigration ${migration.metadata.name}: ${migrations.length} migration(s) from version ${binding.currentVersion}`,
    `# fingerprint ${plan.spec.fingerprint}`,
    `# history ${binding.historyFingerprint}, transaction mode asked by spec.policy: ${binding.transactionMode}`,
  ];
  const rows = migrations.map((m) => [
    m.version,
    m.versionKey,
    m.checkpoint ? 'yes' : 'no',
    m.transactionMode,
    m.checksum,
    m.description,
  ]);
  return (
    head.join('\n') +
    '\n' +
    table(['VERSION', 'KEY', 'CHECKPOINT', 'TRANSACTION', 'CHECKSUM', 'DESCRIPTION'], rows)
  );
}

function historyLine(m: PtahMigration): string[] {
  const h = m.status?.history;
  if (h === undefined) return ['history:    not read yet'];
  const lines = [
    `history:    at ${h.currentVersion ?? '0'}${h.checkpointVersion ? ` (checkpoint ${h.checkpointVersion})` : ''}, ` +
      `${h.appliedCount} applied, ${h.pendingCount} pending, ${h.verdict}${h.dirty ? ', dirty' : ''}, read ${h.observedAt}`,
  ];
  if ((h.modifiedVersions ?? []).length > 0)
    lines.push(`            modified since applied: ${h.modifiedVersions!.join(', ')}`);
  if ((h.outOfOrderVersions ?? []).length > 0)
    lines.push(`            pending below the applied: ${h.outOfOrderVersions!.join(', ')}`);
  return lines;
}

function lastRunLine(m: PtahMigration): string {
  const r = m.status?.lastRun;
  if (r === undefined) return 'last run:   none';
  const applied =
    (r.appliedVersions ?? []).length > 0 ? `applied ${r.appliedVersions!.join(', ')}` : 'applied none';
  const f = r.failure;
  const failed = f
    ? `; failed at version ${f.version}, statement ${f.statementPosition}` +
      (f.sqlState ? `, SQLSTATE ${f.sqlState}` : '') +
      (f.mysqlErrorNumber !== undefined ? `, error ${f.mysqlErrorNumber}` : '')
    : '';
  return `last run:   ${r.outcome} (Job ${r.jobName}, finished ${r.finishedAt}), ${applied}${failed}`;
}

export function renderMigrationStatus(m: PtahMigration): string {
  const s = m.status;
  const out: string[] = [];
  out.push(`PtahMigration ${m.metadata.namespace ?? ''}/${m.metadata.name}`);
  out.push(`phase:      ${s?.phase ?? '(no status yet)'}`);
  out.push(...historyLine(m));
  out.push(s?.plan ? `plan:       ${s.plan.name}, fingerprint ${s.plan.fingerprint}` : 'plan:       none');
  out.push(lastRunLine(m));
  const u = s?.unresolvedRun;
  if (u !== undefined) {
    out.push(
      `UNRESOLVED: ${u.outcome} run, operation ${u.operationId} (Job ${u.jobName}), recorded ${u.recordedAt}`,
      `            the database may hold part of it; nothing runs until a history read shows nothing pending or`,
      `            someone who checked it runs \`kubectl ptah migration acknowledge ${m.metadata.name}\``,
    );
  }
  const r = s?.resolvedRun;
  if (r !== undefined)
    out.push(
      `resolved:   ${r.outcome} run ${r.operationId}, ${r.resolution}` +
        (r.acknowledgedBy ? ` by ${r.acknowledgedBy.username}` : '') +
        ` at ${r.resolvedAt}`,
    );
  if (s?.claim) out.push(`running:    ${s.claim.type} (Job ${s.claim.jobName}, attempt ${s.claim.attempt})`);
  out.push('', ...conditionsAndJournal(s?.conditions ?? [], s?.journal?.entries ?? []));
  return out.join('\n');
}

const SUBCOMMAND_OPTIONS = {
  ...CONNECTION_OPTIONS,
  output: { type: 'string', short: 'o' },
  operation: { type: 'string' },
  yes: { type: 'boolean', short: 'y', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

const ACCEPTS: Record<MigrationSubcommand, readonly (keyof typeof SUBCOMMAND_OPTIONS)[]> = {
  status: [],
  plan: ['output'],
  approve: ['yes'],
  acknowledge: ['operation', 'yes'],
};

export async function runMigration(argv: readonly string[]): Promise<PluginExit> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(MIGRATION_USAGE + '\n');
    return command === undefined ? PLUGIN_EXIT.usage : PLUGIN_EXIT.ok;
  }
  if (!(MIGRATION_SUBCOMMANDS as readonly string[]).includes(command))
    throw new PluginError(PLUGIN_EXIT.usage, `unknown command "${command}"\n\n${MIGRATION_USAGE}`);
  const sub = command as MigrationSubcommand;
  const { values, positionals } = parseArgs({
    args: [...rest],
    allowPositionals: true,
    options: SUBCOMMAND_OPTIONS,
  });
  if (values.help) {
    process.stdout.write(MIGRATION_USAGE + '\n');
    return PLUGIN_EXIT.ok;
  }
  for (const option of ['output', 'operation'] as const) {
    if (values[option] !== undefined && !ACCEPTS[sub].includes(option))
      throw new PluginError(PLUGIN_EXIT.usage, `${sub} takes no --${option}\n\n${MIGRATION_USAGE}`);
  }
  if (positionals.length !== 1) throw new PluginError(PLUGIN_EXIT.usage, MIGRATION_USAGE);
  const name = positionals[0]!;
  const format = (values.output ?? 'text') as MigrationPlanFormat;
  if (!MIGRATION_PLAN_FORMATS.includes(format))
    throw new PluginError(PLUGIN_EXIT.usage, `-o must be one of ${MIGRATION_PLAN_FORMATS.join(', ')}`);
  if (sub === 'approve' || sub === 'acknowledge') {
    const decide = await import('./kubectl-ptah-migration-decide.ts');
    const run = sub === 'approve' ? decide.runApproveMigration : decide.runAcknowledgeRun;
    return run(name, values);
  }
  const ctx = connect(values);
  const migration = await readMigration(ctx, name);
  if (sub === 'status') {
    process.stdout.write(renderMigrationStatus(migration));
    return PLUGIN_EXIT.ok;
  }
  const plan = await readCurrentMigrationPlan(ctx, migration);
  process.stdout.write(
    format === 'json' ? JSON.stringify(plan, null, 2) + '\n' : renderMigrationPlan(migration, plan),
  );
  return PLUGIN_EXIT.ok;
}
