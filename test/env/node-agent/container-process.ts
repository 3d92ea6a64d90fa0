import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { ContainerLogWriter } from './container-log.ts';
import { planContainerScript, type ContainerLaunch, type HostView } from './mount-plan.ts';

export interface ContainerExit {
  /** 128 + signal number when a signal ended it, as container runtimes report. */
  readonly exitCode: number;
  readonly signal?: number;
}

export interface RunningContainer {
  readonly pid: number;
  readonly exited: Promise<ContainerExit>;
  /** Signals the container's program; SIGKILL reaches everything it started too. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): void;
}

/**
 * Starts one container instance: a private mount namespace set up by the planned script, which
 * then execs the program, so the pid is the program's own and signals reach it directly. The
 * process leads its own process group so a SIGKILL also takes down anything it spawned.
 */
export function startContainer(
  launch: ContainerLaunch,
  env: ReadonlyMap<string, string>,
  logFile: string,
  host: HostView,
): RunningContainer {
  const script = planContainerScript(launch, host);
  const log = new ContainerLogWriter(logFile);
  const child = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', script], {
    env: Object.fromEntries(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.stdout) log.attach(child.stdout);
  if (child.stderr) log.attach(child.stderr);
  const exited = new Promise<ContainerExit>((resolve) => {
    child.once('error', (error) => {
      void log.close().then(() => resolve({ exitCode: 128 }));
      console.error(`node-agent: could not start a container: ${error.message}`);
    });
    // When the program exits, whatever it left behind dies with it, as a container's cgroup
    // would; only then do the pipes close.
    child.once('exit', () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already empty
      }
    });
    child.once('close', (code, signal) => {
      void log.close().then(() => {
        if (signal) {
          const number = constants.signals[signal];
          resolve({ exitCode: 128 + number, signal: number });
        } else {
          resolve({ exitCode: code ?? 0 });
        }
      });
    });
  });
  return {
    pid: child.pid ?? -1,
    exited,
    kill(signal) {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        if (signal === 'SIGKILL') process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        // already gone
      }
    },
  };
}
