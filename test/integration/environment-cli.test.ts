import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { EnvironmentDescription } from '../env/environment.ts';
import { descendants, listeningPorts, processAlive } from '../env/host-state.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

async function envCommand(stateDir: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return await run('npm', ['run', '-s', 'env', '--', ...args], {
    cwd: repoRoot,
    env: { ...process.env, PTAH_ENV_DIR: stateDir },
    timeout: 300_000,
  });
}

test('npm run env -- up starts a detached environment; down leaves no process and no listening port', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'ptah-env-cli-'));
  // The database servers run as their own system users and must be able to traverse into it.
  chmodSync(parent, 0o755);
  const stateDir = join(parent, 'env');
  try {
    const upResult = await envCommand(stateDir, 'up');
    // `up` has returned: everything below runs without the command that started it.
    const description = JSON.parse(
      readFileSync(join(stateDir, 'env.json'), 'utf8'),
    ) as EnvironmentDescription;
    const supervisor = Number(readFileSync(join(stateDir, 'supervisor.pid'), 'utf8'));
    const tree = descendants(supervisor);
    for (const p of description.processes) {
      assert.ok(tree.includes(p.pid), `${p.name} (pid ${p.pid}) should run under the supervisor`);
      assert.ok(processAlive(p.pid), `${p.name} should be running after up`);
    }
    const listening = listeningPorts();
    for (const port of description.ports)
      assert.ok(listening.has(port), `port ${port} should listen after up`);
    assert.ok(description.ports.length >= 4);
    // Printed endpoints never carry the passwords the JSON file holds.
    for (const secretUrl of [description.postgres?.adminUrl, description.mariadb?.adminUrl]) {
      const password = secretUrl ? decodeURIComponent(new URL(secretUrl).password) : '';
      assert.ok(password.length > 0);
      assert.ok(!upResult.stdout.includes(password), 'up printed a database password');
    }
    assert.match(upResult.stdout, new RegExp(description.server.replace(/[.]/g, '\\.')));

    // The printed export lines are all a person needs to use kubectl at once, as each identity.
    const path = /export PATH=(\S+):"\$PATH"/.exec(upResult.stdout)?.[1];
    assert.ok(path, `up printed no PATH line:\n${upResult.stdout}`);
    const exports = [...upResult.stdout.matchAll(/export KUBECONFIG=(\S+) +# (\w+)/g)];
    assert.deepEqual(
      exports.map((m) => m[2]).sort(),
      Object.keys(description.kubeconfigs).sort(),
      'one KUBECONFIG line per identity',
    );
    const usernames: Record<string, string> = description.identities;
    for (const [, kubeconfig, who] of exports) {
      const whoami: { stdout: string } = await run(
        'kubectl',
        ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'],
        {
          env: { ...process.env, PATH: `${path}:${process.env['PATH'] ?? ''}`, KUBECONFIG: kubeconfig },
        },
      );
      const expected = usernames[who!];
      if (expected !== undefined) assert.equal(whoami.stdout, expected, `kubectl as ${who}`);
      else assert.ok(whoami.stdout.length > 0, `kubectl as ${who} has a username`);
    }

    const status = await envCommand(stateDir, 'status');
    assert.match(status.stdout, /env: up/);

    const downResult = await envCommand(stateDir, 'down');
    assert.match(downResult.stdout, /env: down/);
    assert.ok(!existsSync(stateDir), 'down removes the state directory');
    const stillAlive = [supervisor, ...tree].filter((pid) => processAlive(pid));
    assert.deepEqual(stillAlive, [], 'no process started by up survives down');
    const after = listeningPorts();
    assert.deepEqual(
      description.ports.filter((port) => after.has(port)),
      [],
      'no port of the environment listens after down',
    );
  } finally {
    // A failed assertion above must not leave an environment running.
    if (existsSync(join(stateDir, 'supervisor.pid')))
      await envCommand(stateDir, 'down').catch(() => undefined);
    rmSync(parent, { recursive: true, force: true });
  }
});
