import { test } from 'node:test';
import assert from 'node:assert/strict';
import { summarise } from '../../../src/runner/observe.ts';

test('a drift summary keeps known severities and reduces any other text to "unknown"', () => {
  const known = summarise({ total: 1, drifted: true, highest_severity: 'Warning' }, 'sha256:x');
  assert.equal(known?.highestSeverity, 'warning');
  const odd = summarise(
    { total: 1, drifted: true, findings: [{ category: 'tables_added', severity: 'postgres://u:pw@h/db' }] },
    'sha256:x',
  );
  assert.equal(odd?.highestSeverity, 'unknown');
  assert.ok(!JSON.stringify(odd).includes('pw@'));
});

test('a drift summary carries the server only as a known product and a numeric release', () => {
  const base = { total: 0, drifted: false };
  assert.deepEqual(
    summarise({ ...base, server: { product: 'MariaDB', version: '10.11.6' } }, 'sha256:x')?.server,
    {
      product: 'MariaDB',
      version: '10.11.6',
    },
  );
  for (const server of [
    { product: 'Oracle', version: '19.3' },
    { product: 'MySQL', version: '8.4.3-log postgres://u:pw@h/db' },
    { product: 'MySQL' },
    'MySQL 8.4.3',
  ])
    assert.equal(summarise({ ...base, server }, 'sha256:x')?.server, undefined, JSON.stringify(server));
});
