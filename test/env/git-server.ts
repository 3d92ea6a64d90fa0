import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitHttpServer, type GitHttpRequest, type GitHttpServer } from './git-http.ts';
import { startGitSshd, type GitSshd } from './git-sshd.ts';
import { createCertificateAuthority, issueCertificate } from './pki.ts';

const GIT_BIN = process.env['PTAH_GIT_BIN'] ?? 'git';

/**
 * A throwaway Git server on loopback: git http-backend over HTTP(S) and git-shell over SSH.
 * The HTTP front end runs in the calling Node process, so drive it with asynchronous child processes:
 * a synchronous `execFileSync('git', …)` against it blocks the event loop that has to answer.
 */
export interface GitServer {
  /** http(s)://127.0.0.1:PORT (git http-backend behind a small Node HTTP server). */
  readonly httpBaseUrl: string;
  readonly sshHost: string;
  readonly sshPort: number;
  /** The SSH login name: the account running the tests (root in the CI container). */
  readonly sshUser: string;
  /** A known_hosts line pinning the generated host key for [127.0.0.1]:PORT. */
  readonly knownHosts: string;
  /** Private key authorised for the SSH user, restricted to git-shell. */
  readonly clientKeyFile: string;
  /** The CA that signed the HTTPS certificate, when started with TLS. */
  readonly caFile?: string;
  /** Basic credentials the HTTP side demands, when started with httpAuth; never print the password. */
  readonly httpAuth?: { readonly username: string; readonly password: string };
  /** The directory holding the bare repositories. */
  readonly projectRoot: string;
  readonly sshdPid: number;
  /** The HTTP(S) requests answered so far, oldest first: a fetch is a POST to NAME.git/git-upload-pack. */
  httpRequests(): readonly GitHttpRequest[];
  createRepository(name: string): Promise<{ httpUrl: string; sshUrl: string; dir: string }>;
  stop(): Promise<void>;
}

export interface StartGitServerOptions {
  readonly tls?: boolean;
  readonly httpAuth?: boolean;
  /** Directory for repositories, keys and logs; a new temporary one (removed on stop) by default. */
  readonly dir?: string;
}

const REPOSITORY_NAME = /^[a-z0-9][a-z0-9._-]{0,99}$/;

export async function startGitServer(options: StartGitServerOptions = {}): Promise<GitServer> {
  const base = options.dir ?? mkdtempSync(join(tmpdir(), 'ptah-git-'));
  const projectRoot = join(base, 'repositories');
  const sshDir = join(base, 'ssh');
  const homeDir = join(base, 'home');
  for (const d of [base, projectRoot, sshDir, homeDir]) mkdirSync(d, { recursive: true });

  let tls: { certFile: string; keyFile: string } | undefined;
  let caFile: string | undefined;
  if (options.tls) {
    const pkiDir = join(base, 'pki');
    const ca = createCertificateAuthority(pkiDir, 'git-ca', 'ptah-test-git-ca');
    tls = issueCertificate(pkiDir, ca, {
      name: 'git-http',
      commonName: '127.0.0.1',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    caFile = ca.certFile;
  }
  const httpAuth = options.httpAuth
    ? { username: 'ptah', password: randomBytes(18).toString('base64url') }
    : undefined;

  let http: GitHttpServer | undefined;
  let sshd: GitSshd | undefined;
  try {
    http = await startGitHttpServer({
      projectRoot,
      homeDir,
      logFile: join(base, 'http-backend.log'),
      ...(tls ? { tls } : {}),
      ...(httpAuth ? { auth: httpAuth } : {}),
    });
    sshd = await startGitSshd({ dir: sshDir, projectRoot });
  } catch (error) {
    await http?.close();
    if (options.dir === undefined) rmSync(base, { recursive: true, force: true });
    throw error;
  }
  const httpServer = http;
  const sshServer = sshd;

  return {
    httpBaseUrl: httpServer.baseUrl,
    sshHost: '127.0.0.1',
    sshPort: sshServer.port,
    sshUser: sshServer.user,
    knownHosts: sshServer.knownHosts,
    clientKeyFile: sshServer.clientKeyFile,
    ...(caFile ? { caFile } : {}),
    ...(httpAuth ? { httpAuth } : {}),
    projectRoot,
    sshdPid: sshServer.pid,
    httpRequests: () => httpServer.requests(),
    async createRepository(name: string) {
      const stem = name.replace(/\.git$/, '');
      if (!REPOSITORY_NAME.test(stem)) {
        throw new Error(`createRepository: "${name}" must be lower-case letters, digits, '.', '_' or '-'`);
      }
      const dir = join(projectRoot, `${stem}.git`);
      execFileSync(GIT_BIN, ['init', '--quiet', '--bare', '--initial-branch=main', dir], {
        stdio: 'pipe',
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: homeDir, GIT_CONFIG_NOSYSTEM: '1' },
      });
      return {
        httpUrl: `${httpServer.baseUrl}/${stem}.git`,
        sshUrl: `ssh://${sshServer.user}@127.0.0.1:${sshServer.port}/${stem}.git`,
        dir,
      };
    },
    async stop() {
      await Promise.all([httpServer.close(), sshServer.stop()]);
      if (options.dir === undefined) rmSync(base, { recursive: true, force: true });
    },
  };
}

/** ssh options that trust only the given known_hosts file and offer only the given key: no agent, no config, no prompts. */
export function gitSshArgs(clientKeyFile: string, knownHostsFile: string): string[] {
  return [
    '-F',
    '/dev/null',
    '-i',
    clientKeyFile,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    `UserKnownHostsFile=${knownHostsFile}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
  ];
}

/** The same as a GIT_SSH_COMMAND value, which git hands to a shell. */
export function gitSshCommand(clientKeyFile: string, knownHostsFile: string): string {
  const quote = (s: string): string => (/^[A-Za-z0-9/._=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return ['ssh', ...gitSshArgs(clientKeyFile, knownHostsFile)].map(quote).join(' ');
}
