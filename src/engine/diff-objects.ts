/**
 * The diff of defined objects (functions, procedures, triggers, domains, policies, row-level security,
 * materialized views): created, replaced in place when their `replaceKey` allows, otherwise dropped and
 * created again; and what depends on a dropped or recreated object is rebuilt with it (triggers, policies,
 * views) or the plan is refused naming it (a table default, check or index calling a function whose
 * signature changes; a column whose domain changes). Pure, like the rest of the diff.
 */
import type { Change } from './changes.ts';
import type { DefinedObject, ObjectStage, SchemaModel, Table, View } from './model.ts';
import { objectKey } from './model.ts';

const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const idOf = (o: DefinedObject) => JSON.stringify([o.objectType, o.schema, o.name]);
const tableRef = (o: DefinedObject) => (o.table === undefined ? undefined : objectKey(o.schema, o.table));
const label = (o: DefinedObject) => `${o.objectType} ${o.schema}.${o.name}`;

/** Whether a canonical expression key calls a function named by `ref` (any overload). */
export function callsRef(key: string, ref: string): boolean {
  const [schema, name] = JSON.parse(ref) as [string, string];
  return (
    key.includes(`"funcname":${JSON.stringify([name])}`) ||
    key.includes(`"funcname":${JSON.stringify([schema, name])}`)
  );
}

/** Whether a view's (or materialized view's) key reads a relation named `name`. */
const readsName = (key: string, name: string) => key.includes(`"relname":${JSON.stringify(name)}`);

/** Objects in dependency order: each after the objects it uses (by ref) and the table it sits on. */
function ordered(list: readonly DefinedObject[]): DefinedObject[] {
  const sorted = [...list].sort((a, b) => cmpStr(idOf(a), idOf(b)));
  const byRef = new Map<string, DefinedObject[]>();
  for (const o of sorted) byRef.set(o.ref, [...(byRef.get(o.ref) ?? []), o]);
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: DefinedObject[] = [];
  const visit = (o: DefinedObject) => {
    const k = idOf(o);
    if (done.has(k) || visiting.has(k)) return;
    visiting.add(k);
    for (const u of [...o.uses, ...(o.table === undefined ? [] : [objectKey(o.schema, o.table)])].sort(
      cmpStr,
    ))
      for (const d of byRef.get(u) ?? []) if (d !== o) visit(d);
    visiting.delete(k);
    done.add(k);
    out.push(o);
  };
  for (const o of sorted) visit(o);
  return out;
}

/** What the object diff decided, before the views are diffed (they may have to be rebuilt for it). */
export class ObjectPlan {
  private readonly live: Map<string, DefinedObject>;
  private readonly desired: Map<string, DefinedObject>;
  /** Live objects dropped and created again. */
  private readonly recreate = new Set<string>();
  private readonly refusals: Change[] = [];

  constructor(
    private readonly from: SchemaModel,
    private readonly to: SchemaModel,
    /** Tables a column of which is dropped or retyped: what sits on them is rebuilt around the change. */
    retypedTables: ReadonlySet<string>,
  ) {
    this.live = new Map((from.objects ?? []).map((o) => [idOf(o), o]));
    this.desired = new Map((to.objects ?? []).map((o) => [idOf(o), o]));
    // A live object that unmanaged objects use stays while they do, declared or not: dropping it would
    // fail, or take them with it.
    for (const [k, l] of this.live)
      if ((l.heldBy ?? []).length > 0 && !this.desired.has(k)) this.desired.set(k, l);
    for (const [k, o] of this.desired) {
      const l = this.live.get(k);
      if (
        l !== undefined &&
        l.key !== o.key &&
        !(l.replaceKey !== undefined && l.replaceKey === o.replaceKey)
      )
        this.recreate.add(k);
    }
    for (const [k, l] of this.live) {
      const t = tableRef(l);
      if (this.desired.has(k) && t !== undefined && retypedTables.has(t) && l.survivesColumnChanges !== true)
        this.recreate.add(k);
      // A materialized view reading a table whose column is dropped or retyped is rebuilt around it.
      if (
        this.desired.has(k) &&
        l.objectType === 'materialized view' &&
        l.uses.some((u) => retypedTables.has(u))
      )
        this.recreate.add(k);
    }
    this.spread(new Set());
  }

  /** Refs of the live objects that go away for a moment or for good (recreated or dropped). */
  private goneRefs(): Set<string> {
    const refs = new Set<string>();
    for (const [k, l] of this.live) if (this.recreate.has(k) || !this.desired.has(k)) refs.add(l.ref);
    return refs;
  }

