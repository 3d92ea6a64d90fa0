/**
 * The schema engine's operations: inspect, plan, apply, drift. Long operations resolve to a result object
 * (outcome + details) rather than throwing for expected outcomes; invalid input and unreachable databases
 * throw errors whose messages name the object and the fix and never carry a credential.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ClassifiedChange, DriftCategory, Severity } from './changes.ts';
import { changedTable } from './changes.ts';
import { classifyAll, driftCategory, withTableWork } from './classify.ts';
import { canonicalDigest, canonicalJson, digestOf } from './canonical-json.ts';
import type { DatabaseServer, SchemaDialect, Session } from './dialect.ts';
import { diffModels } from './diff.ts';
import { emptyModel, type RowSet, type SchemaModel, type Unmanaged } from './model.ts';
import type { ManagedRows, PlanDocument, PlanStatement } from './plan-file.ts';
import { PLAN_FORMAT_VERSION, highestSeverity, readPlan, serialisePlan } from './plan-file.ts';
import { type PlanHeader, dropTargets, headerOf } from './plan-header.ts';
import { excludeObjects, protectedMatcher } from './scope.ts';
import type { DatabaseError } from './session.ts';
import type { DialectName } from '../protocol/dialects.ts';

export class DesiredSourceError extends Error {
  override readonly name = 'DesiredSourceError';
}

/**
 * The dialects this engine ships; src/protocol/dialects.ts lists the same names for the manager. Each is
 * loaded when first asked for, so a PostgreSQL command never loads MySQL's parser and driver, nor the
 * other way round.
 */
export const SCHEMA_DIALECTS: Readonly<Partial<Record<DialectName, () => Promise<SchemaDialect>>>> = {
  postgres: async () => (await import('./pg/pg-dialect.ts')).postgresDialect,
  mysql: async () => (await import('./mysql/mysql-dialect.ts')).mysqlDialect,
};

export async function dialectFor(name: DialectName): Promise<SchemaDialect> {
  const load = SCHEMA_DIALECTS[name];
  if (load !== undefined) return await load();
  throw new DesiredSourceError(
    `the ${name} dialect of the schema engine is not available yet; the engine plans for ${Object.keys(SCHEMA_DIALECTS).join(', ')}`,
  );
}

/** Reads `.sql` files: each path is a file or a directory searched recursively, files in name order. */
export function readDesiredFiles(paths: readonly string[]): { path: string; sql: string }[] {
  const out: { path: string; sql: string }[] = [];
  const walk = (p: string) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new DesiredSourceError(
        `desired state ${p} does not exist; pass a .sql file or a directory of them`,
      );
    }
    if (st.isDirectory()) {
      for (const e of readdirSync(p).sort()) {
        const child = join(p, e);
        if (statSync(child).isDirectory() || e.endsWith('.sql')) walk(child);
      }
    } else out.push({ path: p, sql: readFileSync(p, 'utf8') });
  };
  for (const p of paths) walk(p);
  if (out.length === 0) throw new DesiredStateMissing();
  return out;
}

class DesiredStateMissing extends DesiredSourceError {
  constructor() {
    super('no desired state: pass --desired FILE.sql or a directory containing .sql files');
  }
}

export interface DesiredSource {
  readonly files: readonly { path: string; sql: string }[];
  /**
   * A scratch database where the SQL is applied and inspected: in a rolled-back transaction where DDL is
   * transactional, else into an empty database that is emptied again afterwards.
   */
  readonly devUrl?: string;
}

export interface ScopeOptions {
  readonly exclude?: readonly string[];
  readonly protectedTables?: readonly string[];
}

interface LiveState {
  readonly model: SchemaModel;
  readonly rows: RowSet[];
  readonly fingerprint: string;
}

async function run(session: Session, statements: readonly string[]): Promise<void> {
  for (const s of statements) await session.query(s);
}

/** The database a command works on, and the readers its inspections open beside it (their round trips count). */
interface TargetSession extends Session {
  readonly openReader: () => Promise<Session>;
}

