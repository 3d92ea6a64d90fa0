/**
 * Where an admitted object differs from the one rebuilt for it, by path. The API server fills in fields
 * before a validating webhook sees the object (defaults, the Job selector and its Pod labels, metadata it
 * owns); those are admitted only where a rule below names the path and the value is the one the server
 * writes. Anything else the rebuild does not have — an extra field, list item or map key — is a difference,
 * so a container `command`, a volume or an annotation added by hand is named rather than overlooked.
 */

/**
 * A field the API server may add: its pattern (`[*]` for any list index, `["*"]` for any map key) and what it
 * may hold. `accepts` sees the whole admitted object for values derived from it (a Job's UID, its name).
 */
export interface ServerFilled {
  readonly path: string;
  readonly accepts: (value: unknown, object: Readonly<Record<string, unknown>>) => boolean;
}

/** The metadata the API server owns on every object: never part of what a writer decides. */
export const SERVER_OWNED_METADATA: readonly string[] = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
];

/** A copy without `status` and the server-owned metadata, the part of an object its writer decides. */
export function writtenPart(object: unknown): Record<string, unknown> {
  const { status: _status, metadata, ...rest } = (object ?? {}) as Record<string, unknown>;
  const meta = { ...((metadata ?? {}) as Record<string, unknown>) };
  for (const key of SERVER_OWNED_METADATA) delete meta[key];
  return { ...rest, metadata: meta };
}

/**
 * At most `limit` differences between the written parts of the rebuilt and the admitted object, each naming
 * a path and both values.
 */
export function objectDifferences(
  expected: unknown,
  admitted: Readonly<Record<string, unknown>>,
  filled: readonly ServerFilled[] = [],
  limit = 5,
): string[] {
  const [rebuilt, written] = [writtenPart(expected), writtenPart(admitted)];
  // Nearly every object judged is admitted: a first walk takes each object's keys as they come and stops at
  // the first difference. Only a refusal walks again, keys sorted, so its message names the same
  // differences in the same order however either side's serializer ordered its keys.
  const any: string[] = [];
  walk(rebuilt, written, ROOT, { admitted, filled, out: any, limit: 1, sorted: false });
  if (any.length === 0) return [];
  const out: string[] = [];
  walk(rebuilt, written, ROOT, { admitted, filled, out, limit, sorted: true });
  return out;
}

interface Walk {
  readonly admitted: Readonly<Record<string, unknown>>;
  readonly filled: readonly ServerFilled[];
  readonly out: string[];
  readonly limit: number;
  readonly sorted: boolean;
}

/**
 * Where the walk is, written out only when a message or a server-filled rule needs it: most of an admitted
 * object equals its rebuild, and building two path strings per key (through a regex) was the largest share
 * of a review's own CPU.
 */
class Path {
  private shown: string | undefined;
  private patterned: string | undefined;

  constructor(
    private readonly up: Path | undefined,
    private readonly step: string,
    private readonly as: 'field' | 'index' | 'name',
  ) {}

  field(key: string): Path {
    return new Path(this, key, 'field');
  }

  item(at: number | string): Path {
    return new Path(this, String(at), typeof at === 'number' ? 'index' : 'name');
  }

  /** `spec.template.spec.containers[name=ptah].image`. */
  toString(): string {
    return (this.shown ??= this.render(false));
  }

  /** The path with `[*]` for every list index, as a ServerFilled rule names it. */
  pattern(): string {
    return (this.patterned ??= this.render(true));
  }

  private render(pattern: boolean): string {
    if (this.up === undefined) return '';
    const up = pattern ? this.up.pattern() : this.up.toString();
    if (this.as !== 'field')
      return `${up}[${pattern ? '*' : this.as === 'name' ? `name=${this.step}` : this.step}]`;
    return child(up, this.step);
  }
}

const ROOT = new Path(undefined, '', 'field');

