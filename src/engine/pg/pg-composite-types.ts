/**
 * Composite types (`CREATE TYPE t AS (a integer, b text)`) as defined objects: compared by their
 * attributes in order (name, type, collation), created with the other types before the tables, routines
 * and types that use them. A changed one is dropped and created again: PostgreSQL's ALTER TYPE ... ATTRIBUTE
 * would keep values, but a type a column or another object uses cannot be dropped, so such a change is
 * refused naming its users (change it in a migration) rather than planned to fail.
 */
import type { DefinedObject } from '../model.ts';
import { objectKey, typeKey } from '../model.ts';
import {
  type AstNode,
  isRecord,
  names,
  quoteIdent,
  quoteQualified,
  renderType,
  resolvedNameSql,
  typeRefFromAst,
} from './pg-normalize.ts';

/** A problem in one statement; the loader turns it into its own error with the statement's position. */
export class CompositeTypeDeclarationError extends Error {
  override readonly name = 'CompositeTypeDeclarationError';
}

/** The defined object a `CREATE TYPE ... AS (...)` (CompositeTypeStmt) declares. */
export function compositeTypeObject(
  n: AstNode,
  schema: string,
  name: string,
  comment: string | undefined,
  what: string,
  defaultSchema: string,
): DefinedObject {
  const uses = new Set<string>();
  const attributes = ((n['coldeflist'] as AstNode[] | undefined) ?? []).map((el) => {
    const def = el['ColumnDef'] as AstNode | undefined;
    if (def === undefined)
      throw new CompositeTypeDeclarationError(`${what}: an attribute list entry is not a column`);
    const { type } = typeRefFromAst(def['typeName'] as AstNode, defaultSchema);
    if (type.schema !== undefined) uses.add(objectKey(type.schema, type.name));
    const collParts = isRecord(def['collClause']) ? names(def['collClause']['collname']) : [];
    const collation = collParts.length > 0 ? resolvedNameSql(collParts, defaultSchema) : undefined;
    if (collParts.length === 2) uses.add(objectKey(collParts[0] ?? '', collParts[1] ?? ''));
    else if (collParts.length === 1) uses.add(objectKey(defaultSchema, collParts[0] ?? ''));
    return { name: String(def['colname']), type, collation };
  });
  const self = objectKey(schema, name);
  uses.delete(self);
  const target = `TYPE ${quoteQualified(schema, name)}`;
  const list = attributes.map(
    (a) =>
      `${quoteIdent(a.name)} ${renderType(a.type)}${a.collation !== undefined ? ` COLLATE ${a.collation}` : ''}`,
  );
  return {
    kind: 'Defined',
    objectType: 'composite type',
    schema,
    name,
    ref: self,
    key: JSON.stringify(attributes.map((a) => [a.name, typeKey(a.type), a.collation ?? null])),
    create: [`CREATE ${target} AS (${list.join(', ')})`],
    drop: [`DROP ${target}`],
    uses: [...uses],
    stage: 'types',
    ...(comment !== undefined ? { comment } : {}),
    commentOn: target,
  };
}
