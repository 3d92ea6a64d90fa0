/**
 * Desired state for PostgreSQL: DDL (and INSERTs for reference rows) parsed by the real PostgreSQL grammar
 * (libpg-query) into the schema model. The inspector feeds the catalog's own deparsed DDL through this same
 * loader, so both sides share one normaliser.
 */
import { loadModule, parseSync } from 'libpg-query';
import type {
  Column,
  Constraint,
  EnumType,
  Extension,
  FkAction,
  Index,
  IndexKey,
  RowSet,
  RowValues,
  SchemaModel,
  SchemaNamespace,
  Sequence,
  Table,
  Unmanaged,
  View,
} from '../model.ts';
import { DEFAULT_SCHEMA, objectKey } from '../model.ts';
import {
  type AstNode,
  canonicalKey,
  constText,
  deparseNode,
  exprFromAst,
  isRecord,
  names,
  typeRefFromAst,
} from './pg-normalize.ts';

export class DesiredStateError extends Error {
  override readonly name = 'DesiredStateError';
}

let loaded: Promise<void> | undefined;
/** libpg-query is WebAssembly: its module loads once per process. */
export async function ensureParser(): Promise<void> {
  loaded ??= loadModule();
  await loaded;
}

interface ParsedStatement {
  readonly node: AstNode;
  readonly type: string;
  readonly line: number;
  readonly source: string;
}

export function parseStatements(rawSql: string, source: string): ParsedStatement[] {
  // pg_dump output carries psql meta-commands (`\restrict`, `\connect`): blanked, keeping line numbers.
  const sql = rawSql.replace(/^\\[a-z].*$/gm, '');
  if (sql.trim() === '') return [];
  let tree: { stmts?: { stmt: AstNode; stmt_location?: number }[] };
  try {
    tree = parseSync(sql) as typeof tree;
  } catch (error) {
    const e = error as Error & { sqlDetails?: { cursorPosition?: number } };
    const pos = e.sqlDetails?.cursorPosition;
    const line = pos === undefined ? undefined : sql.slice(0, pos).split('\n').length;
    throw new DesiredStateError(
      `${source}${line === undefined ? '' : `:${line}`}: SQL syntax error: ${e.message}; fix the statement and plan again`,
    );
  }
  return (tree.stmts ?? []).map((s) => {
    const type = Object.keys(s.stmt)[0] ?? '';
    const line = sql.slice(0, statementStart(sql, s.stmt_location ?? 0)).split('\n').length;
    return { node: s.stmt[type] as AstNode, type, line, source };
  });
}

/** A statement's location includes the whitespace and comments before it; its line is the first real one. */
function statementStart(sql: string, from: number): number {
  let i = from;
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i] ?? '')) i++;
    if (sql.startsWith('--', i)) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else return i;
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? U[] : T[K] };

interface TableDraft {
  schema: string;
  name: string;
  columns: Mutable<Column>[];
  constraints: Constraint[];
  indexes: Index[];
  comment?: string;
}

interface ViewDraft {
  schema: string;
  name: string;
  query: AstNode;
  comment?: string;
}

function rel(rv: unknown): { schema: string; name: string } {
  const r = (isRecord(rv) && isRecord(rv['RangeVar']) ? rv['RangeVar'] : rv) as AstNode;
  return { schema: String(r['schemaname'] ?? DEFAULT_SCHEMA), name: String(r['relname'] ?? '') };
}

const FK_ACTIONS: Readonly<Record<string, FkAction>> = {
  a: 'no action',
  r: 'restrict',
  c: 'cascade',
  n: 'set null',
  d: 'set default',
};

function defElemValue(arg: unknown): string {
  if (!isRecord(arg)) return '';
  if (isRecord(arg['Integer'])) return String(arg['Integer']['ival'] ?? 0);
  if (isRecord(arg['Float'])) return String(arg['Float']['fval'] ?? '0');
  if (isRecord(arg['String'])) return String(arg['String']['sval'] ?? '');
  if (isRecord(arg['Boolean'])) return arg['Boolean']['boolval'] === true ? 'true' : 'false';
  if (isRecord(arg['TypeName'])) return typeRefFromAst(arg['TypeName']).type.name;
  if (isRecord(arg['List'])) return names(arg['List']['items']).join('.');
  return '';
}