function walk(expected: unknown, actual: unknown, path: Path, w: Walk): void {
  if (w.out.length >= w.limit) return;
  if (Array.isArray(expected) && Array.isArray(actual)) return walkList(expected, actual, path, w);
  if (isRecord(expected) && isRecord(actual)) {
    for (const key of keysOf(expected, w)) {
      if (!Object.hasOwn(actual, key) || actual[key] === undefined) {
        // The API server stores an empty list or object as nothing (omitempty): the same as the rebuild's.
        if (!isEmpty(expected[key]))
          note(w, `${path.field(key)} is missing; the rebuild has ${show(expected[key])}`);
        continue;
      }
      walk(expected[key], actual[key], path.field(key), w);
    }
    for (const key of keysOf(actual, w)) {
      if (Object.hasOwn(expected, key) && expected[key] !== undefined) continue;
      const value = actual[key];
      if (value === undefined || value === null) continue;
      const p = path.field(key);
      if (serverFilled(p.pattern(), value, w)) continue;
      note(w, `${p} is ${show(value)}, which the rebuild does not have`);
    }
    return;
  }
  if (!sameValue(expected, actual))
    note(w, `${path.toString() || 'the object'} is ${show(actual)}; the rebuild has ${show(expected)}`);
}

/** A record's keys: as they come for the first walk, sorted for the one that words a refusal. */
function keysOf(record: Readonly<Record<string, unknown>>, w: Walk): string[] {
  return w.sorted ? Object.keys(record).sort() : Object.keys(record);
}

/** Each item's `name`, or undefined unless every item has one and no two the same. */
function namesOf(items: readonly unknown[]): string[] | undefined {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const name = isRecord(item) ? item['name'] : undefined;
    if (typeof name !== 'string' || seen.has(name)) return undefined;
    seen.add(name);
    names.push(name);
  }
  return names;
}

/** Lists of named items (containers, volumes, env) compare by name, then order; others by index. */
function walkList(expected: unknown[], actual: unknown[], path: Path, w: Walk): void {
  const en = namesOf(expected);
  const an = en === undefined ? undefined : namesOf(actual);
  if (en !== undefined && an !== undefined) {
    const [ei, ai] = [en, an].map((ns) => new Map(ns.map((n, i) => [n, i]))) as [
      Map<string, number>,
      Map<string, number>,
    ];
    for (const n of an) if (!ei.has(n)) note(w, `${path.item(n)} is there, which the rebuild does not have`);
    for (const n of en) if (!ai.has(n)) note(w, `${path.item(n)} is missing`);
    const common = en.filter((n) => ai.has(n));
    const commonAdmitted = an.filter((n) => ei.has(n));
    if (common.some((n, i) => n !== commonAdmitted[i]))
      note(w, `${path} is in another order than the rebuild's (${en.join(', ')})`);
    for (const n of common) walk(expected[ei.get(n)!], actual[ai.get(n)!], path.item(n), w);
    return;
  }
  if (expected.length !== actual.length)
    note(w, `${path} has ${actual.length} items; the rebuild has ${expected.length}`);
  for (let i = 0; i < Math.min(expected.length, actual.length); i++)
    walk(expected[i], actual[i], path.item(i), w);
}

function serverFilled(pattern: string, value: unknown, w: Walk): boolean {
  return w.filled.some((f) => matches(f.path, pattern) && f.accepts(value, w.admitted));
}

/** `["*"]` in a rule stands for any one map key. */
function matches(rule: string, pattern: string): boolean {
  if (rule === pattern) return true;
  if (!rule.includes('["*"]')) return false;
  let re = RULE_PATTERNS.get(rule);
  if (re === undefined) {
    re = new RegExp(`^${rule.split('["*"]').map(escape).join('\\["[^"]*"\\]')}$`);
    RULE_PATTERNS.set(rule, re);
  }
  return re.test(pattern);
}

/** Each rule's expression, made once: the rules are the modules' own constants, a few dozen in all. */
const RULE_PATTERNS = new Map<string, RegExp>();

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `a.b`, or `a["x/y"]` for a key of a map whose keys are data (labels, annotations) or not an identifier. */
function child(path: string, key: string): string {
  if (IDENTIFIER.test(key) && !MAP_PARENTS.some((m) => path === m || path.endsWith(`.${m}`))) {
    return path === '' ? key : `${path}.${key}`;
  }
  return `${path}[${JSON.stringify(key)}]`;
}

/** Maps whose keys are data, not field names: a rule names their keys as `["key"]` or `["*"]`. */
const MAP_PARENTS: readonly string[] = ['labels', 'annotations', 'matchLabels', 'data', 'binaryData'];

function sameValue(a: unknown, b: unknown): boolean {
  return a === b;
}

function isEmpty(x: unknown): boolean {
  if (x === undefined || x === null) return true;
  if (Array.isArray(x)) return x.length === 0;
  return isRecord(x) && Object.keys(x).length === 0;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A value as a message shows it: short, never a whole object. */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function note(w: Walk, message: string): void {
  if (w.out.length < w.limit) w.out.push(message);
}
