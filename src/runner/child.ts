/**
 * Runs one `ptah` command: never through a shell, with a fixed minimal environment, bounded capture of
 * stdout and stderr, a deadline and an AbortSignal. On deadline or abort the child gets SIGTERM and two
 * thirds of the grace period, then SIGKILL, so the runner keeps the last third to write its result.
 */
import { spawn } from 'node:child_process';
import type { PtahCommand } from './options.ts';

/** Variables a child may inherit from the runner's environment; everything else is dropped. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'] as const;

export interface ChildRequest {
  readonly ptah: PtahCommand;
  /** ptah's own arguments: paths and flags only, never a credential. */
  readonly args: readonly string[];
  /** Variables set for the child on top of the inherited ones (PTAH_DB_URL and engine settings). */
  readonly env: Readonly<Record<string, string>>;
  readonly deadline: Date;
  readonly graceMs: number;
  readonly stdoutLimit: number;
  readonly stderrLimit: number;
  readonly signal?: AbortSignal;
}

export interface ChildResult {
  /** The exit code, or -1 when the child was killed by a signal or could not start. */
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly stdoutBytesDropped: number;
  readonly stderrBytesDropped: number;
  /** The child was stopped because the deadline passed or the runner was asked to stop. */
  readonly stopped: 'deadline' | 'aborted' | undefined;
  /** The child could not be started at all (no such file, not executable). */
  readonly spawnFailed: boolean;
}

export async function runChild(
  req: ChildRequest,
  parentEnv: NodeJS.ProcessEnv = process.env,
): Promise<ChildResult> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const v = parentEnv[name];
    if (v !== undefined) env[name] = v;
  }
  Object.assign(env, req.env);

  const stdout = new BoundedBuffer(req.stdoutLimit);
  const stderr = new BoundedBuffer(req.stderrLimit);
  let stopped: ChildResult['stopped'];
  let spawnFailed = false;

  const child = spawn(req.ptah.file, [...req.ptah.prefixArgs, ...req.args], {
    env,
    shell: false,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));

  let killTimer: NodeJS.Timeout | undefined;
  const stop = (why: 'deadline' | 'aborted'): void => {
    if (stopped !== undefined || child.exitCode !== null) return;
    stopped = why;
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), Math.max(1, Math.floor((req.graceMs * 2) / 3)));
  };
  const deadlineTimer = setTimeout(() => stop('deadline'), Math.max(0, req.deadline.getTime() - Date.now()));
  const onAbort = (): void => stop('aborted');
  req.signal?.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted) onAbort();

  const exitCode = await new Promise<number>((resolve) => {
    child.once('error', () => {
      spawnFailed = true;
      resolve(-1);
    });
    // 'close' waits for stdio to drain, so the capture is complete.
    child.once('close', (code) => resolve(code ?? -1));
  });
  clearTimeout(deadlineTimer);
  if (killTimer !== undefined) clearTimeout(killTimer);
  req.signal?.removeEventListener('abort', onAbort);

  return {
    exitCode,
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    stdoutBytesDropped: stdout.dropped,
    stderrBytesDropped: stderr.dropped,
    stopped,
    spawnFailed,
  };
}

/** Keeps the first `limit` bytes and counts the rest, so a chatty child cannot exhaust the Pod's memory. */
class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    const room = this.limit - this.size;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(kept);
    this.size += kept.length;
    this.dropped += chunk.length - kept.length;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}
