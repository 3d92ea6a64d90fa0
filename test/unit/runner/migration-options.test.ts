// The options of the two migration operations: what a History and an Apply Job must carry, and every
// malformed approved sequence refused before ptah could start, naming the variable.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileRunnerOptions,
  DEFAULTS,
  parseExpectedSequence,
  RunnerOptionsError,
  type CompiledRunOptions,
} from '../../../src/runner/options.ts';
import { migrationStatusCommand, migrationUpCommand } from '../../../src/runner/ptah-commands.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const DIGEST = `sha256:${'a'.repeat(64)}`;
const CHECKSUM = 'b'.repeat(64);
const SEQUENCE = JSON.stringify([
  { version: '1', checksum: CHECKSUM },
  { version: '20250101120000', checksum: 'c'.repeat(64) },
]);

const base = {
  PTAH_OPERATION_ID: 'sha256:' + 'd'.repeat(64),
  PTAH_DB_URL: 'postgres://app:pw@127.0.0.1:5432/orders',
};
const applyEnv = {
  ...base,
  PTAH_EXPECTED_TARGET_IDENTITY: DIGEST,
  PTAH_EXPECTED_SEQUENCE: SEQUENCE,
  PTAH_EXECUTION_NOT_AFTER: '2026-01-01T00:05:00Z',
};

function compile(operation: string, env: Record<string, string>): CompiledRunOptions {
  const o = compileRunnerOptions(['run', '--operation', operation], env, NOW);
  assert.equal(o.mode, 'run');
  return o as CompiledRunOptions;
}

function refusal(operation: string, env: Record<string, string>): RunnerOptionsError {
  try {
    compileRunnerOptions(['run', '--operation', operation], env, NOW);
  } catch (error) {
    assert.ok(error instanceof RunnerOptionsError, String(error));
    return error;
  }
  assert.fail(`${operation} was compiled`);
}

describe('migration-history options', () => {
  it('needs only the target; the directory defaults to the checked snapshot', () => {
    const o = compile('migration-history', base);
    assert.equal(o.operation, 'migration-history');
    assert.equal(o.migrationsDir, DEFAULTS.migrationsDir);
    assert.equal(o.expectedSequence, undefined);
    assert.equal(compile('migration-history', { ...base, PTAH_MIGRATIONS_DIR: '/m' }).migrationsDir, '/m');
  });

  it('refuses a dev database URL, as every operation but Plan does', () => {
    assert.equal(
      refusal('migration-history', { ...base, PTAH_DEV_URL: 'postgres://d:x@h/d' }).field,
      'PTAH_DEV_URL',
    );
  });

  it('runs status on the directory with --json and nothing else', () => {
    assert.deepEqual(migrationStatusCommand('/work/migrations'), [
      'migrations',
      'status',
      '--dir',
      '/work/migrations',
      '--json',
    ]);
  });
});

describe('migration-apply options', () => {
  it('compiles the sequence, the history fingerprint, the transaction mode and the lock timeout', () => {
    const o = compile('migration-apply', {
      ...applyEnv,
      PTAH_EXPECTED_HISTORY_FINGERPRINT: DIGEST,
      PTAH_TRANSACTION_MODE: 'none',
      PTAH_LOCK_TIMEOUT: '30s',
    });
    assert.deepEqual(o.expectedSequence, JSON.parse(SEQUENCE));
    assert.equal(o.expectedHistoryFingerprint, DIGEST);
    assert.equal(o.transactionMode, 'none');
    assert.equal(o.lockTimeoutMs, 30_000);
    assert.equal(o.deadline.toISOString(), '2026-01-01T00:05:00.000Z');
    assert.deepEqual(
      migrationUpCommand(o.migrationsDir, '/work/seq.json', {
        expectedHistoryFingerprint: DIGEST,
        transactionMode: 'none',
        lockTimeoutMs: 30_000,
      }),
      [
        'migrations',
        'up',
        '--dir',
        '/work/migrations',
        '--expect-sequence',
        '/work/seq.json',
        '--expect-history-fingerprint',
        DIGEST,
        '--tx-mode',
        'none',
        // ptah migrations reads a bare number as seconds: the unit is written out.
        '--lock-timeout',
        '30000ms',
        '--json',
      ],
    );
  });

  it('unset and an empty mode both pass no mode; a word outside file|none|unset is refused', () => {
    assert.equal(
      compile('migration-apply', { ...applyEnv, PTAH_TRANSACTION_MODE: 'unset' }).transactionMode,
      undefined,
    );
    assert.equal(
      compile('migration-apply', { ...applyEnv, PTAH_TRANSACTION_MODE: '' }).transactionMode,
      undefined,
    );
    assert.equal(
      refusal('migration-apply', { ...applyEnv, PTAH_TRANSACTION_MODE: 'FILE' }).field,
      'PTAH_TRANSACTION_MODE',
    );
    assert.deepEqual(migrationUpCommand('/d', '/s', {}), [
      'migrations',
      'up',
      '--dir',
      '/d',
      '--expect-sequence',
      '/s',
      '--json',
    ]);
  });

  for (const name of [
    'PTAH_EXPECTED_TARGET_IDENTITY',
    'PTAH_EXPECTED_SEQUENCE',
    'PTAH_EXECUTION_NOT_AFTER',
  ]) {
    it(`refuses an Apply without ${name}`, () => {
      const env: Record<string, string> = { ...applyEnv };
      delete env[name];
      const e = refusal('migration-apply', env);
      assert.equal(e.field, name);
      assert.match(e.message, /missing/);
    });
  }

  it('refuses a passed deadline and a malformed history fingerprint', () => {
    const late = refusal('migration-apply', {
      ...applyEnv,
      PTAH_EXECUTION_NOT_AFTER: '2025-12-31T23:59:59Z',
    });
    assert.equal(late.code, 'deadline_expired');
    assert.equal(
      refusal('migration-apply', { ...applyEnv, PTAH_EXPECTED_HISTORY_FINGERPRINT: 'a'.repeat(64) }).field,
      'PTAH_EXPECTED_HISTORY_FINGERPRINT',
    );
  });

  it('never echoes the credential in a refusal', () => {
    const e = refusal('migration-apply', { ...applyEnv, PTAH_EXPECTED_SEQUENCE: '[' });
    assert.ok(!e.message.includes('pw@'), e.message);
  });
});

