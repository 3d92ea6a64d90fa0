/**
 * A Git repository URL as a source names it: `https://host[:port]/path`, `http://…` (only when plain HTTP is
 * explicitly allowed), `ssh://user@host[:port]/path` or the scp form `user@host:path`. Userinfo with a
 * password is refused: credentials come from a Secret, never from the URL, which reaches status and plans.
 */
import { createHash } from 'node:crypto';
import { GitSourceError } from './errors.ts';

export type GitTransport = 'https' | 'http' | 'ssh';

export interface GitRemote {
  readonly transport: GitTransport;
  /** The URL as given (it holds no secret: see above). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** `host` or `host:port` when the port is not the transport's default: what a credential names. */
  readonly authority: string;
  /** The SSH login, for ssh remotes. */
  readonly user?: string;
  /** The path on the server: for HTTP the URL path, for SSH what git-upload-pack is given. */
  readonly path: string;
}

const DEFAULT_PORT: Readonly<Record<GitTransport, number>> = { https: 443, http: 80, ssh: 22 };
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/;
const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/;
const SCP = /^([A-Za-z0-9_][A-Za-z0-9._-]{0,63})@([^:/\s]+):(?!\/\/)([^\s]+)$/;

export function parseRemote(url: string, options: { readonly allowPlainHttp?: boolean } = {}): GitRemote {
  if (url.length > 2048)
    throw new GitSourceError('InvalidRepository', 'the repository URL is longer than 2048 characters');
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\0-\x1f\x7f]/.test(url))
    throw new GitSourceError(
      'InvalidRepository',
      'the repository URL holds whitespace or control characters',
    );
  const scp = SCP.exec(url);
  if (scp) {
    const [, user, host, path] = scp as unknown as [string, string, string, string];
    return checked({ transport: 'ssh', url, host, port: 22, user, path: path });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GitSourceError(
      'InvalidRepository',
      `the repository "${url.slice(0, 200)}" is not a URL (https://host/path, ssh://user@host/path or user@host:path)`,
    );
  }
  const transport = parsed.protocol.slice(0, -1);
  if (transport !== 'https' && transport !== 'http' && transport !== 'ssh')
    throw new GitSourceError(
      'InvalidRepository',
      `the repository URL's scheme ${parsed.protocol} is not https, http or ssh`,
    );
  if (parsed.password !== '')
    throw new GitSourceError(
      'InvalidRepository',
      'the repository URL holds a password; put credentials in the Secret the source names',
    );
  if (transport === 'http' && options.allowPlainHttp !== true)
    throw new GitSourceError(
      'InsecureTransport',
      `the repository ${redacted(parsed)} is plain HTTP; use https, or allow plain HTTP explicitly`,
    );
  if (parsed.search !== '' || parsed.hash !== '')
    throw new GitSourceError('InvalidRepository', 'the repository URL may not have a query or a fragment');
  if (transport !== 'ssh' && parsed.username !== '')
    throw new GitSourceError(
      'InvalidRepository',
      'an HTTP repository URL may not name a user; put credentials in the Secret',
    );
  const port = parsed.port === '' ? DEFAULT_PORT[transport] : Number(parsed.port);
  return checked({
    transport,
    url,
    host: parsed.hostname,
    port,
    ...(transport === 'ssh' ? { user: decodeURIComponent(parsed.username) } : {}),
    path: transport === 'ssh' ? decodeURIComponent(parsed.pathname) : parsed.pathname,
  });
}

function checked(r: Omit<GitRemote, 'authority'>): GitRemote {
  if (!HOST.test(r.host))
    throw new GitSourceError(
      'InvalidRepository',
      `the repository host "${r.host.slice(0, 100)}" is not a host name`,
    );
  if (r.transport === 'ssh' && (r.user === undefined || !USER.test(r.user)))
    throw new GitSourceError(
      'InvalidRepository',
      'an SSH repository URL names its login: ssh://user@host/path or user@host:path',
    );
  if (r.path.length === 0 || r.path === '/' || r.path.includes("'") || r.path.split('/').includes('..'))
    throw new GitSourceError(
      'InvalidRepository',
      `the repository path "${r.path.slice(0, 200)}" is empty or not plain`,
    );
  const authority = r.port === DEFAULT_PORT[r.transport] ? r.host : `${r.host}:${r.port}`;
  return { ...r, authority };
}

function redacted(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/** The SHA-256 a plan binds for a repository and path (plan contract version 2), hex. */
export function repositoryPathDigest(url: string, path: string): string {
  return `sha256:${createHash('sha256').update(`${url}\0${path}`).digest('hex')}`;
}
