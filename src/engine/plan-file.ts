/**
 * The plan file: canonical JSON bytes whose SHA-256 is the plan's content digest. Two plans of the same
 * inputs are byte-identical because every field is deterministic and keys are serialised sorted.
 */
import type { Severity } from './changes.ts';
import { SEVERITY_ORDER } from './changes.ts';
import { canonicalJson, digestOf } from './canonical-json.ts';
import type { PlanHeader } from './plan-header.ts';

const HEADER_FIELDS = [
  'dropped_tables',
  'dropped_columns',
  'dropped_schemas',
  'rewritten_tables',
  'dropped_table_rows',
  'dropped_column_values',
] as const satisfies readonly (keyof PlanHeader)[];

export const PLAN_FORMAT_VERSION = 1;

export interface PlanStatement {
  readonly sql: string;
  readonly severity: Severity;
  readonly reason: string;
  /**
   * false when the statement commits on its own (MySQL DDL): a failure after it leaves it applied. Absent
   * when the plan runs in one transaction, so PostgreSQL plans keep their bytes.
   */
  readonly transactional?: false;
}

export interface ManagedRows {
  readonly schema: string;
  readonly table: string;
  readonly key: readonly string[];
  readonly columns: readonly string[];
}

export interface PlanDocument {
  readonly format_version: number;
  readonly dialect: string;
  readonly from_fingerprint: string;
  readonly to_fingerprint: string;
  readonly destructive: boolean;
  /** Counts a reviewer reads first. Absent from plans written before it existed (same format version). */
  readonly header?: PlanHeader;
  readonly statements: readonly PlanStatement[];
  readonly managed_rows: readonly ManagedRows[];
  readonly rows_fingerprint: string;
}

export class PlanFileError extends Error {
  override readonly name = 'PlanFileError';
}

export function serialisePlan(plan: PlanDocument): string {
  return canonicalJson(plan) + '\n';
}

/** Largest plan the operator can store and execute (16 chunks of 512 KiB). */
export const MAX_PLAN_BYTES = 8 << 20;

/** Parses and validates plan bytes; the digest is of exactly these bytes. */
export function readPlan(bytes: Uint8Array): { plan: PlanDocument; digest: string } {
  if (bytes.length > MAX_PLAN_BYTES)
    throw new PlanFileError(`the plan is ${bytes.length} bytes; the limit is ${MAX_PLAN_BYTES}`);
  const digest = digestOf(bytes);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new PlanFileError(
      'the plan file is not valid UTF-8 JSON; produce it with `ptah schema plan --out FILE`',
    );
  }
  const bad = (field: string, want: string) =>
    new PlanFileError(`the plan file field "${field}" must be ${want}`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new PlanFileError('the plan file must hold a JSON object');
  const o = raw as Record<string, unknown>;
  if (o['format_version'] !== PLAN_FORMAT_VERSION) throw bad('format_version', String(PLAN_FORMAT_VERSION));
  for (const f of ['dialect', 'from_fingerprint', 'to_fingerprint', 'rows_fingerprint']) {
    if (typeof o[f] !== 'string' || o[f] === '') throw bad(f, 'a non-empty string');
  }
  if (typeof o['destructive'] !== 'boolean') throw bad('destructive', 'true or false');
  if (!Array.isArray(o['statements'])) throw bad('statements', 'an array');
  const statements = (o['statements'] as unknown[]).map((s, i) => {
    const st = s as Record<string, unknown>;
    if (
      typeof st !== 'object' ||
      st === null ||
      typeof st['sql'] !== 'string' ||
      typeof st['reason'] !== 'string' ||
      !SEVERITY_ORDER.includes(st['severity'] as Severity) ||
      (st['transactional'] !== undefined && st['transactional'] !== false)
    ) {
      throw bad(
        `statements[${i}]`,
        '{sql, severity (safe|info|warning|error|destructive), reason, transactional (false or absent)}',
      );
    }
    return {
      sql: st['sql'],
      severity: st['severity'] as Severity,
      reason: st['reason'],
      ...(st['transactional'] === false ? { transactional: false as const } : {}),
    };
  });
  let header: PlanHeader | undefined;
  if (o['header'] !== undefined) {
    const h = o['header'] as Record<string, unknown>;
    const count = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
    if (typeof h !== 'object' || h === null || !HEADER_FIELDS.every((f) => count(h[f])))
      throw bad('header', `{${HEADER_FIELDS.join(', ')}} of counts`);
    header = Object.fromEntries(HEADER_FIELDS.map((f) => [f, h[f]])) as unknown as PlanHeader;
  }
  if (!Array.isArray(o['managed_rows'])) throw bad('managed_rows', 'an array');
  const managed = (o['managed_rows'] as unknown[]).map((m, i) => {
    const r = m as Record<string, unknown>;
    const strings = (x: unknown) => Array.isArray(x) && x.every((y) => typeof y === 'string');
    if (
      typeof r !== 'object' ||
      r === null ||
      typeof r['schema'] !== 'string' ||
      typeof r['table'] !== 'string' ||
      !strings(r['key']) ||
      !strings(r['columns'])
    ) {
      throw bad(`managed_rows[${i}]`, '{schema, table, key[], columns[]}');
    }
    return {
      schema: r['schema'],
      table: r['table'],
      key: r['key'] as string[],
      columns: r['columns'] as string[],
    };
  });
  return {
    digest,
    plan: {
      format_version: PLAN_FORMAT_VERSION,
      dialect: o['dialect'] as string,
      from_fingerprint: o['from_fingerprint'] as string,
      to_fingerprint: o['to_fingerprint'] as string,
      destructive: o['destructive'],
      ...(header !== undefined ? { header } : {}),
      statements,
      managed_rows: managed,
      rows_fingerprint: o['rows_fingerprint'] as string,
    },
  };
}

export function highestSeverity(list: readonly { severity: Severity }[]): Severity {
  let best = 0;
  for (const s of list) best = Math.max(best, SEVERITY_ORDER.indexOf(s.severity));
  return SEVERITY_ORDER[best] ?? 'safe';
}
