/**
 * MySQL triggers, procedures and functions as defined objects: read from a desired file's statement or
 * from the catalog into one raw shape, compared as a whole, dropped and created again when they differ
 * (MySQL has no CREATE OR REPLACE for a trigger or a routine, and ALTER changes only characteristics).
 *
 * Compared: a trigger's timing, event, table and body; a routine's parameters (mode, name, type as the
 * server spells it), return type, DETERMINISTIC, SQL data access, SQL SECURITY, comment and body. Bodies are
 * compared as code: comments and the width of white space outside strings are not (the server stores a body as
 * it was sent, and the mysql client strips comments unless run with --comments, so the same file loaded two
 * ways stores two texts); executable `/*! … *\/` and hint `/*+ … *\/` comments are code. Not compared, by design: DEFINER (a dump
 * names the account that loaded it; the plan creates under the applying account), the session's sql_mode,
 * a parameter's character set, and the order of triggers on the same event (FOLLOWS/PRECEDES is kept in
 * what is created, not compared).
 */
import type { DefinedObject } from '../model.ts';
import { objectKey } from '../model.ts';
import { normaliseType, quoteIdent, quoteLiteral, renderType } from './mysql-normalize.ts';
import { type Token, tokenize } from './mysql-spelling.ts';

export class ObjectStatementError extends Error {
  override readonly name = 'ObjectStatementError';
}

export interface RawTrigger {
  readonly kind: 'trigger';
  readonly name: string;
  readonly timing: string;
  readonly event: string;
  readonly table: string;
  /** `FOLLOWS t` / `PRECEDES t` as written, when given. */
  readonly order?: { readonly clause: 'FOLLOWS' | 'PRECEDES'; readonly trigger: string };
  readonly body: string;
}

export interface RawParameter {
  readonly mode: 'IN' | 'OUT' | 'INOUT';
  readonly name: string;
  /** The type as written or as the catalog spells it (DTD_IDENTIFIER); normalised when compared. */
  readonly type: string;
}

export interface RawRoutine {
  readonly kind: 'function' | 'procedure';
  readonly name: string;
  readonly parameters: readonly RawParameter[];
  readonly returns?: string;
  readonly deterministic: boolean;
  readonly dataAccess: string;
  readonly security: string;
  readonly comment: string;
  readonly body: string;
}

export type RawObject = RawTrigger | RawRoutine;

/** Code tokens with the offset each starts at in the statement (spaces and comments skipped). */
interface At {
  readonly token: Token;
  readonly at: number;
}

function codeTokens(text: string): At[] {
  const out: At[] = [];
  let at = 0;
  for (const token of tokenize(text)) {
    if (token.kind !== 'space' && token.kind !== 'comment') out.push({ token, at });
    at += token.source.length;
  }
  return out;
}

const word = (t: At | undefined): string => (t?.token.kind === 'word' ? t.token.text.toUpperCase() : '');

function identifier(t: At | undefined, what: string): string {
  if (t?.token.kind === 'quoted') return t.token.text.slice(1, -1).replace(/``/g, '`');
  if (t?.token.kind === 'word') return t.token.text;
  throw new ObjectStatementError(`expected ${what}`);
}

/** A cursor over a statement's code tokens. */
class Reader {
  i = 0;
  constructor(
    readonly text: string,
    readonly tokens: readonly At[],
  ) {}
  peek(ahead = 0): At | undefined {
    return this.tokens[this.i + ahead];
  }
  next(): At | undefined {
    return this.tokens[this.i++];
  }
  accept(...words: string[]): boolean {
    if (!words.every((w, k) => word(this.peek(k)) === w)) return false;
    this.i += words.length;
    return true;
  }
  expect(...words: string[]): void {
    if (!this.accept(...words)) throw new ObjectStatementError(`expected ${words.join(' ')}`);
  }
  punct(p: string): boolean {
    if (this.peek()?.token.text !== p) return false;
    this.i++;
    return true;
  }
  /** A possibly qualified name (`db`.`t`): the last part; a MySQL object lives in the database of its URL. */
  name(what: string): string {
    let n = identifier(this.next(), what);
    while (this.punct('.')) n = identifier(this.next(), what);
    return n;
  }
  /** The statement's text from the current token to its end, trimmed. */
  rest(): string {
    const t = this.peek();
    if (t === undefined) throw new ObjectStatementError('the body is missing');
    return normaliseBody(this.text.slice(t.at));
  }
}

