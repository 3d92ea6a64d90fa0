import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { streamContainerLog } from './container-log.ts';
import type { PodWorker } from './pod-worker.ts';

export interface KubeletServerOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** Client certificates must chain to this CA: the API server's kubelet client certificate does. */
  readonly caFile: string;
  readonly findPod: (namespace: string, name: string) => PodWorker | undefined;
}

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(`${message}\n`);
}

function integer(value: string | null): number | undefined {
  if (value === null || value === '') return undefined;
  const n = Number(value);
  return Number.isInteger(n) ? n : undefined;
}

async function containerLogs(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: KubeletServerOptions,
) {
  const [, , namespace, podName, container] = url.pathname.split('/').map(decodeURIComponent);
  if (!namespace || !podName || !container)
    return fail(res, 400, 'expected /containerLogs/{namespace}/{pod}/{container}');
  const worker = options.findPod(namespace, podName);
  if (!worker) return fail(res, 404, `pod "${podName}" not found in namespace "${namespace}"`);
  const q = url.searchParams;
  const found = worker.containerLog(container, q.get('previous') === 'true');
  if ('error' in found) return fail(res, found.status, found.error);
  const sinceSeconds = integer(q.get('sinceSeconds'));
  const sinceTime = q.get('sinceTime')
    ? new Date(q.get('sinceTime') as string)
    : sinceSeconds !== undefined
      ? new Date(Date.now() - sinceSeconds * 1000)
      : undefined;
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  const aborted = new AbortController();
  req.on('close', () => aborted.abort());
  await streamContainerLog(
    found.file,
    {
      follow: q.get('follow') === 'true',
      timestamps: q.get('timestamps') === 'true',
      ...(integer(q.get('tailLines')) !== undefined ? { tailLines: integer(q.get('tailLines')) } : {}),
      ...(integer(q.get('limitBytes')) !== undefined ? { limitBytes: integer(q.get('limitBytes')) } : {}),
      ...(sinceTime ? { sinceTime } : {}),
    },
    res,
    found.isDone,
    aborted.signal,
  );
  res.end();
}

/**
 * The part of the kubelet API the API server proxies to: container logs, plus /healthz. Only
 * clients with a certificate from the cluster CA get in; the kubelet would also ask the API
 * server to authorize them, which a single-tenant test node does not need.
 */
export async function startKubeletServer(
  options: KubeletServerOptions,
): Promise<{ server: Server; port: number }> {
  const server = createServer(
    {
      cert: readFileSync(options.certFile),
      key: readFileSync(options.keyFile),
      ca: readFileSync(options.caFile),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const url = new URL(req.url ?? '/', 'https://node');
      if (!(req.socket as TLSSocket).authorized) return fail(res, 401, 'Unauthorized');
      if (req.method !== 'GET') return fail(res, 405, 'method not allowed');
      if (url.pathname === '/healthz') return void res.end('ok');
      if (url.pathname.startsWith('/containerLogs/')) {
        containerLogs(req, res, url, options).catch((error: unknown) => {
          if (!res.headersSent) fail(res, 500, (error as Error).message);
          else res.destroy();
        });
        return;
      }
      fail(res, 404, 'not found');
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('kubelet server has no TCP address');
  return { server, port: address.port };
}
