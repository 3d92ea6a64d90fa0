/**
 * The runner's two Git commands, one per row of the credential routing table that touches a Git server:
 *
 * - `resolve-git` (Resolve's main container): the commit the ref names now and the content digest of the
 *   selected files. Git credential, no database credential. Its frame says operation `resolve`, as an OCI
 *   Resolve's does: the manager claims one Resolve whatever the source.
 * - `fetch-git` (the fetch init container of Observe, Plan, History and a migration's Apply): the recorded
 *   commit fetched again, held to the recorded content digest; the runner reads back what Ptah wrote and
 *   checks it again before it copies the files where the operation container reads them.
 *
 * Before Ptah starts, the runner checks the Secret's grants: a credential goes only to the host[:port] the
 * Secret's `host` key names, a CA bundle or known-hosts file is used only when the Secret holds its SHA-256
 * (`caSHA256`, `knownHostsSHA256`), and plain HTTP with a credential only with `allowPlainHTTP: "true"`.
 * Ptah itself is a child process given private copies of the credential and trust files in a directory only
 * this container mounts; it never sees the grants. Every line that leaves goes through the redactor, which
 * knows the password and the private key.
 */
import { readSourceFlags, SourceOptionsError } from './source-flags.ts';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sha256Digest } from '../api/digest.ts';
import { parseRemote, GitSourceError } from '../sources/git/index.ts';
import { EXIT } from '../cli/exit-codes.ts';
import { materialiseSnapshot } from '../sources/verify-snapshot.ts';
import { runChild } from './child.ts';
import { failed, refused, RUNNER_EXIT, type OperationReport } from './operation.ts';
import { ptahCommand } from './options.ts';

export const GIT_COMMANDS = ['resolve-git', 'fetch-git'] as const;
export type GitCommand = (typeof GIT_COMMANDS)[number];

export function isGitCommand(value: string | undefined): value is GitCommand {
  return (GIT_COMMANDS as readonly (string | undefined)[]).includes(value);
}

/** The operation a Git command's frame names. */
export const GIT_COMMAND_OPERATION = { 'resolve-git': 'resolve', 'fetch-git': 'fetch-git' } as const;

export interface GitCommandOptions {
  readonly command: GitCommand;
  readonly repository: string;
  /** refs/heads/<branch>, refs/tags/<tag> or a commit id. */
  readonly ref: string;
  readonly path: string;
  /** The mounted Git Secret, whole: username/password or ssh-privatekey, and the grant keys. */
  readonly authDir?: string;
  readonly caFile?: string;
  readonly knownHostsFile?: string;
  readonly plainHttp: boolean;
  /** A directory only this container mounts: the private copies Ptah reads, and what it writes. */
  readonly privateDir: string;
  /** fetch-git: the commit and content digest the operation is bound to, and where the files go. */
  readonly commit?: string;
  readonly digest?: Sha256Digest;
  readonly outDir?: string;
  /** The ptah program (tests and the image say where it is). */
  readonly ptahBinary?: string;
}

const FLAGS = [
  'repository',
  'ref',
  'path',
  'auth-dir',
  'ca-file',
  'known-hosts',
  'private-dir',
  'commit',
  'digest',
  'out',
] as const;