/** A body as both sides hold it: line ends as LF, ends trimmed. */
export const normaliseBody = (body: string): string => body.replace(/\r\n/g, '\n').trim();

/** `DEFINER = user@host | CURRENT_USER[()] | role`: skipped; the plan creates under the applying account. */
function skipDefiner(r: Reader): void {
  if (!r.accept('DEFINER')) return;
  if (!r.punct('=')) throw new ObjectStatementError('expected = after DEFINER');
  r.next();
  if (r.punct('(')) r.punct(')');
  if (r.punct('@')) r.next();
  else if (r.peek()?.token.kind === 'word' && r.peek()?.token.text.startsWith('@')) r.next();
}

/** `CREATE [OR REPLACE] [DEFINER = …] [AGGREGATE]` then what the statement creates, upper-case. */
export function createdKind(text: string): 'TRIGGER' | 'FUNCTION' | 'PROCEDURE' | 'EVENT' | undefined {
  const r = new Reader(text, codeTokens(text));
  if (!r.accept('CREATE')) return undefined;
  r.accept('OR', 'REPLACE');
  try {
    skipDefiner(r);
  } catch {
    return undefined;
  }
  const w = word(r.peek());
  return w === 'TRIGGER' || w === 'FUNCTION' || w === 'PROCEDURE' || w === 'EVENT' ? w : undefined;
}

/** Reads `CREATE … TRIGGER|FUNCTION|PROCEDURE …` as written in a desired file. */
export function parseObjectStatement(text: string): RawObject {
  const r = new Reader(text, codeTokens(text));
  r.expect('CREATE');
  r.accept('OR', 'REPLACE');
  skipDefiner(r);
  if (r.accept('TRIGGER')) return trigger(r);
  if (r.accept('AGGREGATE'))
    throw new ObjectStatementError('an aggregate function is not managed; keep it in a migration');
  if (r.accept('FUNCTION')) return routine(r, 'function');
  if (r.accept('PROCEDURE')) return routine(r, 'procedure');
  throw new ObjectStatementError('expected TRIGGER, FUNCTION or PROCEDURE');
}

function trigger(r: Reader): RawTrigger {
  r.accept('IF', 'NOT', 'EXISTS');
  const name = r.name('the trigger name');
  const timing = word(r.next());
  if (timing !== 'BEFORE' && timing !== 'AFTER') throw new ObjectStatementError('expected BEFORE or AFTER');
  const event = word(r.next());
  if (!['INSERT', 'UPDATE', 'DELETE'].includes(event))
    throw new ObjectStatementError('expected INSERT, UPDATE or DELETE');
  r.expect('ON');
  const table = r.name('the table name');
  r.expect('FOR', 'EACH', 'ROW');
  const clause = word(r.peek());
  let order: RawTrigger['order'];
  if (clause === 'FOLLOWS' || clause === 'PRECEDES') {
    r.next();
    order = { clause, trigger: r.name('the trigger it follows or precedes') };
  }
  return { kind: 'trigger', name, timing, event, table, ...(order ? { order } : {}), body: r.rest() };
}

/** A type as written with its attributes: `DECIMAL(5, 2) UNSIGNED`, `VARCHAR(10) CHARSET latin1`. */
const TYPE_ATTRIBUTES = new Set(['UNSIGNED', 'SIGNED', 'ZEROFILL', 'BINARY', 'ASCII', 'UNICODE']);

