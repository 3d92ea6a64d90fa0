/**
 * The compiled programs: `npm run build` bundles them into dist/, and they start without a loader.
 * Start-up time itself is measured in the benchmarks, not asserted here.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { builtProgram } from '../env/build-output.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('npm run build', () => {
  it('ptah, kubectl-ptah and the runner are bundles that run under plain Node (the e2e tests run the manager)', async () => {
    const ptah = builtProgram('ptah');
    assert.equal((await run(process.execPath, [ptah, '--version'])).stdout, `ptah ${version}\n`);
    assert.match((await run(process.execPath, [ptah, '--help'])).stdout, /^usage: ptah <command>/);
    const plugin = builtProgram('kubectl-ptah');
    assert.equal((await run(process.execPath, [plugin, '--version'])).stdout, `kubectl-ptah ${version}\n`);
    // The runner refuses an empty command line with its own usage error, so it loaded and parsed.
    const runner = await run(process.execPath, [builtProgram('ptah-runner')]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal((runner as { code: number }).code, 2);
    assert.match((runner as { stderr: string }).stderr, /^ptah-runner: /);
  });

  it('bin/ launchers run the current bundle', async () => {
    builtProgram('ptah');
    const { stdout } = await run(process.execPath, [join(ROOT, 'bin', 'ptah.mjs'), '--version']);
    assert.equal(stdout, `ptah ${version}\n`);
  });
});
