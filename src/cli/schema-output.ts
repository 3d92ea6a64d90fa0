/**
 * Two renderers of one result: JSON for machines (the operator's runner reads stdout) and text for people.
 * Neither ever prints a database URL.
 */
import type { ClassifiedChange } from '../engine/changes.ts';
import type { ApplyResult, DriftResult, InspectResult, PlanResult } from '../engine/schema-engine.ts';
import { highestSeverity } from '../engine/plan-file.ts';
import { headerText } from '../engine/plan-header.ts';

export function inspectJson(r: InspectResult): unknown {
  const m = r.model;
  return {
    command: 'inspect',
    dialect: r.dialect,
    fingerprint: r.fingerprint,
    round_trips: r.roundTrips,
    counts: {
      schemas: m.schemas.length,
      extensions: m.extensions.length,
      enums: m.enums.length,
      sequences: m.sequences.length,
      tables: m.tables.length,
      columns: m.tables.reduce((n, t) => n + t.columns.length, 0),
      constraints: m.tables.reduce((n, t) => n + t.constraints.length, 0),
      indexes: m.tables.reduce((n, t) => n + t.indexes.length, 0),
      views: m.views.length,
      // Functions, procedures, triggers, domains, policies... that the dialect declares whole.
      objects: (m.objects ?? []).length,
    },
    unmanaged: m.unmanaged.map((u) => ({ kind: u.objectKind, schema: u.schema, name: u.name })),
    model: m,
  };
}

export function inspectText(r: InspectResult): string {
  const j = inspectJson(r) as {
    counts: Record<string, number>;
    unmanaged: { kind: string; schema: string; name: string }[];
  };
  const lines = [`dialect: ${r.dialect}`, `fingerprint: ${r.fingerprint}`];
  for (const [k, v] of Object.entries(j.counts)) lines.push(`${k}: ${v}`);
  for (const t of r.model.tables) {
    lines.push(
      `table ${t.schema}.${t.name} (${t.columns.length} columns, ${t.constraints.length} constraints, ${t.indexes.length} indexes)`,
    );
  }
  for (const v of r.model.views) lines.push(`view ${v.schema}.${v.name}`);
  for (const o of r.model.objects ?? []) lines.push(`${o.objectType} ${o.schema}.${o.name}`);
  for (const u of j.unmanaged) lines.push(`unmanaged ${u.kind} ${u.schema}.${u.name} (left alone)`);
  lines.push(NOT_MANAGED_NOTE);
  return lines.join('\n') + '\n';
}

function changeSummary(c: ClassifiedChange): {
  kind: string;
  severity: string;
  reason: string;
  destructive: boolean;
} {
  return {
    kind: c.kind,
    severity: c.classification.severity,
    reason: c.classification.reason,
    destructive: c.classification.destructive,
  };
}

export function planJson(r: PlanResult, out: string | undefined): unknown {
  return {
    command: 'plan',
    outcome: r.outcome,
    planOutcome: r.outcome === 'changes' ? 'Changes' : r.outcome === 'no_changes' ? 'NoChanges' : 'Refused',
    dialect: r.dialect,
    ...(r.digest !== undefined ? { digest: r.digest } : {}),
    ...(out !== undefined && r.bytes !== undefined ? { out } : {}),
    ...(r.refusal !== undefined ? { refusal: r.refusal } : {}),
    destructive: r.plan?.destructive ?? false,
    header: r.header,
    highest_severity: highestSeverity(r.changes.map((c) => c.classification)),
    statement_count: r.plan?.statements.length ?? 0,
    ...(r.plan !== undefined
      ? {
          from_fingerprint: r.plan.from_fingerprint,
          to_fingerprint: r.plan.to_fingerprint,
          rows_fingerprint: r.plan.rows_fingerprint,
          managed_rows: r.plan.managed_rows,
          statements: r.plan.statements,
        }
      : {}),
    changes: r.changes.map(changeSummary),
    // Bounded: the runner reads this report within a fixed allowance beside the plan.
    unmanaged: r.unmanaged.slice(0, UNMANAGED_LISTED).map((u) => ({
      kind: u.objectKind,
      schema: u.schema,
      name: u.name,
    })),
    unmanaged_count: r.unmanaged.length,
    round_trips: r.roundTrips,
  };
}

/** How many unmanaged objects a plan report names; the count says how many there are. */
const UNMANAGED_LISTED = 200;

/** `unmanaged text search dictionary public.simple2 (left alone)`; ownership and privileges name no object. */
function unmanagedLines(r: PlanResult): string[] {
  const lines = r.unmanaged.slice(0, UNMANAGED_LISTED).map((u) => {
    const name = u.name === NO_OBJECT ? '' : ` ${u.schema === '' ? u.name : `${u.schema}.${u.name}`}`;
    return `unmanaged ${u.objectKind}${name} (left alone)`;
  });
  const more = r.unmanaged.length - UNMANAGED_LISTED;
  return more > 0 ? [...lines, `and ${more} more unmanaged object(s)`] : lines;
}