const SEQ_LIMITS: Readonly<Record<string, [string, string]>> = {
  smallint: ['-32768', '32767'],
  integer: ['-2147483648', '2147483647'],
  bigint: ['-9223372036854775808', '9223372036854775807'],
};

/** Builds a model from SQL, statement by statement. */
export class DesiredStateBuilder {
  private readonly schemas = new Map<string, SchemaNamespace>();
  private readonly extensions = new Map<string, Extension>();
  private readonly enums = new Map<string, EnumType>();
  private readonly sequences = new Map<string, Mutable<Sequence>>();
  private readonly tables = new Map<string, TableDraft>();
  private readonly views = new Map<string, ViewDraft>();
  private readonly rows = new Map<
    string,
    { schema: string; table: string; columns: string[]; rows: RowValues[]; where: string }
  >();
  private readonly unmanaged: Unmanaged[] = [];

  addSql(sql: string, source: string): void {
    for (const s of parseStatements(sql, source)) this.addStatement(s);
  }

  addUnmanaged(u: Unmanaged): void {
    this.unmanaged.push(u);
  }

  private where(s: ParsedStatement): string {
    return `${s.source}:${s.line}`;
  }

  private table(schema: string, name: string, s: ParsedStatement): TableDraft {
    const t = this.tables.get(objectKey(schema, name));
    if (!t)
      throw new DesiredStateError(
        `${this.where(s)}: table ${schema}.${name} is not declared before it is used; declare it first`,
      );
    return t;
  }

  addStatement(s: ParsedStatement): void {
    const n = s.node;
    switch (s.type) {
      case 'CreateSchemaStmt': {
        const name = String(n['schemaname']);
        this.schemas.set(name, { kind: 'Schema', name });
        return;
      }
      case 'CreateExtensionStmt': {
        const name = String(n['extname']);
        let schema: string | undefined;
        let version: string | undefined;
        for (const o of (n['options'] as unknown[]) ?? []) {
          const d = (o as AstNode)['DefElem'] as AstNode;
          if (d['defname'] === 'schema') schema = defElemValue(d['arg']);
          if (d['defname'] === 'new_version') version = defElemValue(d['arg']);
        }
        this.extensions.set(name, {
          kind: 'Extension',
          name,
          ...(schema ? { schema } : {}),
          ...(version ? { version } : {}),
        });
        return;
      }
      case 'CreateEnumStmt': {
        const parts = names(n['typeName']);
        const name = parts[parts.length - 1] ?? '';
        const schema = parts.length > 1 ? (parts[parts.length - 2] ?? DEFAULT_SCHEMA) : DEFAULT_SCHEMA;
        this.enums.set(objectKey(schema, name), { kind: 'Enum', schema, name, values: names(n['vals']) });
        return;
      }
      case 'CreateSeqStmt':
      case 'AlterSeqStmt': {
        const { schema, name } = rel(n['sequence']);
        const key = objectKey(schema, name);
        let seq = this.sequences.get(key);
        if (!seq) {
          if (s.type === 'AlterSeqStmt')
            throw new DesiredStateError(
              `${this.where(s)}: sequence ${schema}.${name} is altered before it is created`,
            );
          seq = {
            kind: 'Sequence',
            schema,
            name,
            dataType: 'bigint',
            start: '',
            increment: '1',
            min: '',
            max: '',
            cache: '1',
            cycle: false,
          };
          this.sequences.set(key, seq);
        }
        for (const o of (n['options'] as unknown[]) ?? []) {
          const d = (o as AstNode)['DefElem'] as AstNode;
          const v = defElemValue(d['arg']);
          switch (d['defname']) {
            case 'as':
              seq.dataType = v;
              break;
            case 'increment':
              seq.increment = v;
              break;
            case 'start':
              seq.start = v;
              break;
            case 'minvalue':
              seq.min = v;
              break;
            case 'maxvalue':
              seq.max = v;
              break;
            case 'cache':
              seq.cache = v;
              break;
            case 'cycle':
              seq.cycle = v !== 'false';
              break;
            case 'owned_by': {
              // Taken from the name list, never from `v`: a quoted part may itself contain a dot.
              const arg = d['arg'];
              const p = isRecord(arg) && isRecord(arg['List']) ? names(arg['List']['items']) : [];
              const [schema, table, column] = p.length === 2 ? [DEFAULT_SCHEMA, ...p] : p;
              if (p.length === 1 && p[0] === 'none') delete seq.ownedBy;
              else if ((p.length === 2 || p.length === 3) && schema && table && column)
                seq.ownedBy = { schema, table, column };
              else
                throw new DesiredStateError(
                  `${this.where(s)}: sequence ${seq.schema}.${seq.name}: OWNED BY takes NONE or [schema.]table.column`,
                );
              break;
            }
            default:
              break;
          }
        }
        return;
      }
      case 'CreateStmt':
        this.createTable(s);
        return;
      case 'IndexStmt': {
        const { schema, name } = rel(n['relation']);
        this.table(schema, name, s).indexes.push(this.index(n));
        return;
      }
      case 'AlterTableStmt':
        this.alterTable(s);
        return;
      case 'ViewStmt': {
        const { schema, name } = rel(n['view']);
        if (n['aliases'] !== undefined)
          throw new DesiredStateError(
            `${this.where(s)}: view ${schema}.${name}: a column list after the view name is not supported; alias the columns in the SELECT instead`,
          );
        this.views.set(objectKey(schema, name), { schema, name, query: n['query'] as AstNode });
        return;
      }
      case 'CommentStmt':
        this.comment(s);
        return;
      case 'InsertStmt':
        this.insert(s);
        return;
      case 'VariableSetStmt':
      case 'TransactionStmt':
        return; // session settings and BEGIN/COMMIT wrappers carry no schema
      case 'SelectStmt':
        // pg_dump emits SELECT pg_catalog.set_config(...); nothing else a SELECT could declare.
        return;
      default:
        throw new DesiredStateError(
          `${this.where(s)}: ${s.type.replace(/Stmt$/, '')} statements are not managed by the schema engine; remove it from the desired state (use a migration for it)`,
        );
    }
  }

