/** `kubectl ptah status <schema>`: phase, plan, conditions and journal as tables a person reads. */
import { parseArgs } from 'node:util';
import type { PtahSchema } from '../api/ptah-schema.ts';
import {
  CONNECTION_OPTIONS,
  connect,
  getOurObject,
  PLUGIN_EXIT,
  PluginError,
  type PluginExit,
} from './kubectl-ptah-context.ts';

export const STATUS_USAGE = `usage: kubectl ptah status <schema> [-n namespace]

Prints the schema's phase, its current and applied plan, its conditions and its journal.`;

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

type Condition = NonNullable<NonNullable<PtahSchema['status']>['conditions']>[number];

/** The journal columns both families record. */
interface JournalLine {
  readonly time: string;
  readonly type: string;
  readonly operation?: string | undefined;
  readonly outcome?: string | undefined;
  readonly reason?: string | undefined;
  readonly count?: number | undefined;
  readonly plan?: string | undefined;
  readonly approver?: string | undefined;
}

/** The CONDITIONS and JOURNAL tables, as every status view prints them. */
export function conditionsAndJournal(
  conditions: readonly Condition[],
  entries: readonly JournalLine[],
): string[] {
  return [
    'CONDITIONS',
    table(
      ['TYPE', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
      conditions.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime, c.message]),
    ),
    'JOURNAL',
    table(
      ['TIME', 'TYPE', 'OPERATION', 'OUTCOME', 'REASON', 'PLAN', 'APPROVER'],
      entries.map((e) => [
        e.time,
        e.type,
        e.operation ?? '',
        e.outcome ?? '',
        `${e.reason ?? ''}${e.count !== undefined && e.count > 1 ? ` (x${e.count})` : ''}`,
        e.plan ?? '',
        e.approver ?? '',
      ]),
    ),
  ];
}

export function renderStatus(schema: PtahSchema): string {
  const s = schema.status;
  const out: string[] = [];
  out.push(`PtahSchema ${schema.metadata.namespace ?? ''}/${schema.metadata.name}`);
  out.push(`phase:    ${s?.phase ?? '(no status yet)'}`);
  const plan = s?.plan;
  out.push(
    plan
      ? `plan:     ${plan.name}, ${plan.statementCount} statement(s), destructive: ${plan.destructive ? 'yes' : 'no'}, ` +
          (plan.approval ? `approved by ${plan.approval.approver.username}` : 'not approved')
      : 'plan:     none',
  );
  out.push(s?.applied ? `applied:  ${s.applied.planRef.name} at ${s.applied.completedAt}` : 'applied:  none');
  if (s?.claim) out.push(`running:  ${s.claim.type} (Job ${s.claim.jobName}, attempt ${s.claim.attempt})`);
  out.push('', ...conditionsAndJournal(s?.conditions ?? [], s?.journal?.entries ?? []));
  return out.join('\n');
}

export async function runStatus(argv: readonly string[]): Promise<PluginExit> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { ...CONNECTION_OPTIONS, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    process.stdout.write(STATUS_USAGE + '\n');
    return PLUGIN_EXIT.ok;
  }
  if (positionals.length !== 1) throw new PluginError(PLUGIN_EXIT.usage, STATUS_USAGE);
  const ctx = connect(values);
  const name = positionals[0]!;
  const schema = await getOurObject<PtahSchema>(ctx, 'ptahschemas', name);
  if (schema === undefined)
    throw new PluginError(PLUGIN_EXIT.absent, `no PtahSchema ${name} in namespace ${ctx.namespace}`);
  process.stdout.write(renderStatus(schema));
  return PLUGIN_EXIT.ok;
}