/** The name the PostgreSQL loader gives ownership and privileges, which are not one object. */
const NO_OBJECT = 'not managed';

/** Said with every plan and inspection: what the engine never changes, whatever the files declare. */
export const NOT_MANAGED_NOTE =
  'not managed: ownership (ALTER ... OWNER TO) and privileges (GRANT, REVOKE) are accepted and left alone; so are the objects inspect lists as unmanaged';

export function planText(r: PlanResult, out: string | undefined): string {
  if (r.outcome === 'refused')
    return `plan refused: ${r.refusal?.reason ?? ''}\nno statements were planned\n`;
  if (r.outcome === 'no_changes')
    return `no changes: the database matches the desired state\n${[...unmanagedLines(r), ''].join('\n')}${NOT_MANAGED_NOTE}\n${out ? `plan written to ${out} (${r.digest ?? ''})\n` : ''}`;
  const lines = [
    ...headerText(r.header),
    `${r.plan?.statements.length ?? 0} statement(s)${r.plan?.destructive ? ', DESTRUCTIVE' : ''}; digest ${r.digest ?? ''}`,
  ];
  for (const s of r.plan?.statements ?? []) lines.push(`-- [${s.severity}] ${s.reason}`, `${s.sql};`);
  for (const l of unmanagedLines(r)) lines.push(`-- ${l}`);
  lines.push(`-- ${NOT_MANAGED_NOTE}`);
  if (out) lines.push(`plan written to ${out}`);
  return lines.join('\n') + '\n';
}

export function applyJson(r: ApplyResult): unknown {
  return {
    command: 'apply',
    outcome: r.outcome,
    digest: r.digest,
    dialect: r.dialect,
    destructive: r.destructive,
    ...(r.header !== undefined ? { header: r.header } : {}),
    statement_count: r.statements.length,
    statements: r.statements,
    ...(r.failure !== undefined ? { failure: r.failure } : {}),
    ...(r.expectedFingerprint !== undefined
      ? { expected_fingerprint: r.expectedFingerprint, actual_fingerprint: r.actualFingerprint }
      : {}),
    round_trips: r.roundTrips,
  };
}

function errorCodes(r: ApplyResult): string {
  const errno = r.failure?.errno !== undefined ? `error ${r.failure.errno}, ` : '';
  return `${errno}SQLSTATE ${r.failure?.sqlstate ?? 'unknown'}`;
}

export function applyText(r: ApplyResult): string {
  switch (r.outcome) {
    case 'validated': {
      const lines = [
        ...(r.header !== undefined ? headerText(r.header) : []),
        `plan ${r.digest} is valid: ${r.statements.length} statement(s), not applied (dry run)`,
      ];
      r.statements.forEach((s, i) => lines.push(`${i + 1}. [${s.severity}] ${s.sql};`));
      return lines.join('\n') + '\n';
    }
    case 'applied':
      return `outcome: applied\nplan ${r.digest}: ${r.statements.length} statement(s) applied\n`;
    case 'stale':
      return `outcome: stale\nthe database is no longer in the state plan ${r.digest} was computed against; plan again\n`;
    case 'failed':
      return `outcome: failed\nstatement ${r.failure?.position ?? '?'} of ${r.statements.length} failed (${errorCodes(r)}): ${r.failure?.message ?? ''}\n${r.statements[0]?.transactional === false ? 'it was the first statement; nothing ran' : 'the transaction was rolled back'}; the database is unchanged\n`;
    case 'partial':
      return `outcome: partial\nstatement ${r.failure?.position ?? '?'} of ${r.statements.length} failed (${errorCodes(r)}): ${r.failure?.message ?? ''}\nstatements 1-${r.failure?.applied ?? '?'} ran and stay applied (they commit on their own; nothing was rolled back); inspect the database and plan again\n`;
    case 'uncertain':
      return `outcome: uncertain\nthe connection failed while committing plan ${r.digest}: ${r.failure?.message ?? ''}\ninspect the database before retrying\n`;
  }
}

export function driftJson(r: DriftResult): unknown {
  return {
    command: 'drift',
    dialect: r.dialect,
    digest: r.digest,
    drifted: r.drifted,
    total: r.total,
    highest_severity: r.highest_severity,
    categories: r.categories,
    findings: r.findings,
    uncategorised: r.uncategorised,
    round_trips: r.roundTrips,
    server: r.server,
  };
}

export function driftText(r: DriftResult): string {
  const on = `on ${r.server.product} ${r.server.version}`;
  if (!r.drifted) return `no drift ${on} (${r.digest})\n`;
  const lines = [`drift ${on}: ${r.total} finding(s), highest severity ${r.highest_severity} (${r.digest})`];
  for (const f of r.findings) lines.push(`  ${f.category}: ${f.count} [${f.severity}]`);
  if (r.uncategorised > 0)
    lines.push(`  other changes (views, sequences, comments, schemas): ${r.uncategorised}`);
  return lines.join('\n') + '\n';
}
