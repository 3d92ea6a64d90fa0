import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { readRequest, readRequestPending } from '../../../src/api/read-request.ts';

describe('read requests', () => {
  it('records an RFC 3339 instant as written and lets it start a read', () => {
    assert.deepEqual(readRequest('2026-01-01T10:00:00Z'), { recorded: '2026-01-01T10:00:00Z', valid: true });
    assert.equal(readRequest('2026-01-01T10:00:00.123+02:00').valid, true);
  });

  it('answers a value that is not an instant without starting anything', () => {
    assert.deepEqual(readRequest('now please'), { recorded: 'now please', valid: false });
    assert.equal(readRequest('2026-13-45T99:00:00Z').valid, false);
  });

  it('records a value longer than 64 bytes as its SHA-256 digest', () => {
    const long = 'x'.repeat(65);
    assert.equal(readRequest(long).recorded, `sha256:${createHash('sha256').update(long).digest('hex')}`);
    assert.equal(readRequest('x'.repeat(64)).recorded, 'x'.repeat(64));
  });

  it('is pending until status records that exact value', () => {
    assert.equal(readRequestPending(undefined, undefined), false);
    assert.equal(readRequestPending('2026-01-01T10:00:00Z', undefined), true);
    assert.equal(readRequestPending('2026-01-01T10:00:00Z', '2026-01-01T10:00:00Z'), false);
    const long = 'y'.repeat(100);
    assert.equal(readRequestPending(long, readRequest(long).recorded), false);
  });
});
