import assert from 'node:assert/strict';
import type { JsonPatchOperation } from '../../../src/admission/review.ts';

/** A minimal RFC 6902 applier for add/remove/replace, independent of the code under test. */
export function applyPatch(doc: unknown, ops: readonly JsonPatchOperation[]): unknown {
  let root = structuredClone(doc);
  for (const op of ops) {
    if (op.path === '') {
      assert.equal(op.op, 'replace');
      root = structuredClone((op as { value: unknown }).value);
      continue;
    }
    const tokens = op.path
      .slice(1)
      .split('/')
      .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop()!;
    let parent = root as Record<string, unknown>;
    for (const t of tokens) parent = parent[t] as Record<string, unknown>;
    if (op.op === 'remove') {
      assert.ok(last in parent, `remove of missing ${op.path}`);
      delete parent[last];
    } else if (op.op === 'add') {
      parent[last] = structuredClone(op.value);
    } else {
      assert.ok(last in parent, `replace of missing ${op.path}`);
      parent[last] = structuredClone(op.value);
    }
  }
  return root;
}