  private createTable(s: ParsedStatement): void {
    const n = s.node;
    const { schema, name } = rel(n['relation']);
    const what = `${this.where(s)}: table ${schema}.${name}`;
    if (n['inhRelations'] !== undefined || n['partspec'] !== undefined || n['partbound'] !== undefined) {
      throw new DesiredStateError(
        `${what}: inheritance and partitioning are not managed; declare a plain table`,
      );
    }
    if (n['ofTypename'] !== undefined) throw new DesiredStateError(`${what}: typed tables are not managed`);
    const t: TableDraft = { schema, name, columns: [], constraints: [], indexes: [] };
    if (this.tables.has(objectKey(schema, name)))
      throw new DesiredStateError(`${what} is declared twice; keep one declaration`);
    this.tables.set(objectKey(schema, name), t);
    for (const el of (n['tableElts'] as AstNode[]) ?? []) {
      if (isRecord(el['ColumnDef'])) this.addColumn(t, el['ColumnDef'], what);
      else if (isRecord(el['Constraint'])) this.addTableConstraint(t, el['Constraint'], what);
      else throw new DesiredStateError(`${what}: ${Object.keys(el)[0]} in a table body is not supported`);
    }
  }

  private addColumn(t: TableDraft, def: AstNode, what: string): void {
    const colName = String(def['colname']);
    const { type, serial } = typeRefFromAst(def['typeName'] as AstNode);
    const col: Mutable<Column> = { kind: 'Column', name: colName, type, notNull: serial };
    if (serial) col.serial = true;
    if (isRecord(def['collClause'])) {
      const c = names(def['collClause']['collname']);
      col.collation = c[c.length - 1] ?? '';
    }
    let last: Constraint | undefined;
    for (const cn of (def['constraints'] as AstNode[]) ?? []) {
      const c = cn['Constraint'] as AstNode;
      switch (c['contype']) {
        case 'CONSTR_NOTNULL':
          col.notNull = true;
          break;
        case 'CONSTR_NULL':
          col.notNull = false;
          break;
        case 'CONSTR_DEFAULT':
          col.default = exprFromAst(c['raw_expr']);
          break;
        case 'CONSTR_IDENTITY':
          col.identity = c['generated_when'] === 'a' ? 'always' : 'by default';
          col.notNull = true;
          break;
        case 'CONSTR_GENERATED':
          col.generated = exprFromAst(c['raw_expr']);
          break;
        case 'CONSTR_ATTR_DEFERRABLE':
        case 'CONSTR_ATTR_NOT_DEFERRABLE':
        case 'CONSTR_ATTR_DEFERRED':
        case 'CONSTR_ATTR_IMMEDIATE': {
          if (!last || (last.kind !== 'ForeignKey' && last.kind !== 'Unique'))
            throw new DesiredStateError(
              `${what}: column ${colName}: a deferrability clause must follow UNIQUE or REFERENCES`,
            );
          const ct = c['contype'];
          const upd =
            ct === 'CONSTR_ATTR_DEFERRABLE'
              ? { deferrable: true }
              : ct === 'CONSTR_ATTR_NOT_DEFERRABLE'
                ? { deferrable: false }
                : ct === 'CONSTR_ATTR_DEFERRED'
                  ? { initiallyDeferred: true }
                  : { initiallyDeferred: false };
          const idx = t.constraints.indexOf(last);
          last = { ...last, ...upd } as Constraint;
          t.constraints[idx] = last;
          break;
        }
        default: {
          last = this.constraint(c, [colName], what);
          t.constraints.push(last);
        }
      }
    }
    if (t.columns.some((x) => x.name === colName))
      throw new DesiredStateError(`${what}: column ${colName} is declared twice`);
    t.columns.push(col);
  }

