/**
 * The diff: two models in, typed changes out, in dependency order. Pure: it never touches a database, and
 * the same inputs always give the same changes in the same order (everything is sorted by name; tables are
 * ordered by a stable topological sort over foreign keys, cycles broken by name).
 */
import type { Change, TableRef } from './changes.ts';
import type {
  Column,
  Constraint,
  Index,
  RowSet,
  RowValues,
  SchemaModel,
  SequenceOwner,
  Table,
  View,
} from './model.ts';
import {
  DEFAULT_SCHEMA,
  constraintKey,
  indexKey,
  objectKey,
  sameConstraint,
  sameIndex,
  sameType,
} from './model.ts';
import { applyRenames } from './renames.ts';
import { ObjectPlan, objectPhase } from './diff-objects.ts';

const byName = <T extends { schema?: string; name: string }>(a: T, b: T) =>
  cmp(`${a.schema ?? ''}\u0000${a.name}`, `${b.schema ?? ''}\u0000${b.name}`);

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameOwner(a: SequenceOwner | undefined, b: SequenceOwner | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.schema === b.schema && a.table === b.table && a.column === b.column;
}

function keyed<T extends { schema?: string; name: string }>(list: readonly T[]): Map<string, T> {
  const m = new Map<string, T>();
  for (const x of [...list].sort(byName)) m.set(objectKey(x.schema ?? '', x.name), x);
  return m;
}

const ref = (t: { schema: string; name: string }): TableRef => ({ schema: t.schema, name: t.name });

/**
 * Stable topological order: items sorted by key, each emitted after its dependencies. A cycle is broken at
 * the name-ordered entry point, so the result is still deterministic.
 */
