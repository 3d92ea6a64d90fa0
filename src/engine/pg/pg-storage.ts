/**
 * Storage clauses of PostgreSQL tables, indexes and constraint indexes. Storage parameters (`WITH (...)`)
 * are managed: read from the desired SQL and from the catalog's reloptions in one spelling, compared, and
 * rendered; so is UNLOGGED (a table option, PERSISTENCE_OPTION). The clauses the engine does not manage
 * (tablespaces, access methods, column STORAGE and COMPRESSION, ...) are refused by name rather than read
 * and dropped, so a plan never reports converged while leaving out something the desired state says.
 */
import type { Change } from '../changes.ts';
import { PERSISTENCE_OPTION, objectKey } from '../model.ts';
import type { Session } from '../session.ts';
import { DesiredStateError } from './pg-desired.ts';
import { type AstNode, isRecord, names, quoteIdent, quoteLiteral } from './pg-normalize.ts';

/** A storage parameter's value as PostgreSQL reads it; the same text from the catalog and from SQL. */
function parameterValue(arg: unknown): string {
  // `WITH (autovacuum_enabled)` with no value means true, and the catalog stores it so.
  if (arg === undefined) return 'true';
  if (!isRecord(arg)) return '';
  let v = '';
  if (isRecord(arg['Integer'])) v = String(arg['Integer']['ival'] ?? 0);
  else if (isRecord(arg['Float'])) v = String(arg['Float']['fval'] ?? '0');
  else if (isRecord(arg['String'])) v = String(arg['String']['sval'] ?? '');
  else if (isRecord(arg['Boolean'])) v = arg['Boolean']['boolval'] === true ? 'true' : 'false';
  else if (isRecord(arg['TypeName'])) v = names(arg['TypeName']['names']).join('.');
  v = v.toLowerCase();
  // The catalog keeps a boolean as it was written (off, no, false): every spelling compares as one.
  if (['on', 'true', 'yes'].includes(v)) return 'true';
  if (['off', 'false', 'no'].includes(v)) return 'false';
  return v;
}

/**
 * `WITH (name = value, ...)` as sorted `name=value` texts; a TOAST table's parameter keeps its namespace
 * (`toast.autovacuum_enabled=false`). `oids = false` is what PostgreSQL 12+ does anyway and is left out.
 */
export function storageParameters(options: unknown, allowToast: boolean, what: string): string[] {
  const out: string[] = [];
  for (const o of (options as AstNode[] | undefined) ?? []) {
    const d = o['DefElem'] as AstNode;
    const space = d['defnamespace'] === undefined ? '' : String(d['defnamespace']).toLowerCase();
    const name = String(d['defname']).toLowerCase();
    const value = parameterValue(d['arg']);
    if (space === '' && name === 'oids' && value === 'false') continue;
    if (space !== '' && (space !== 'toast' || !allowToast))
      throw new DesiredStateError(
        `${what}: the storage parameter ${space}.${name} is not a table or index parameter; remove it`,
      );
    out.push(`${space === '' ? '' : `${space}.`}${name}=${value}`);
  }
  return out.sort();
}

/** Storage parameters from `ALTER TABLE ... SET (...)`/`RESET (...)` onto the ones declared so far. */
export function alterStorageParameters(
  current: readonly string[],
  def: unknown,
  reset: boolean,
  what: string,
): string[] {
  const items = isRecord(def) && isRecord(def['List']) ? def['List']['items'] : def;
  const changed = storageParameters(items, true, what);
  const nameOf = (p: string) => p.slice(0, p.indexOf('='));
  const names = new Set(changed.map(nameOf));
  const kept = current.filter((p) => !names.has(nameOf(p)));
  return (reset ? kept : [...kept, ...changed]).sort();
}

/** Catalog reloptions (`{fillfactor=70}` as a JSON array) as the same sorted `name=value` texts. */
export function catalogParameters(json: unknown, prefix = ''): string[] {
  if (json === null || json === undefined || json === '') return [];
  return (JSON.parse(String(json)) as string[]).map((p) => `${prefix}${p}`);
}

/** A parameter's name as SQL: `fillfactor`, or `toast.autovacuum_enabled` with its namespace. */
export function parameterName(name: string): string {
  const dot = name.indexOf('.');
  return dot < 0 ? quoteIdent(name) : `${quoteIdent(name.slice(0, dot))}.${quoteIdent(name.slice(dot + 1))}`;
}

/** `name = 'value', ...` for a list of `name=value` texts. */
export function parameterList(params: readonly string[]): string {
  return params
    .map((p) => `${parameterName(p.slice(0, p.indexOf('=')))} = ${quoteLiteral(p.slice(p.indexOf('=') + 1))}`)
    .join(', ');
}

/** `WITH (...)` for a list of `name=value` texts: what the catalog script and the renderer both write. */
export function withClause(params: readonly string[] | undefined): string {
  return params === undefined || params.length === 0 ? '' : ` WITH (${parameterList(params)})`;
}

/** A table's parameters as the model's options record (name → value), absent when none. */
export function asTableOptions(params: readonly string[]): Record<string, string> | undefined {
  if (params.length === 0) return undefined;
  const o: Record<string, string> = {};
  for (const p of params) o[p.slice(0, p.indexOf('='))] = p.slice(p.indexOf('=') + 1);
  return o;
}

/** A table's storage parameters (its persistence is an option, not a parameter). */
export function fromTableOptions(o: Readonly<Record<string, string>> | undefined): string[] {
  return Object.keys(o ?? {})
    .filter((k) => k !== PERSISTENCE_OPTION)
    .sort()
    .map((k) => `${k}=${o?.[k] ?? ''}`);
}

