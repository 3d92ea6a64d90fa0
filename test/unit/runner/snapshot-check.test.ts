import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runRunner } from '../../../src/runner/main.ts';
import { decodeFrame } from '../../../src/protocol/frame.ts';
import { buildManifest, MANIFEST_KEY, snapshotFileKey } from '../../../src/sources/snapshot-manifest.ts';

const roots: string[] = [];
after(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Writes a snapshot directory the way a mounted ptah-src ConfigMap looks, from the manager's own builder. */
function snapshot(files: Record<string, string>): {
  dir: string;
  digest: string;
  root: string;
  keyOf: (path: string) => string;
} {
  const root = mkdtempSync(join(tmpdir(), 'ptah-snapshot-test-'));
  roots.push(root);
  const dir = join(root, 'snapshot');
  mkdirSync(dir);
  const built = buildManifest(Object.entries(files).map(([path, s]) => ({ path, bytes: Buffer.from(s) })));
  writeFileSync(join(dir, MANIFEST_KEY), built.bytes);
  built.files.forEach((f, i) => writeFileSync(join(dir, snapshotFileKey(i)), f.bytes));
  // What a ConfigMap volume also holds: the atomic writer's hidden entries.
  mkdirSync(join(dir, '..2026_01_01_00_00_00.000'));
  const keyOf = (path: string) => snapshotFileKey(built.files.findIndex((f) => f.path === path));
  return { dir, digest: built.contentDigest, root, keyOf };
}

async function check(dir: string, digest: string, out: string) {
  let stdout = '';
  let stderr = '';
  const termination = join(out, '..', 'termination-log');
  const exitCode = await runRunner(
    ['check-snapshot', '--snapshot', dir, '--digest', digest, '--out', out],
    { PTAH_TERMINATION_MESSAGE_PATH: termination, PTAH_OPERATION_ID: 'op-1' },
    { writeStdout: (t) => (stdout += t), writeStderr: (t) => (stderr += t) },
  );
  const d = decodeFrame(stdout);
  return {
    exitCode,
    stderr,
    termination: readFileSync(termination, 'utf8'),
    result: d.kind === 'complete' ? d.result : undefined,
  };
}

describe('check-snapshot', () => {
  it('copies every file of a snapshot that gives the bound digest', async () => {
    const s = snapshot({ 'schema.sql': 'CREATE TABLE a();\n', 'tables/b.sql': 'CREATE TABLE b();\n' });
    const out = join(s.root, 'out');
    const r = await check(s.dir, s.digest, out);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(readFileSync(join(out, 'schema.sql'), 'utf8'), 'CREATE TABLE a();\n');
    assert.equal(readFileSync(join(out, 'tables/b.sql'), 'utf8'), 'CREATE TABLE b();\n');
    assert.equal(r.result?.outputs.snapshot?.files, 2);
    assert.equal(r.result?.operationId, 'op-1');
  });

  it('refuses a changed file, naming it in the frame and the termination message, and copies nothing', async () => {
    const s = snapshot({ 'a.sql': 'one\n', 'b.sql': 'two\n' });
    writeFileSync(join(s.dir, s.keyOf('b.sql')), 'TWO\n');
    const out = join(s.root, 'out');
    const r = await check(s.dir, s.digest, out);
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outputs.snapshot?.failingFile, 'b.sql');
    assert.equal(r.result?.error?.code, 'snapshot_digest_mismatch');
    assert.match(r.termination, /"failingFile":"b\.sql"/);
    assert.ok(!existsSync(join(out, 'a.sql')), 'nothing is copied from a refused snapshot');
  });

  it('refuses a manifest that does not give the bound digest', async () => {
    const s = snapshot({ 'a.sql': 'one\n' });
    const r = await check(s.dir, 'sha256:' + '0'.repeat(64), join(s.root, 'out'));
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outputs.snapshot?.failingFile, 'manifest.json');
  });

  it('refuses a missing file and a file of another size', async () => {
    const missing = snapshot({ 'a.sql': 'one\n', 'b.sql': 'two\n' });
    rmSync(join(missing.dir, missing.keyOf('a.sql')));
    const m = await check(missing.dir, missing.digest, join(missing.root, 'out'));
    assert.deepEqual([m.exitCode, m.result?.outputs.snapshot?.failingFile], [2, 'a.sql']);
    const resized = snapshot({ 'a.sql': 'one\n' });
    writeFileSync(join(resized.dir, resized.keyOf('a.sql')), 'one more\n');
    const r = await check(resized.dir, resized.digest, join(resized.root, 'out'));
    assert.deepEqual(
      [r.result?.error?.code, r.result?.outputs.snapshot?.failingFile],
      ['snapshot_size_mismatch', 'a.sql'],
    );
  });

  it('the ptah-runner executable runs the mode and exits non-zero on refusal', async () => {
    const s = snapshot({ 'a.sql': 'one\n' });
    const bin = fileURLToPath(new URL('../../../bin/ptah-runner.mjs', import.meta.url));
    const out = join(s.root, 'out');
    const env = { PATH: process.env['PATH'], PTAH_TERMINATION_MESSAGE_PATH: join(s.root, 'tm') };
    const run = promisify(execFile);
    const ok = await run(
      process.execPath,
      [bin, 'check-snapshot', '--snapshot', s.dir, '--digest', s.digest, '--out', out],
      { env },
    );
    assert.ok(ok.stdout.endsWith('PTAH_RESULT_END_V1\n'));
    assert.equal(readFileSync(join(out, 'a.sql'), 'utf8'), 'one\n');
    await assert.rejects(
      run(
        process.execPath,
        [
          bin,
          'check-snapshot',
          '--snapshot',
          s.dir,
          '--digest',
          'sha256:' + '1'.repeat(64),
          '--out',
          join(s.root, 'out2'),
        ],
        { env },
      ),
      (e: { code?: number }) => e.code === 2,
    );
    assert.match(readFileSync(join(s.root, 'tm'), 'utf8'), /"failingFile":"manifest.json"/);
  });
});