  /** A kept object that uses (or sits on) something recreated or dropped is recreated with it. */
  private spread(recreatedViews: ReadonlySet<string>): void {
    for (let grew = true; grew;) {
      grew = false;
      const gone = this.goneRefs();
      for (const [k, l] of this.live) {
        if (this.recreate.has(k) || !this.desired.has(k)) continue;
        const t = tableRef(l);
        if (
          l.uses.some((u) => gone.has(u) || recreatedViews.has(u)) ||
          (t !== undefined && (gone.has(t) || recreatedViews.has(t)))
        ) {
          this.recreate.add(k);
          grew = true;
        }
      }
    }
  }

  /** Whether a live view must be rebuilt because a function it calls or a materialized view it reads goes. */
  viewNeedsRebuild(v: View): boolean {
    for (const [k, l] of this.live) {
      if (!this.recreate.has(k) && this.desired.has(k)) continue;
      if (['function', 'procedure', 'aggregate'].includes(l.objectType) && callsRef(v.definition.key, l.ref))
        return true;
      if (l.objectType === 'materialized view' && readsName(v.definition.key, l.name)) return true;
    }
    return false;
  }

  /** After the views are diffed: what sits on a rebuilt view (INSTEAD OF triggers) is rebuilt too. */
  viewsRebuilt(views: readonly View[]): void {
    this.spread(new Set(views.map((v) => objectKey(v.schema, v.name))));
  }

  /**
   * A column default, generated expression, check or index that calls a function which goes (or a column
   * whose domain goes) cannot be planned: PostgreSQL refuses the drop while it is used. A recreated one is
   * dropped early, so every live use counts; a dropped one goes after the tables change, so the desired
   * uses count.
   */
  private refuseTableUses(): void {
    for (const [k, l] of [...this.live].sort((a, b) => cmpStr(a[0], b[0]))) {
      const dropped = !this.desired.has(k);
      if (!this.recreate.has(k) && !dropped) continue;
      if (this.recreate.has(k) && (l.heldBy ?? []).length > 0) {
        const by = l.heldBy ?? [];
        this.refusals.push({
          kind: 'Unsupported',
          object: label(l),
          reason: `${label(l)} would be dropped and created again (its signature, return type or definition cannot change in place, or what it uses is rebuilt) while ${by.join(', ')}, which the engine does not manage, use${by.length === 1 ? 's' : ''} it; change it in a migration, or drop ${by.length === 1 ? 'that object' : 'those objects'} first`,
        });
        continue;
      }
      if (!(l.objectType in WHY_NOT_IN_PLACE)) continue;
      const users = usersOf(l, dropped ? this.to.tables : this.from.tables);
      if (users.length === 0) continue;
      const what = dropped
        ? 'is dropped'
        : `cannot be replaced in place (${WHY_NOT_IN_PLACE[l.objectType] ?? ''})`;
      const fix = dropped
        ? 'keep it, or change what uses it first'
        : 'change it in a migration: create the new one under another name, move its users to it, then drop the old one';
      this.refusals.push({
        kind: 'Unsupported',
        object: label(l),
        reason: `${label(l)} ${what} while ${users.join(', ')} use${users.length === 1 ? 's' : ''} it; ${fix}`,
      });
    }
  }

  /** The changes, in dependency order within each stage (phases order the stages). */
  changes(): Change[] {
    this.refuseTableUses();
    const out: Change[] = [...this.refusals];
    const drops = ordered(
      [...this.live].filter(([k]) => this.recreate.has(k) || !this.desired.has(k)).map(([, l]) => l),
    ).reverse();
    for (const l of drops)
      out.push({ kind: 'DropObject', object: l, ...(this.recreate.has(idOf(l)) ? { recreated: true } : {}) });
    const creates = ordered(
      [...this.desired].filter(([k]) => !this.live.has(k) || this.recreate.has(k)).map(([, o]) => o),
    );
    for (const o of creates) out.push({ kind: 'CreateObject', object: o });
    for (const o of ordered([...this.desired.values()])) {
      const k = idOf(o);
      const l = this.live.get(k);
      if (l === undefined || this.recreate.has(k)) continue;
      if (l.key !== o.key) out.push({ kind: 'ReplaceObject', from: l, object: o });
      if (l.comment !== o.comment)
        out.push({
          kind: 'CommentObject',
          object: o,
          ...(o.comment !== undefined ? { comment: o.comment } : {}),
        });
    }
    return out;
  }
}

