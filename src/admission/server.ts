/**
 * The HTTPS server that answers AdmissionReview v1 on one path per webhook. Like controller-runtime's
 * webhook server: it checks the method and content type, caps the body, echoes the request UID, and turns
 * a handler crash into an `errored(500)` review — which a fail-closed webhook configuration refuses.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  errored,
  respond,
  type AdmissionHandler,
  type AdmissionRequest,
  type AdmissionReview,
} from './review.ts';

/** The API server sends at most a few MiB (an object and its old version); anything bigger is refused. */
export const DEFAULT_MAX_BODY_BYTES = 7 * 1024 * 1024;

export interface AdmissionServerOptions {
  /** PEM serving certificate and key. */
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /** Path → handler, e.g. `/mapproval`. */
  readonly handlers: Readonly<Record<string, AdmissionHandler>>;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  readonly maxBodyBytes?: number;
  /**
   * How long a handler may take before the review answers 504 (the configurations fail closed, so that is a
   * refusal); below the API server's own timeout, so the requester reads why.
   */
  readonly handlerTimeoutMs?: number;
  /** Called for each answered review, without object contents (for logs and metrics). */
  readonly onReview?: (event: ReviewEvent) => void;
}

export interface ReviewEvent {
  readonly path: string;
  readonly uid: string;
  readonly allowed: boolean;
  readonly code?: number;
  /** Why a review was refused: the rule and the paths that differ, never a Secret (none reaches a handler). */
  readonly message?: string;
  readonly durationMs: number;
}

export interface AdmissionServer {
  readonly port: number;
  readonly url: string;
  /** Serves a new certificate from the next TLS handshake on; connections already open keep theirs. */
  setCertificate(cert: string | Buffer, key: string | Buffer): void;
  close(): Promise<void>;
}

/** Longer than the 90 s the API server's HTTP client keeps an idle connection. */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

/** Every handler answers within this unless told: the webhook configurations wait 10 to 15 seconds. */
export const DEFAULT_HANDLER_TIMEOUT_MS = 8_000;

export async function startAdmissionServer(options: AdmissionServerOptions): Promise<AdmissionServer> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const server: Server = createServer(
    { cert: options.cert, key: options.key, minVersion: 'TLSv1.2' },
    (req, res) => {
      void serve(req, res, options, maxBody);
    },
  );
  // The API server keeps idle connections to a webhook for 90 s and does not retry a POST that meets a
  // connection closed under it: Node's 5 s default turned an idle pause into "connection reset by peer", a
  // refusal (the configurations fail closed). Close idle connections only after the client would have.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 5_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `https://${host}:${port}`,
    setCertificate: (cert, key) => server.setSecureContext({ cert, key, minVersion: 'TLSv1.2' }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  options: AdmissionServerOptions,
  maxBody: number,
): Promise<void> {
  const started = Date.now();
  const path = (req.url ?? '/').split('?')[0]!;
  const handler = Object.hasOwn(options.handlers, path) ? options.handlers[path] : undefined;
  if (handler === undefined) return plain(res, 404, 'no webhook at this path');
  if (req.method !== 'POST') return plain(res, 405, 'admission reviews are POSTed');
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json') return plain(res, 415, 'content type must be application/json');
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > maxBody) return plain(res, 413, `body exceeds ${maxBody} bytes`);

  let body: Buffer;
  try {
    body = await readCapped(req, maxBody);
  } catch {
    return plain(res, 413, `body exceeds ${maxBody} bytes`);
  }
  let review: AdmissionReview;
  try {
    review = JSON.parse(body.toString('utf8')) as AdmissionReview;
  } catch {
    return plain(res, 400, 'body is not JSON');
  }
  const request = review?.request;
  if (
    review?.apiVersion !== 'admission.k8s.io/v1' ||
    review.kind !== 'AdmissionReview' ||
    typeof request?.uid !== 'string' ||
    request.uid === ''
  ) {
    return plain(res, 400, 'body is not an admission.k8s.io/v1 AdmissionReview with a request UID');
  }

  let out: AdmissionReview;
  try {
    out = respond(
      request.uid,
      await withDeadline(
        handler(normalise(request)),
        options.handlerTimeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS,
        path,
      ),
    );
  } catch (error) {
    out = respond(
      request.uid,
      errored(500, `webhook ${path} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
  const payload = JSON.stringify(out);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
  options.onReview?.({
    path,
    uid: request.uid,
    allowed: out.response?.allowed ?? false,
    ...(out.response?.status?.code !== undefined ? { code: out.response.status.code } : {}),
    ...(out.response?.allowed === false && out.response.status?.message !== undefined
      ? { message: out.response.status.message }
      : {}),
    durationMs: Date.now() - started,
  });
}

/** The handler's decision, or a 504 review once `ms` have passed: never an allow by default. */
async function withDeadline(
  decision: ReturnType<AdmissionHandler>,
  ms: number,
  path: string,
): Promise<Awaited<ReturnType<AdmissionHandler>>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Awaited<ReturnType<AdmissionHandler>>>((resolve) => {
    timer = setTimeout(() => resolve(errored(504, `webhook ${path} did not decide within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([Promise.resolve(decision), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The API server omits empty userInfo members; handlers read a complete shape. */
function normalise(request: AdmissionRequest): AdmissionRequest {
  return { ...request, userInfo: request.userInfo ?? {} };
}

function readCapped(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        reject(new Error('too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

function plain(res: ServerResponse, code: number, message: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(message + '\n');
}
