import { spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const GIT_BIN = process.env['PTAH_GIT_BIN'] ?? 'git';

export interface GitHttpServerOptions {
  /** Directory holding the bare repositories (GIT_PROJECT_ROOT). */
  readonly projectRoot: string;
  /** Where http-backend's stderr goes. */
  readonly logFile: string;
  /** HOME for http-backend, so the caller's ~/.gitconfig cannot change what the server does. */
  readonly homeDir: string;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly auth?: { readonly username: string; readonly password: string };
}

/** One request the server answered: what a test reads to tell a ref advertisement from a fetch. */
export interface GitHttpRequest {
  readonly method: string;
  /** The path, e.g. /NAME.git/info/refs or /NAME.git/git-upload-pack. */
  readonly path: string;
  /** The query without its `?`, e.g. service=git-upload-pack. */
  readonly query: string;
  readonly status: number;
}

export interface GitHttpServer {
  /** http(s)://127.0.0.1:PORT */
  readonly baseUrl: string;
  readonly port: number;
  /** The requests answered so far, oldest first (the last 10,000). */
  requests(): readonly GitHttpRequest[];
  close(): Promise<void>;
}

const MAX_LOGGED_REQUESTS = 10_000;

const REALM = 'ptah-test-git';

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The user named by a valid Basic Authorization header, or undefined. */
function authenticatedUser(
  req: IncomingMessage,
  auth: NonNullable<GitHttpServerOptions['auth']>,
): string | undefined {
  const header = req.headers.authorization ?? '';
  const match = /^Basic\s+(\S+)$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return sameSecret(user, auth.username) && sameSecret(password, auth.password) ? user : undefined;
}

/** Splits a CGI response head ("Status: 200 OK\r\nContent-Type: …") into status and headers. */
function parseCgiHead(head: string): { status: number; headers: [string, string][] } {
  let status = 200;
  const headers: [string, string][] = [];
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
    else headers.push([name, value]);
  }
  return { status, headers };
}

/** Runs one request through `git http-backend` as a CGI program and relays its answer. */
function serveWithHttpBackend(
  options: GitHttpServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  remoteUser: string | undefined,
  stderr: NodeJS.WritableStream,
): void {
  const url = new URL(req.url ?? '/', 'http://placeholder');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: options.homeDir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_PROJECT_ROOT: options.projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    // http-backend refuses pushes from anonymous users unless http.receivepack is set; a test server
    // without auth must still accept pushes.
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.receivepack',
    GIT_CONFIG_VALUE_0: 'true',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
  };
  // Without CONTENT_LENGTH http-backend reads the body to EOF, which is what a chunked request needs.
  if (req.headers['content-length'] !== undefined) env['CONTENT_LENGTH'] = req.headers['content-length'];
  const encoding = req.headers['content-encoding'];
  if (encoding) env['HTTP_CONTENT_ENCODING'] = encoding;
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') env['GIT_PROTOCOL'] = protocol;
  if (remoteUser) env['REMOTE_USER'] = remoteUser;

  const cgi = spawn(GIT_BIN, ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  cgi.stderr.pipe(stderr, { end: false });
  req.pipe(cgi.stdin);
  cgi.stdin.on('error', () => undefined); // the backend may answer before reading the whole body

  let head = Buffer.alloc(0);
  let headDone = false;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (headDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const text = head.toString('latin1');
    const crlf = text.indexOf('\r\n\r\n');
    const lf = text.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
    if (end < 0) return;
    headDone = true;
    const parsed = parseCgiHead(text.slice(0, end));
    res.statusCode = parsed.status;
    for (const [name, value] of parsed.headers) res.appendHeader(name, value);
    if (end < head.length) res.write(head.subarray(end));
  });
  cgi.on('close', (code) => {
    if (!headDone) {
      res.statusCode = 502;
      res.end(`git http-backend exited with ${code} before answering\n`);
      return;
    }
    res.end();
  });
  cgi.on('error', (error) => {
    if (!res.headersSent) res.statusCode = 502;
    res.end(`git http-backend: ${error.message}\n`);
  });
  res.on('close', () => {
    if (cgi.exitCode === null && cgi.signalCode === null) cgi.kill('SIGTERM');
  });
}

/** A small Node HTTP(S) server in front of `git http-backend`, listening on 127.0.0.1 only. */
export async function startGitHttpServer(options: GitHttpServerOptions, port = 0): Promise<GitHttpServer> {
  const stderr = createWriteStream(options.logFile, { flags: 'a' });
  const log: GitHttpRequest[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://placeholder');
    res.once('finish', () => {
      log.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.search.replace(/^\?/, ''),
        status: res.statusCode,
      });
      if (log.length > MAX_LOGGED_REQUESTS) log.shift();
    });
    let remoteUser: string | undefined;
    if (options.auth) {
      remoteUser = authenticatedUser(req, options.auth);
      if (remoteUser === undefined) {
        req.resume();
        res.writeHead(401, { 'WWW-Authenticate': `Basic realm="${REALM}"`, 'Content-Type': 'text/plain' });
        res.end('authentication required\n');
        return;
      }
    }
    serveWithHttpBackend(options, req, res, remoteUser, stderr);
  };
  const server: Server = options.tls
    ? createHttpsServer(
        { cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) },
        handler,
      )
    : createHttpServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    baseUrl: `${options.tls ? 'https' : 'http'}://127.0.0.1:${bound}`,
    port: bound,
    requests: () => [...log],
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await new Promise<void>((resolve) => stderr.end(resolve));
    },
  };
}