  private addTableConstraint(t: TableDraft, c: AstNode, what: string): void {
    t.constraints.push(this.constraint(c, undefined, what));
  }

  private constraint(c: AstNode, columnLevel: string[] | undefined, what: string): Constraint {
    const name = c['conname'] === undefined ? undefined : String(c['conname']);
    const named = name === undefined ? {} : { name };
    const deferrable = c['deferrable'] === true;
    const initiallyDeferred = c['initdeferred'] === true;
    switch (c['contype']) {
      case 'CONSTR_PRIMARY':
        if (c['including'] !== undefined || c['indexname'] !== undefined)
          throw new DesiredStateError(`${what}: PRIMARY KEY with INCLUDE or USING INDEX is not supported`);
        return { kind: 'PrimaryKey', ...named, columns: columnLevel ?? names(c['keys']) };
      case 'CONSTR_UNIQUE':
        if (c['including'] !== undefined || c['indexname'] !== undefined)
          throw new DesiredStateError(
            `${what}: UNIQUE with INCLUDE or USING INDEX is not supported; use a unique index`,
          );
        return {
          kind: 'Unique',
          ...named,
          columns: columnLevel ?? names(c['keys']),
          nullsNotDistinct: c['nulls_not_distinct'] === true,
          deferrable,
          initiallyDeferred,
        };
      case 'CONSTR_CHECK':
        if (c['is_no_inherit'] === true)
          throw new DesiredStateError(`${what}: CHECK ... NO INHERIT is not supported`);
        return { kind: 'Check', ...named, expression: exprFromAst(c['raw_expr']) };
      case 'CONSTR_FOREIGN': {
        const ref = rel(c['pktable']);
        return {
          kind: 'ForeignKey',
          ...named,
          columns: columnLevel ?? names(c['fk_attrs']),
          refSchema: ref.schema,
          refTable: ref.name,
          refColumns: names(c['pk_attrs']),
          onUpdate: FK_ACTIONS[String(c['fk_upd_action'] ?? 'a')] ?? 'no action',
          onDelete: FK_ACTIONS[String(c['fk_del_action'] ?? 'a')] ?? 'no action',
          matchFull: c['fk_matchtype'] === 'f',
          deferrable,
          initiallyDeferred,
        };
      }
      default:
        throw new DesiredStateError(
          `${what}: ${String(c['contype']).replace('CONSTR_', '')} constraints are not supported; remove it or manage it with a migration`,
        );
    }
  }

  private index(n: AstNode): Index {
    const keys: IndexKey[] = ((n['indexParams'] as AstNode[]) ?? []).map((p) => {
      const e = p['IndexElem'] as AstNode;
      const opclass = names(e['opclass']);
      const coll = names(e['collation']);
      const descending = e['ordering'] === 'SORTBY_DESC';
      const nullsRaw = e['nulls_ordering'];
      // NULLS LAST is the default ascending, NULLS FIRST descending: only the other one is recorded.
      let nulls: 'first' | 'last' | undefined;
      if (nullsRaw === 'SORTBY_NULLS_FIRST' && !descending) nulls = 'first';
      if (nullsRaw === 'SORTBY_NULLS_LAST' && descending) nulls = 'last';
      const base =
        e['name'] !== undefined ? { column: String(e['name']) } : { expression: exprFromAst(e['expr']) };
      return {
        ...base,
        ...(opclass.length > 0 ? { opclass: opclass[opclass.length - 1] ?? '' } : {}),
        ...(coll.length > 0 ? { collation: coll[coll.length - 1] ?? '' } : {}),
        descending,
        ...(nulls ? { nulls } : {}),
      };
    });
    const include = ((n['indexIncludingParams'] as AstNode[]) ?? []).map((p) =>
      String((p['IndexElem'] as AstNode)['name']),
    );
    return {
      kind: 'Index',
      ...(n['idxname'] !== undefined ? { name: String(n['idxname']) } : {}),
      unique: n['unique'] === true,
      method: String(n['accessMethod'] ?? 'btree'),
      keys,
      include,
      ...(n['whereClause'] !== undefined ? { where: exprFromAst(n['whereClause']) } : {}),
      nullsNotDistinct: n['nulls_not_distinct'] === true,
    };
  }

