/**
 * One HTTP exchange with a registry or its token endpoint: TLS with the system roots plus an optional
 * custom CA, plain HTTP only where the caller allowed it, redirects followed a few times (a blob may live
 * on storage behind a redirect) without carrying the Authorization header to another origin, and a body
 * read that stops at a byte ceiling. Errors name the method and URL without its query (a redirect's query
 * may carry a signed token), never a header value.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { OciError } from './errors.ts';

export interface TransportOptions {
  readonly caPem?: string;
  readonly plainHttp?: boolean;
  /** Per-exchange time limit; the caller's signal ends it sooner. */
  readonly timeoutMs?: number;
}

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'PUT' | 'POST';
  readonly url: URL;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Uint8Array;
  /** Ceiling for the response body; a longer body is an error, not a truncation. */
  readonly maxBytes: number;
  readonly signal?: AbortSignal;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: Uint8Array;
  /** The URL that answered, after redirects. */
  readonly url: URL;
}

const MAX_REDIRECTS = 5;

export function describeUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

export class Transport {
  private readonly ca: string[] | undefined;

  constructor(private readonly options: TransportOptions) {
    this.ca = options.caPem !== undefined ? [...rootCertificates, options.caPem] : undefined;
  }

  get plainHttpAllowed(): boolean {
    return this.options.plainHttp === true;
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    let url = req.url;
    let headers = { ...req.headers };
    for (let hop = 0; ; hop++) {
      const res = await this.exchange({ ...req, url, headers });
      const location = res.headers['location'];
      if (
        ![301, 302, 303, 307, 308].includes(res.status) ||
        location === undefined ||
        req.method === 'PUT' ||
        req.method === 'POST'
      ) {
        return res;
      }
      if (hop >= MAX_REDIRECTS) {
        throw new OciError(
          'RegistryError',
          `${req.method} ${describeUrl(req.url)}: more than ${MAX_REDIRECTS} redirects`,
        );
      }
      const next = new URL(location, url);
      if (next.origin !== url.origin) {
        // Credentials are for the registry; storage behind a redirect authenticates by its own URL.
        const { authorization: _dropped, ...rest } = headers;
        headers = rest;
      }
      url = next;
    }
  }

  private exchange(req: HttpRequest): Promise<HttpResponse> {
    const { url } = req;
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.options.plainHttp === true)) {
      return Promise.reject(
        new OciError(
          'InsecureTransport',
          `${req.method} ${describeUrl(url)}: plain HTTP is not allowed; allow it explicitly (--plain-http) for a registry without TLS`,
        ),
      );
    }
    const where = `${req.method} ${describeUrl(url)}`;
    return new Promise<HttpResponse>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const timeoutMs = this.options.timeoutMs ?? 60_000;
      const out = send(
        url,
        {
          method: req.method,
          headers: {
            'user-agent': 'ptah-oci',
            ...req.headers,
            ...(req.body ? { 'content-length': String(req.body.length) } : {}),
          },
          ...(url.protocol === 'https:' && this.ca ? { ca: this.ca } : {}),
          ...(req.signal ? { signal: req.signal } : {}),
          timeout: timeoutMs,
        },
        (res) => {
          readBounded(res, req.method === 'HEAD' ? 0 : req.maxBytes, where, req.method === 'HEAD').then(
            (body) => resolve({ status: res.statusCode ?? 0, headers: flatten(res), body, url }),
            reject,
          );
        },
      );
      out.on('timeout', () =>
        out.destroy(new OciError('Unreachable', `${where}: no answer within ${timeoutMs} ms`)),
      );
      out.on('error', (error: Error) => {
        if (error instanceof OciError) reject(error);
        else if (req.signal?.aborted)
          reject(new OciError('Unreachable', `${where}: cancelled`, { cause: error }));
        else reject(new OciError('Unreachable', `${where}: ${errorText(error)}`, { cause: error }));
      });
      out.end(req.body);
    });
  }
}

/** A HEAD answer's Content-Length is the size of what GET would send, not a body: it is not checked. */
function readBounded(
  res: IncomingMessage,
  maxBytes: number,
  where: string,
  head: boolean,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const declared = Number(res.headers['content-length']);
    if (!head && Number.isFinite(declared) && declared > maxBytes) {
      res.destroy();
      reject(
        new OciError(
          'TooLarge',
          `${where}: the answer declares ${declared} bytes, over the limit of ${maxBytes}`,
        ),
      );
      return;
    }
    const chunks: Buffer[] = [];
    let total = 0;
    res.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) {
        res.destroy();
        reject(new OciError('TooLarge', `${where}: the answer is over the limit of ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', (error) =>
      reject(new OciError('Unreachable', `${where}: ${errorText(error)}`, { cause: error })),
    );
  });
}

function flatten(res: IncomingMessage): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(res.headers))
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

/** A socket or TLS error's code and message; these never hold request headers. */
function errorText(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
}
