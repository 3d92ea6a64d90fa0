/**
 * `npm run env -- up|down|status`: a detached local environment for demos and manual work.
 * `up` hands everything to a supervisor process (test/env/supervisor.ts) that outlives this
 * command; `down` stops that supervisor's whole process group and proves nothing is left.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  COMPONENTS,
  nodeAgentAvailable,
  printableDescription,
  type Component,
  type EnvironmentDescription,
} from './environment.ts';
import { listeningPorts, processAlive } from './host-state.ts';
import { findKubernetesBinaries } from './k8s-binaries.ts';
import { FAILED_FILE, READY_FILE } from './supervisor-files.ts';

const stateDir = process.env['PTAH_ENV_DIR'] ?? join(tmpdir(), 'ptah-env');
const pidFile = join(stateDir, 'supervisor.pid');
const logFile = join(stateDir, 'supervisor.log');
const envFile = join(stateDir, 'env.json');

function supervisorPid(): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function readDescription(): EnvironmentDescription | undefined {
  if (!existsSync(envFile)) return undefined;
  return JSON.parse(readFileSync(envFile, 'utf8')) as EnvironmentDescription;
}

/** Single-quoted for a POSIX shell, so a pasted line means exactly the path printed. */
function shellQuote(value: string): string {
  return /^[\w./:=@-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

const repoBin = fileURLToPath(new URL('../../bin/', import.meta.url)).replace(/\/$/, '');

/**
 * Lines a person pastes to use kubectl (built at the control plane's version) and `kubectl ptah` (from
 * this checkout's bin/) as one of the environment's identities.
 */
function kubectlExports(description: EnvironmentDescription, binDir: string): string[] {
  const users: Record<string, string> = description.identities;
  return [
    'kubectl and kubectl ptah; paste the PATH line, then the line of one identity:',
    `  export PATH=${shellQuote(`${binDir}:${repoBin}`)}:"$PATH"`,
    ...Object.entries(description.kubeconfigs).map(
      ([who, path]) =>
        `  export KUBECONFIG=${shellQuote(path)}   # ${who}${users[who] ? ` (${users[who]})` : ''}`,
    ),
  ];
}

function kubernetesBinDir(): string {
  return process.env['PTAH_K8S_BIN'] ?? dirname(findKubernetesBinaries().kubectl);
}

function printEndpoints(description: EnvironmentDescription, binDir: string): void {
  const safe = printableDescription(description);
  const lines = [
    `API server:      ${safe.server}`,
    `cluster CA:      ${safe.caFile}`,
    ...Object.entries(safe.kubeconfigs).map(([who, path]) => `kubeconfig ${who.padEnd(9)}${path}`),
    `test namespace:  ${safe.testNamespace}`,
    `image map:       ${safe.imageMapFile}`,
  ];
  if (safe.node) lines.push(`node agent:      ${safe.node.name} (kubelet API 127.0.0.1:${safe.node.port})`);
  if (safe.postgres) lines.push(`PostgreSQL:      ${safe.postgres.adminUrl}`);
  if (safe.mariadb) lines.push(`MariaDB:         ${safe.mariadb.adminUrl}`);
  if (safe.registry) lines.push(`OCI registry:    ${safe.registry.url}`);
  if (safe.git) {
    lines.push(`git over HTTP:   ${safe.git.httpBaseUrl}`);
    lines.push(`git over SSH:    ssh://${safe.git.sshUser}@${safe.git.sshHost}:${safe.git.sshPort}`);
  }
  lines.push(`everything (JSON, mode 0600, holds passwords): ${envFile}`);
  lines.push(...kubectlExports(safe, binDir));
  console.log(lines.join('\n'));
}

function parseComponents(args: readonly string[]): Component[] {
  const without = new Set<string>();
  for (const arg of args) {
    const m = /^--without=(.*)$/.exec(arg);
    if (!m)
      throw new Error(`env up: unknown argument ${arg} (try --without=postgres,mariadb,registry,git,node)`);
    for (const c of (m[1] ?? '').split(',')) if (c) without.add(c);
  }
  for (const c of without) {
    if (!(COMPONENTS as readonly string[]).includes(c)) throw new Error(`env up: unknown component ${c}`);
  }
  // Until the node agent exists, an environment without it is still useful.
  if (!nodeAgentAvailable()) without.add('node');
  return COMPONENTS.filter((c) => !without.has(c));
}

async function up(args: readonly string[]): Promise<number> {
  const components = parseComponents(args);
  // Build (or find) the binaries here, in the foreground, so a cold build shows its progress.
  const binDir = kubernetesBinDir();
  const running = supervisorPid();
  if (running !== undefined && processAlive(running)) {
    const description = readDescription();
    console.log(`env: already up (supervisor pid ${running})`);
    if (description) printEndpoints(description, binDir);
    return 0;
  }
  // Leftovers of a crashed or failed run: clear them so stale files cannot be mistaken for state.
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });

  const started = Date.now();
  const supervisor = fileURLToPath(new URL('./supervisor.ts', import.meta.url));
  const log = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), supervisor, stateDir, components.join(',')],
    { detached: true, stdio: ['ignore', log, log], env: { ...process.env, PTAH_K8S_BIN: binDir } },
  );
  closeSync(log);
  if (child.pid === undefined) throw new Error('env up: could not start the supervisor');
  writeFileSync(pidFile, `${child.pid}\n`);
  child.unref();

  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    if (existsSync(join(stateDir, READY_FILE))) {
      console.log(`env: up in ${((Date.now() - started) / 1000).toFixed(1)} s (supervisor pid ${child.pid})`);
      printEndpoints(readDescription() as EnvironmentDescription, binDir);
      return 0;
    }
    if (existsSync(join(stateDir, FAILED_FILE)) || !processAlive(child.pid)) {
      const reason = existsSync(join(stateDir, FAILED_FILE))
        ? readFileSync(join(stateDir, FAILED_FILE), 'utf8').trim()
        : 'the supervisor exited';
      console.error(
        `env: up failed: ${reason}\nsupervisor log: ${logFile}\n(run \`npm run env -- down\` to clean up)`,
      );
      return 1;
    }
    await sleep(200);
  }
  console.error(`env: not ready after 300 s; supervisor log: ${logFile}`);
  return 1;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already empty.
  }
}