  private alterTable(s: ParsedStatement): void {
    const n = s.node;
    if (n['objtype'] !== 'OBJECT_TABLE') {
      if (n['objtype'] === 'OBJECT_SEQUENCE' || n['objtype'] === 'OBJECT_VIEW') return; // ownership only
      throw new DesiredStateError(
        `${this.where(s)}: ALTER ${String(n['objtype']).replace('OBJECT_', '')} is not supported`,
      );
    }
    const { schema, name } = rel(n['relation']);
    const t = this.table(schema, name, s);
    const what = `${this.where(s)}: table ${schema}.${name}`;
    for (const cmdNode of (n['cmds'] as AstNode[]) ?? []) {
      const cmd = cmdNode['AlterTableCmd'] as AstNode;
      const col = () => {
        const c = t.columns.find((x) => x.name === cmd['name']);
        if (!c) throw new DesiredStateError(`${what}: column ${String(cmd['name'])} does not exist`);
        return c;
      };
      switch (cmd['subtype']) {
        case 'AT_AddConstraint':
          this.addTableConstraint(t, (cmd['def'] as AstNode)['Constraint'] as AstNode, what);
          break;
        case 'AT_AddColumn':
          this.addColumn(t, (cmd['def'] as AstNode)['ColumnDef'] as AstNode, what);
          break;
        case 'AT_ColumnDefault': {
          const c = col();
          if (cmd['def'] === undefined) delete c.default;
          else c.default = exprFromAst(cmd['def']);
          break;
        }
        case 'AT_SetNotNull':
          col().notNull = true;
          break;
        case 'AT_DropNotNull':
          col().notNull = false;
          break;
        case 'AT_AddIdentity': {
          const c = col();
          const def = (cmd['def'] as AstNode)['Constraint'] as AstNode;
          c.identity = def['generated_when'] === 'a' ? 'always' : 'by default';
          c.notNull = true;
          break;
        }
        case 'AT_ChangeOwner':
        case 'AT_ReplicaIdentity':
          break;
        default:
          throw new DesiredStateError(
            `${what}: ALTER TABLE ${String(cmd['subtype']).replace('AT_', '')} is not supported in a desired state; write the final shape in CREATE TABLE`,
          );
      }
    }
  }

