/**
 * Reads a server's protocol-v0 upload-pack advertisement without fetching anything: over HTTP(S) the
 * `info/refs?service=git-upload-pack` document (no Git-Protocol header, so the server answers in v0), over SSH
 * git-upload-pack's opening lines, after which we send a flush and hang up. Both are bounded.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseAdvertisement, type Advertisement } from './advertisement.ts';
import { sshArgs, type GitAccess } from './access.ts';
import { GitSourceError } from './errors.ts';
import { readPktLines } from './pkt-line.ts';
import type { GitRemote } from './remote.ts';
import { lastLine } from './run-git.ts';

/** An advertisement over this size is refused (about 100,000 refs). */
export const MAX_ADVERTISEMENT_BYTES = 16 * 1024 * 1024;

export function readAdvertisement(
  remote: GitRemote,
  access: GitAccess,
  signal?: AbortSignal,
): Promise<Advertisement> {
  return remote.transport === 'ssh' ? overSsh(remote, access, signal) : overHttp(remote, access, signal);
}

function overHttp(remote: GitRemote, access: GitAccess, signal?: AbortSignal): Promise<Advertisement> {
  const url = new URL(remote.url.replace(/\/+$/, '') + '/info/refs?service=git-upload-pack');
  const headers: Record<string, string> = { 'user-agent': 'git/ptah', accept: '*/*' };
  if (access.username !== undefined || access.password !== undefined)
    headers['authorization'] =
      `Basic ${Buffer.from(`${access.username ?? ''}:${access.password ?? ''}`).toString('base64')}`;
  const request = remote.transport === 'https' ? httpsRequest : httpRequest;
  const ca = access.caFile !== undefined ? readFileSync(access.caFile) : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'GET', headers, timeout: 30_000, ...(ca ? { ca } : {}), ...(signal ? { signal } : {}) },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status === 401 || status === 403) {
          res.resume();
          return reject(
            new GitSourceError(
              'Unauthorized',
              `${remote.authority} refused the credential for ${url.pathname} (HTTP ${status})`,
            ),
          );
        }
        if (status === 404) {
          res.resume();
          return reject(
            new GitSourceError(
              'RefNotFound',
              `${remote.authority} has no repository at ${remote.path} (HTTP 404)`,
            ),
          );
        }
        if (status !== 200 || res.headers['content-type'] !== 'application/x-git-upload-pack-advertisement') {
          res.resume();
          return reject(
            new GitSourceError(
              'ProtocolError',
              `${remote.authority} answered ${url.pathname} with HTTP ${status} ${res.headers['content-type'] ?? ''}; is it a smart-HTTP Git server?`,
            ),
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ADVERTISEMENT_BYTES) {
            req.destroy();
            reject(
              new GitSourceError(
                'TooLarge',
                `${remote.authority}'s advertisement is over ${MAX_ADVERTISEMENT_BYTES} bytes`,
              ),
            );
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          try {
            const parsed = readPktLines(Buffer.concat(chunks), 2);
            if (parsed === undefined)
              throw new GitSourceError('ProtocolError', `${remote.authority}'s advertisement ended early`);
            resolve(parseAdvertisement(parsed.lines, true));
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', (e) =>
          reject(new GitSourceError('Unreachable', `${remote.authority}: ${e.message}`)),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (e) =>
      reject(
        new GitSourceError('Unreachable', `could not reach ${remote.authority}: ${e.message}`, { cause: e }),
      ),
    );
    req.end();
  });
}

function overSsh(remote: GitRemote, access: GitAccess, signal?: AbortSignal): Promise<Advertisement> {
  const args = [
    ...sshArgs(remote, access),
    '-p',
    String(remote.port),
    `${remote.user}@${remote.host}`,
    `git-upload-pack '${remote.path}'`,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('ssh', args, {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: '/nonexistent', LC_ALL: 'C' },
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 60_000,
      killSignal: 'SIGKILL',
      ...(signal ? { signal } : {}),
    });
    let buffer = Buffer.alloc(0);
    let stderr = '';
    let done = false;
    const finish = (result: Advertisement | Error): void => {
      if (done) return;
      done = true;
      if (result instanceof Error) {
        child.kill('SIGKILL');
        reject(result);
      } else {
        // A flush tells upload-pack we want nothing; it then exits cleanly.
        child.stdin.end('0000');
        resolve(result);
      }
    };
    child.stdout.on('data', (c: Buffer) => {
      buffer = Buffer.concat([buffer, c]);
      if (buffer.length > MAX_ADVERTISEMENT_BYTES)
        return finish(
          new GitSourceError(
            'TooLarge',
            `${remote.authority}'s advertisement is over ${MAX_ADVERTISEMENT_BYTES} bytes`,
          ),
        );
      try {
        const parsed = readPktLines(buffer, 1);
        if (parsed !== undefined) finish(parseAdvertisement(parsed.lines, false));
      } catch (e) {
        finish(e as Error);
      }
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 16384) stderr += c.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (e) => finish(new GitSourceError('Unreachable', `could not run ssh: ${e.message}`)));
    child.on('close', () => {
      if (done) return;
      const line = lastLine(stderr) ?? 'the server closed the connection before its advertisement';
      const reason = /host key verification failed|no .* host key is known|IDENTIFICATION HAS CHANGED/i.test(
        stderr,
      )
        ? 'HostKeyNotPinned'
        : /permission denied/i.test(stderr)
          ? 'Unauthorized'
          : /does not appear to be a git repository|not a git repository|No such file/i.test(stderr)
            ? 'RefNotFound'
            : 'Unreachable';
      finish(new GitSourceError(reason, line));
    });
  });
}