async function connectTarget(dialect: SchemaDialect, url: string): Promise<TargetSession> {
  const session = await dialect.connect(url);
  const readers: Session[] = [];
  return {
    query: (sql, params) => session.query(sql, params),
    get roundTrips() {
      return readers.reduce((n, r) => n + r.roundTrips, session.roundTrips);
    },
    close: () => session.close(),
    openReader: async () => {
      const reader = await dialect.connect(url);
      readers.push(reader);
      return reader;
    },
  };
}

/** The live state a plan is computed against: whole database plus the managed rows, fingerprinted. */
async function observe(
  dialect: SchemaDialect,
  session: TargetSession,
  managed: readonly ManagedRows[],
): Promise<LiveState> {
  const model = await dialect.inspect(session, { openReader: session.openReader });
  return withRows(dialect, session, model, managed);
}

async function withRows(
  dialect: SchemaDialect,
  session: Session,
  model: SchemaModel,
  managed: readonly ManagedRows[],
): Promise<LiveState> {
  const rows = await dialect.readRows(session, model, managed);
  // Hashed once, when asked: a drift report never states it.
  let fingerprint: string | undefined;
  return {
    model,
    rows,
    get fingerprint() {
      return (fingerprint ??= canonicalDigest({ dialect: dialect.name, model, rows }));
    },
  };
}

/** The desired state's fingerprint, as a plan states it (its rows have their own). */
function desiredFingerprint(dialect: SchemaDialect, desired: SchemaModel): string {
  return canonicalDigest({ dialect: dialect.name, model: { ...desired, rows: [] } });
}

/**
 * Loads the desired state as the target's role reads it: an unqualified name lives in `defaultSchema`, the
 * target role's current_schema(). A dev database gets the same search_path, so both modes agree.
 */
async function loadDesired(
  dialect: SchemaDialect,
  source: DesiredSource,
  defaultSchema: string,
): Promise<SchemaModel> {
  const parsed = await dialect.loadDesired(source.files, defaultSchema);
  if (source.devUrl === undefined) return parsed;
  const dev = await dialect.connect(source.devUrl);
  const transactional = dialect.supportsTransactionalDdl;
  let loaded = false;
  try {
    if (transactional) await run(dev, ['BEGIN', ...dialect.useDefaultSchema(defaultSchema)]);
    else {
      // DDL commits as it runs: the scratch database must start empty, and is emptied again below.
      const before = await dialect.inspect(dev);
      const held = [...before.tables, ...before.views, ...(before.objects ?? [])].map((x) => x.name);
      if (held.length > 0)
        throw new DesiredSourceError(
          `the dev database is not empty (it holds ${held.slice(0, 5).join(', ')}${held.length > 5 ? ', …' : ''}); --dev-url must name an empty scratch database, which Ptah empties again after use`,
        );
    }
    loaded = true;
    if (dialect.loadIntoDev !== undefined) await dialect.loadIntoDev(dev, source.files);
    else
      for (const f of source.files) {
        try {
          await dev.query(dialect.scriptText?.(f.sql) ?? f.sql);
        } catch (error) {
          const e = error as DatabaseError;
          throw new DesiredSourceError(
            `${f.path}: the dev database rejected the desired SQL (SQLSTATE ${e.sqlstate ?? 'unknown'}): ${e.message}`,
          );
        }
      }
    const inspected = await dialect.inspect(dev);
    return { ...inspected, rows: parsed.rows };
  } finally {
    if (transactional) await dev.query('ROLLBACK').catch(() => undefined);
    else if (loaded) await emptyScratch(dialect, dev);
    await dev.close();
  }
}

/** Drops what a load left in a scratch database, in the order the diff gives for dropping it all. */
async function emptyScratch(dialect: SchemaDialect, dev: Session): Promise<void> {
  const left = await dialect.inspect(dev).catch(() => undefined);
  if (left === undefined) return;
  const drops = diffModels({ from: left, to: emptyModel(), liveRows: [] });
  for (const change of drops)
    for (const sql of dialect.render(change, drops)) await dev.query(sql).catch(() => undefined);
}