/** The objects tables use by name, and why a changed one is dropped and created again rather than altered. */
const WHY_NOT_IN_PLACE: Partial<Record<DefinedObject['objectType'], string>> = {
  function: 'its signature, return type or base type changes',
  domain: 'its signature, return type or base type changes',
  'composite type': 'its signature, return type or base type changes',
  collation: 'its provider, locale or determinism changes',
  'text search configuration': 'its parser changes',
};

/** Statement phases of object changes (see diff.ts's phase): where each stage sits among the tables. */
const CREATE_PHASE: Readonly<Record<ObjectStage, number>> = {
  types: 7.2,
  routines: 7.5,
  'after-tables': 14.5,
  // With the views (phase 17): diff.ts orders the two by what each reads.
  matviews: 17,
  'after-views': 17.5,
};

const DROP_PHASE: Readonly<Record<ObjectStage, number>> = {
  'after-views': 2.8,
  // With the views (phase 3), ordered by what each reads.
  matviews: 3,
  // Before the tables whose row types they use.
  'after-tables': 10.9,
  // After the tables whose defaults call them.
  routines: 11.5,
  // After the functions taking them, before the enums they may be over.
  types: 11.9,
};

/** A recreated object goes before its new self is created: after the views, before anything else. */
const RECREATE_DROP_PHASE = 3.6;

export function objectPhase(c: Change): number | undefined {
  if (c.kind === 'CreateObject' || c.kind === 'ReplaceObject') return CREATE_PHASE[c.object.stage];
  if (c.kind === 'DropObject')
    return c.recreated === true
      ? Math.min(DROP_PHASE[c.object.stage], RECREATE_DROP_PHASE)
      : DROP_PHASE[c.object.stage];
  if (c.kind === 'CommentObject') return 18;
  return undefined;
}

/** Whether a canonical expression key holds a constant spelled as one of `spellings` (a regconfig). */
const namesConstant = (key: string, spellings: readonly string[]) =>
  spellings.some((s) => key.includes(`"v":${JSON.stringify(s)}`));

/**
 * The table columns, checks and indexes that use a function, domain, collation or text search
 * configuration, by name (any overload).
 */
function usersOf(o: DefinedObject, tables: readonly Table[]): string[] {
  const users: string[] = [];
  for (const t of tables) {
    const name = `${t.schema}.${t.name}`;
    if (o.objectType === 'text search configuration') {
      const named = o.namedAs ?? [];
      const uses = (e: { key: string } | undefined) => e !== undefined && namesConstant(e.key, named);
      for (const c of t.columns)
        if (uses(c.default) || uses(c.generated)) users.push(`column ${name}.${c.name}`);
      for (const c of t.constraints)
        if (c.kind === 'Check' && uses(c.expression))
          users.push(`constraint ${c.name ?? 'CHECK'} on ${name}`);
      for (const i of t.indexes)
        if ([...i.keys.map((x) => x.expression), i.where].some(uses))
          users.push(`index ${i.name ?? '(unnamed)'} on ${name}`);
      continue;
    }
    if (o.objectType === 'collation') {
      const named = new Set(o.namedAs ?? []);
      for (const c of t.columns)
        if (c.collation !== undefined && named.has(c.collation)) users.push(`column ${name}.${c.name}`);
      for (const i of t.indexes)
        if (i.keys.some((k) => k.collation !== undefined && named.has(k.collation)))
          users.push(`index ${i.name ?? '(unnamed)'} on ${name}`);
      continue;
    }
    if (o.objectType === 'domain' || o.objectType === 'composite type') {
      for (const c of t.columns)
        if (c.type.schema !== undefined && objectKey(c.type.schema, c.type.name) === o.ref)
          users.push(`column ${name}.${c.name}`);
      continue;
    }
    for (const c of t.columns)
      if ([c.default, c.generated].some((e) => e !== undefined && callsRef(e.key, o.ref)))
        users.push(`column ${name}.${c.name}`);
    for (const c of t.constraints)
      if (c.kind === 'Check' && callsRef(c.expression.key, o.ref))
        users.push(`constraint ${c.name ?? 'CHECK'} on ${name}`);
    for (const i of t.indexes) {
      const exprs = [...i.keys.map((x) => x.expression), i.where];
      if (exprs.some((e) => e !== undefined && callsRef(e.key, o.ref)))
        users.push(`index ${i.name ?? '(unnamed)'} on ${name}`);
    }
  }
  return [...new Set(users)];
}
