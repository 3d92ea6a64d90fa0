import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMigrationFile, type MigrationFile } from '../../../src/engine/migrations/migration-file.ts';
import { computeStatus, historyFingerprint } from '../../../src/engine/migrations/migration-status.ts';
import type { RevisionRow } from '../../../src/engine/migrations/revision.ts';

const file = (name: string, sql = `SELECT '${name}';`): MigrationFile =>
  parseMigrationFile(name, Buffer.from(sql));
const row = (f: MigrationFile, over: Partial<RevisionRow> = {}): RevisionRow => ({
  version: f.version,
  description: f.description,
  checksum: f.checksum,
  checkpoint: false,
  appliedAt: '2025-01-01T00:00:00.000Z',
  executionMs: 1,
  dirty: false,
  statementsDone: null,
  ...over,
});

const f1 = file('1_a.sql');
const f2 = file('2_b.sql');
const f3 = file('3_c.sql');
const cp4 = file('4_all.sql', '-- ptah:checkpoint\nSELECT 1;');
const f5 = file('5_e.sql');

test('verdict precedence: dirty > modified > out_of_order > ahead > pending > up_to_date', () => {
  // Version 1 is recorded but its file is gone from a directory that holds 2, 3 and 5.
  const gone = row(f1);
  const all = [f2, f3, f5];
  // Each situation adds one more problem; the highest-ranked one present wins.
  const cases: [RevisionRow[], readonly MigrationFile[], string][] = [
    [[row(f2), row(f3), row(f5)], all, 'up_to_date'],
    [[row(f2)], all, 'pending'],
    [[gone, row(f2)], all, 'ahead'],
    [[gone, row(f2), row(f5)], all, 'out_of_order'],
    [[gone, row(f2, { checksum: 'x' }), row(f5)], all, 'modified'],
    [[gone, row(f2, { checksum: 'x' }), row(f5, { dirty: true, statementsDone: 1 })], all, 'dirty'],
  ];
  for (const [rows, files, verdict] of cases) assert.equal(computeStatus(files, rows).verdict, verdict);
});

test('an empty history starts at the newest checkpoint; lower versions are neither pending nor out of order', () => {
  const s = computeStatus([f1, f2, cp4, f5], []);
  assert.equal(s.verdict, 'pending');
  assert.equal(s.checkpointVersion, '4');
  assert.deepEqual(
    s.pending.map((p) => p.version),
    ['4', '5'],
  );
  assert.equal(s.pendingCount, 2);
});

test('after a checkpoint bootstrap lower versions are covered; on an older history a checkpoint is skipped', () => {
  const boot = computeStatus([f1, f2, cp4, f5], [row(cp4, { checkpoint: true })]);
  assert.equal(boot.verdict, 'pending');
  assert.deepEqual(
    boot.pending.map((p) => p.version),
    ['5'],
  );
  const old = computeStatus([f1, f2, f3, cp4, f5], [row(f1), row(f2), row(f3)]);
  assert.deepEqual(
    old.pending.map((p) => p.version),
    ['5'],
  );
  assert.equal(old.checkpointVersion, null);
});

test('rows whose files a newer checkpoint replaced are not "ahead"', () => {
  // The directory was squashed: 1-3 removed, checkpoint 4 stands for them.
  const s = computeStatus([cp4, f5], [row(f1), row(f2), row(f3)]);
  assert.equal(s.verdict, 'pending');
  assert.deepEqual(s.aheadVersions, []);
  assert.equal(computeStatus([f1], [row(f1), row(f2)]).verdict, 'ahead');
});

test('versions compare as numbers and the fingerprint ignores times but not content', () => {
  const s = computeStatus([file('10_x.sql'), file('9_y.sql'), file('0100_z.sql')], []);
  assert.deepEqual(
    s.pending.map((p) => p.version),
    ['9', '10', '100'],
  );
  const a = historyFingerprint([row(f1), row(f2)]);
  assert.equal(a, historyFingerprint([row(f2, { appliedAt: '2030-01-01T00:00:00.000Z' }), row(f1)]));
  assert.notEqual(a, historyFingerprint([row(f1), row(f2, { dirty: true })]));
  assert.notEqual(a, historyFingerprint([row(f1)]));
});
