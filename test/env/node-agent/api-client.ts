import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

/** A Kubernetes API error with the HTTP status, so callers can branch on 404/409/410. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export type JsonObject = Record<string, unknown>;

/** One event of a watch stream, as the API server writes it (one JSON object per line). */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: JsonObject;
}

export interface ApiClient {
  readonly server: string;
  get<T>(path: string): Promise<T>;
  /** A plain-text read, such as pods/log. */
  getText(path: string): Promise<string>;
  send<T>(method: string, path: string, body: unknown, contentType?: string): Promise<T>;
  /** Streams watch events until the stream ends or `signal` aborts; resolves when it ends. */
  watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void>;
  close(): void;
}

/**
 * A small HTTPS client for the handful of kubelet-style calls the agent makes. The generated
 * client of @kubernetes/client-node is used only to read the kubeconfig: its typed API would
 * hide the patch content types and watch semantics the agent depends on.
 */
export async function createApiClient(kubeconfigFile: string): Promise<ApiClient> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigFile);
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error(`node-agent: ${kubeconfigFile} names no current cluster`);
  const tls: RequestOptions = {};
  await config.applyToHTTPSOptions(tls);
  const agent = new Agent({ keepAlive: true, ca: tls.ca, cert: tls.cert, key: tls.key });
  const base = new URL(cluster.server);
  const authorization = (tls.headers as Record<string, string> | undefined)?.['Authorization'];

  function open(method: string, path: string, body?: string, contentType?: string, signal?: AbortSignal) {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (authorization) headers['authorization'] = authorization;
    if (body !== undefined) {
      headers['content-type'] = contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(new URL(path, base), { method, headers, agent, signal }, resolve);
      req.on('error', reject);
      req.end(body);
    });
  }

  async function readAll(res: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  async function exchange<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const res = await open(method, path, body === undefined ? undefined : JSON.stringify(body), contentType);
    const text = await readAll(res);
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return (text ? JSON.parse(text) : {}) as T;
    let reason = '';
    let message = text;
    try {
      const parsed = JSON.parse(text) as { reason?: string; message?: string };
      reason = parsed.reason ?? '';
      message = parsed.message ?? text;
    } catch {
      // not a Status object; keep the raw text
    }
    throw new ApiError(status, reason, `${method} ${path}: ${status} ${message}`);
  }

  return {
    server: cluster.server,
    get: (path) => exchange('GET', path),
    async getText(path) {
      const res = await open('GET', path);
      const text = await readAll(res);
      if (res.statusCode !== 200)
        throw new ApiError(res.statusCode ?? 0, '', `GET ${path}: ${res.statusCode} ${text}`);
      return text;
    },
    send: (method, path, body, contentType) => exchange(method, path, body, contentType),
    async watch(path, onEvent, signal) {
      let res: IncomingMessage;
      try {
        res = await open('GET', path, undefined, undefined, signal);
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
      if (res.statusCode !== 200) {
        const text = await readAll(res);
        throw new ApiError(res.statusCode ?? 0, '', `watch ${path}: ${res.statusCode} ${text}`);
      }
      let pending = '';
      try {
        for await (const chunk of res) {
          pending += (chunk as Buffer).toString('utf8');
          let newline: number;
          while ((newline = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, newline).trim();
            pending = pending.slice(newline + 1);
            if (line) onEvent(JSON.parse(line) as WatchEvent);
          }
        }
      } catch (error) {
        if (!signal.aborted) throw error;
      }
    },
    close: () => agent.destroy(),
  };
}
