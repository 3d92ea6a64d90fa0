/**
 * What the operator demo shows a person: phase and condition changes as they happen, a published plan's
 * statements (rebuilt from its chunk objects and checked like an Apply checks them), the database's
 * tables and rows, and the resource's journal. Read-only; nothing here prints a credential.
 */
import * as k8s from '@kubernetes/client-node';
import pg from 'pg';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../src/api/ptah-schema-plan-chunk.ts';
import { reassemblePlan } from '../../src/plan-store/reassemble-plan.ts';
import { readPlan, type PlanDocument } from '../../src/engine/plan-file.ts';

/** What the progress, stop and journal printers read: the part of status both families share. */
export interface WatchedResource {
  readonly status?: {
    readonly phase?: string;
    readonly conditions?: readonly {
      readonly type: string;
      readonly status: string;
      readonly reason: string;
      readonly message?: string;
    }[];
    readonly claim?: { readonly type: string; readonly jobName: string };
    readonly journal?: {
      readonly coveredSince: string;
      readonly entries: readonly {
        readonly time: string;
        readonly type: string;
        readonly operation?: string;
        readonly reason?: string;
        readonly outcome?: string;
        readonly plan?: string;
        readonly approval?: string;
        readonly approver?: string;
        readonly count?: number;
      }[];
    };
  };
}

/** Prints a line whenever the phase, a condition's status or reason, or the claimed operation changes. */
export class ProgressPrinter {
  private readonly seen = new Map<string, string>();
  private phase: string | undefined;
  private claim: string | undefined;

  constructor(private readonly startedAt: number) {}

  observe(schema: WatchedResource): void {
    const status = schema.status;
    const changed: string[] = [];
    for (const c of status?.conditions ?? []) {
      const now = `${c.status}/${c.reason}`;
      if (this.seen.get(c.type) !== now) {
        this.seen.set(c.type, now);
        changed.push(`${c.type}=${now}`);
      }
    }
    const claim = status?.claim ? `${status.claim.type} (Job ${status.claim.jobName})` : undefined;
    const claimChanged = claim !== undefined && claim !== this.claim;
    this.claim = claim;
    const phase = status?.phase ?? '(no status yet)';
    if (phase === this.phase && changed.length === 0 && !claimChanged) return;
    this.phase = phase;
    const elapsed = `${((Date.now() - this.startedAt) / 1000).toFixed(1)}s`.padStart(7);
    const parts = [...(claimChanged ? [`claim ${claim}`] : []), ...changed];
    console.log(`  ${elapsed}  ${phase.padEnd(20)} ${parts.join(', ')}`);
  }
}

/** The message of the condition that explains a stop (Blocked or Failed), for an error a person can act on. */
export function explainStop(schema: WatchedResource): string {
  const conditions = schema.status?.conditions ?? [];
  const telling =
    conditions.find((c) => c.type === 'ReconciliationFailed' && c.status === 'True') ??
    conditions.find((c) => c.type === 'Ready' && c.status === 'False');
  return telling
    ? `${telling.type}=${telling.status} ${telling.reason}: ${telling.message ?? ''}`
    : 'no condition says why';
}

/** Reads a plan's chunks as the caller and rebuilds its bytes with every check an Apply makes. */
export async function readPublishedPlan(
  objects: k8s.CustomObjectsApi,
  plan: PtahSchemaPlan,
): Promise<{ document: PlanDocument; size: number; chunks: number }> {
  const namespace = plan.metadata.namespace ?? '';
  const read = new Map<string, PtahSchemaPlanChunk>();
  for (const chunk of plan.spec.chunks) {
    const stored = await objects.getNamespacedCustomObject({
      group: 'operator.ptah.run',
      version: 'v1alpha1',
      plural: 'ptahschemaplanchunks',
      namespace,
      name: chunk.name,
    });
    read.set(chunk.name, stored as PtahSchemaPlanChunk);
  }
  const rebuilt = reassemblePlan(plan, (name) => read.get(name));
  if (!rebuilt.ok)
    throw new Error(`plan ${plan.metadata.name} does not reassemble: ${rebuilt.reason}: ${rebuilt.message}`);
  return {
    document: readPlan(rebuilt.bytes).plan,
    size: rebuilt.bytes.length,
    chunks: plan.spec.chunks.length,
  };
}

export function printPlanStatements(document: PlanDocument): void {
  document.statements.forEach((st, i) => {
    const lines = st.sql.trim().split('\n');
    console.log(`  ${String(i + 1).padStart(2)}. [${st.severity}] ${lines[0]}`);
    for (const line of lines.slice(1)) console.log(`      ${line}`);
  });
}

function cell(value: unknown): string {
  if (value === null) return 'NULL';
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

function printTable(rows: Record<string, unknown>[], columns: string[], indent = '    '): void {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    indent +
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join(' | ')
      .trimEnd();
  console.log(line(columns));
  console.log(indent + widths.map((w) => '-'.repeat(w)).join('-+-'));
  for (const r of rows) console.log(line(columns.map((c) => cell(r[c]))));
}

/** Every table of the public schema with its columns, indexes, foreign keys and rows. */
export async function printDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
    );
    for (const { table_name: table } of tables.rows) {
      const ident = client.escapeIdentifier(table);
      const columns = await client.query<{ name: string; type: string; not_null: boolean }>(
        `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, attnotnull AS not_null
           FROM pg_attribute WHERE attrelid = ('public.' || quote_ident($1))::regclass AND attnum > 0 AND NOT attisdropped
          ORDER BY attnum`,
        [table],
      );
      const described = columns.rows.map((c) => `${c.name} ${c.type}${c.not_null ? ' not null' : ''}`);
      console.log(`  table public.${table} (${described.join(', ')})`);
      const extras = await client.query<{ kind: string; definition: string }>(
        `SELECT 'index' AS kind, indexdef AS definition FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1
         UNION ALL
         SELECT 'constraint', conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint
          WHERE conrelid = ('public.' || quote_ident($1))::regclass AND contype = 'f'
         ORDER BY 1, 2`,
        [table],
      );
      for (const e of extras.rows) console.log(`    ${e.kind}: ${e.definition}`);
      const rows = await client.query(`SELECT * FROM public.${ident} ORDER BY 1`);
      if (rows.rows.length === 0) {
        console.log('    (no rows)');
      } else {
        printTable(
          rows.rows as Record<string, unknown>[],
          rows.fields.map((f) => f.name),
        );
      }
    }
  } finally {
    await client.end();
  }
}

export function printJournal(schema: WatchedResource): void {
  const journal = schema.status?.journal;
  if (!journal || journal.entries.length === 0) {
    console.log('  (the journal is empty)');
    return;
  }
  console.log(`  complete since ${journal.coveredSince}`);
  for (const e of journal.entries) {
    const details = [
      e.operation && `operation=${e.operation}`,
      e.reason && `reason=${e.reason}`,
      e.outcome && `outcome=${e.outcome}`,
      e.plan && `plan=${e.plan}`,
      e.approval && `approval=${e.approval}`,
      e.approver && `approver=${e.approver}`,
      e.count && e.count > 1 && `count=${e.count}`,
    ].filter(Boolean);
    console.log(`  ${e.time}  ${e.type.padEnd(17)} ${details.join(' ')}`);
  }
}
