import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { startProcess, waitUntil, type ManagedProcess } from './process.ts';

const SSHD_BIN = process.env['PTAH_SSHD_BIN'] ?? '/usr/sbin/sshd';
const SSH_KEYGEN_BIN = process.env['PTAH_SSH_KEYGEN_BIN'] ?? 'ssh-keygen';
const GIT_SHELL_BIN = process.env['PTAH_GIT_SHELL_BIN'] ?? '/usr/bin/git-shell';
/** Compiled into Debian's sshd as its privilege-separation chroot; it refuses to start as root without it. */
const PRIVSEP_DIR = '/run/sshd';

export interface GitSshd {
  readonly port: number;
  /** The account clients log in as: the account running the tests (sshd can only serve that one unless root). */
  readonly user: string;
  /** `[127.0.0.1]:PORT ssh-ed25519 AAAA…`, pinning the generated host key. */
  readonly knownHosts: string;
  readonly clientKeyFile: string;
  readonly pid: number;
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface GitSshdOptions {
  /** Directory for keys, config, pid file and log; must already exist. */
  readonly dir: string;
  /** Bare repositories; ssh://user@host:PORT/NAME.git resolves to <projectRoot>/NAME.git. */
  readonly projectRoot: string;
}

function generateKey(file: string, comment: string): string {
  execFileSync(SSH_KEYGEN_BIN, ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file], {
    stdio: 'pipe',
  });
  chmodSync(file, 0o600);
  return readFileSync(`${file}.pub`, 'utf8').trim();
}

/** Paths land inside sshd_config and authorized_keys options unquoted or double-quoted; keep them plain. */
function assertPlainPath(path: string): void {
  if (!/^[A-Za-z0-9/._+-]+$/.test(path)) {
    throw new Error(`git sshd: "${path}" must contain only letters, digits and / . _ + -`);
  }
}

/**
 * The forced command for the client key. Only git-shell runs, so the key cannot open a shell even
 * though the account is the test runner's own. The leading "/" of the repository path is dropped and
 * the working directory is the project root, so ssh://…/NAME.git and http(s)://…/NAME.git name the
 * same repository.
 */
function forcedCommandScript(projectRoot: string): string {
  return [
    '#!/bin/sh',
    `cd '${projectRoot}' || exit 1`,
    `command=$(printf '%s' "$SSH_ORIGINAL_COMMAND" | sed "s#^\\(git-[a-z-]*\\) '/#\\1 '#")`,
    `exec ${GIT_SHELL_BIN} -c "$command"`,
    '',
  ].join('\n');
}

function sshdConfig(o: {
  port: number;
  user: string;
  hostKey: string;
  dir: string;
  asRoot: boolean;
}): string {
  return [
    `ListenAddress 127.0.0.1:${o.port}`,
    `HostKey ${o.hostKey}`,
    `PidFile ${join(o.dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${join(o.dir, 'authorized_keys')}`,
    'AuthorizedPrincipalsFile none',
    // The files live in a temporary directory whose ownership and modes sshd would otherwise veto.
    'StrictModes no',
    `AllowUsers ${o.user}`,
    // As root, the only way in is the forced-command key below.
    `PermitRootLogin ${o.asRoot ? 'forced-commands-only' : 'no'}`,
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'HostbasedAuthentication no',
    'UsePAM no',
    'PermitUserEnvironment no',
    // Git sends GIT_PROTOCOL=version=2 this way.
    'AcceptEnv GIT_PROTOCOL',
    'AllowTcpForwarding no',
    'AllowAgentForwarding no',
    'AllowStreamLocalForwarding no',
    'X11Forwarding no',
    'PermitTunnel no',
    'PrintMotd no',
    'PrintLastLog no',
    'LogLevel VERBOSE',
    '',
  ].join('\n');
}

export async function startGitSshd(options: GitSshdOptions): Promise<GitSshd> {
  const { dir, projectRoot } = options;
  assertPlainPath(dir);
  assertPlainPath(projectRoot);
  const asRoot = process.getuid?.() === 0;
  const user = userInfo().username;
  if (asRoot && !existsSync(PRIVSEP_DIR)) {
    // Normally created at boot by the package's tmpfiles rule, which a container never ran. It is an
    // empty root-owned directory; leaving it behind is harmless and other instances may be using it.
    mkdirSync(PRIVSEP_DIR, { mode: 0o755 });
  }

  const hostKey = join(dir, 'ssh_host_ed25519_key');
  const hostPublicKey = generateKey(hostKey, 'ptah-test-git-host');
  const clientKeyFile = join(dir, 'client_ed25519_key');
  const clientPublicKey = generateKey(clientKeyFile, 'ptah-test-git-client');
  const forcedCommand = join(dir, 'git-ssh-command.sh');
  writeFileSync(forcedCommand, forcedCommandScript(projectRoot), { mode: 0o755 });
  writeFileSync(join(dir, 'authorized_keys'), `restrict,command="${forcedCommand}" ${clientPublicKey}\n`, {
    mode: 0o600,
  });
  const logFile = join(dir, 'sshd.log');
  const configFile = join(dir, 'sshd_config');

  let server: ManagedProcess | undefined;
  let port = 0;
  // freePort can lose a race with another process; sshd that cannot bind exits, so retry.
  for (let attempt = 0; attempt < 5 && server === undefined; attempt++) {
    port = await freePort();
    writeFileSync(configFile, sshdConfig({ port, user, hostKey, dir, asRoot }), { mode: 0o600 });
    writeFileSync(logFile, '');
    // -D: stay in the foreground as our child; -e: log to stderr, i.e. the log file.
    const candidate = startProcess('sshd', SSHD_BIN, ['-D', '-e', '-f', configFile], logFile, {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    });
    try {
      await waitUntil(
        'sshd',
        async () => readFileSync(logFile, 'utf8').includes(`Server listening on 127.0.0.1 port ${port}`),
        { process: candidate, timeoutMs: 15_000, intervalMs: 50 },
      );
      server = candidate;
    } catch (error) {
      await candidate.stop(2_000);
      if (attempt === 4) throw error;
    }
  }
  if (server === undefined) throw new Error('sshd: could not start');
  const running = server;
  const [keyType, keyData] = hostPublicKey.split(/\s+/);
  return {
    port,
    user,
    knownHosts: `[127.0.0.1]:${port} ${keyType} ${keyData}`,
    clientKeyFile,
    pid: running.pid,
    logFile,
    stop: () => running.stop(5_000),
  };
}