  private comment(s: ParsedStatement): void {
    const n = s.node;
    const text = n['comment'] === undefined ? undefined : String(n['comment']);
    const objtype = String(n['objtype']);
    const obj = n['object'] as AstNode;
    const list = isRecord(obj['List']) ? names(obj['List']['items']) : [];
    const qual = (parts: string[]) =>
      parts.length >= 2
        ? { schema: parts[parts.length - 2] ?? '', name: parts[parts.length - 1] ?? '' }
        : { schema: DEFAULT_SCHEMA, name: parts[0] ?? '' };
    const set = <T extends { comment?: string }>(target: T | undefined, label: string) => {
      if (!target)
        throw new DesiredStateError(`${this.where(s)}: COMMENT ON ${label}: the object is not declared`);
      if (text === undefined) delete target.comment;
      else target.comment = text;
    };
    switch (objtype) {
      case 'OBJECT_EXTENSION':
        return; // an extension's comment is the extension's own (pg_dump repeats it)
      case 'OBJECT_TABLE': {
        const q = qual(list);
        set(this.tables.get(objectKey(q.schema, q.name)), `TABLE ${q.name}`);
        return;
      }
      case 'OBJECT_VIEW': {
        const q = qual(list);
        set(this.views.get(objectKey(q.schema, q.name)), `VIEW ${q.name}`);
        return;
      }
      case 'OBJECT_COLUMN': {
        const column = list[list.length - 1] ?? '';
        const q = qual(list.slice(0, -1));
        const t = this.tables.get(objectKey(q.schema, q.name));
        set(
          t?.columns.find((c) => c.name === column),
          `COLUMN ${q.name}.${column}`,
        );
        return;
      }
      case 'OBJECT_SEQUENCE': {
        const q = qual(list);
        set(this.sequences.get(objectKey(q.schema, q.name)), `SEQUENCE ${q.name}`);
        return;
      }
      case 'OBJECT_SCHEMA': {
        const nm = isRecord(obj['String']) ? String(obj['String']['sval']) : '';
        const sc = this.schemas.get(nm);
        if (!sc)
          throw new DesiredStateError(
            `${this.where(s)}: COMMENT ON SCHEMA ${nm}: the schema is not declared`,
          );
        this.schemas.set(nm, text === undefined ? { kind: 'Schema', name: nm } : { ...sc, comment: text });
        return;
      }
      case 'OBJECT_TYPE': {
        const parts = isRecord(obj['TypeName']) ? names(obj['TypeName']['names']) : [];
        const q = qual(parts);
        const e = this.enums.get(objectKey(q.schema, q.name));
        if (!e)
          throw new DesiredStateError(
            `${this.where(s)}: COMMENT ON TYPE ${q.name}: the type is not declared`,
          );
        const { comment: _old, ...rest } = e;
        this.enums.set(objectKey(q.schema, q.name), text === undefined ? rest : { ...rest, comment: text });
        return;
      }
      case 'OBJECT_INDEX': {
        const q = qual(list);
        for (const t of this.tables.values()) {
          if (t.schema !== q.schema) continue;
          const i = t.indexes.findIndex((x) => x.name === q.name);
          if (i >= 0) {
            const { comment: _old, ...rest } = t.indexes[i] as Index;
            t.indexes[i] = text === undefined ? rest : { ...rest, comment: text };
            return;
          }
        }
        throw new DesiredStateError(
          `${this.where(s)}: COMMENT ON INDEX ${q.name}: the index is not declared with a name`,
        );
      }
      default:
        throw new DesiredStateError(
          `${this.where(s)}: COMMENT ON ${objtype.replace('OBJECT_', '')} is not supported`,
        );
    }
  }

  private insert(s: ParsedStatement): void {
    const n = s.node;
    const { schema, name } = rel(n['relation']);
    const t = this.table(schema, name, s);
    const what = `${this.where(s)}: rows for ${schema}.${name}`;
    const cols = ((n['cols'] as AstNode[]) ?? []).map((c) => String((c['ResTarget'] as AstNode)['name']));
    const columns = cols.length > 0 ? cols : t.columns.map((c) => c.name);
    const select = isRecord(n['selectStmt']) ? (n['selectStmt']['SelectStmt'] as AstNode) : undefined;
    const lists = (select?.['valuesLists'] as AstNode[] | undefined) ?? [];
    if (lists.length === 0)
      throw new DesiredStateError(`${what}: only INSERT ... VALUES declares reference rows`);
    const key = objectKey(schema, name);
    let set = this.rows.get(key);
    if (!set) {
      set = { schema, table: name, columns, rows: [], where: what };
      this.rows.set(key, set);
    } else if (set.columns.join('\u0000') !== columns.join('\u0000')) {
      throw new DesiredStateError(
        `${what}: every INSERT for one table must list the same columns (${set.columns.join(', ')})`,
      );
    }
    for (const l of lists) {
      const items = ((l['List'] as AstNode)['items'] as unknown[]) ?? [];
      if (items.length !== columns.length)
        throw new DesiredStateError(
          `${what}: a VALUES row has ${items.length} values for ${columns.length} columns`,
        );
      const row: Record<string, string | null> = {};
      items.forEach((it, i) => {
        row[columns[i] ?? ''] = literal(it, `${what}, column ${columns[i] ?? ''}`);
      });
      set.rows.push(row);
    }
  }