function managedRowsOf(desired: SchemaModel): ManagedRows[] {
  return [...desired.rows]
    .map((r) => ({ schema: r.schema, table: r.table, key: [...r.key], columns: [...r.columns] }))
    .sort((a, b) => canonicalJson([a.schema, a.table]).localeCompare(canonicalJson([b.schema, b.table])));
}

export interface InspectResult {
  readonly dialect: string;
  readonly fingerprint: string;
  readonly model: SchemaModel;
  readonly roundTrips: number;
}

export async function inspect(
  url: string,
  dialect: SchemaDialect,
  scope: ScopeOptions = {},
): Promise<InspectResult> {
  const session = await connectTarget(dialect, url);
  try {
    await run(session, dialect.beginReadOnly());
    const live = await observe(dialect, session, []);
    await session.query('COMMIT');
    return {
      dialect: dialect.name,
      fingerprint: live.fingerprint,
      model: excludeObjects(live.model, scope.exclude ?? []),
      roundTrips: session.roundTrips,
    };
  } finally {
    await session.close();
  }
}

export interface Refusal {
  readonly reason: string;
  readonly table?: string;
}

export interface PlanResult {
  readonly outcome: 'changes' | 'no_changes' | 'refused';
  readonly dialect: string;
  readonly changes: readonly ClassifiedChange[];
  /** The plan document and its exact bytes, written when first read; absent when refused. */
  readonly plan?: PlanDocument;
  readonly bytes?: string;
  readonly digest?: string;
  readonly refusal?: Refusal;
  /** What the plan drops and rewrites; present on refused plans too. */
  readonly header: PlanHeader;
  /**
   * What the desired state declares and the database holds that the engine leaves alone (a text search
   * dictionary, a range type, ownership ...): never created, altered or dropped, said with every plan.
   */
  readonly unmanaged: readonly Unmanaged[];
  readonly roundTrips: number;
}

/** Both sides' unmanaged objects, each once, in name order. */
function unmanagedOf(live: SchemaModel, desired: SchemaModel): Unmanaged[] {
  const byKey = new Map<string, Unmanaged>();
  for (const u of [...live.unmanaged, ...desired.unmanaged])
    byKey.set(canonicalJson([u.objectKind, u.schema, u.name]), u);
  return [...byKey.keys()].sort().map((k) => byKey.get(k) as Unmanaged);
}

/** Computes desired-vs-live changes inside an open read-only snapshot. */
async function computeChanges(
  dialect: SchemaDialect,
  session: TargetSession,
  source: DesiredSource,
  scope: ScopeOptions,
): Promise<{ live: LiveState; desired: SchemaModel; changes: ClassifiedChange[] }> {
  const exclude = scope.exclude ?? [];
  const load = (defaultSchema: string) => loadDesired(dialect, source, defaultSchema);
  // The live schema says which schema the desired state's unqualified names mean; once the inspection has
  // read it, the desired state loads while the rest of the catalog answers.
  let loading: Promise<SchemaModel> | undefined;
  let liveModel: SchemaModel;
  try {
    liveModel = await dialect.inspect(session, {
      defaultSchemaRead: (defaultSchema) => {
        loading = load(defaultSchema);
        // Awaited below, or settled before the inspection's own error is thrown.
        loading.catch(() => undefined);
      },
      openReader: session.openReader,
    });
  } catch (error) {
    await loading?.catch(() => undefined);
    throw error;
  }
  const desiredAll = await (loading ?? load(liveModel.defaultSchema));
  const resolved = dialect.resolveDesired ? await dialect.resolveDesired(session, desiredAll) : desiredAll;
  const desired = excludeObjects(resolved, exclude);
  const managed = managedRowsOf(desired);
  const live = await withRows(dialect, session, liveModel, managed);
  const liveScoped = excludeObjects(live.model, exclude);
  // Declared values are spelled as the database would store them before they are compared.
  const rows: RowSet[] = [];
  for (const r of desired.rows) {
    const t = live.model.tables.find((x) => x.schema === r.schema && x.name === r.table);
    rows.push(t ? await dialect.normaliseRows(session, t, r) : r);
  }
  const desiredNorm: SchemaModel = { ...desired, rows };
  const diffed = diffModels({ from: liveScoped, to: desiredNorm, liveRows: live.rows });
  const refused = dialect.checkChanges ? await dialect.checkChanges(session, diffed, desiredNorm) : [];
  const classified = classifyAll([...refused, ...diffed], dialect.typeChangeRisk);
  const changes =
    dialect.tableWork === undefined
      ? classified
      : withTableWork(classified, (c) => dialect.tableWork?.(c, classified));
  return { live, desired: desiredNorm, changes };
}