export function compileGitOptions(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): GitCommandOptions {
  const command = argv[0];
  if (!isGitCommand(command)) throw new SourceOptionsError('invalid_option', 'unknown Git command');
  const { values, plainHttp } = readSourceFlags(argv.slice(1), FLAGS);
  const need = (flag: (typeof FLAGS)[number]): string => {
    const v = values[flag];
    if (v === undefined || v === '')
      throw new SourceOptionsError('invalid_option', `--${flag} is missing for ${command}`);
    return v;
  };
  const fetch = command === 'fetch-git';
  const digest = fetch ? need('digest') : undefined;
  if (digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new SourceOptionsError('invalid_option', '--digest must be sha256:<64 hex>');
  const binary = env['PTAH_RUNNER_PTAH_BINARY'];
  return {
    command,
    repository: need('repository'),
    ref: need('ref'),
    path: values.path ?? '.',
    privateDir: need('private-dir'),
    plainHttp,
    ...(values['auth-dir'] !== undefined ? { authDir: values['auth-dir'] } : {}),
    ...(values['ca-file'] !== undefined ? { caFile: values['ca-file'] } : {}),
    ...(values['known-hosts'] !== undefined ? { knownHostsFile: values['known-hosts'] } : {}),
    ...(fetch ? { commit: need('commit'), digest: digest as Sha256Digest, outDir: need('out') } : {}),
    ...(binary !== undefined && binary !== '' ? { ptahBinary: binary } : {}),
  };
}

const MAX_SECRET_FILE_BYTES = 64 * 1024;
const MAX_TRUST_FILE_BYTES = 1024 * 1024;
/** Ptah's JSON answer is small (a manifest's file list at most); anything longer is not an answer. */
const MAX_PTAH_STDOUT = 1024 * 1024;
const MAX_PTAH_STDERR = 64 * 1024;
const DEADLINE_MS = 15 * 60 * 1000;

/** The credential's values, for the redactor: the password and the private key. */
export function gitSecrets(options: GitCommandOptions): string[] {
  const out: string[] = [];
  for (const key of ['password', 'ssh-privatekey']) {
    const text = readBounded(options.authDir, key, MAX_SECRET_FILE_BYTES);
    if (text !== undefined && text.trim() !== '') {
      out.push(text, text.trim(), ...text.split('\n').filter((l) => l.trim().length >= 16));
    }
  }
  return out;
}

export async function runGitCommand(
  options: GitCommandOptions,
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<OperationReport> {
  try {
    const remote = parseRemote(options.repository, { allowPlainHttp: options.plainHttp });
    const ca = readBounded(options.caFile, undefined, MAX_TRUST_FILE_BYTES, true);
    const knownHosts = readBounded(options.knownHostsFile, undefined, MAX_TRUST_FILE_BYTES, true);
    const credential = credentialOf(options.authDir);
    const refusal = checkGrants(options, remote.authority, credential !== undefined, ca, knownHosts);
    if (refusal !== undefined) {
      say(`refused: ${refusal.message}`);
      return refused(refusal.code, refusal.message);
    }
    // Private copies: Ptah reads these, never the mounts (which the grants were checked against once, here).
    const credDir = join(options.privateDir, 'credential');
    const trustDir = join(options.privateDir, 'trust');
    mkdirSync(credDir, { recursive: true, mode: 0o700 });
    mkdirSync(trustDir, { recursive: true, mode: 0o700 });
    for (const [key, value] of Object.entries(credential ?? {}))
      writeFileSync(join(credDir, key), value, { mode: 0o400, flag: 'wx' });
    const args = [
      'git',
      options.command === 'resolve-git' ? 'resolve' : 'pull',
      '--repository',
      options.repository,
      '--ref',
      options.ref,
      '--path',
      options.path,
      '--credentials',
      credDir,
      '--json',
    ];
    if (ca !== undefined) {
      writeFileSync(join(trustDir, 'ca.crt'), ca, { mode: 0o400, flag: 'wx' });
      args.push('--ca-file', join(trustDir, 'ca.crt'));
    }
    if (knownHosts !== undefined) {
      writeFileSync(join(trustDir, 'known_hosts'), knownHosts, { mode: 0o400, flag: 'wx' });
      args.push('--known-hosts', join(trustDir, 'known_hosts'));
    }
    if (options.plainHttp) args.push('--plain-http');
    const pulled = join(options.privateDir, 'pulled');
    if (options.command === 'fetch-git')
      args.push('--commit', options.commit!, '--digest', options.digest!, '--dir', pulled);

    const child = await runChild({
      ptah: ptahCommand(options.ptahBinary),
      args,
      env: { HOME: options.privateDir, TMPDIR: options.privateDir },
      deadline: new Date(Date.now() + DEADLINE_MS),
      graceMs: 10_000,
      stdoutLimit: MAX_PTAH_STDOUT,
      stderrLimit: MAX_PTAH_STDERR,
      ...(signal !== undefined ? { signal } : {}),
    });
    const lastLine = child.stderr.toString('utf8').trim().split('\n').filter(Boolean).at(-1) ?? '';
    const answer = parseAnswer(child.stdout.toString('utf8'));
    if (child.exitCode !== 0) {
      const reason = answer?.error?.reason ?? 'ProtocolError';
      const message = (lastLine || answer?.error?.message || `ptah git exited ${child.exitCode}`).slice(
        0,
        512,
      );
      say(message);
      // A refusal of the source (a submodule, an unpinned host key …) against what the network did.
      const report = REFUSED_EXIT.has(child.exitCode) ? refused : failedWithChild(child.exitCode);
      return report(snake(reason), message);
    }
    if (options.command === 'resolve-git') return resolvedReport(options, answer, say);
    // The runner reads back what Ptah wrote and checks it again before the operation container sees it.
    const checked = materialiseSnapshot(pulled, options.digest!, options.outDir!);
    if (!checked.ok) {
      const message = `the fetched files failed the runner's check at ${checked.failing}: ${checked.message}`;
      say(message);
      return refused('digest_mismatch', message);
    }
    say(`fetched ${checked.files.length} files of ${options.commit} giving ${options.digest}`);
    return succeeded({});
  } catch (error) {
    if (error instanceof GitSourceError) {
      say(`${options.command} refused: ${error.message}`);
      return refused(snake(error.reason), error.message.slice(0, 512));
    }
    throw error;
  }
}

/** ptah git's exit codes for a source it refuses on purpose (docs/cli-git.md), against what the network did. */
const REFUSED_EXIT: ReadonlySet<number> = new Set([EXIT.usage, EXIT.refused]);

function failedWithChild(exitCode: number) {
  return (code: string, message: string): OperationReport => failed(code, message, exitCode);
}

interface PtahAnswer {
  readonly repository?: string;
  readonly ref?: string;
  readonly path?: string;
  readonly commit?: string;
  readonly contentDigest?: string;
  readonly sourceDigest?: string;
  readonly files?: readonly { readonly path: string; readonly size: number }[];
  readonly error?: { readonly reason?: string; readonly message?: string };
}

function parseAnswer(stdout: string): PtahAnswer | undefined {
  const line = stdout.trim().split('\n').at(-1);
  if (line === undefined || line === '') return undefined;
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null ? (v as PtahAnswer) : undefined;
  } catch {
    return undefined;
  }
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

function resolvedReport(
  options: GitCommandOptions,
  answer: PtahAnswer | undefined,
  say: (line: string) => void,
): OperationReport {
  const files = answer?.files ?? [];
  if (
    answer === undefined ||
    answer.commit === undefined ||
    !COMMIT.test(answer.commit) ||
    answer.contentDigest === undefined ||
    !DIGEST.test(answer.contentDigest) ||
    answer.sourceDigest === undefined ||
    !DIGEST.test(answer.sourceDigest) ||
    answer.repository !== options.repository ||
    answer.ref !== options.ref ||
    answer.path !== options.path
  ) {
    return failed('protocol_error', 'ptah git resolve gave no readable answer for the source', 0);
  }
  say(`resolved ${options.ref} of ${options.repository} to ${answer.commit} (${answer.contentDigest})`);
  return succeeded({
    gitCommit: {
      repository: options.repository,
      ref: options.ref,
      path: options.path,
      commit: answer.commit,
      contentDigest: answer.contentDigest,
      sourceDigest: answer.sourceDigest,
      files: files.length,
      size: files.reduce((n, f) => n + (Number.isFinite(f.size) ? f.size : 0), 0),
    },
  });
}

function succeeded(outputs: OperationReport['outputs']): OperationReport {
  return { outcome: 'succeeded', exitCode: RUNNER_EXIT.succeeded, childExitCode: 0, outputs };
}

/** The credential keys a Git Secret may hold, read once; undefined when no Secret is mounted or it holds none. */
function credentialOf(dir: string | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const key of ['username', 'password', 'ssh-privatekey']) {
    const v = readBounded(dir, key, MAX_SECRET_FILE_BYTES);
    if (v !== undefined) out[key] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The Secret's grants, checked before Ptah starts: a credential goes only to the authority the Secret names,
 * over a CA and known hosts whose exact bytes it names, and over plain HTTP only when it says so.
 */
function checkGrants(
  options: GitCommandOptions,
  authority: string,
  hasCredential: boolean,
  ca: Buffer | undefined,
  knownHosts: Buffer | undefined,
): { code: string; message: string } | undefined {
  if (!hasCredential) return undefined;
  const granted = readBounded(options.authDir, 'host', 1024)?.trim();
  if (granted === undefined || granted === '')
    return {
      code: 'host_grant_missing',
      message: 'the Git Secret has no key host naming the host[:port] its credential may be sent to',
    };
  if (granted.toLowerCase() !== authority.toLowerCase())
    return {
      code: 'host_grant_mismatch',
      message: `the Git Secret grants ${granted.slice(0, 100)}, not ${authority}; the credential is not sent`,
    };
  const trust: Array<[Buffer | undefined, string, string]> = [
    [ca, 'caSHA256', 'ca_grant_mismatch'],
    [knownHosts, 'knownHostsSHA256', 'known_hosts_grant_mismatch'],
  ];
  for (const [bytes, key, code] of trust) {
    if (bytes === undefined) continue;
    const want = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (readBounded(options.authDir, key, 256)?.trim() !== want)
      return {
        code,
        message: `the Git Secret's ${key} does not name the bytes of the file it grants (${want})`,
      };
  }
  if (options.plainHttp && readBounded(options.authDir, 'allowPlainHTTP', 16)?.trim() !== 'true')
    return {
      code: 'plain_http_not_granted',
      message: 'plain HTTP with a credential needs allowPlainHTTP: "true" in the Git Secret',
    };
  return undefined;
}

function readBounded(
  dirOrFile: string | undefined,
  key: string | undefined,
  limit: number,
): string | undefined;
function readBounded(
  dirOrFile: string | undefined,
  key: undefined,
  limit: number,
  raw: true,
): Buffer | undefined;
function readBounded(
  dirOrFile: string | undefined,
  key: string | undefined,
  limit: number,
  raw?: true,
): string | Buffer | undefined {
  if (dirOrFile === undefined) return undefined;
  const file = key === undefined ? dirOrFile : join(dirOrFile, key);
  if (!existsSync(file)) return undefined;
  // One read: what is checked is what is used, whatever happens to the mount afterwards.
  const bytes = readFileSync(file);
  if (bytes.length > limit)
    throw new GitSourceError('TooLarge', `${key ?? 'a trust file'} is over ${limit} bytes`);
  return raw ? bytes : bytes.toString('utf8');
}

function snake(reason: string): string {
  return reason.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}
