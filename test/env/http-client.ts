import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';

/** What came back from one HTTP exchange, body fully read. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface HttpRequestOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string;
  /** PEM file of the CA that signed the server certificate (https only). */
  readonly caFile?: string;
  /** Basic credentials, sent as an Authorization header (never in the URL). */
  readonly auth?: { readonly username: string; readonly password: string };
  readonly timeoutMs?: number;
}

/**
 * One request with node:http(s). Node's global fetch cannot be given a private CA without
 * undici's Agent, which is not a dependency here, so the test servers are spoken to this way.
 */
export async function sendHttpRequest(url: string, options: HttpRequestOptions = {}): Promise<HttpResponse> {
  const target = new URL(url);
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth) {
    const token = Buffer.from(`${options.auth.username}:${options.auth.password}`).toString('base64');
    headers['authorization'] = `Basic ${token}`;
  }
  const body = options.body === undefined ? undefined : Buffer.from(options.body);
  if (body) headers['content-length'] = String(body.length);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return await new Promise<HttpResponse>((resolve, reject) => {
    const req = send(
      target,
      {
        method: options.method ?? 'GET',
        // No keep-alive pool: an idle pooled socket would hold the test process open for seconds.
        agent: false,
        headers,
        ...(options.caFile ? { ca: readFileSync(options.caFile) } : {}),
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${req.method} ${target.origin}: timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}