function typeText(r: Reader): string {
  const start = r.peek();
  if (start === undefined || start.token.kind !== 'word') throw new ObjectStatementError('expected a type');
  r.next();
  // Two-word type names.
  if (['DOUBLE', 'LONG', 'NATIONAL'].includes(word(start)) && word(r.peek()) !== '') {
    const w = word(r.peek());
    if (['PRECISION', 'VARCHAR', 'VARBINARY', 'CHAR', 'VARCHARACTER'].includes(w)) r.next();
  }
  if (word(start) === 'CHARACTER' && word(r.peek()) === 'VARYING') r.next();
  if (r.peek()?.token.text === '(') {
    let depth = 0;
    do {
      const t = r.next();
      if (t === undefined) throw new ObjectStatementError('unbalanced parentheses in a type');
      if (t.token.text === '(') depth++;
      if (t.token.text === ')') depth--;
    } while (depth > 0);
  }
  for (;;) {
    const w = word(r.peek());
    if (TYPE_ATTRIBUTES.has(w)) r.next();
    else if (w === 'CHARSET' || w === 'COLLATE') {
      r.next();
      r.next();
    } else if (w === 'CHARACTER' && word(r.peek(1)) === 'SET') {
      r.next();
      r.next();
      r.next();
    } else break;
  }
  const end = r.peek()?.at ?? r.text.length;
  return r.text.slice(start.at, end).trim();
}

function parameters(r: Reader, kind: RawRoutine['kind']): RawParameter[] {
  if (!r.punct('(')) throw new ObjectStatementError('expected ( after the routine name');
  const out: RawParameter[] = [];
  if (r.punct(')')) return out;
  for (;;) {
    let mode: RawParameter['mode'] = 'IN';
    const w = word(r.peek());
    if (kind === 'procedure' && (w === 'IN' || w === 'OUT' || w === 'INOUT')) {
      r.next();
      mode = w;
    }
    const name = identifier(r.next(), 'a parameter name');
    out.push({ mode, name, type: typeText(r) });
    if (r.punct(')')) return out;
    if (!r.punct(',')) throw new ObjectStatementError(`expected , or ) after parameter ${name}`);
  }
}

function routine(r: Reader, kind: RawRoutine['kind']): RawRoutine {
  r.accept('IF', 'NOT', 'EXISTS');
  const name = r.name(`the ${kind} name`);
  const params = parameters(r, kind);
  let returns: string | undefined;
  if (kind === 'function') {
    r.expect('RETURNS');
    returns = typeText(r);
  }
  let deterministic = false;
  let dataAccess = 'CONTAINS SQL';
  let security = 'DEFINER';
  let comment = '';
  for (;;) {
    if (r.accept('NOT', 'DETERMINISTIC')) deterministic = false;
    else if (r.accept('DETERMINISTIC')) deterministic = true;
    else if (r.accept('CONTAINS', 'SQL')) dataAccess = 'CONTAINS SQL';
    else if (r.accept('NO', 'SQL')) dataAccess = 'NO SQL';
    else if (r.accept('READS', 'SQL', 'DATA')) dataAccess = 'READS SQL DATA';
    else if (r.accept('MODIFIES', 'SQL', 'DATA')) dataAccess = 'MODIFIES SQL DATA';
    else if (r.accept('SQL', 'SECURITY')) security = word(r.next());
    else if (r.accept('LANGUAGE', 'SQL')) continue;
    else if (r.accept('COMMENT')) {
      const t = r.next();
      if (t?.token.kind !== 'string') throw new ObjectStatementError('expected a string after COMMENT');
      comment = unquoteString(t.token.text);
    } else break;
  }
  return {
    kind,
    name,
    parameters: params,
    ...(returns !== undefined ? { returns } : {}),
    deterministic,
    dataAccess,
    security,
    comment,
    body: r.rest(),
  };
}

function unquoteString(s: string): string {
  const q = s[0] ?? "'";
  return s
    .slice(1, -1)
    .replace(/\\(.)/gs, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c === '0' ? '\0' : c))
    .split(q + q)
    .join(q);
}

/** Routine names are not case-sensitive; trigger names are compared as written. */
export function normalisedObjectName(kind: string, name: string): string {
  return kind === 'trigger' ? name : name.toLowerCase();
}

/** One object per kind and name in a desired state. */
export function objectId(o: RawObject): string {
  return JSON.stringify([o.kind, normalisedObjectName(o.kind, o.name)]);
}

