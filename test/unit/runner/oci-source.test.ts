/**
 * The runner's OCI commands refuse before any request: a credential whose Secret does not grant the
 * reference's registry, a CA whose bytes the grant does not name, plain HTTP not granted, a policy whose
 * bytes do not give the bound digest. Nothing here reaches a registry (the e2e test does).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runRunner } from '../../../src/runner/main.ts';
import { decodeFrame } from '../../../src/protocol/frame.ts';
import type { RunnerResult } from '../../../src/protocol/result.ts';

const root = mkdtempSync(join(tmpdir(), 'ptah-oci-runner-'));
after(() => rmSync(root, { recursive: true, force: true }));
const PINNED = `127.0.0.1:5000/schemas/orders@sha256:${'a'.repeat(64)}`;
const PASSWORD = 'registry-password-never-printed';

function secretDir(name: string, keys: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [k, v] of Object.entries(keys)) writeFileSync(join(dir, k), v);
  return dir;
}

async function run(argv: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const termination = join(root, `term-${Math.random().toString(36).slice(2)}`);
  const exitCode = await runRunner(
    argv,
    { PTAH_OPERATION_ID: 'op-1', PTAH_TERMINATION_MESSAGE_PATH: termination, ...env },
    { writeStdout: (t) => (stdout += t), writeStderr: (t) => (stderr += t) },
  );
  const frame = decodeFrame(stdout);
  const result = (frame.kind === 'complete' ? frame.result : undefined) as RunnerResult | undefined;
  return {
    exitCode,
    stdout,
    stderr,
    result,
    termination: existsSync(termination) ? readFileSync(termination, 'utf8') : '',
  };
}

const dockerConfig = JSON.stringify({
  auths: { '127.0.0.1:5000': { auth: Buffer.from(`ptah:${PASSWORD}`).toString('base64') } },
});

describe('runner OCI commands', () => {
  it('the guard refuses a Secret that grants another registry, before any request', async () => {
    const grants = secretDir('grants-other', { registry: 'registry.example:443' });
    const r = await run(['guard-oci-source', '--reference', PINNED, '--auth-dir', grants]);
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.operation, 'guard-oci-source');
    assert.equal(r.result?.error?.code, 'registry_grant_mismatch');
    assert.match(r.termination, /registry_grant_mismatch/);
  });

  it('the guard refuses a CA the grant does not name, and copies the exact bytes when it does', async () => {
    const ca = join(root, 'ca.crt');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n');
    const wrong = secretDir('grants-ca-wrong', {
      registry: '127.0.0.1:5000',
      caSHA256: `sha256:${'0'.repeat(64)}`,
    });
    const refused = await run([
      'guard-oci-source',
      '--reference',
      PINNED,
      '--auth-dir',
      wrong,
      '--ca-file',
      ca,
      '--ca-out',
      join(root, 'snap-1', 'ca.crt'),
    ]);
    assert.equal(refused.result?.error?.code, 'ca_grant_mismatch');
    assert.ok(!existsSync(join(root, 'snap-1', 'ca.crt')));

    const sum = `sha256:${createHash('sha256').update(readFileSync(ca)).digest('hex')}`;
    const right = secretDir('grants-ca-right', { registry: '127.0.0.1:5000', caSHA256: sum });
    const out = join(root, 'snap-2', 'ca.crt');
    const ok = await run([
      'guard-oci-source',
      '--reference',
      PINNED,
      '--auth-dir',
      right,
      '--ca-file',
      ca,
      '--ca-out',
      out,
    ]);
    assert.equal(ok.exitCode, 0, ok.stderr);
    assert.deepEqual(readFileSync(out), readFileSync(ca));
  });

  it('plain HTTP with a credential needs allowPlainHTTP', async () => {
    const auth = secretDir('auth-plain', { '.dockerconfigjson': dockerConfig, registry: '127.0.0.1:5000' });
    const r = await run([
      'resolve',
      '--reference',
      '127.0.0.1:5000/schemas/orders:v1',
      '--auth-dir',
      auth,
      '--plain-http',
    ]);
    assert.equal(r.result?.error?.code, 'plain_http_not_granted');
    assert.ok(
      !r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD) && !r.termination.includes(PASSWORD),
    );
  });

  it('a guard or fetch refuses a reference that is not digest-pinned', async () => {
    const r = await run([
      'fetch-oci',
      '--reference',
      '127.0.0.1:5000/schemas/orders:v1',
      '--artifact-type',
      'x/y',
      '--out',
      join(root, 'out'),
    ]);
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.error?.code, 'reference_not_pinned');
  });

  it('verify refuses policy bytes that do not give the bound digest', async () => {
    const r = await run(
      [
        'verify',
        '--reference',
        PINNED,
        '--artifact-type',
        'application/vnd.ptah.schema.v1',
        '--policy-digest',
        `sha256:${'b'.repeat(64)}`,
      ],
      { PTAH_VERIFICATION_POLICY: JSON.stringify({ 'policy.yaml': 'version: 1\n' }) },
    );
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.error?.code, 'policy_digest_mismatch');
  });

  it('a registry that cannot be reached fails with the client reason and never prints the password', async () => {
    const auth = secretDir('auth-down', { '.dockerconfigjson': dockerConfig, registry: '127.0.0.1:1' });
    const r = await run([
      'resolve',
      '--reference',
      '127.0.0.1:1/schemas/orders:v1',
      '--auth-dir',
      auth,
      '--plain-http',
    ]);
    // Granted registry 127.0.0.1:1 but no allowPlainHTTP: refused first; grant it and the network fails.
    assert.equal(r.result?.error?.code, 'plain_http_not_granted');
    writeFileSync(join(auth, 'allowPlainHTTP'), 'true');
    const down = await run([
      'resolve',
      '--reference',
      '127.0.0.1:1/schemas/orders:v1',
      '--auth-dir',
      auth,
      '--plain-http',
    ]);
    assert.equal(down.exitCode, 1);
    assert.equal(down.result?.outcome, 'failed');
    assert.equal(down.result?.error?.code, 'unreachable');
    assert.ok(!down.stdout.includes(PASSWORD) && !down.stderr.includes(PASSWORD));
  });
});