export async function plan(
  url: string,
  dialect: SchemaDialect,
  source: DesiredSource,
  scope: ScopeOptions = {},
): Promise<PlanResult> {
  // A protected name that does not parse is refused before anything connects.
  const isProtected = protectedMatcher(scope.protectedTables ?? [], dialect.protectedNamesIgnoreCase);
  const session = await connectTarget(dialect, url);
  try {
    await run(session, dialect.beginReadOnly());
    const computed = await computeChanges(dialect, session, source, scope);
    const { live, desired } = computed;
    // Counted in the plan's own snapshot, so the header states what these very drops take with them.
    const { header, changes } = headerOf(
      computed.changes,
      await dialect.countData(session, dropTargets(computed.changes)),
    );
    await session.query('COMMIT');
    const base = {
      dialect: dialect.name,
      changes,
      header,
      unmanaged: unmanagedOf(live.model, desired),
      roundTrips: session.roundTrips,
    };
    const unsupported = changes.filter((c) => c.kind === 'Unsupported');
    if (unsupported.length > 0) {
      return {
        ...base,
        outcome: 'refused',
        refusal: { reason: unsupported.map((c) => c.classification.reason).join('; ') },
      };
    }
    for (const c of changes) {
      const t = changedTable(c);
      const hit = t && isProtected(t.schema, t.name);
      if (t && hit) {
        return {
          ...base,
          outcome: 'refused',
          refusal: {
            table: `${t.schema}.${t.name}`,
            reason: `table ${t.schema}.${t.name} is protected (--protected-table ${hit}) and the plan would change it (${c.classification.reason}); remove it from the protected tables or write the change as a migration`,
          },
        };
      }
    }
    // Where DDL commits on its own, every statement says so: a failure part-way leaves the earlier ones done.
    const own = dialect.supportsTransactionalDdl ? {} : { transactional: false as const };
    const statements = withoutRepeats(
      changes.flatMap((c) =>
        dialect.render(c, changes).map((sql) => ({
          sql,
          severity: c.classification.severity,
          reason: c.classification.reason,
          ...own,
        })),
      ),
    );
    // Written when asked: a plan with nothing to do, printed for a person, states neither fingerprint, and
    // hashing the two models is the largest step left once the catalog has answered. (Hashing the desired
    // state while the catalog answered was mostly wasted: resolving it against the database, for partition
    // bounds or operator classes, makes a new model to hash again.)
    let written: { plan: PlanDocument; bytes: string; digest: string } | undefined;
    const write = () => {
      if (written !== undefined) return written;
      const doc: PlanDocument = {
        format_version: PLAN_FORMAT_VERSION,
        dialect: dialect.name,
        from_fingerprint: live.fingerprint,
        to_fingerprint: desiredFingerprint(dialect, desired),
        destructive: changes.some((c) => c.classification.destructive),
        header,
        statements,
        managed_rows: managedRowsOf(desired),
        rows_fingerprint: canonicalDigest(
          desired.rows.map((r) => ({ schema: r.schema, table: r.table, rows: r.rows })),
        ),
      };
      const bytes = serialisePlan(doc);
      written = { plan: doc, bytes, digest: digestOf(bytes) };
      return written;
    };
    return {
      ...base,
      outcome: statements.length > 0 ? 'changes' : 'no_changes',
      get plan() {
        return write().plan;
      },
      get bytes() {
        return write().bytes;
      },
      get digest() {
        return write().digest;
      },
    };
  } finally {
    await session.close();
  }
}