const refuse = (what: string, clause: string, fix: string): never => {
  throw new DesiredStateError(`${what}: ${clause} is not managed by the schema engine; ${fix}`);
};

/** CREATE TABLE clauses the model does not hold. */
export function refuseUnmanagedTableClauses(n: AstNode, what: string): void {
  const persistence = isRecord(n['relation']) ? n['relation']['relpersistence'] : undefined;
  if (persistence === 't')
    refuse(what, 'a temporary table', 'a desired state declares lasting objects: remove it');
  if (n['tablespacename'] !== undefined)
    refuse(what, `TABLESPACE ${String(n['tablespacename'])}`, 'remove the clause (set default_tablespace)');
  if (n['accessMethod'] !== undefined && n['accessMethod'] !== 'heap')
    refuse(what, `the table access method ${String(n['accessMethod'])}`, 'remove USING');
  if (n['oncommit'] !== undefined && n['oncommit'] !== 'ONCOMMIT_NOOP')
    refuse(what, 'ON COMMIT', 'remove the clause');
}

/** Column clauses the model does not hold (STORAGE, COMPRESSION). */
export function refuseUnmanagedColumnClauses(def: AstNode, what: string): void {
  if (def['storage_name'] !== undefined || (def['storage'] !== undefined && def['storage'] !== ''))
    refuse(what, `STORAGE ${String(def['storage_name'] ?? def['storage']).toUpperCase()}`, 'remove it');
  if (def['compression'] !== undefined)
    refuse(what, `COMPRESSION ${String(def['compression'])}`, 'remove it');
}

/** A constraint index's clauses the model does not hold (USING INDEX TABLESPACE). */
export function refuseUnmanagedConstraintClauses(c: AstNode, what: string): void {
  if (c['indexspace'] !== undefined)
    refuse(what, `USING INDEX TABLESPACE ${String(c['indexspace'])}`, 'remove the clause');
}

/** A foreign key's clauses the model does not hold (`ON DELETE SET NULL (col)`, MATCH PARTIAL). */
export function refuseUnmanagedForeignKeyClauses(c: AstNode, what: string): void {
  if (c['fk_del_set_cols'] !== undefined)
    refuse(
      what,
      `ON DELETE SET ${c['fk_del_action'] === 'd' ? 'DEFAULT' : 'NULL'} (${names(c['fk_del_set_cols']).join(', ')})`,
      'drop the column list (every referencing column is then set) or manage the key with a migration',
    );
  if (c['fk_matchtype'] === 'p') refuse(what, 'MATCH PARTIAL', 'use MATCH SIMPLE or MATCH FULL');
}

/** A view's clauses the model does not hold (`WITH (security_barrier ...)`, `WITH CHECK OPTION`). */
export function refuseUnmanagedViewClauses(n: AstNode, what: string): void {
  const options = storageParameters(n['options'], false, what);
  if (options.length > 0)
    refuse(
      what,
      `the view option${options.length > 1 ? 's' : ''} ${options.join(', ')}`,
      'remove WITH (...)',
    );
  if (n['withCheckOption'] !== undefined && n['withCheckOption'] !== 'NO_CHECK_OPTION')
    refuse(
      what,
      `WITH ${n['withCheckOption'] === 'LOCAL_CHECK_OPTION' ? 'LOCAL ' : ''}CHECK OPTION`,
      'remove it',
    );
}

/** Index clauses the model does not hold (TABLESPACE). */
export function refuseUnmanagedIndexClauses(n: AstNode, what: string): void {
  if (n['tableSpace'] !== undefined)
    refuse(what, `TABLESPACE ${String(n['tableSpace'])}`, 'remove the clause (set default_tablespace)');
}

/**
 * PostgreSQL keeps a TOAST table's parameters only when the table has one (a table whose columns are all
 * short and fixed-size has none), and drops them without a word otherwise: set on such a live table, they
 * would be planned again on every run. The plan is refused by name instead; one query, only when a plan
 * sets some. A plan that also adds or retypes a column of that table may give it a TOAST table first, so
 * it is left to apply.
 */
export async function refuseToastWithoutToastTable(
  session: Session,
  changes: readonly Change[],
): Promise<Change[]> {
  const reshaped = new Set(
    changes.flatMap((c) =>
      c.kind === 'AddColumn' || c.kind === 'AlterColumnType' ? [objectKey(c.table.schema, c.table.name)] : [],
    ),
  );
  const setting = changes.flatMap((c) => {
    if (c.kind !== 'AlterTableOptions' || reshaped.has(objectKey(c.table.schema, c.table.name))) return [];
    const toast = Object.keys(c.options).filter((k) => k.startsWith('toast.') && c.from[k] !== c.options[k]);
    return toast.length === 0 ? [] : [{ table: c.table, toast }];
  });
  if (setting.length === 0) return [];
  const rows = (
    await session.query(
      `SELECT n.nspname AS schema, c.relname AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN unnest($1::text[], $2::text[]) AS d(schema, name) ON d.schema = n.nspname AND d.name = c.relname
       WHERE c.relkind = 'r' AND c.reltoastrelid = 0 ORDER BY 1, 2`,
      [setting.map((t) => t.table.schema), setting.map((t) => t.table.name)],
    )
  ).rows;
  return rows.map((r): Change => {
    const schema = String(r['schema']);
    const name = String(r['name']);
    const params = setting.find((x) => x.table.schema === schema && x.table.name === name)?.toast ?? [];
    const obj = `table ${schema}.${name}`;
    return {
      kind: 'Unsupported',
      object: obj,
      reason: `${obj} has no TOAST table (no column of it can be stored out of line), so PostgreSQL does not keep ${params.join(', ')}; remove ${params.length === 1 ? 'it' : 'them'}`,
    };
  });
}