export function stableTopo<T>(items: readonly T[], key: (x: T) => string, deps: (x: T) => string[]): T[] {
  // Each key computed once: sorting asked for two per comparison.
  const keys = new Map<T, string>(items.map((x) => [x, key(x)]));
  const keyOf = (x: T) => keys.get(x) ?? key(x);
  const sorted = [...items].sort((a, b) => cmp(keyOf(a), keyOf(b)));
  const present = new Map(sorted.map((x) => [keyOf(x), x]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: T[] = [];
  const visit = (x: T) => {
    const k = keyOf(x);
    if (done.has(k) || visiting.has(k)) return;
    visiting.add(k);
    for (const d of deps(x)
      .filter((d) => d !== k)
      .sort(cmp)) {
      const dx = present.get(d);
      if (dx !== undefined) visit(dx);
    }
    visiting.delete(k);
    done.add(k);
    out.push(x);
  };
  for (const x of sorted) visit(x);
  return out;
}

/** Tables ordered so a referenced table comes before the tables referencing it. */
export function topologicalTables(tables: readonly Table[]): Table[] {
  return stableTopo(
    tables,
    (t) => objectKey(t.schema, t.name),
    (t) => [
      ...t.constraints.flatMap((c) => (c.kind === 'ForeignKey' ? [objectKey(c.refSchema, c.refTable)] : [])),
      // A partition after its parent (and dropped before it).
      ...(t.partitionOf !== undefined ? [objectKey(t.partitionOf.schema, t.partitionOf.table)] : []),
    ],
  );
}

export interface DiffInput {
  readonly from: SchemaModel;
  readonly to: SchemaModel;
  /** Live rows of the managed tables (read by key), in the same shape as the desired row sets. */
  readonly liveRows: readonly RowSet[];
}

export function diffModels({ from: liveModel, to, liveRows }: DiffInput): Change[] {
  const changes: Change[] = [];
  const push = (c: Change) => changes.push(c);
  // Declared renames run first; the rest of the diff compares against the live model as renamed.
  const renamed = applyRenames(liveModel, to);
  const from = renamed.live;
  for (const c of renamed.changes) push(c);

  // Schemas
  const fromSchemas = new Set(from.schemas.map((s) => s.name));
  const toSchemas = new Map(to.schemas.filter((s) => s.name !== DEFAULT_SCHEMA).map((s) => [s.name, s]));
  for (const [name, s] of [...toSchemas].sort((a, b) => cmp(a[0], b[0]))) {
    if (!fromSchemas.has(name))
      push({ kind: 'CreateSchema', schema: name, ...(s.comment ? { comment: s.comment } : {}) });
    else {
      const live = from.schemas.find((x) => x.name === name);
      if (live?.comment !== s.comment)
        push({
          kind: 'SetComment',
          target: { objectType: 'SCHEMA', schema: name, name },
          ...(s.comment !== undefined ? { comment: s.comment } : {}),
        });
    }
  }
  // public exists everywhere and is never created or dropped; its comment is compared when declared.
  const toPublic = to.schemas.find((s) => s.name === DEFAULT_SCHEMA);
  const fromPublic = from.schemas.find((s) => s.name === DEFAULT_SCHEMA);
  if (toPublic !== undefined && toPublic.comment !== fromPublic?.comment)
    push({
      kind: 'SetComment',
      target: { objectType: 'SCHEMA', schema: DEFAULT_SCHEMA, name: DEFAULT_SCHEMA },
      ...(toPublic.comment !== undefined ? { comment: toPublic.comment } : {}),
    });
  // A schema that holds an unmanaged object is left alone: dropping it would fail or take the object with it.
  // So is one the desired state still puts objects in (dropping it fails, 2BP01), and the default schemas
  // (public, and the role's own, where unqualified names live).
  const holdsUnmanaged = new Set(from.unmanaged.map((u) => u.schema));
  const used = schemasUsedBy(to);
  // An extension kept without a stated schema stays where it lives (its schema is compared only when
  // stated), so that schema is used too: dropping it fails (2BP01).
  const keptUnplaced = new Set(to.extensions.filter((e) => e.schema === undefined).map((e) => e.name));
  for (const e of from.extensions) if (keptUnplaced.has(e.name) && e.schema !== undefined) used.add(e.schema);
  const implicit = new Set([DEFAULT_SCHEMA, from.defaultSchema, to.defaultSchema]);
  // Unmanaged declarations (a function in the desired files) keep their schema too.
  const declaredUnmanaged = new Set(to.unmanaged.map((u) => u.schema));
  for (const s of [...from.schemas].sort((a, b) => cmp(a.name, b.name))) {
    const keep = holdsUnmanaged.has(s.name) || used.has(s.name) || declaredUnmanaged.has(s.name);
    if (!implicit.has(s.name) && !toSchemas.has(s.name) && !keep)
      push({ kind: 'DropSchema', schema: s.name });
  }
  for (const name of [...used].sort(cmp)) {
    if (!implicit.has(name) && !toSchemas.has(name) && !fromSchemas.has(name))
      push({
        kind: 'Unsupported',
        object: `schema ${name}`,
        reason: `schema ${name} is used by the desired state but not declared and does not exist; add CREATE SCHEMA ${name} to the desired state`,
      });
  }

  // Extensions: schema and version compare only when the desired state states them.
  // An extension's name is unique in a database; its schema is an attribute, not part of its identity.
  const fromExt = new Map([...from.extensions].sort((a, b) => cmp(a.name, b.name)).map((e) => [e.name, e]));
  const toExt = new Map([...to.extensions].sort((a, b) => cmp(a.name, b.name)).map((e) => [e.name, e]));
  for (const [k, e] of toExt) {
    const live = fromExt.get(k);
    if (!live) push({ kind: 'CreateExtension', extension: e });
    else if (e.version !== undefined && e.version !== live.version)
      push({ kind: 'UpdateExtension', extension: e });
    else if (e.schema !== undefined && e.schema !== live.schema) {
      push({
        kind: 'Unsupported',
        object: `extension ${e.name}`,
        reason: `extension ${e.name} lives in schema ${live.schema ?? ''} but ${e.schema} is declared; move it by hand (ALTER EXTENSION ... SET SCHEMA)`,
        category: 'extensions_modified',
      });
    }
  }
  for (const [k, e] of fromExt) if (!toExt.has(k)) push({ kind: 'DropExtension', extension: e });

  // Enums
  const fromEnum = keyed(from.enums);
  const toEnum = keyed(to.enums);
  for (const [k, e] of toEnum) {
    const live = fromEnum.get(k);
    if (!live) {
      push({ kind: 'CreateEnum', type: e });
      if (e.comment !== undefined)
        push({
          kind: 'SetComment',
          target: { objectType: 'TYPE', schema: e.schema, name: e.name },
          comment: e.comment,
        });
    } else {
      const removed = live.values.filter((v) => !e.values.includes(v));
      const kept = e.values.filter((v) => live.values.includes(v));
      const liveOrder = live.values.filter((v) => e.values.includes(v));
      if (removed.length > 0) {
        push({
          kind: 'Unsupported',
          object: `type ${e.schema}.${e.name}`,
          reason: `enum ${e.schema}.${e.name} would lose values ${removed.join(', ')}; PostgreSQL cannot drop enum values: recreate the type in a migration`,
          category: 'enum_values_removed',
        });
      } else if (kept.join('\u0000') !== liveOrder.join('\u0000')) {
        push({
          kind: 'Unsupported',
          object: `type ${e.schema}.${e.name}`,
          reason: `enum ${e.schema}.${e.name} reorders existing values; PostgreSQL cannot reorder them: recreate the type in a migration`,
        });
      } else {
        e.values.forEach((v, i) => {
          if (live.values.includes(v)) return;
          const after = i > 0 ? e.values[i - 1] : undefined;
          const before = e.values.slice(i + 1).find((x) => live.values.includes(x));
          push({
            kind: 'AddEnumValue',
            type: e,
            value: v,
            ...(after !== undefined ? { after } : before !== undefined ? { before } : {}),
          });
        });
      }
      if (live.comment !== e.comment)
        push({
          kind: 'SetComment',
          target: { objectType: 'TYPE', schema: e.schema, name: e.name },
          ...(e.comment !== undefined ? { comment: e.comment } : {}),
        });
    }
  }
  for (const [k, e] of fromEnum) if (!toEnum.has(k)) push({ kind: 'DropEnum', type: e });

  // Sequences
  const fromSeq = keyed(from.sequences);
  const toSeq = keyed(to.sequences);
  for (const [k, s] of toSeq) {
    const live = fromSeq.get(k);
    if (!live) {
      push({ kind: 'CreateSequence', sequence: s });
      if (s.ownedBy !== undefined) {
        const { ownedBy: _owner, ...unowned } = s;
        push({ kind: 'AlterSequence', from: unowned, sequence: s });
      }
      if (s.comment !== undefined)
        push({
          kind: 'SetComment',
          target: { objectType: 'SEQUENCE', schema: s.schema, name: s.name },
          comment: s.comment,
        });
    } else {
      const fields = ['dataType', 'start', 'increment', 'min', 'max', 'cache', 'cycle'] as const;
      if (fields.some((f) => live[f] !== s[f]) || !sameOwner(live.ownedBy, s.ownedBy))
        push({ kind: 'AlterSequence', from: live, sequence: s });
      if (live.comment !== s.comment)
        push({
          kind: 'SetComment',
          target: { objectType: 'SEQUENCE', schema: s.schema, name: s.name },
          ...(s.comment !== undefined ? { comment: s.comment } : {}),
        });
    }
  }
  for (const [k, s] of fromSeq) if (!toSeq.has(k)) push({ kind: 'DropSequence', sequence: s });

  // Tables
  const fromTables = keyed(from.tables);
  const toTables = keyed(to.tables);
  // Names only: a view records the relations it reads by name (relname).
  const retypedTables = new Set<string>();
  const retypedKeys = new Set<string>();
  // One order for the tables, their reference rows and the changes (it is computed from the key order alone).
  const tablesInOrder = topologicalTables(to.tables);
  for (const t of tablesInOrder) {
    const k = objectKey(t.schema, t.name);
    const live = fromTables.get(k);
    if (!live) {
      const { constraints, indexes } = t;
      // Foreign keys are added after every table exists, so creation order never has to break a cycle.
      push({
        kind: 'CreateTable',
        table: { ...t, constraints: constraints.filter((c) => c.kind !== 'ForeignKey'), indexes: [] },
      });
      for (const c of sortConstraints(constraints.filter((c) => c.kind === 'ForeignKey')))
        push({ kind: 'AddConstraint', table: ref(t), constraint: c });
      for (const i of sortIndexes(indexes)) push({ kind: 'CreateIndex', table: ref(t), index: i });
      if (t.comment !== undefined)
        push({
          kind: 'SetComment',
          target: { objectType: 'TABLE', schema: t.schema, name: t.name },
          comment: t.comment,
        });
      for (const c of t.columns)
        if (c.comment !== undefined)
          push({
            kind: 'SetComment',
            target: { objectType: 'COLUMN', schema: t.schema, name: t.name, column: c.name },
            comment: c.comment,
            column: c,
          });
      for (const i of indexes)
        if (i.comment !== undefined && i.name !== undefined)
          push({
            kind: 'SetComment',
            target: { objectType: 'INDEX', schema: t.schema, name: i.name },
            comment: i.comment,
          });
      for (const c of constraints) pushConstraintComment(ref(t), c, undefined, push);
      continue;
    }
    if (diffTable(live, t, push)) {
      retypedTables.add(t.name);
      retypedKeys.add(k);
    }
  }
  const dropped = topologicalTables(
    [...fromTables.values()].filter((t) => !toTables.has(objectKey(t.schema, t.name))),
  ).reverse();
  // In a foreign-key cycle some dropped table still references one dropped before it: that key goes first.
  dropped.forEach((t, i) => {
    for (const c of t.constraints) {
      if (c.kind !== 'ForeignKey') continue;
      const j = dropped.findIndex((x) => x.schema === c.refSchema && x.name === c.refTable);
      if (j >= 0 && j < i) push({ kind: 'DropConstraint', table: ref(t), constraint: c });
    }
  });
  for (const t of dropped) push({ kind: 'DropTable', table: t });

  // Views: recreated when the definition changed, when a table they read had a column dropped or retyped,
  // or when a view they read is recreated or dropped. Drops run dependents first, creates dependencies first.
  const fromViews = keyed(from.views);
  const toViews = keyed(to.views);
  const reads = (v: View, name: string) => v.definition.key.includes(`"relname":${JSON.stringify(name)}`);
  const recreate = new Set<string>();
  // Functions, triggers, domains, ...: a view calling a function that is recreated is rebuilt with it.
  const objects = new ObjectPlan(from, to, retypedKeys);
  for (const [k, live] of fromViews) {
    const v = toViews.get(k);
    const retypedRead = [...retypedTables].some((name) => reads(live, name));
    if (!v || live.definition.key !== v.definition.key || retypedRead || objects.viewNeedsRebuild(live))
      recreate.add(k);
  }
  for (let grew = true; grew;) {
    grew = false;
    for (const [k, live] of fromViews) {
      if (recreate.has(k)) continue;
      if ([...recreate].some((r) => reads(live, fromViews.get(r)?.name ?? ''))) {
        recreate.add(k);
        grew = true;
      }
    }
  }
  const viewOrder = (views: View[]) =>
    stableTopo(
      views,
      (v) => objectKey(v.schema, v.name),
      (v) => views.filter((o) => o !== v && reads(v, o.name)).map((o) => objectKey(o.schema, o.name)),
    );
  // A materialized view reading a rebuilt view is rebuilt with it, and a view reading that one too.
  for (let grew = true; grew;) {
    grew = false;
    objects.viewsRebuilt([...recreate].map((k) => fromViews.get(k) as View));
    for (const [k, live] of fromViews) {
      if (recreate.has(k) || !objects.viewNeedsRebuild(live)) continue;
      recreate.add(k);
      grew = true;
    }
  }
  for (const c of objects.changes()) push(c);
  for (const v of viewOrder([...recreate].map((k) => fromViews.get(k) as View)).reverse())
    push({ kind: 'DropView', view: v });
  for (const v of viewOrder(
    [...toViews].filter(([k]) => !fromViews.has(k) || recreate.has(k)).map(([, v]) => v),
  )) {
    push({ kind: 'CreateView', view: v });
    if (v.comment !== undefined) {
      push({
        kind: 'SetComment',
        target: { objectType: 'VIEW', schema: v.schema, name: v.name },
        comment: v.comment,
      });
    }
  }
  for (const [k, v] of toViews) {
    const live = fromViews.get(k);
    if (live && !recreate.has(k) && live.comment !== v.comment) {
      push({
        kind: 'SetComment',
        target: { objectType: 'VIEW', schema: v.schema, name: v.name },
        ...(v.comment !== undefined ? { comment: v.comment } : {}),
      });
    }
  }

  // Reference rows
  const order = tablesInOrder.map((t) => objectKey(t.schema, t.name));
  const desiredRows = [...to.rows].sort(
    (a, b) => order.indexOf(objectKey(a.schema, a.table)) - order.indexOf(objectKey(b.schema, b.table)),
  );
  for (const rs of desiredRows) {
    const table = toTables.get(objectKey(rs.schema, rs.table));
    const live = liveRows.find((r) => r.schema === rs.schema && r.table === rs.table);
    diffRows(rs, live, table, push);
  }
  releaseReferencedKeys(changes, from, toTables, push);
  refuseNewEnumValuesInUse(changes, toTables, push);
  return orderChanges(changes, order);
}

/** Every schema the model puts an object in or refers to (types, foreign keys, sequence owners). */
export function schemasUsedBy(m: SchemaModel): Set<string> {
  const used = new Set<string>();
  for (const x of [...m.enums, ...m.sequences, ...m.tables, ...m.views, ...(m.objects ?? [])])
    used.add(x.schema);
  for (const e of m.extensions) if (e.schema !== undefined) used.add(e.schema);
  for (const t of m.tables) {
    for (const c of t.columns) if (c.type.schema !== undefined) used.add(c.type.schema);
    for (const c of t.constraints) if (c.kind === 'ForeignKey') used.add(c.refSchema);
  }
  return used;
}

/**
 * A primary key or unique constraint (or unique index) cannot be dropped while a foreign key depends on it
 * (2BP01), and a foreign key dropped with its table or column goes later than the key it needs. Every live
 * foreign key onto a dropped key that is not dropped explicitly already is dropped first (in the foreign-key
 * phase) and, when the desired state still declares it, added back once the new key exists.
 */
function releaseReferencedKeys(
  changes: readonly Change[],
  from: SchemaModel,
  toTables: ReadonlyMap<string, Table>,
  push: (c: Change) => void,
): void {
  const droppedKeys: { schema: string; table: string; columns: string[] }[] = [];
  for (const c of changes) {
    if (c.kind === 'DropConstraint' && (c.constraint.kind === 'PrimaryKey' || c.constraint.kind === 'Unique'))
      droppedKeys.push({ schema: c.table.schema, table: c.table.name, columns: [...c.constraint.columns] });
    if (c.kind === 'DropIndex' && c.index.unique && c.index.keys.every((k) => k.column !== undefined))
      droppedKeys.push({
        schema: c.table.schema,
        table: c.table.name,
        columns: c.index.keys.map((k) => k.column ?? ''),
      });
  }
  if (droppedKeys.length === 0) return;
  const sameSet = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && a.every((x) => b.includes(x));
  const alreadyDropped = new Set(
    changes.flatMap((c) =>
      c.kind === 'DropConstraint' && c.constraint.kind === 'ForeignKey'
        ? [JSON.stringify([c.table.schema, c.table.name, c.constraint.name ?? ''])]
        : [],
    ),
  );
  const alreadyAdded = new Set(
    changes.flatMap((c) =>
      c.kind === 'AddConstraint'
        ? [JSON.stringify([c.table.schema, c.table.name, constraintKey(c.constraint)])]
        : [],
    ),
  );
  for (const t of [...from.tables].sort(byName)) {
    for (const fk of sortConstraints(t.constraints)) {
      if (fk.kind !== 'ForeignKey') continue;
      const needs = droppedKeys.some(
        (k) => k.schema === fk.refSchema && k.table === fk.refTable && sameSet(k.columns, fk.refColumns),
      );
      if (!needs || alreadyDropped.has(JSON.stringify([t.schema, t.name, fk.name ?? '']))) continue;
      push({ kind: 'DropConstraint', table: ref(t), constraint: fk });
      const desired = toTables.get(objectKey(t.schema, t.name));
      const again = desired?.constraints.find(
        (d) => d.kind === 'ForeignKey' && constraintKey(d) === constraintKey(fk),
      );
      if (again && !alreadyAdded.has(JSON.stringify([t.schema, t.name, constraintKey(again)])))
        push({ kind: 'AddConstraint', table: ref(t), constraint: again });
    }
  }
}

/**
 * PostgreSQL cannot use an enum value in the transaction that adds it, and a plan is one transaction: a
 * plan that adds a value and uses it (a default or a declared row) is refused with the two-step fix.
 */
function refuseNewEnumValuesInUse(
  changes: readonly Change[],
  tables: ReadonlyMap<string, Table>,
  push: (c: Change) => void,
): void {
  const added = new Map<string, Set<string>>();
  for (const c of changes) {
    if (c.kind !== 'AddEnumValue') continue;
    const k = objectKey(c.type.schema, c.type.name);
    added.set(k, (added.get(k) ?? new Set()).add(c.value));
  }
  if (added.size === 0) return;
  const newValues = (col: Column) =>
    col.type.schema === undefined ? undefined : added.get(objectKey(col.type.schema, col.type.name));
  const uses: string[] = [];
  const checkDefault = (t: TableRef, col: Column) => {
    const values = newValues(col);
    for (const v of values ?? [])
      if (col.default?.key.includes(`"v":${JSON.stringify(v)}`))
        uses.push(`${t.schema}.${t.name}.${col.name} default '${v}'`);
  };
  for (const c of changes) {
    if (c.kind === 'CreateTable') for (const col of c.table.columns) checkDefault(c.table, col);
    if (c.kind === 'AddColumn' || c.kind === 'SetDefault') checkDefault(c.table, c.column);
    if (c.kind === 'InsertRow' || c.kind === 'UpdateRow') {
      const t = tables.get(objectKey(c.table.schema, c.table.name));
      for (const col of t?.columns ?? []) {
        const v = c.row[col.name];
        if (v !== undefined && v !== null && newValues(col)?.has(v))
          uses.push(`a row of ${c.table.schema}.${c.table.name} ('${v}')`);
      }
    }
  }
  if (uses.length === 0) return;
  push({
    kind: 'Unsupported',
    object: 'enum values',
    reason: `the plan adds enum values and uses them in the same transaction (${[...new Set(uses)].sort().join(', ')}); PostgreSQL cannot use an enum value in the transaction that adds it: declare the value first, apply, then use it`,
    category: 'enum_values_added',
  });
}

function sortConstraints(list: readonly Constraint[]): Constraint[] {
  return [...list].sort((a, b) =>
    cmp(`${a.name ?? ''}\u0000${constraintKey(a)}`, `${b.name ?? ''}\u0000${constraintKey(b)}`),
  );
}

function sortIndexes(list: readonly Index[]): Index[] {
  return [...list].sort((a, b) =>
    cmp(`${a.name ?? ''}\u0000${indexKey(a)}`, `${b.name ?? ''}\u0000${indexKey(b)}`),
  );
}

/** Pairs desired with live: by name when the desired one is named, else by definition. */
function pair<T extends { name?: string }>(
  live: readonly T[],
  desired: readonly T[],
  key: (x: T) => string,
): { matched: [T, T][]; added: T[]; removed: T[] } {
  const rest = [...live];
  const matched: [T, T][] = [];
  const added: T[] = [];
  const unnamed: T[] = [];
  for (const d of desired) {
    if (d.name === undefined) {
      unnamed.push(d);
      continue;
    }
    const i = rest.findIndex((l) => l.name === d.name);
    if (i >= 0) matched.push([rest.splice(i, 1)[0] as T, d]);
    else added.push(d);
  }
  for (const d of unnamed) {
    const i = rest.findIndex((l) => key(l) === key(d));
    if (i >= 0) matched.push([rest.splice(i, 1)[0] as T, d]);
    else added.push(d);
  }
  return { matched, added, removed: rest };
}

/** Returns true when a column was dropped or changed type (views reading the table are then recreated). */
function diffTable(live: Table, t: Table, push: (c: Change) => void): boolean {
  const tr = ref(t);
  const parent = (x: Table) => (x.partitionOf ? objectKey(x.partitionOf.schema, x.partitionOf.table) : '');
  if ((live.partitionBy?.key ?? '') !== (t.partitionBy?.key ?? '') || parent(live) !== parent(t)) {
    const how = (x: Table) =>
      x.partitionBy
        ? `partitioned by ${x.partitionBy.text}`
        : x.partitionOf
          ? `a partition of ${x.partitionOf.schema}.${x.partitionOf.table}`
          : 'not partitioned';
    push({
      kind: 'Unsupported',
      object: `table ${t.schema}.${t.name}`,
      reason: `table ${t.schema}.${t.name} is ${how(live)} and is declared ${how(t)}; PostgreSQL cannot change that in place: do it in a migration (create the new table, move the rows, swap the names; or ATTACH/DETACH PARTITION)`,
      category: 'columns_modified',
    });
  }
  const lb = live.partitionOf;
  const db = t.partitionOf;
  if (
    lb !== undefined &&
    db !== undefined &&
    parent(live) === parent(t) &&
    (lb.shape !== db.shape ||
      (lb.values !== undefined &&
        db.values !== undefined &&
        JSON.stringify(lb.values) !== JSON.stringify(db.values)))
  )
    push({
      kind: 'Unsupported',
      object: `table ${t.schema}.${t.name}`,
      reason: `partition ${t.schema}.${t.name} of ${db.schema}.${db.table} is attached ${lb.bound} and is declared ${db.bound}; PostgreSQL cannot change a bound in place: in a migration, DETACH PARTITION it and ATTACH PARTITION it again with the new bound (its rows must fit)`,
      category: 'columns_modified',
    });
  let retyped = false;
  const cons = pair(live.constraints, t.constraints, constraintKey);
  const idx = pair(live.indexes, t.indexes, indexKey);
  // Constraints and indexes that change are dropped and re-added.
  const dropCons: Constraint[] = [...cons.removed];
  const addCons: Constraint[] = [...cons.added];
  const validateCons: Constraint[] = [];
  for (const [l, d] of cons.matched) {
    if (l.kind === 'PrimaryKey' && d.kind === 'PrimaryKey' && d.name === undefined) {
      if (!sameConstraint(l, d)) {
        dropCons.push(l);
        addCons.push(d);
      }
      continue;
    }
    if (!sameConstraint(l, d)) {
      dropCons.push(l);
      addCons.push(d);
    } else if (isNotValid(l) && !isNotValid(d) && l.name !== undefined)
      // Declared NOT VALID while live is valid asks for less than there is: nothing to do.
      validateCons.push(l);
  }
  const dropIdx: Index[] = [...idx.removed];
  const addIdx: Index[] = [...idx.added];
  for (const [l, d] of idx.matched) {
    if (!sameIndex(l, d)) {
      dropIdx.push(l);
      addIdx.push(d);
    } else if (l.comment !== d.comment && d.name !== undefined) {
      push({
        kind: 'SetComment',
        target: { objectType: 'INDEX', schema: t.schema, name: d.name },
        ...(d.comment !== undefined ? { comment: d.comment } : {}),
      });
    }
  }
  // A PK present on both sides but unnamed in the desired state matches by kind.
  const livePk = dropCons.find((c) => c.kind === 'PrimaryKey');
  const newPk = addCons.find((c) => c.kind === 'PrimaryKey');
  if (livePk && newPk && newPk.name === undefined && sameConstraint(livePk, newPk)) {
    dropCons.splice(dropCons.indexOf(livePk), 1);
    addCons.splice(addCons.indexOf(newPk), 1);
  }
  for (const c of sortConstraints(dropCons)) push({ kind: 'DropConstraint', table: tr, constraint: c });
  for (const i of sortIndexes(dropIdx)) push({ kind: 'DropIndex', table: tr, index: i });

  // Columns most often come in the same order on both sides: each is looked for at its own position first,
  // and the maps are made only when one is not there.
  let liveCols: Map<string, Column> | undefined;
  let matchedInPlace = live.columns.length === t.columns.length;
  for (let at = 0; at < t.columns.length; at++) {
    const c = t.columns[at] as Column;
    const inPlace = live.columns[at];
    if (inPlace?.name !== c.name) matchedInPlace = false;
    const l =
      inPlace?.name === c.name
        ? inPlace
        : (liveCols ??= new Map(live.columns.map((x) => [x.name, x]))).get(c.name);
    if (!l) {
      push({ kind: 'AddColumn', table: tr, column: c, tableIsNew: false });
      pushColumnComment(tr, c, push);
      continue;
    }
    retyped = diffColumn(tr, l, c, push) || retyped;
  }
  if (!matchedInPlace) {
    const desiredCols = new Set(t.columns.map((c) => c.name));
    // Generated columns go first: a column they are computed from cannot be dropped while they exist.
    const dropOrder = [
      ...live.columns.filter((c) => c.generated),
      ...live.columns.filter((c) => !c.generated),
    ];
    for (const l of dropOrder) {
      if (!desiredCols.has(l.name)) {
        push({ kind: 'DropColumn', table: tr, column: l });
        retyped = true;
      }
    }
  }
  if (
    (live.options !== undefined || t.options !== undefined) &&
    JSON.stringify(sortedOptions(live.options)) !== JSON.stringify(sortedOptions(t.options))
  )
    push({ kind: 'AlterTableOptions', table: tr, from: live.options ?? {}, options: t.options ?? {} });
  for (const c of sortConstraints(addCons)) push({ kind: 'AddConstraint', table: tr, constraint: c });
  for (const c of validateCons) push({ kind: 'ValidateConstraint', table: tr, constraint: c });
  for (const c of addCons) pushConstraintComment(tr, c, undefined, push);
  for (const [l, d] of cons.matched)
    if (!addCons.includes(d) && l.comment !== d.comment) pushConstraintComment(tr, d, l, push);
  for (const i of sortIndexes(addIdx)) push({ kind: 'CreateIndex', table: tr, index: i });
  for (const i of addIdx)
    if (i.comment !== undefined && i.name !== undefined)
      push({
        kind: 'SetComment',
        target: { objectType: 'INDEX', schema: t.schema, name: i.name },
        comment: i.comment,
      });
  if (live.comment !== t.comment)
    push({
      kind: 'SetComment',
      target: { objectType: 'TABLE', schema: t.schema, name: t.name },
      ...(t.comment !== undefined ? { comment: t.comment } : {}),
    });
  return retyped;
}

function sortedOptions(o: Readonly<Record<string, string>> | undefined): [string, string][] {
  return Object.entries(o ?? {}).sort((a, b) => cmp(a[0], b[0]));
}

/** A constraint's comment: set when it is new (and has one), or changed from the live one's. */
function pushConstraintComment(
  tr: TableRef,
  c: Constraint,
  live: Constraint | undefined,
  push: (c: Change) => void,
): void {
  if (c.name === undefined || c.comment === live?.comment) return;
  push({
    kind: 'SetComment',
    target: { objectType: 'CONSTRAINT', schema: tr.schema, name: tr.name, constraint: c.name },
    ...(c.comment !== undefined ? { comment: c.comment } : {}),
  });
}

function pushColumnComment(tr: TableRef, c: Column, push: (c: Change) => void): void {
  if (c.comment === undefined) return;
  push({
    kind: 'SetComment',
    target: { objectType: 'COLUMN', schema: tr.schema, name: tr.name, column: c.name },
    comment: c.comment,
    column: c,
  });
}

/** An identity column's sequence options, in one order: what a change of them compares. */
function identityOptionsKey(c: Column): string {
  const o = c.identityOptions ?? {};
  return JSON.stringify(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k as keyof typeof o]]),
  );
}

