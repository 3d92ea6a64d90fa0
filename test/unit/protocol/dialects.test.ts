import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SCHEMA_ENGINE_DIALECTS, schemaEngineShips } from '../../../src/protocol/dialects.ts';
import { dialectFor, SCHEMA_DIALECTS } from '../../../src/engine/schema-engine.ts';
import { DesiredSourceError } from '../../../src/engine/schema-engine.ts';

describe('the dialects the schema engine ships', () => {
  it('the list the manager reads is the engine registry', () => {
    assert.deepEqual([...SCHEMA_ENGINE_DIALECTS].sort(), Object.keys(SCHEMA_DIALECTS).sort());
    for (const name of SCHEMA_ENGINE_DIALECTS) assert.equal(dialectFor(name).name, name);
  });

  it('a dialect not in the list is unsupported, and the engine refuses it by name', () => {
    for (const name of ['postgres', 'mysql'] as const) {
      if (schemaEngineShips(name)) continue;
      assert.throws(
        () => dialectFor(name),
        (e: unknown) => e instanceof DesiredSourceError && e.message.includes(name),
      );
    }
  });
});