  build(): SchemaModel {
    const tables: Table[] = [];
    const tableMap = new Map<string, TableDraft>();
    for (const t of this.tables.values()) tableMap.set(objectKey(t.schema, t.name), t);
    // Serial columns: an owned sequence feeding the column's default is the same thing as `serial`.
    const sequences = new Map(this.sequences);
    for (const [key, seq] of this.sequences) {
      const owner = seq.ownedBy;
      if (!owner) continue;
      const t = tableMap.get(objectKey(owner.schema, owner.table));
      if (t?.schema !== owner.schema || t.name !== owner.table) continue;
      const col = t.columns.find((c) => c.name === owner.column);
      if (!col || !col.default || col.identity) continue;
      const target = nextvalTarget(col.default.key);
      if (target === undefined) continue;
      const [targetSchema, targetName] = target.length === 1 ? [DEFAULT_SCHEMA, ...target] : target;
      if (
        target.length > 2 ||
        targetSchema !== seq.schema ||
        targetName !== seq.name ||
        !['smallint', 'integer', 'bigint'].includes(col.type.name) ||
        col.type.schema !== undefined
      )
        continue;
      col.serial = true;
      delete col.default;
      sequences.delete(key);
    }
    for (const t of this.tables.values()) {
      const pk = t.constraints.find((c) => c.kind === 'PrimaryKey');
      for (const c of t.columns) {
        if (pk?.columns.includes(c.name)) c.notNull = true;
        if (c.serial) c.notNull = true;
      }
      const constraints = t.constraints.map((c) => {
        if (c.kind !== 'ForeignKey' || c.refColumns.length > 0) return c;
        const target = tableMap.get(objectKey(c.refSchema, c.refTable));
        const refPk = target?.constraints.find((x) => x.kind === 'PrimaryKey');
        if (!refPk)
          throw new DesiredStateError(
            `table ${t.schema}.${t.name}: foreign key to ${c.refSchema}.${c.refTable} names no columns and that table has no primary key; list the referenced columns`,
          );
        return { ...c, refColumns: refPk.columns };
      });
      tables.push({
        kind: 'Table',
        schema: t.schema,
        name: t.name,
        columns: t.columns.map((c) => Object.freeze({ ...c })),
        constraints,
        indexes: t.indexes,
        ...(t.comment !== undefined ? { comment: t.comment } : {}),
      });
    }
    const views: View[] = [...this.views.values()].map((v) => ({
      kind: 'View',
      schema: v.schema,
      name: v.name,
      definition: {
        text: deparseNode({ SelectStmt: (v.query['SelectStmt'] as AstNode) ?? v.query }),
        key: viewKey(v.query, tableMap),
      },
      ...(v.comment !== undefined ? { comment: v.comment } : {}),
    }));
    const rows: RowSet[] = [];
    for (const r of this.rows.values()) {
      const t = tableMap.get(objectKey(r.schema, r.table));
      const pk = t?.constraints.find((c) => c.kind === 'PrimaryKey');
      if (!t || !pk)
        throw new DesiredStateError(
          `${r.where}: the table has no primary key; reference rows are keyed by primary key, so declare one`,
        );
      for (const k of pk.columns)
        if (!r.columns.includes(k))
          throw new DesiredStateError(`${r.where}: the INSERT must list the key column ${k}`);
      for (const c of r.columns)
        if (!t.columns.some((x) => x.name === c))
          throw new DesiredStateError(`${r.where}: column ${c} is not declared in the table`);
      const seen = new Set<string>();
      for (const row of r.rows) {
        const id = JSON.stringify(pk.columns.map((k) => row[k] ?? null));
        if (seen.has(id)) throw new DesiredStateError(`${r.where}: key ${id} is declared twice`);
        seen.add(id);
      }
      rows.push({
        kind: 'RowSet',
        schema: r.schema,
        table: r.table,
        key: pk.columns,
        columns: r.columns,
        rows: r.rows,
      });
    }
    for (const seq of sequences.values()) {
      const [lo, hi] = SEQ_LIMITS[seq.dataType] ?? SEQ_LIMITS['bigint'] ?? ['', ''];
      const asc = !seq.increment.startsWith('-');
      if (seq.min === '') seq.min = asc ? '1' : lo;
      if (seq.max === '') seq.max = asc ? hi : '-1';
      if (seq.start === '') seq.start = asc ? seq.min : seq.max;
    }
    return {
      schemas: [...this.schemas.values()],
      extensions: [...this.extensions.values()],
      enums: [...this.enums.values()],
      sequences: [...sequences.values()].map((s) => ({ ...s })),
      tables,
      views,
      rows,
      unmanaged: this.unmanaged,
    };
  }
}