/** Column attributes only some dialects have (ON UPDATE, INVISIBLE): a change restates the column. */
function sameExtras(a: Column, b: Column): boolean {
  return (
    (a.onUpdate?.key ?? null) === (b.onUpdate?.key ?? null) &&
    (a.invisible ?? false) === (b.invisible ?? false)
  );
}

function diffColumn(tr: TableRef, l: Column, c: Column, push: (c: Change) => void): boolean {
  // Named only in a refusal: a no-op plan compares every column and refuses none.
  const obj = () => `column ${tr.schema}.${tr.name}.${c.name}`;
  if (Boolean(l.serial) !== Boolean(c.serial)) {
    push({
      kind: 'Unsupported',
      object: obj(),
      reason: `${obj()} changes between serial and a plain column; convert it with a migration (sequence ownership and default move together)`,
      category: 'columns_modified',
    });
    return false;
  }
  if ((l.generated?.key ?? '') !== (c.generated?.key ?? '')) {
    // A generated expression cannot be altered in place: the derived column is rebuilt.
    push({ kind: 'DropColumn', table: tr, column: l });
    push({ kind: 'AddColumn', table: tr, column: c, tableIsNew: false });
    pushColumnComment(tr, c, push);
    return true;
  }
  let retyped = false;
  const typeChanged = !sameType(l.type, c.type) || (l.collation ?? '') !== (c.collation ?? '');
  const defaultChanged = (l.default?.key ?? '') !== (c.default?.key ?? '');
  if (l.identity !== undefined && c.identity === undefined)
    push({ kind: 'DropIdentity', table: tr, column: l });
  if (typeChanged) {
    if (l.default !== undefined) push({ kind: 'DropDefault', table: tr, column: l });
    push({ kind: 'AlterColumnType', table: tr, from: l, column: c });
    if (c.default !== undefined) push({ kind: 'SetDefault', table: tr, column: c });
    retyped = true;
  } else if (!sameExtras(l, c)) {
    push({ kind: 'AlterColumnType', table: tr, from: l, column: c });
  } else if (defaultChanged) {
    push(
      c.default === undefined
        ? { kind: 'DropDefault', table: tr, column: l }
        : { kind: 'SetDefault', table: tr, column: c },
    );
  }
  // ADD GENERATED ... AS IDENTITY needs the column NOT NULL already.
  if (l.identity === undefined && c.identity !== undefined && !l.notNull)
    push({ kind: 'SetNotNull', table: tr, column: c });
  if (l.identity === undefined && c.identity !== undefined)
    push({ kind: 'AddIdentity', table: tr, column: c });
  else if (
    l.identity !== undefined &&
    c.identity !== undefined &&
    (l.identity !== c.identity || identityOptionsKey(l) !== identityOptionsKey(c))
  )
    push({ kind: 'SetIdentity', table: tr, column: c });
  const seq = c.identitySequence;
  const liveSeq = l.identitySequence;
  if (
    l.identity !== undefined &&
    c.identity !== undefined &&
    seq !== undefined &&
    liveSeq !== undefined &&
    (seq.schema !== liveSeq.schema || seq.name !== liveSeq.name)
  )
    push({
      kind: 'Unsupported',
      object: obj(),
      reason: `${obj()}: its identity sequence is ${liveSeq.schema}.${liveSeq.name} but SEQUENCE NAME ${seq.schema}.${seq.name} is declared; rename the sequence in a migration (ALTER SEQUENCE ... RENAME TO) or declare its name`,
      category: 'columns_modified',
    });
  // Identity and serial columns are NOT NULL by construction; dropping identity keeps NOT NULL.
  if (!l.notNull && c.notNull && c.identity === undefined) push({ kind: 'SetNotNull', table: tr, column: c });
  if (l.notNull && !c.notNull) push({ kind: 'DropNotNull', table: tr, column: c });
  if (l.comment !== c.comment)
    push({
      kind: 'SetComment',
      target: { objectType: 'COLUMN', schema: tr.schema, name: tr.name, column: c.name },
      ...(c.comment !== undefined ? { comment: c.comment } : {}),
      column: c,
    });
  return retyped;
}

