/**
 * The HTTP endpoint Prometheus scrapes: GET /metrics, nothing else. Plain HTTP on the bind address the
 * Deployment sets (`:8080` listens on every address, `127.0.0.1:0` on loopback with a free port); what it
 * serves carries no names or values, only counts by closed labels.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorMetrics } from './operator-metrics.ts';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface BindAddress {
  /** Empty: every address. */
  readonly host: string;
  readonly port: number;
}

/** `host:port`, `:port` or `[v6]:port`; a clear error for anything else. */
export function parseBindAddress(value: string, what = 'metrics'): BindAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new Error(
      `${what} bind address ${JSON.stringify(value)} is not host:port; write e.g. ":8080" or "127.0.0.1:8080"`,
    );
  }
  return { host: m[1] ?? m[2] ?? '', port };
}

export async function startMetricsServer(
  metrics: OperatorMetrics,
  bindAddress: string,
): Promise<MetricsServer> {
  const { host, port } = parseBindAddress(bindAddress);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: only /metrics is served\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('GET only\n');
      return;
    }
    metrics.text().then(
      (body) => {
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`collecting metrics failed: ${(error as Error).name}\n`);
      },
    );
  });
  // A scrape is small and quick; a client that holds the connection open gets nothing more.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, ...(host !== '' ? { host } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
