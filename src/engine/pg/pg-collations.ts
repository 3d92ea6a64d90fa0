/**
 * Collations (`CREATE COLLATION`) as defined objects. A collation is compared by what PostgreSQL keeps of
 * it: its provider, its locale (ICU) or LC_COLLATE and LC_CTYPE (libc), and whether it is deterministic;
 * the catalog side writes the same statement from pg_collation (pg-objects-catalog.ts), so a declaration,
 * its pg_dump and the database meet. A collation has no ALTER for those properties: a changed one is
 * dropped and created again, which PostgreSQL refuses while a column or index uses it (the error names
 * them), rather than a plan quietly rebuilding every table that sorts with it.
 */
import type { DefinedObject } from '../model.ts';
import { objectKey } from '../model.ts';
import {
  type AstNode,
  constText,
  isRecord,
  names,
  quoteLiteral,
  quoteQualified,
  resolvedNameSql,
} from './pg-normalize.ts';

/** A problem in one statement; the loader turns it into its own error with the statement's position. */
export class CollationDeclarationError extends Error {
  override readonly name = 'CollationDeclarationError';
}

interface CollationProperties {
  readonly provider: 'libc' | 'icu';
  /** ICU: the locale; libc: LC_COLLATE. */
  readonly collate: string;
  /** libc: LC_CTYPE; ICU: the same as `collate`. */
  readonly ctype: string;
  readonly deterministic: boolean;
  /** ICU tailoring rules (PostgreSQL 16 and later). */
  readonly rules?: string;
}

/** A DefElem's value as text: `icu`, `'und-x-icu'`, `false`. */
function optionText(arg: unknown): string {
  if (!isRecord(arg)) return 'true';
  if (isRecord(arg['String'])) return String(arg['String']['sval'] ?? '');
  if (isRecord(arg['Boolean'])) return arg['Boolean']['boolval'] === true ? 'true' : 'false';
  if (isRecord(arg['TypeName'])) return names(arg['TypeName']['names']).join('.');
  if (isRecord(arg['A_Const'])) return constText(arg['A_Const']) ?? '';
  return '';
}

function properties(n: AstNode, what: string): CollationProperties {
  const opts = new Map<string, string>();
  for (const el of (n['definition'] as AstNode[] | undefined) ?? []) {
    const e = el['DefElem'] as AstNode;
    opts.set(String(e['defname']).toLowerCase(), optionText(e['arg']));
  }
  if (opts.has('from'))
    throw new CollationDeclarationError(
      `${what}: CREATE COLLATION ... FROM is not supported in a desired state; write the provider and locale it copies (pg_dump writes them)`,
    );
  const provider = (opts.get('provider') ?? 'libc').toLowerCase();
  if (provider !== 'libc' && provider !== 'icu')
    throw new CollationDeclarationError(
      `${what}: provider ${provider} is not one PostgreSQL has (libc, icu)`,
    );
  const locale = opts.get('locale');
  const collate = opts.get('lc_collate') ?? locale ?? '';
  const ctype = provider === 'icu' ? collate : (opts.get('lc_ctype') ?? locale ?? '');
  const deterministic = !['false', 'off', 'no', '0'].includes(
    (opts.get('deterministic') ?? 'true').toLowerCase(),
  );
  const rules = opts.get('rules');
  return { provider, collate, ctype, deterministic, ...(rules !== undefined ? { rules } : {}) };
}

function createStatement(schema: string, name: string, p: CollationProperties): string {
  const opts =
    p.provider === 'icu'
      ? [`provider = icu`, `locale = ${quoteLiteral(p.collate)}`]
      : [`provider = libc`, `lc_collate = ${quoteLiteral(p.collate)}`, `lc_ctype = ${quoteLiteral(p.ctype)}`];
  if (!p.deterministic) opts.push('deterministic = false');
  if (p.rules !== undefined) opts.push(`rules = ${quoteLiteral(p.rules)}`);
  return `CREATE COLLATION ${quoteQualified(schema, name)} (${opts.join(', ')})`;
}

/** The defined object a `CREATE COLLATION` (DefineStmt of kind OBJECT_COLLATION) declares. */
export function collationObject(
  n: AstNode,
  schema: string,
  name: string,
  comment: string | undefined,
  what: string,
  defaultSchema: string,
): DefinedObject {
  const p = properties(n, what);
  const target = `COLLATION ${quoteQualified(schema, name)}`;
  return {
    kind: 'Defined',
    objectType: 'collation',
    schema,
    name,
    ref: objectKey(schema, name),
    key: JSON.stringify([p.provider, p.collate, p.ctype, p.deterministic, p.rules ?? null]),
    create: [createStatement(schema, name, p)],
    drop: [`DROP ${target}`],
    uses: [],
    stage: 'types',
    ...(comment !== undefined ? { comment } : {}),
    commentOn: target,
    // As a COLLATE clause names it (resolvedNameSql): bare in the default schema, else qualified.
    namedAs: [
      quoteQualified(schema, name),
      ...(schema === defaultSchema ? [resolvedNameSql([name], defaultSchema)] : []),
    ],
  };
}
