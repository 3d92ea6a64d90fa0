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
