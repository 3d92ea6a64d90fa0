/**
 * Runs git (or ssh) with bounded output, a deadline, and its failures turned into reasons: the last line git
 * wrote is what a refusal shows, as the seed asks, after the credential-bearing parts are cut away.
 */
import { spawn } from 'node:child_process';
import { GitSourceError, type GitErrorReason } from './errors.ts';

export interface RunResult {
  readonly stdout: Buffer;
  readonly stderr: string;
}

export interface RunOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly input?: Buffer | string;
  /** stdout beyond this is a refusal (TooLarge), not a truncation. */
  readonly maxStdout: number;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

const STDERR_LIMIT = 64 * 1024;
const GIT_BIN = process.env['PTAH_GIT_BIN'] ?? 'git';

export function runGit(args: readonly string[], options: RunOptions): Promise<RunResult> {
  return runProcess(GIT_BIN, args, options);
}

export function runProcess(bin: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      env: options.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      signal: options.signal,
      timeout: options.timeoutMs ?? 120_000,
      killSignal: 'SIGKILL',
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let overflow = false;
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > options.maxStdout) {
        overflow = true;
        child.kill('SIGKILL');
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < STDERR_LIMIT) err += chunk.toString('utf8').slice(0, STDERR_LIMIT - err.length);
    });
    child.on('error', (e) =>
      reject(new GitSourceError('Unreachable', `could not run ${bin}: ${e.message}`, { cause: e })),
    );
    child.on('close', (code, signal) => {
      if (overflow)
        return reject(new GitSourceError('TooLarge', `${bin} wrote more than ${options.maxStdout} bytes`));
      if (code === 0) return resolve({ stdout: Buffer.concat(out), stderr: err });
      const line = lastLine(err) ?? (signal !== null ? `killed by ${signal}` : `exit code ${code}`);
      reject(new GitSourceError(classify(err), line));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The last non-empty line, without the `fatal: ` / `error: ` prefix and with anything credential-like cut. */
export function lastLine(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((l) => l.replace(/\r$/, '').trim())
    .filter((l) => l.length > 0 && !l.startsWith('hint:') && !l.startsWith('Warning: Permanently added'));
  const last = lines.at(-1);
  return last === undefined ? undefined : redact(last).slice(0, 400);
}

/** URL userinfo and Authorization values never leave this module. */
export function redact(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1')
    .replace(/(authorization:\s*)\S+(\s+\S+)?/gi, '$1[redacted]');
}

const PATTERNS: ReadonlyArray<readonly [RegExp, GitErrorReason]> = [
  [
    /host key verification failed|no .* host key is known|REMOTE HOST IDENTIFICATION HAS CHANGED/i,
    'HostKeyNotPinned',
  ],
  [
    /authentication failed|permission denied|HTTP Basic: Access denied|returned error: 40[13]|could not read Username/i,
    'Unauthorized',
  ],
  [
    /not our ref|unadvertised object|upload-pack: not our|Server does not allow request for unadvertised/i,
    'CommitNotAdvertised',
  ],
  [/couldn't find remote ref|Remote branch .* not found|no such ref/i, 'RefNotFound'],
  [
    /could not resolve host|connection refused|timed out|Connection reset|could not connect|SSL|certificate|Failed to connect|unable to access/i,
    'Unreachable',
  ],
];

function classify(stderr: string): GitErrorReason {
  return PATTERNS.find(([pattern]) => pattern.test(stderr))?.[1] ?? 'ProtocolError';
}