/** A body's comparison text: code tokens as written, each run of white space or comments one space. */
export function bodyKey(body: string): string {
  let out = '';
  for (const t of tokenize(body)) {
    const blank = t.kind === 'space' || (t.kind === 'comment' && !/^\/\*[!+]/.test(t.source));
    if (blank) {
      if (!out.endsWith(' ')) out += ' ';
    } else out += t.source;
  }
  return out.trim();
}

/** Where a trigger's ref and a routine's ref live: routines share objectKey's form with tables. */
const triggerRef = (schema: string, name: string) => JSON.stringify(['trigger', schema, name]);

/** The defined object a raw trigger or routine is, in `schema` (the database the URL names). */
export function mysqlObject(raw: RawObject, schema: string, mariadb: boolean): DefinedObject {
  const type = (t: string) => renderType(normaliseType(stripCharset(t), mariadb));
  if (raw.kind === 'trigger') {
    const order = raw.order ? ` ${raw.order.clause} ${quoteIdent(raw.order.trigger)}` : '';
    return {
      kind: 'Defined',
      objectType: 'trigger',
      schema,
      name: raw.name,
      ref: triggerRef(schema, raw.name),
      table: raw.table,
      key: JSON.stringify([raw.timing, raw.event, raw.table, bodyKey(raw.body)]),
      create: [
        `CREATE TRIGGER ${quoteIdent(raw.name)} ${raw.timing} ${raw.event} ON ${quoteIdent(raw.table)} FOR EACH ROW${order} ${raw.body}`,
      ],
      drop: [`DROP TRIGGER ${quoteIdent(raw.name)}`],
      uses: [objectKey(schema, raw.table), ...(raw.order ? [triggerRef(schema, raw.order.trigger)] : [])],
      stage: 'after-views',
      survivesColumnChanges: true,
    };
  }
  const params = raw.parameters.map((p) => ({ mode: p.mode, name: p.name, type: type(p.type) }));
  const returns = raw.returns === undefined ? undefined : type(raw.returns);
  const keyword = raw.kind === 'function' ? 'FUNCTION' : 'PROCEDURE';
  // Created with the types as written: a parameter's character set is kept though not compared.
  const signature = raw.parameters
    .map((p) => `${raw.kind === 'procedure' ? `${p.mode} ` : ''}${quoteIdent(p.name)} ${p.type}`)
    .join(', ');
  const characteristics = [
    raw.deterministic ? 'DETERMINISTIC' : 'NOT DETERMINISTIC',
    raw.dataAccess,
    `SQL SECURITY ${raw.security}`,
    ...(raw.comment !== '' ? [`COMMENT ${quoteLiteral(raw.comment)}`] : []),
  ].join(' ');
  // `Get_Balance` and `get_balance` are one routine.
  const name = normalisedObjectName(raw.kind, raw.name);
  return {
    kind: 'Defined',
    objectType: raw.kind,
    schema,
    name,
    ref: objectKey(schema, name),
    key: JSON.stringify([
      params.map((p) => [p.mode, p.name.toLowerCase(), p.type]),
      returns ?? null,
      raw.deterministic,
      raw.dataAccess,
      raw.security,
      raw.comment,
      bodyKey(raw.body),
    ]),
    create: [
      `CREATE ${keyword} ${quoteIdent(raw.name)}(${signature})${raw.returns !== undefined ? ` RETURNS ${raw.returns}` : ''} ${characteristics} ${raw.body}`,
    ],
    drop: [`DROP ${keyword} ${quoteIdent(raw.name)}`],
    uses: [],
    stage: 'routines',
  };
}

/** A parameter's character set and collation are not compared (the catalog's type spelling omits them). */
function stripCharset(type: string): string {
  return type.replace(/\s+(?:charset|character\s+set|collate)\s+\S+/gi, '').trim();
}

/** The same object in another database (a model inspected from a scratch database through --dev-url). */
export function inDatabase(o: DefinedObject, schema: string): DefinedObject {
  const move = (ref: string): string => {
    const parts = JSON.parse(ref) as string[];
    const at = parts[0] === 'trigger' ? 1 : 0;
    return parts[at] === o.schema ? JSON.stringify(parts.map((p, i) => (i === at ? schema : p))) : ref;
  };
  return { ...o, schema, ref: move(o.ref), uses: o.uses.map(move) };
}