function diffRows(
  rs: RowSet,
  live: RowSet | undefined,
  table: Table | undefined,
  push: (c: Change) => void,
): void {
  const tr = { schema: rs.schema, name: rs.table };
  const id = (r: RowValues) => JSON.stringify(rs.key.map((k) => r[k] ?? null));
  const liveById = new Map((live?.rows ?? []).map((r) => [id(r), r]));
  const desiredIds = new Set(rs.rows.map(id));
  const overriding =
    table?.columns.some((c) => c.identity === 'always' && rs.columns.includes(c.name)) ?? false;
  const sorted = [...rs.rows].sort((a, b) => cmp(id(a), id(b)));
  for (const r of [...(live?.rows ?? [])].sort((a, b) => cmp(id(a), id(b)))) {
    if (!desiredIds.has(id(r))) push({ kind: 'DeleteRow', table: tr, key: rs.key, row: pick(r, rs.key) });
  }
  for (const r of sorted) {
    const l = liveById.get(id(r));
    if (!l) {
      push({ kind: 'InsertRow', table: tr, key: rs.key, row: r, overridingSystemValue: overriding });
      continue;
    }
    const set = rs.columns.filter((c) => !rs.key.includes(c) && (!(c in l) || l[c] !== r[c]));
    if (set.length > 0) push({ kind: 'UpdateRow', table: tr, key: rs.key, row: r, set });
  }
}

