import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRedactor, stripUserInfo } from '../../../src/runner/redact.ts';

describe('redactor', () => {
  const password = 'p@ss/w"rd:1';
  const url = `postgres://app:${encodeURIComponent(password)}@db.internal:5432/orders?sslmode=require`;
  const r = createRedactor([url]);

  it('replaces the whole URL by its credential-free spelling', () => {
    assert.equal(r.redact(`connect ${url} failed`), 'connect postgres://***@db.internal:5432/orders failed');
  });

  it('replaces the password raw, percent-encoded and JSON-escaped', () => {
    for (const spelling of [password, encodeURIComponent(password), JSON.stringify(password).slice(1, -1)]) {
      const out = r.redact(`auth failed for "${spelling}"`);
      assert.ok(!out.includes(spelling), `${spelling} survived: ${out}`);
    }
  });

  it('replaces password-like query parameters and the dev URL', () => {
    const dev = 'postgres://dev@127.0.0.1/scratch?password=dev-secret-42';
    const both = createRedactor([url, dev]);
    assert.ok(!both.redact('dev-secret-42 and ' + dev).includes('dev-secret-42'));
  });

  it('strips user info from any URL, even one it was not told about', () => {
    assert.equal(stripUserInfo('see mysql://root:hunter2@10.0.0.1/x'), 'see mysql://***@10.0.0.1/x');
  });

  it('leaks() finds long secrets in bytes and ignores short ones by default', () => {
    assert.equal(r.leaks(Buffer.from(`-- ${url}`)), true);
    const short = createRedactor(['postgres://u:abc@h/d']);
    assert.equal(short.leaks('abcdef'), false);
    assert.equal(short.redact('abc'), '***');
  });
});