/**
 * A dialect that restates a whole column for each of its changes (MySQL's MODIFY COLUMN) renders one
 * statement several times: it runs once, with the highest severity and every reason of its changes.
 */
function withoutRepeats(list: readonly PlanStatement[]): PlanStatement[] {
  const out: PlanStatement[] = [];
  const at = new Map<string, number>();
  for (const st of list) {
    const i = at.get(st.sql);
    const prev = i === undefined ? undefined : out[i];
    if (i === undefined || prev === undefined) {
      at.set(st.sql, out.length);
      out.push(st);
      continue;
    }
    out[i] = {
      ...prev,
      severity: highestSeverity([prev, st]),
      reason: prev.reason.split('; ').includes(st.reason) ? prev.reason : `${prev.reason}; ${st.reason}`,
    };
  }
  return out;
}

export interface ApplyFailure {
  /** 1-based position of the failing statement in the plan. */
  readonly position: number;
  readonly sqlstate?: string;
  /** The server's error number (MySQL). */
  readonly errno?: number;
  readonly message: string;
  /** Statements that ran and stay applied (they committed on their own); 0 when nothing changed. */
  readonly applied: number;
}

/**
 * `failed`: nothing changed (the transaction rolled back, or the first statement failed). `partial`: DDL
 * that commits on its own ran before the failing statement; those statements stay applied. `uncertain`:
 * the commit itself failed, so whether anything changed is unknown.
 */
export interface ApplyResult {
  readonly outcome: 'applied' | 'validated' | 'stale' | 'failed' | 'partial' | 'uncertain';
  readonly digest: string;
  readonly dialect: string;
  readonly statements: readonly PlanStatement[];
  readonly destructive: boolean;
  readonly header?: PlanHeader;
  readonly failure?: ApplyFailure;
  readonly expectedFingerprint?: string;
  readonly actualFingerprint?: string;
  readonly roundTrips: number;
}

export interface ApplyOptions {
  readonly dryRun?: boolean;
  readonly lockTimeoutMs?: number;
}