function pick(r: RowValues, cols: readonly string[]): RowValues {
  const o: Record<string, string | null> = {};
  for (const c of cols) o[c] = r[c] ?? null;
  return o;
}

/** A check or foreign key added without checking the rows already there (PostgreSQL's NOT VALID). */
const isNotValid = (c: Constraint) => (c.kind === 'Check' || c.kind === 'ForeignKey') && c.notValid === true;

/** Statement phases: the order that lets every statement find what it depends on. */
function phase(c: Change): number {
  switch (c.kind) {
    case 'Unsupported':
      return 0;
    case 'CreateSchema':
      return 1;
    case 'RenameTable': // before anything that names the table or its columns by their new names
    case 'RenameColumn':
      return 2.5;
    case 'CreateExtension':
    case 'UpdateExtension':
      return 2;
    case 'DropView':
      return 3;
    case 'DropConstraint':
      return c.constraint.kind === 'ForeignKey' ? 4 : 6;
    case 'DeleteRow':
      return 5;
    case 'DropIndex':
      return 6;
    case 'CreateEnum':
    case 'AddEnumValue':
      return 7;
    case 'CreateSequence':
      return 8;
    case 'CreateTable':
      return 9;
    case 'AlterTableOptions':
    case 'AddColumn':
    case 'DropColumn':
    case 'AlterColumnType':
    case 'SetNotNull':
    case 'DropNotNull':
    case 'SetDefault':
    case 'DropDefault':
    case 'AddIdentity':
    case 'SetIdentity':
    case 'DropIdentity':
      return 10;
    case 'DropTable':
      return 11;
    case 'DropSequence':
    case 'DropEnum':
      return 12;
    case 'AlterSequence': // after the tables, so OWNED BY finds its column
      return 12.5;
    case 'AddConstraint':
      return c.constraint.kind === 'ForeignKey' ? 15 : 13;
    case 'ValidateConstraint': // after the reference rows, which it checks too
      return 16.5;
    case 'CreateIndex':
      return 14;
    case 'InsertRow':
    case 'UpdateRow':
      return 16;
    case 'CreateView':
      return 17;
    case 'SetComment':
      return 18;
    case 'DropExtension':
      return 19;
    case 'DropSchema':
      return 20;
    case 'CreateObject':
    case 'ReplaceObject':
    case 'DropObject':
    case 'CommentObject':
      return objectPhase(c) ?? 18;
  }
}

