import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runRunner } from '../../../src/runner/main.ts';
import { decodeFrame } from '../../../src/runner/frame.ts';

const roots: string[] = [];
after(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));
const hex = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** Writes a snapshot the way the manager stores one: files under keys, plus the manifest. */
function snapshot(files: Record<string, string>): { dir: string; digest: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'ptah-snapshot-test-'));
  roots.push(root);
  const dir = join(root, 'snapshot');
  mkdirSync(dir);
  const entries = Object.entries(files)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([path, content], i) => {
      const key = path.includes('/') ? `f${i}` : path;
      writeFileSync(join(dir, key), content);
      return {
        path,
        ...(key !== path ? { key } : {}),
        size: Buffer.byteLength(content),
        sha256: `sha256:${hex(content)}`,
      };
    });
  const manifest = JSON.stringify({ files: entries });
  writeFileSync(join(dir, 'ptah-manifest.json'), manifest);
  // What a ConfigMap volume also holds: the atomic-writer's hidden entries.
  mkdirSync(join(dir, '..2026_01_01_00_00_00.000'));
  return { dir, digest: `sha256:${hex(manifest)}`, root };
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
    assert.equal(statSync(join(out, 'schema.sql')).mode & 0o777, 0o444);
    assert.equal(r.result?.outputs.snapshot?.files, 2);
    assert.equal(r.result?.operationId, 'op-1');
  });

  it('refuses a changed file, naming it, and copies nothing', async () => {
    const s = snapshot({ 'a.sql': 'one\n', 'b.sql': 'two\n' });
    writeFileSync(join(s.dir, 'b.sql'), 'TWO\n');
    const out = join(s.root, 'out');
    const r = await check(s.dir, s.digest, out);
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outputs.snapshot?.failingFile, 'b.sql');
    assert.match(r.termination, /"failingFile":"b\.sql"/);
    assert.ok(!existsSync(join(out, 'a.sql')), 'nothing is copied from a refused snapshot');
  });

  it('refuses a manifest that does not give the bound digest', async () => {
    const s = snapshot({ 'a.sql': 'one\n' });
    const r = await check(s.dir, 'sha256:' + '0'.repeat(64), join(s.root, 'out'));
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outputs.snapshot?.failingFile, 'ptah-manifest.json');
  });

  it('refuses a missing file, a file of another size, and a file the manifest does not list', async () => {
    const missing = snapshot({ 'a.sql': 'one\n', 'b.sql': 'two\n' });
    rmSync(join(missing.dir, 'a.sql'));
    assert.equal(
      (await check(missing.dir, missing.digest, join(missing.root, 'out'))).result?.outputs.snapshot
        ?.failingFile,
      'a.sql',
    );

    const stray = snapshot({ 'a.sql': 'one\n' });
    writeFileSync(join(stray.dir, 'extra.sql'), 'DROP TABLE x;\n');
    const r = await check(stray.dir, stray.digest, join(stray.root, 'out'));
    assert.equal(r.result?.outputs.snapshot?.failingFile, 'extra.sql');
  });

  it('refuses a manifest with a path that escapes the output directory', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ptah-snapshot-test-'));
    roots.push(root);
    const dir = join(root, 'snapshot');
    mkdirSync(dir);
    writeFileSync(join(dir, 'x'), 'evil');
    const manifest = JSON.stringify({
      files: [{ path: '../escape.sql', key: 'x', size: 4, sha256: `sha256:${hex('evil')}` }],
    });
    writeFileSync(join(dir, 'ptah-manifest.json'), manifest);
    const r = await check(dir, `sha256:${hex(manifest)}`, join(root, 'out'));
    assert.equal(r.exitCode, 2);
    assert.ok(!existsSync(join(root, 'escape.sql')));
  });

  it('the ptah-runner executable runs the mode and exits non-zero on refusal', async () => {
    const s = snapshot({ 'a.sql': 'one\n' });
    const bin = fileURLToPath(new URL('../../../bin/ptah-runner.mjs', import.meta.url));
    const out = join(s.root, 'out');
    const env = { PATH: process.env['PATH'], PTAH_TERMINATION_MESSAGE_PATH: join(s.root, 'tm') };
    const ok = await promisify(execFile)(
      process.execPath,
      [bin, 'check-snapshot', '--snapshot', s.dir, '--digest', s.digest, '--out', out],
      { env },
    );
    assert.ok(ok.stdout.endsWith('PTAH_RESULT_END_V1\n'));
    assert.equal(readFileSync(join(out, 'a.sql'), 'utf8'), 'one\n');
    await assert.rejects(
      promisify(execFile)(
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
  });
});
