/**
 * An identity column's sequence options (START WITH, INCREMENT BY, MINVALUE, MAXVALUE, CACHE, CYCLE) and
 * its sequence's name. Options are kept only where they differ from what PostgreSQL chooses for the
 * column's type, so pg_dump's spelled-out defaults, a bare `GENERATED ... AS IDENTITY` and the catalog's
 * full list all compare equal; they are rendered in CREATE TABLE, ADD COLUMN and ADD IDENTITY, and a change
 * of them as ALTER COLUMN ... SET options.
 */
import type { Column, IdentityOption, TypeRef } from '../model.ts';
import { DesiredStateError } from './pg-desired.ts';
import { type AstNode, isRecord, names, quoteQualified } from './pg-normalize.ts';

const LIMITS: Readonly<Record<string, readonly [bigint, bigint]>> = {
  smallint: [-32768n, 32767n],
  integer: [-2147483648n, 2147483647n],
  bigint: [-9223372036854775808n, 9223372036854775807n],
};

type Options = Record<IdentityOption, string>;

/** The order options are written in, so one model always renders the same text. */
const ORDER: readonly IdentityOption[] = ['increment', 'minvalue', 'maxvalue', 'start', 'cache', 'cycle'];

/** Every option with PostgreSQL's choice filled in where none is given. */
export function fullIdentityOptions(type: TypeRef, given: Partial<Options> | undefined): Options {
  const [lo, hi] = LIMITS[type.name] ?? LIMITS['bigint'] ?? [0n, 0n];
  const increment = given?.increment ?? '1';
  const asc = !increment.startsWith('-');
  const minvalue = given?.minvalue ?? (asc ? '1' : String(lo));
  const maxvalue = given?.maxvalue ?? (asc ? String(hi) : '-1');
  return {
    increment,
    minvalue,
    maxvalue,
    start: given?.start ?? (asc ? minvalue : maxvalue),
    cache: given?.cache ?? '1',
    cycle: given?.cycle ?? 'false',
  };
}

/** Only the options that differ from PostgreSQL's own choice; undefined when none do. */
function nonDefault(type: TypeRef, given: Partial<Options>): Partial<Options> | undefined {
  const full = fullIdentityOptions(type, given);
  // MINVALUE and MAXVALUE default by direction; START WITH to the actual MINVALUE (MAXVALUE descending).
  const defaults = fullIdentityOptions(type, { increment: full.increment });
  defaults.increment = '1';
  defaults.start = full.increment.startsWith('-') ? full.maxvalue : full.minvalue;
  const out: Partial<Options> = {};
  for (const k of ORDER) if (full[k] !== defaults[k]) out[k] = full[k];
  return Object.keys(out).length === 0 ? undefined : out;
}

const DEF_NAMES: Readonly<Record<string, IdentityOption>> = {
  start: 'start',
  increment: 'increment',
  minvalue: 'minvalue',
  maxvalue: 'maxvalue',
  cache: 'cache',
  cycle: 'cycle',
};

function numberText(arg: unknown): string | undefined {
  if (!isRecord(arg)) return undefined;
  if (isRecord(arg['Integer'])) return String(arg['Integer']['ival'] ?? 0);
  if (isRecord(arg['Float'])) return String(arg['Float']['fval'] ?? '0');
  if (isRecord(arg['Boolean'])) return arg['Boolean']['boolval'] === true ? 'true' : 'false';
  return undefined;
}

export interface IdentityDeclaration {
  readonly identityOptions?: Partial<Options>;
  readonly identitySequence?: { readonly schema: string; readonly name: string };
}

/**
 * The sequence options of `GENERATED ... AS IDENTITY (...)` (or ADD GENERATED), for a column of `type`.
 * An unqualified SEQUENCE NAME lives in the default schema, as every unqualified name here.
 */
export function identityDeclaration(
  options: unknown,
  type: TypeRef,
  defaultSchema: string,
  what: string,
): IdentityDeclaration {
  const given: Partial<Options> = {};
  let sequence: { schema: string; name: string } | undefined;
  for (const o of (options as AstNode[] | undefined) ?? []) {
    const d = o['DefElem'] as AstNode;
    const name = String(d['defname']);
    if (name === 'sequence_name') {
      const arg = d['arg'];
      const parts = isRecord(arg) && isRecord(arg['List']) ? names(arg['List']['items']) : [];
      if (parts.length < 1 || parts.length > 2)
        throw new DesiredStateError(`${what}: SEQUENCE NAME takes [schema.]name`);
      sequence =
        parts.length === 2
          ? { schema: parts[0] ?? '', name: parts[1] ?? '' }
          : { schema: defaultSchema, name: parts[0] ?? '' };
      continue;
    }
    if (name === 'as') {
      const t =
        isRecord(d['arg']) && isRecord(d['arg']['TypeName']) ? names(d['arg']['TypeName']['names']) : [];
      throw new DesiredStateError(
        `${what}: an identity sequence takes the column's type; remove AS ${t[t.length - 1] ?? ''} (PostgreSQL refuses it)`,
      );
    }
    const option = DEF_NAMES[name];
    if (option === undefined)
      throw new DesiredStateError(
        `${what}: the identity option ${name.toUpperCase()} is not managed by the schema engine; remove it`,
      );
    // NO MINVALUE / NO MAXVALUE: PostgreSQL's own choice.
    if (d['arg'] === undefined && (option === 'minvalue' || option === 'maxvalue')) continue;
    const value = option === 'cycle' ? (numberText(d['arg']) ?? 'true') : numberText(d['arg']);
    if (value === undefined)
      throw new DesiredStateError(`${what}: identity option ${name.toUpperCase()} needs a number`);
    given[option] = option === 'cycle' ? value : BigInt(value).toString();
  }
  const identityOptions = nonDefault(type, given);
  return {
    ...(identityOptions !== undefined ? { identityOptions } : {}),
    ...(sequence !== undefined ? { identitySequence: sequence } : {}),
  };
}

/** `(INCREMENT BY 10 START WITH 1000 ...)` for the options that differ from the defaults; '' when none. */
export function identityClause(c: Column): string {
  const o = c.identityOptions;
  const parts: string[] = [];
  if (c.identitySequence !== undefined)
    parts.push(`SEQUENCE NAME ${quoteQualified(c.identitySequence.schema, c.identitySequence.name)}`);
  for (const k of ORDER) {
    const v = o?.[k];
    if (v !== undefined) parts.push(optionText(k, v));
  }
  return parts.length === 0 ? '' : ` (${parts.join(' ')})`;
}

function optionText(k: IdentityOption, v: string): string {
  const words: Readonly<Record<IdentityOption, string>> = {
    increment: 'INCREMENT BY',
    minvalue: 'MINVALUE',
    maxvalue: 'MAXVALUE',
    start: 'START WITH',
    cache: 'CACHE',
    cycle: '',
  };
  return k === 'cycle' ? (v === 'true' ? 'CYCLE' : 'NO CYCLE') : `${words[k]} ${v}`;
}

/** `SET INCREMENT BY 1 SET MINVALUE 1 ...`: every option, so one left out goes back to its default. */
export function identitySetActions(c: Column): string {
  const full = fullIdentityOptions(c.type, c.identityOptions);
  return ORDER.map((k) => `SET ${optionText(k, full[k])}`).join(' ');
}
