// `ptah git …`: a Git source as the operator's Resolve Job and fetch init container read it, and as a person
// checks one by hand. Thin: parse flags, call src/sources/git, print text or JSON. See docs/cli-git.md.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Sha256Digest } from '../api/digest.ts';
import {
  GitSourceError,
  pullGitSource,
  resolveGitSource,
  type GitAccess,
  type GitErrorReason,
  type GitSource,
} from '../sources/git/index.ts';
import { writeSnapshotDirectory } from '../sources/snapshot-directory.ts';
import { EXIT, type ExitCode } from './exit-codes.ts';

const USAGE = `usage: ptah git <command> [options]

commands:
  resolve   the commit --ref names now and the content digest of the files at --path
  pull      fetch the recorded --commit again, check it gives --digest, and write it as a snapshot to --dir

options:
  --repository URL     https://host/path, ssh://user@host[:port]/path or user@host:path (no password in it)
  --ref REF            a branch, a tag or a commit id
  --path PATH          a directory or one file in the repository; "." is the root
  --credentials DIR    a mounted Secret: username and password (HTTPS), or ssh-privatekey and known_hosts (SSH)
                       (default: $PTAH_GIT_CREDENTIALS)
  --known-hosts FILE   known_hosts pinning the SSH server (default: DIR/known_hosts)
  --ca-file FILE       PEM bundle trusted for HTTPS instead of the system roots
  --plain-http         allow an http:// repository
  --commit ID          pull: the commit the operation is bound to
  --digest DIGEST      pull: the content digest it must give (sha256:…)
  --dir DIR            pull: an empty directory for manifest.json and the files
  --json               print the result as JSON on stdout`;

const OPTIONS = {
  repository: { type: 'string' },
  ref: { type: 'string' },
  path: { type: 'string' },
  credentials: { type: 'string' },
  'known-hosts': { type: 'string' },
  'ca-file': { type: 'string' },
  'plain-http': { type: 'boolean' },
  commit: { type: 'string' },
  digest: { type: 'string' },
  dir: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

type Flags = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

class UsageError extends Error {}

/** Exit codes by refusal: what the source is (refused on purpose) against what the network did (failed). */
const EXIT_BY_REASON: Readonly<Record<GitErrorReason, ExitCode>> = {
  InvalidRepository: EXIT.usage,
  InvalidRef: EXIT.usage,
  InvalidPath: EXIT.usage,
  RefNotFound: EXIT.refused,
  AmbiguousRef: EXIT.refused,
  CommitNotAdvertised: EXIT.refused,
  CommitUnreachable: EXIT.refused,
  PathNotFound: EXIT.refused,
  Submodule: EXIT.refused,
  LfsPointer: EXIT.refused,
  UnsafeContent: EXIT.refused,
  TooLarge: EXIT.refused,
  DigestMismatch: EXIT.refused,
  HostKeyNotPinned: EXIT.refused,
  InsecureTransport: EXIT.refused,
  Unauthorized: EXIT.failed,
  Unreachable: EXIT.failed,
  ProtocolError: EXIT.failed,
};

export async function runGitCommand(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  let flags: Flags;
  try {
    flags = parseArgs({ args: [...rest], options: OPTIONS, allowPositionals: false, strict: true })
      .values as Flags;
  } catch (e) {
    process.stderr.write(`ptah git: ${(e as Error).message}\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  if (flags.help || command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  try {
    const source: GitSource = {
      repository: required(flags, 'repository'),
      ref: required(flags, 'ref'),
      path: flags.path ?? '.',
    };
    const access = accessFrom(flags);
    if (command === 'resolve') {
      const r = await resolveGitSource(source, access);
      const files = r.manifest.manifest.files;
      print(
        flags,
        {
          repository: r.repository,
          ref: r.ref,
          path: r.path,
          refKind: r.refKind,
          refName: r.refName,
          commit: r.commit,
          contentDigest: r.contentDigest,
          sourceDigest: r.sourceDigest,
          files,
        },
        () => `${r.commit} ${r.refName ?? r.ref}\n${r.contentDigest} (${files.length} files at ${r.path})\n`,
      );
      return EXIT.ok;
    }
    if (command === 'pull') {
      const dir = required(flags, 'dir');
      const digest = required(flags, 'digest');
      if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new UsageError('--digest must be sha256:<64 hex>');
      const built = await pullGitSource(
        source,
        { commit: required(flags, 'commit'), contentDigest: digest as Sha256Digest },
        access,
      );
      writeSnapshotDirectory(dir, built);
      print(
        flags,
        {
          commit: flags.commit,
          contentDigest: built.contentDigest,
          files: built.manifest.files.map((f) => f.path),
        },
        () => `${built.contentDigest}: ${built.files.length} files written to ${dir}\n`,
      );
      return EXIT.ok;
    }
    throw new UsageError(`unknown command "${command}"`);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`ptah git: ${e.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    if (e instanceof GitSourceError) {
      if (flags.json)
        process.stdout.write(JSON.stringify({ error: { reason: e.reason, message: e.message } }) + '\n');
      // The last line written is what a refusal shows in ReconciliationFailed.
      process.stderr.write(`ptah git: ${e.reason}: ${e.message}\n`);
      return EXIT_BY_REASON[e.reason];
    }
    process.stderr.write(`ptah git: ${(e as Error).message}\n`);
    return EXIT.failed;
  }
}

function required(flags: Flags, name: 'repository' | 'ref' | 'commit' | 'dir' | 'digest'): string {
  const v = flags[name];
  if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** Reads a Secret's projected keys; the values go to git's environment, never to its arguments. */
function accessFrom(flags: Flags): GitAccess {
  const dir = flags.credentials ?? process.env['PTAH_GIT_CREDENTIALS'];
  const read = (key: string): string | undefined => {
    if (dir === undefined) return undefined;
    try {
      const text = readFileSync(join(dir, key), 'utf8');
      if (text.length > 64 * 1024) throw new UsageError(`${key} in ${dir} is over 64 KiB`);
      return text;
    } catch (e) {
      if (e instanceof UsageError) throw e;
      return undefined;
    }
  };
  const exists = (key: string) => dir !== undefined && read(key) !== undefined;
  const username = read('username');
  const password = read('password');
  return {
    ...(username !== undefined ? { username: username.trim() } : {}),
    ...(password !== undefined ? { password: password.replace(/\r?\n$/, '') } : {}),
    ...(exists('ssh-privatekey') ? { sshPrivateKeyFile: join(dir!, 'ssh-privatekey') } : {}),
    ...(flags['known-hosts'] !== undefined
      ? { knownHostsFile: flags['known-hosts'] }
      : exists('known_hosts')
        ? { knownHostsFile: join(dir!, 'known_hosts') }
        : {}),
    ...(flags['ca-file'] !== undefined ? { caFile: flags['ca-file'] } : {}),
    ...(flags['plain-http'] ? { allowPlainHttp: true } : {}),
  };
}

function print(flags: Flags, json: object, text: () => string): void {
  process.stdout.write(flags.json ? JSON.stringify(json) + '\n' : text());
}
