import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  type Constraint,
  type Index,
  constraintKey,
  indexKey,
  objectKey,
  sameConstraint,
  sameIndex,
} from '../../../src/engine/model.ts';
import { loadDesiredSql } from '../../../src/engine/pg/pg-desired.ts';
import { ensureParser } from '../../../src/engine/pg/pg-parser.ts';

const REAL = join(import.meta.dirname, '../../fixtures/real-schemas');

describe('comparison keys written in place', () => {
  test('objectKey is the JSON array of the two names, whatever characters they hold', () => {
    const names = [
      'public',
      'a.b',
      'q"uote',
      'back\\slash',
      'new\nline',
      '\u0000',
      'del\u007f',
      'café',
      '😀',
      'lone\ud800',
      '',
    ];
    for (const schema of names)
      for (const name of names) assert.equal(objectKey(schema, name), JSON.stringify([schema, name]));
  });

  test('sameConstraint and sameIndex agree with comparing the keys, on every pair of real schemas', async () => {
    await ensureParser();
    const constraints: Constraint[] = [];
    const indexes: Index[] = [];
    for (const name of readdirSync(REAL)) {
      const sql = readFileSync(join(REAL, name, 'schema.sql'), 'utf8');
      const model = await loadDesiredSql([{ path: 'schema.sql', sql }], 'public').catch(() => undefined);
      for (const t of model?.tables ?? []) {
        constraints.push(...t.constraints);
        indexes.push(...t.indexes);
      }
    }
    // Spellings a key writes alike (an absent flag and null) or apart (false and true), side by side.
    const variants = constraints.slice(0, 200).flatMap((c): Constraint[] =>
      c.kind === 'Unique' || c.kind === 'ForeignKey'
        ? [
            { ...c, deferrable: !c.deferrable },
            { ...c, initiallyDeferred: undefined as unknown as boolean },
          ]
        : [],
    );
    const indexVariants = indexes.slice(0, 200).flatMap((i): Index[] => [
      { ...i, invisible: false },
      { ...i, include: [] },
      // JSON writes an absent value and null alike.
      { ...i, include: undefined as unknown as string[] },
      { ...i, include: null as unknown as string[] },
      { ...i, storage: undefined },
    ]);
    assert.ok(constraints.length > 1000 && indexes.length > 500, `${constraints.length}, ${indexes.length}`);
    let agreed = 0;
    const all = [...constraints, ...variants];
    // Each against its neighbours of the same kind: most pairs then differ in one part only.
    for (let i = 0; i < all.length; i++)
      for (let j = i; j < Math.min(all.length, i + 40); j++) {
        const a = all[i] as Constraint;
        const b = all[j] as Constraint;
        assert.equal(
          sameConstraint(a, b),
          constraintKey(a) === constraintKey(b),
          `${constraintKey(a)} ${constraintKey(b)}`,
        );
        agreed++;
      }
    const allIndexes = [...indexes, ...indexVariants];
    for (let i = 0; i < allIndexes.length; i++)
      for (let j = i; j < Math.min(allIndexes.length, i + 40); j++) {
        const a = allIndexes[i] as Index;
        const b = allIndexes[j] as Index;
        assert.equal(sameIndex(a, b), indexKey(a) === indexKey(b), `${indexKey(a)} ${indexKey(b)}`);
        agreed++;
      }
    assert.ok(agreed > 10_000);
  });
});