/** Validates plan bytes and (unless a dry run) applies them in one transaction. */
export async function applyPlan(
  url: string | undefined,
  bytes: Uint8Array,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const { plan: doc, digest } = readPlan(bytes);
  const dialect = await dialectFor(
    doc.dialect === 'mysql'
      ? 'mysql'
      : doc.dialect === 'postgres'
        ? 'postgres'
        : (() => {
            throw new DesiredSourceError(`the plan's dialect "${doc.dialect}" is not supported`);
          })(),
  );
  const base = {
    digest,
    dialect: doc.dialect,
    statements: doc.statements,
    destructive: doc.destructive,
    ...(doc.header !== undefined ? { header: doc.header } : {}),
  };
  if (options.dryRun) return { ...base, outcome: 'validated', roundTrips: 0 };
  if (url === undefined) throw new DesiredSourceError('no database URL: pass --url or set PTAH_DB_URL');
  const session = await connectTarget(dialect, url);
  let committing = false;
  try {
    await run(session, dialect.beginApply(options.lockTimeoutMs ?? 10_000));
    const live = await observe(dialect, session, doc.managed_rows);
    if (live.fingerprint !== doc.from_fingerprint) {
      await session.query('ROLLBACK');
      return {
        ...base,
        outcome: 'stale',
        expectedFingerprint: doc.from_fingerprint,
        actualFingerprint: live.fingerprint,
        roundTrips: session.roundTrips,
      };
    }
    for (let i = 0; i < doc.statements.length; i++) {
      try {
        await session.query(doc.statements[i]?.sql ?? '');
      } catch (error) {
        const e = error as DatabaseError;
        // Where each statement committed on its own, the ones before this one stay: never a rollback claim.
        const applied = dialect.supportsTransactionalDdl ? 0 : i;
        if (dialect.supportsTransactionalDdl) await session.query('ROLLBACK').catch(() => undefined);
        return {
          ...base,
          outcome: applied === 0 ? 'failed' : 'partial',
          failure: {
            position: i + 1,
            ...(e.sqlstate !== undefined ? { sqlstate: e.sqlstate } : {}),
            ...(e.errno !== undefined ? { errno: e.errno } : {}),
            message: e.message,
            applied,
          },
          roundTrips: session.roundTrips,
        };
      }
    }
    committing = true;
    await session.query('COMMIT');
    return { ...base, outcome: 'applied', roundTrips: session.roundTrips };
  } catch (error) {
    // A failure while committing leaves the outcome unknown: the server may have committed.
    if (committing) {
      const e = error as DatabaseError;
      return {
        ...base,
        outcome: 'uncertain',
        failure: {
          position: doc.statements.length,
          ...(e.sqlstate !== undefined ? { sqlstate: e.sqlstate } : {}),
          ...(e.errno !== undefined ? { errno: e.errno } : {}),
          message: e.message,
          applied: dialect.supportsTransactionalDdl ? 0 : doc.statements.length,
        },
        roundTrips: session.roundTrips,
      };
    }
    throw error;
  } finally {
    await session.close();
  }
}

export interface DriftFinding {
  readonly category: DriftCategory;
  readonly count: number;
  readonly severity: Severity;
}

export interface DriftResult {
  readonly dialect: string;
  readonly digest: string;
  readonly total: number;
  readonly highest_severity: Severity;
  readonly drifted: boolean;
  readonly categories: Readonly<Partial<Record<DriftCategory, number>>>;
  readonly findings: readonly DriftFinding[];
  /** Changes with no drift category (views, sequences, comments, schemas): drift, but no finding. */
  readonly uncategorised: number;
  readonly roundTrips: number;
  /** The server read (MariaDB and MySQL are one dialect, told apart here). */
  readonly server: DatabaseServer;
}

/** A read-only report of how the database differs from the desired state. */
export async function drift(
  url: string,
  dialect: SchemaDialect,
  source: DesiredSource,
  scope: ScopeOptions = {},
): Promise<DriftResult> {
  const session = await connectTarget(dialect, url);
  try {
    await run(session, dialect.beginReadOnly());
    const { changes } = await computeChanges(dialect, session, source, { exclude: scope.exclude ?? [] });
    const server = await dialect.describeServer(session);
    await session.query('COMMIT');
    const counts = new Map<DriftCategory, { count: number; severity: Severity }>();
    let uncategorised = 0;
    for (const c of changes) {
      const cat = driftCategory(c);
      if (cat === undefined) {
        uncategorised++;
        continue;
      }
      const prev = counts.get(cat) ?? { count: 0, severity: 'safe' as Severity };
      counts.set(cat, { count: prev.count + 1, severity: highestSeverity([prev, c.classification]) });
    }
    const findings = [...counts]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([category, v]) => ({ category, count: v.count, severity: v.severity }));
    const categories: Partial<Record<DriftCategory, number>> = {};
    for (const f of findings) categories[f.category] = f.count;
    const total = findings.reduce((n, f) => n + f.count, 0);
    const highest = highestSeverity(findings);
    const digest = canonicalDigest({
      dialect: dialect.name,
      findings,
      changes: changes.map((c) => dialect.render(c, changes)),
    });
    return {
      dialect: dialect.name,
      digest,
      total,
      highest_severity: highest,
      drifted: changes.length > 0,
      categories,
      findings,
      uncategorised,
      roundTrips: session.roundTrips,
      server,
    };
  } finally {
    await session.close();
  }
}
