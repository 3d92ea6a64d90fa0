import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** A long-running child whose stdout and stderr go to one log file. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  exited(): boolean;
}

// Children still running when this process exits (a test that threw before its cleanup, a Ctrl-C) would
// otherwise be orphaned with their ports open; kill them on the way out.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  logFile: string,
  options: Omit<SpawnOptions, 'stdio'> = {},
): ManagedProcess {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { ...options, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let done = false;
  live.add(child);
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      live.delete(child);
      resolve();
    });
    child.once('error', () => {
      done = true;
      resolve();
    });
  });
  if (child.pid === undefined) {
    throw new Error(`${name}: could not start ${command}; see ${logFile}`);
  }
  return {
    name,
    pid: child.pid,
    logFile,
    child,
    exited: () => done,
    async stop(graceMs = 10_000) {
      if (done) return;
      child.kill('SIGTERM');
      // A cleared timer, not a pending sleep: it must not hold the caller's event loop open.
      const timer = setTimeout(() => {
        if (!done) child.kill('SIGKILL');
      }, graceMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** Polls `probe` until it resolves true, the process exits, or the deadline passes. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number; process?: ManagedProcess } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (options.process?.exited()) {
      throw new Error(
        `${what}: ${options.process.name} exited before it was ready; see ${options.process.logFile}`,
      );
    }
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = error;
    }
    await sleep(options.intervalMs ?? 200);
  }
  const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
  const log = options.process ? `; see ${options.process.logFile}` : '';
  throw new Error(`${what}: not ready after ${options.timeoutMs ?? 60_000} ms${detail}${log}`);
}

export interface ListenerStart {
  /** Starts the server on the given port. */
  readonly start: (port: number) => ManagedProcess;
  /** Resolves true once the started server accepts connections. */
  readonly ready: (process: ManagedProcess) => Promise<boolean>;
  readonly timeoutMs: number;
}

/**
 * Starts a server on a free loopback port. Another process can take the port between our probe and the
 * server's bind, so a start that does not become ready is stopped and retried on a new port.
 */
export async function startOnFreePort(
  what: string,
  freePort: () => Promise<number>,
  options: ListenerStart,
): Promise<{ process: ManagedProcess; port: number }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const candidate = options.start(port);
    try {
      await waitUntil(what, () => options.ready(candidate), {
        process: candidate,
        timeoutMs: options.timeoutMs,
      });
      return { process: candidate, port };
    } catch (error) {
      lastError = error;
      await candidate.stop();
    }
  }
  throw lastError instanceof Error ? lastError : new Error(`${what}: could not start`);
}
