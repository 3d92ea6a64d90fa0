/**
 * `kubectl explain` reads each field's description from the CRD's openAPIV3Schema: every property of every
 * kind the operator serves carries one, so a new field without it fails here rather than showing an empty
 * explanation. An array's items and a map's values are explained by the field that holds them; `metadata`
 * is the API server's ObjectMeta, whose own descriptions kubectl shows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCrds } from '../../../src/api/crds.ts';
import type { OpenApiSchema } from '../../../src/api/schema-dsl.ts';

/** Shorter than this, a description names the field rather than explaining it. */
const USEFUL = 12;

function undescribed(schema: OpenApiSchema, path: string): string[] {
  const out: string[] = [];
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const at = `${path}.${name}`;
    if (at.split('.').length === 2 && name === 'metadata') continue;
    const text = prop.description?.trim() ?? '';
    if (text.length < USEFUL) out.push(text === '' ? at : `${at} ("${text}")`);
    out.push(...undescribed(prop, at));
  }
  if (schema.items !== undefined) out.push(...undescribed(schema.items, `${path}[]`));
  if (schema.additionalProperties !== undefined)
    out.push(...undescribed(schema.additionalProperties, `${path}{}`));
  return out;
}

describe('kubectl explain', () => {
  const crds = buildCrds();

  it('walks every kind and finds the fields it judges', () => {
    assert.ok(crds.length >= 8, `only ${crds.length} CRDs`);
    const spec = crds.find((c) => c.spec.names.kind === 'PtahSchema')!.spec.versions[0]!.schema
      .openAPIV3Schema;
    assert.ok(Object.keys(spec.properties?.spec?.properties ?? {}).length > 5);
    assert.deepEqual(undescribed({ properties: { a: { type: 'string' } } }, 'X'), ['X.a']);
  });

  for (const crd of crds) {
    it(`${crd.spec.names.kind}: every field has a description`, () => {
      const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
      const kind = crd.spec.names.kind;
      assert.ok((root.description ?? '').length >= USEFUL, `${kind} has no description`);
      assert.deepEqual(undescribed(root, kind), []);
    });
  }
});
