/**
 * How a Git source is reached: the credential files a Secret projects (HTTPS username/password, or an SSH key
 * with the known hosts that pin the server), an optional CA, and plain HTTP only when explicitly allowed. The
 * credential goes to git through its environment (GIT_CONFIG_* and GIT_SSH_COMMAND), never its arguments,
 * and git is kept from every configuration file, prompt and transport but the one the URL names.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GitSourceError } from './errors.ts';
import type { GitRemote } from './remote.ts';

export interface GitAccess {
  readonly username?: string;
  readonly password?: string;
  /** A private key file for SSH remotes. */
  readonly sshPrivateKeyFile?: string;
  /** known_hosts lines pinning the SSH server's host key; an SSH remote without them is refused. */
  readonly knownHostsFile?: string;
  /** PEM bundle trusted for HTTPS instead of the system roots. */
  readonly caFile?: string;
  readonly allowPlainHttp?: boolean;
}

/** The environment every git process runs with: nothing from the machine's or the user's configuration. */
export function gitEnvironment(remote: GitRemote, access: GitAccess, home: string): NodeJS.ProcessEnv {
  const config: Array<[string, string]> = [
    // Protocol v2's upload-pack gives any object by id whatever uploadpack.allow*SHA1InWant say (checked
    // against git 2.39); v0 holds the server to the advertisement Ptah decided from, so v0 it is.
    ['protocol.version', '0'],
    ['protocol.allow', 'never'],
    [`protocol.${remote.transport}.allow`, 'always'],
    ['credential.helper', ''],
    ['core.askPass', ''],
    ['transfer.fsckObjects', 'true'],
    ['fetch.fsckObjects', 'true'],
    ['advice.detachedHead', 'false'],
  ];
  if (remote.transport !== 'ssh') {
    if (access.caFile !== undefined) config.push(['http.sslCAInfo', access.caFile]);
    if (access.username !== undefined || access.password !== undefined) {
      const basic = Buffer.from(`${access.username ?? ''}:${access.password ?? ''}`).toString('base64');
      config.push(['http.extraHeader', `Authorization: Basic ${basic}`]);
    }
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: 'C',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_LFS_SKIP_SMUDGE: '1',
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  if (remote.transport === 'ssh') env['GIT_SSH_COMMAND'] = shellJoin(['ssh', ...sshArgs(remote, access)]);
  return env;
}

/** ssh options (git adds the port and host itself) that trust only the pinned known hosts and offer only the given key: no agent, no config, no prompt. */
export function sshArgs(remote: GitRemote, access: GitAccess): string[] {
  if (access.knownHostsFile === undefined)
    throw new GitSourceError(
      'HostKeyNotPinned',
      `no known hosts pin ${remote.authority}'s host key; add a known_hosts entry for it to the source's credential`,
    );
  assertPinned(remote, access.knownHostsFile);
  return [
    '-F',
    '/dev/null',
    ...(access.sshPrivateKeyFile !== undefined ? ['-i', access.sshPrivateKeyFile] : []),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    `UserKnownHostsFile=${access.knownHostsFile}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'UpdateHostKeys=no',
    '-o',
    'BatchMode=yes',
    '-o',
    'ConnectTimeout=20',
  ];
}

/**
 * Refuses before connecting when no known_hosts line names the server, so the message says what is wrong
 * rather than ssh's "Host key verification failed". Hashed entries (`|1|salt|hash`) are matched too.
 */
function assertPinned(remote: GitRemote, file: string): void {
  const names = remote.port === 22 ? [remote.host] : [`[${remote.host}]:${remote.port}`];
  const text = readFileSync(file, 'utf8');
  if (text.length > 1024 * 1024) throw new GitSourceError('TooLarge', 'the known hosts file is over 1 MiB');
  const pinned = text.split('\n').some((line) => {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 3 || fields[0]!.startsWith('#')) return false;
    const hostField = fields[0]!.startsWith('@') ? fields[1]! : fields[0]!;
    if (fields[0] === '@revoked') return false;
    return hostField.split(',').some((pattern) => names.some((n) => hostMatches(pattern, n)));
  });
  if (!pinned)
    throw new GitSourceError(
      'HostKeyNotPinned',
      `the known hosts do not pin ${names[0]}'s host key; add its known_hosts line to the source's credential`,
    );
}

function hostMatches(pattern: string, name: string): boolean {
  if (pattern.startsWith('|1|')) {
    const [, , salt, hash] = pattern.split('|');
    if (salt === undefined || hash === undefined) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  return pattern === name;
}

function shellJoin(words: readonly string[]): string {
  return words
    .map((s) => (/^[A-Za-z0-9/._=+:,@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