describe('the approved sequence (PTAH_EXPECTED_SEQUENCE)', () => {
  const refused: [string, string, RegExp][] = [
    ['not JSON', '[{', /not JSON/],
    ['an object', '{"version":"1"}', /non-empty JSON array/],
    ['empty', '[]', /non-empty JSON array/],
    ['a number version', `[{"version":1,"checksum":"${CHECKSUM}"}]`, /canonical decimal/],
    ['a leading zero', `[{"version":"01","checksum":"${CHECKSUM}"}]`, /canonical decimal/],
    ['version 0', `[{"version":"0","checksum":"${CHECKSUM}"}]`, /canonical decimal/],
    ['past int64', `[{"version":"9223372036854775808","checksum":"${CHECKSUM}"}]`, /canonical decimal/],
    ['upper-case hex', `[{"version":"1","checksum":"${'B'.repeat(64)}"}]`, /64 lower-case hex/],
    ['a sha256: prefix', `[{"version":"1","checksum":"sha256:${CHECKSUM}"}]`, /64 lower-case hex/],
    [
      'an extra field',
      `[{"version":"1","checksum":"${CHECKSUM}","versionKey":"1"}]`,
      /not \{version, checksum\}/,
    ],
    ['a missing checksum', '[{"version":"1"}]', /not \{version, checksum\}/],
    [
      'a repeated version',
      `[{"version":"1","checksum":"${CHECKSUM}"},{"version":"1","checksum":"${CHECKSUM}"}]`,
      /appears twice/,
    ],
  ];
  for (const [what, raw, message] of refused) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => parseExpectedSequence(raw),
        (e: unknown) =>
          e instanceof RunnerOptionsError && e.field === 'PTAH_EXPECTED_SEQUENCE' && message.test(e.message),
      );
    });
  }

  it('keeps the largest version exactly and the order as given', () => {
    const raw = JSON.stringify([
      { version: '9223372036854775807', checksum: CHECKSUM },
      { version: '2', checksum: CHECKSUM },
    ]);
    assert.deepEqual(
      parseExpectedSequence(raw).map((e) => e.version),
      ['9223372036854775807', '2'],
    );
  });

  it(`accepts ${DEFAULTS.maxExpectedSequenceEntries} entries and refuses one more`, () => {
    const entries = (n: number) =>
      JSON.stringify(Array.from({ length: n }, (_, i) => ({ version: String(i + 1), checksum: CHECKSUM })));
    assert.equal(parseExpectedSequence(entries(DEFAULTS.maxExpectedSequenceEntries)).length, 1000);
    assert.throws(
      () => parseExpectedSequence(entries(DEFAULTS.maxExpectedSequenceEntries + 1)),
      /1001 (entries|bytes)/,
    );
  });

  it('refuses more bytes than the limit before parsing them', () => {
    const huge = `[${' '.repeat(DEFAULTS.maxExpectedSequenceBytes)}]`;
    assert.throws(() => parseExpectedSequence(huge), /bytes, more than/);
  });
});