function literal(node: unknown, what: string): string | null {
  if (isRecord(node)) {
    if (isRecord(node['A_Const'])) return constText(node['A_Const']);
    if (isRecord(node['TypeCast'])) return literal(node['TypeCast']['arg'], what);
  }
  throw new DesiredStateError(
    `${what}: reference rows must hold literal values (numbers, strings, true/false, NULL)`,
  );
}

/** The name parts of the sequence a `nextval('...')` default reads, or undefined for any other default. */
function nextvalTarget(key: string): string[] | undefined {
  const m =
    /^\{"FuncCall":\{"args":\[\{"A_Const":\{"v":"((?:[^"\\]|\\.)*)"\}\}\],"funcname":\["nextval"\]\}\}$/.exec(
      key,
    );
  if (!m) return undefined;
  const raw = JSON.parse(`"${m[1] ?? ''}"`) as string;
  // The argument is a regclass literal: an optionally quoted, optionally qualified name.
  const parts = raw.match(/"(?:[^"]|"")*"|[^.]+/g) ?? [];
  return parts.map((p) => (p.startsWith('"') ? p.slice(1, -1).replace(/""/g, '"') : p.toLowerCase()));
}

/**
 * A view's comparison key. The catalog prints every column qualified and expands `*`, so for a query over
 * a single table both are undone here; joins keep their qualifiers (declare them qualified).
 */
function viewKey(query: AstNode, tables: ReadonlyMap<string, TableDraft>): string {
  const sel = (isRecord(query['SelectStmt']) ? query['SelectStmt'] : query) as AstNode;
  const from = (sel['fromClause'] as AstNode[] | undefined) ?? [];
  const single =
    from.length === 1 && isRecord(from[0]?.['RangeVar']) ? (from[0]['RangeVar'] as AstNode) : undefined;
  const relname = single ? String(single['relname']) : undefined;
  const alias = single && isRecord(single['alias']) ? String(single['alias']['aliasname']) : undefined;
  const table = single
    ? tables.get(objectKey(String(single['schemaname'] ?? DEFAULT_SCHEMA), relname ?? ''))
    : undefined;
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (!isRecord(node)) return node;
    if (isRecord(node['ColumnRef']) && single) {
      const f = node['ColumnRef']['fields'] as AstNode[];
      const first = names(f.slice(0, 1))[0];
      if (f.length === 2 && (first === relname || first === alias)) return { ColumnRef: { fields: [f[1]] } };
    }
    if (isRecord(node['RangeVar'])) {
      const r = node['RangeVar'];
      const out: AstNode = { relname: r['relname'] };
      if (r['schemaname'] !== undefined && r['schemaname'] !== DEFAULT_SCHEMA)
        out['schemaname'] = r['schemaname'];
      if (isRecord(r['alias']) && r['alias']['aliasname'] !== r['relname'] && single === undefined)
        out['alias'] = r['alias'];
      return { RangeVar: out };
    }
    const out: AstNode = {};
    for (const [k, v] of Object.entries(node)) out[k] = strip(v);
    return out;
  };
  let targets = (sel['targetList'] as AstNode[] | undefined) ?? [];
  if (table) {
    targets = targets.flatMap((t) => {
      const val = (t['ResTarget'] as AstNode)['val'] as AstNode;
      const f = isRecord(val['ColumnRef']) ? (val['ColumnRef']['fields'] as AstNode[]) : [];
      if (f.length > 0 && isRecord(f[f.length - 1]?.['A_Star'])) {
        return table.columns.map((c) => ({
          ResTarget: { val: { ColumnRef: { fields: [{ String: { sval: c.name } }] } } },
        }));
      }
      return [t];
    });
  }
  targets = targets.map((t) => {
    const r = t['ResTarget'] as AstNode;
    const val = strip(r['val']) as AstNode;
    const f = isRecord(val['ColumnRef']) ? names(val['ColumnRef']['fields']) : [];
    const nm = r['name'] !== undefined && r['name'] !== f[f.length - 1] ? { name: r['name'] } : {};
    return { ResTarget: { ...nm, val } };
  });
  const copy: AstNode = { ...sel, targetList: targets };
  return canonicalKey(strip(copy));
}

export async function loadDesiredSql(files: readonly { path: string; sql: string }[]): Promise<SchemaModel> {
  await ensureParser();
  const b = new DesiredStateBuilder();
  for (const f of files) b.addSql(f.sql, f.path);
  return b.build();
}