/** A view or materialized view a change creates or drops, with what tells whether it reads another. */
function relationOf(
  c: Change,
): { key: string; name: string; reads: (o: { key: string; name: string }) => boolean } | undefined {
  if (c.kind === 'CreateView' || c.kind === 'DropView') {
    const v = c.view;
    return {
      key: objectKey(v.schema, v.name),
      name: v.name,
      reads: (o) => v.definition.key.includes(`"relname":${JSON.stringify(o.name)}`),
    };
  }
  if ((c.kind === 'CreateObject' || c.kind === 'DropObject') && c.object.objectType === 'materialized view') {
    const m = c.object;
    return { key: m.ref, name: m.name, reads: (o) => m.uses.includes(o.key) };
  }
  return undefined;
}

/**
 * Views and materialized views read one another either way, so they share a phase (created in phase 17,
 * dropped in phase 3) and are ordered within it by what each reads: created after, dropped before.
 */
function orderRelations(sorted: Change[]): Change[] {
  for (const [at, drop] of [
    [3, true],
    [17, false],
  ] as const) {
    const idx = sorted.flatMap((c, i) => (phase(c) === at && relationOf(c) !== undefined ? [i] : []));
    if (idx.length < 2) continue;
    const items = idx.map((i) => ({ c: sorted[i] as Change, r: relationOf(sorted[i] as Change) }));
    const topo = stableTopo(
      items,
      (x) => x.r?.key ?? '',
      (x) =>
        items
          .filter((o) => o !== x && o.r !== undefined && x.r?.reads(o.r) === true)
          .map((o) => o.r?.key ?? ''),
    );
    (drop ? topo.reverse() : topo).forEach((x, j) => (sorted[idx[j] ?? 0] = x.c));
  }
  return sorted;
}

function orderChanges(changes: Change[], tableOrder: readonly string[]): Change[] {
  const rank = (c: Change) => {
    // Rows are deleted children first and inserted parents first.
    if (c.kind === 'DeleteRow') return -tableOrder.indexOf(objectKey(c.table.schema, c.table.name));
    if (c.kind === 'InsertRow' || c.kind === 'UpdateRow')
      return tableOrder.indexOf(objectKey(c.table.schema, c.table.name));
    return 0;
  };
  // Array.prototype.sort is stable: within a phase the diff's own (name-sorted) order is kept.
  return orderRelations(
    changes
      .map((c, i) => ({ c, i }))
      .sort((a, b) => phase(a.c) - phase(b.c) || rank(a.c) - rank(b.c) || a.i - b.i)
      .map((x) => x.c),
  );
}
