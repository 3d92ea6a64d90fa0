/**
 * Text search configurations (`CREATE TEXT SEARCH CONFIGURATION` and the `ALTER … ADD/ALTER/DROP MAPPING`
 * statements pg_dump writes after it, one per token type) as defined objects. A configuration is compared
 * by its parser and its mapping: each token type to its ordered list of dictionaries, every name
 * schema-qualified (`simple` is `pg_catalog.simple`). The catalog side writes the same statements from
 * pg_ts_config and pg_ts_config_map (pg-objects-catalog.ts), so a declaration, its pg_dump and the
 * database meet. A changed mapping is set in place (`ALTER MAPPING`, `DROP MAPPING`); a changed parser
 * cannot be, so the configuration is dropped and created again, which PostgreSQL refuses while an index,
 * a generated column or a check names it (regconfig constants record that dependency).
 *
 * Dictionaries, parsers and templates stay unmanaged: a configuration names them, it does not own them
 * (an extension such as unaccent brings its dictionary, and extensions are created before any type).
 */
import type { DefinedObject } from '../model.ts';
import { objectKey } from '../model.ts';
import { type AstNode, isRecord, names, quoteIdent, quoteQualified } from './pg-normalize.ts';

/** A problem in one statement; the loader turns it into its own error with the statement's position. */
export class TextSearchDeclarationError extends Error {
  override readonly name = 'TextSearchDeclarationError';
}

interface QualifiedName {
  readonly schema: string;
  readonly name: string;
}

/** A configuration as its statements have declared it so far (ALTERs fold into it in file order). */
export interface TextSearchConfigDraft {
  readonly type: 'text search configuration';
  readonly schema: string;
  readonly name: string;
  readonly what: string;
  readonly parser: QualifiedName;
  /** Token type → dictionaries in the order they are consulted. */
  readonly mappings: Map<string, readonly QualifiedName[]>;
  comment?: string;
}

/** PostgreSQL's own parser, and the token types it reports (ts_token_type('default'), unchanged since 8.3). */
const DEFAULT_PARSER: QualifiedName = { schema: 'pg_catalog', name: 'default' };
const DEFAULT_PARSER_TOKENS: readonly string[] = [
  'asciiword',
  'word',
  'numword',
  'asciihword',
  'hword',
  'numhword',
  'hword_asciipart',
  'hword_part',
  'hword_numpart',
  'email',
  'protocol',
  'url',
  'host',
  'url_path',
  'file',
  'sfloat',
  'float',
  'int',
  'uint',
  'version',
  'tag',
  'entity',
  'blank',
];

/**
 * pg_catalog's dictionaries: an unqualified name resolves there first (pg_catalog is searched before
 * the path), any other unqualified name in the default schema.
 */
const CATALOG_DICTIONARIES = new Set([
  'simple',
  ...[
    'arabic',
    'armenian',
    'basque',
    'catalan',
    'danish',
    'dutch',
    'english',
    'finnish',
    'french',
    'german',
    'greek',
    'hindi',
    'hungarian',
    'indonesian',
    'irish',
    'italian',
    'lithuanian',
    'nepali',
    'norwegian',
    'portuguese',
    'romanian',
    'russian',
    'serbian',
    'spanish',
    'swedish',
    'tamil',
    'turkish',
    'yiddish',
  ].map((l) => `${l}_stem`),
]);

function resolve(parts: string[], ds: string, inCatalog: (name: string) => boolean): QualifiedName {
  const name = parts[parts.length - 1] ?? '';
  if (parts.length >= 2) return { schema: parts[parts.length - 2] ?? ds, name };
  return { schema: inCatalog(name) ? 'pg_catalog' : ds, name };
}

const nameKey = (q: QualifiedName) => [q.schema, q.name];
const nameSql = (q: QualifiedName) => quoteQualified(q.schema, q.name);

/** The parser a `CREATE TEXT SEARCH CONFIGURATION` (DefineStmt of kind OBJECT_TSCONFIGURATION) names. */
export function textSearchConfigDraft(
  n: AstNode,
  schema: string,
  name: string,
  what: string,
  ds: string,
): TextSearchConfigDraft {
  let parser: QualifiedName | undefined;
  for (const el of (n['definition'] as AstNode[] | undefined) ?? []) {
    const e = el['DefElem'] as AstNode;
    const option = String(e['defname']).toLowerCase();
    const arg = e['arg'];
    // A keyword or a quoted string (`default`, `'default'`) comes as a String, a name as a TypeName.
    const parts =
      isRecord(arg) && isRecord(arg['TypeName'])
        ? names(arg['TypeName']['names'])
        : isRecord(arg) && isRecord(arg['String'])
          ? [String(arg['String']['sval'] ?? '')]
          : [];
    if (option === 'copy')
      throw new TextSearchDeclarationError(
        `${what}: COPY = ${parts.join('.')} is not read in a desired state (what it copies lives in the database, not in the files); write PARSER = and the ADD MAPPING statements it copies, as pg_dump writes them`,
      );
    if (option !== 'parser' || parts.length === 0)
      throw new TextSearchDeclarationError(
        `${what}: option ${option} is not one CREATE TEXT SEARCH CONFIGURATION takes; write PARSER = name`,
      );
    parser = resolve(parts, ds, (p) => p === DEFAULT_PARSER.name);
  }
  if (parser === undefined)
    throw new TextSearchDeclarationError(`${what}: PARSER = name is missing; write PARSER = default`);
  const draft: TextSearchConfigDraft = {
    type: 'text search configuration',
    schema,
    name,
    what,
    parser,
    mappings: new Map(),
  };
  return draft;
}

const isDefaultParser = (p: QualifiedName) =>
  p.schema === DEFAULT_PARSER.schema && p.name === DEFAULT_PARSER.name;

