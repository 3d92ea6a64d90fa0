import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SCHEMA_ENGINE_DIALECTS } from '../../../src/protocol/dialects.ts';
import { dialectFor, SCHEMA_DIALECTS } from '../../../src/engine/schema-engine.ts';

describe('the dialects the schema engine ships', () => {
  it('the list the manager reads is the engine registry', async () => {
    assert.deepEqual([...SCHEMA_ENGINE_DIALECTS].sort(), Object.keys(SCHEMA_DIALECTS).sort());
    for (const name of SCHEMA_ENGINE_DIALECTS) assert.equal((await dialectFor(name)).name, name);
  });
});