async function down(): Promise<number> {
  const pid = supervisorPid();
  const description = readDescription();
  if (pid === undefined && !existsSync(stateDir)) {
    console.log('env: nothing to stop');
    return 0;
  }
  if (pid !== undefined && processAlive(pid)) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 60_000;
    while (processAlive(pid) && Date.now() < deadline) await sleep(200);
  }
  // Whatever the supervisor failed to stop, or left behind when it crashed, goes with its group.
  if (pid !== undefined) killGroup(pid, 'SIGKILL');
  const recorded = description?.processes ?? [];
  for (const p of recorded) {
    if (processAlive(p.pid)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  // Let the kernel reap and release sockets before checking.
  const deadline = Date.now() + 10_000;
  let alive: { name: string; pid: number }[] = [];
  let listening: number[] = [];
  do {
    alive = [...recorded, ...(pid !== undefined ? [{ name: 'supervisor', pid }] : [])].filter((p) =>
      processAlive(p.pid),
    );
    const ports = listeningPorts();
    listening = (description?.ports ?? []).filter((port) => ports.has(port));
    if (alive.length === 0 && listening.length === 0) break;
    await sleep(200);
  } while (Date.now() < deadline);
  rmSync(stateDir, { recursive: true, force: true });
  if (alive.length > 0 || listening.length > 0) {
    console.error(
      `env: down left ${alive.map((p) => `${p.name} (pid ${p.pid})`).join(', ') || 'no process'} running and ` +
        `${listening.join(', ') || 'no port'} listening`,
    );
    return 1;
  }
  console.log(
    `env: down; ${recorded.length + (pid !== undefined ? 1 : 0)} processes stopped, ` +
      `${description?.ports.length ?? 0} ports released, ${stateDir} removed`,
  );
  return 0;
}

function status(): number {
  const pid = supervisorPid();
  if (pid === undefined || !processAlive(pid)) {
    console.log(existsSync(stateDir) ? `env: not running (stale state in ${stateDir})` : 'env: not running');
    return pid === undefined ? 0 : 1;
  }
  const description = readDescription();
  if (!description) {
    console.log(`env: starting (supervisor pid ${pid}); log: ${logFile}`);
    return 0;
  }
  const ports = listeningPorts();
  console.log(`env: up (supervisor pid ${pid})`);
  for (const p of description.processes) {
    console.log(
      `  ${p.name.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${processAlive(p.pid) ? 'running' : 'GONE'}`,
    );
  }
  const silent = description.ports.filter((port) => !ports.has(port));
  console.log(
    `  ports: ${description.ports.join(', ')}${silent.length ? ` (not listening: ${silent.join(', ')})` : ''}`,
  );
  printEndpoints(description, kubernetesBinDir());
  return description.processes.every((p) => processAlive(p.pid)) && silent.length === 0 ? 0 : 1;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'up':
      return await up(rest);
    case 'down':
      return await down();
    case 'status':
      return status();
    default:
      console.error(
        'usage: npm run env -- up [--without=node,postgres,mariadb,registry,git] | down | status',
      );
      return 2;
  }
}

// `npm run env -- status | head` closes the pipe early; that is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});
process.exitCode = await main(process.argv.slice(2));