/** Folds one `ALTER TEXT SEARCH CONFIGURATION … ADD/ALTER/DROP MAPPING` into the configuration. */
export function alterTextSearchConfig(d: TextSearchConfigDraft, n: AstNode, ds: string): void {
  const what = `text search configuration ${d.schema}.${d.name}`;
  const tokens = names(n['tokentype']);
  const dicts = ((n['dicts'] as AstNode[] | undefined) ?? []).map((x) =>
    resolve(isRecord(x['List']) ? names(x['List']['items']) : [], ds, (name) =>
      CATALOG_DICTIONARIES.has(name),
    ),
  );
  if (isDefaultParser(d.parser))
    for (const t of tokens)
      if (!DEFAULT_PARSER_TOKENS.includes(t))
        throw new TextSearchDeclarationError(
          `${what}: token type ${t} is not one the default parser has (${DEFAULT_PARSER_TOKENS.join(', ')})`,
        );
  switch (n['kind']) {
    case 'ALTER_TSCONFIG_ADD_MAPPING':
    case 'ALTER_TSCONFIG_ALTER_MAPPING_FOR_TOKEN':
      for (const t of tokens) {
        if (n['kind'] === 'ALTER_TSCONFIG_ADD_MAPPING' && d.mappings.has(t))
          throw new TextSearchDeclarationError(
            `${what}: token type ${t} is mapped twice (ADD MAPPING fails on a mapped token); keep one ADD MAPPING for it, or write ALTER MAPPING`,
          );
        d.mappings.set(t, dicts);
      }
      return;
    case 'ALTER_TSCONFIG_REPLACE_DICT':
    case 'ALTER_TSCONFIG_REPLACE_DICT_FOR_TOKEN': {
      const [from, to] = dicts;
      if (from === undefined || to === undefined) return;
      const same = (a: QualifiedName, b: QualifiedName) => a.schema === b.schema && a.name === b.name;
      for (const [t, list] of d.mappings)
        if (tokens.length === 0 || tokens.includes(t))
          d.mappings.set(
            t,
            list.map((x) => (same(x, from) ? to : x)),
          );
      return;
    }
    case 'ALTER_TSCONFIG_DROP_MAPPING':
      for (const t of tokens) {
        if (!d.mappings.has(t) && n['missing_ok'] !== true)
          throw new TextSearchDeclarationError(
            `${what}: DROP MAPPING FOR ${t}, which is not mapped; remove the statement or write IF EXISTS`,
          );
        d.mappings.delete(t);
      }
      return;
    default:
      throw new TextSearchDeclarationError(`${what}: ${String(n['kind'])} is not read in a desired state`);
  }
}

/** `ADD MAPPING` (or `ALTER MAPPING`) statements, one per list of dictionaries, tokens in name order. */
function mappingStatements(target: string, verb: 'ADD' | 'ALTER', d: TextSearchConfigDraft): string[] {
  const groups = new Map<string, string[]>();
  for (const t of [...d.mappings.keys()].sort()) {
    const with_ = (d.mappings.get(t) ?? []).map(nameSql).join(', ');
    groups.set(with_, [...(groups.get(with_) ?? []), quoteIdent(t)]);
  }
  return [...groups].map(
    ([dicts, tokens]) => `ALTER ${target} ${verb} MAPPING FOR ${tokens.join(', ')} WITH ${dicts}`,
  );
}

/**
 * The spellings a regconfig constant naming it has in a canonical expression key (pg-normalize's
 * regclass literal): bare in the default schema, else qualified.
 */
function constantSpellings(schema: string, name: string, ds: string): string[] {
  const part = (p: string) => (/^[a-z_][a-z0-9_$]*$/.test(p) ? p : `"${p.replace(/"/g, '""')}"`);
  return schema === ds ? [part(name)] : [`${part(schema)}.${part(name)}`];
}

/** The defined object a configuration's statements declare. */
export function textSearchConfigObject(d: TextSearchConfigDraft, ds: string): DefinedObject {
  const target = `TEXT SEARCH CONFIGURATION ${quoteQualified(d.schema, d.name)}`;
  const mapping = [...d.mappings.keys()].sort().map((t) => [t, (d.mappings.get(t) ?? []).map(nameKey)]);
  const unmapped = isDefaultParser(d.parser) ? DEFAULT_PARSER_TOKENS.filter((t) => !d.mappings.has(t)) : [];
  const uses = new Set<string>();
  for (const q of [d.parser, ...[...d.mappings.values()].flat()])
    if (q.schema !== 'pg_catalog') uses.add(objectKey(q.schema, q.name));
  return {
    kind: 'Defined',
    objectType: 'text search configuration',
    schema: d.schema,
    name: d.name,
    ref: objectKey(d.schema, d.name),
    key: JSON.stringify([nameKey(d.parser), mapping]),
    create: [`CREATE ${target} (PARSER = ${nameSql(d.parser)})`, ...mappingStatements(target, 'ADD', d)],
    drop: [`DROP ${target}`],
    // Only the default parser's token types are known here, so only its mapping is rewritten in place:
    // every declared token set, every other one dropped if present, whatever the live mapping was.
    ...(isDefaultParser(d.parser)
      ? {
          replaceKey: JSON.stringify(nameKey(d.parser)),
          replace: [
            ...mappingStatements(target, 'ALTER', d),
            ...(unmapped.length > 0
              ? [`ALTER ${target} DROP MAPPING IF EXISTS FOR ${unmapped.map(quoteIdent).join(', ')}`]
              : []),
          ],
        }
      : {}),
    uses: [...uses],
    stage: 'types',
    ...(d.comment !== undefined ? { comment: d.comment } : {}),
    commentOn: target,
    namedAs: constantSpellings(d.schema, d.name, ds),
  };
}
