// The admission bench's client, on a thread of its own: it sends one webhook's AdmissionReviews over HTTPS,
// CONCURRENCY at a time over kept-alive connections, as the API server does from its own process, so the
// webhook server's event loop runs only the server. It checks the first review is admitted, warms up (the
// connections open, the code compiled), then times REQUESTS reviews and hands their latencies back.
import { request as httpsRequest, Agent } from 'node:https';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

export interface ClientJob {
  readonly port: number;
  readonly ca: string;
  readonly path: string;
  /** The review serialised once, around its request UID. */
  readonly head: string;
  readonly tail: string;
  readonly concurrency: number;
  readonly warmUp: number;
  readonly requests: number;
}

export type ClientResult =
  | { readonly ok: true; readonly samples: number[]; readonly wallMs: number }
  | { readonly ok: false; readonly message: string };

const job = workerData as ClientJob;
const agent = new Agent({ ca: job.ca, keepAlive: true, maxSockets: job.concurrency });

function post(uid: number): Promise<{ ms: number; allowed: boolean; message?: string }> {
  const body = `${job.head}${uid}${job.tail}`;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: job.port,
        path: job.path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const out = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            response: { allowed: boolean; status?: { message: string } };
          };
          resolve({
            ms: performance.now() - started,
            allowed: out.response.allowed,
            ...(out.response.status ? { message: out.response.status.message } : {}),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` reviews, `concurrency` at a time; the first refusal ends the run. */
async function burst(count: number, record?: number[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < count) {
        const r = await post(next++);
        if (!r.allowed) throw new Error(`refused under load: ${r.message ?? ''}`);
        record?.push(r.ms);
      }
    }),
  );
}

async function run(): Promise<ClientResult> {
  const first = await post(0);
  if (!first.allowed)
    return { ok: false, message: `the manager's own object was refused: ${first.message ?? ''}` };
  await burst(job.warmUp);
  const samples: number[] = [];
  const started = performance.now();
  await burst(job.requests, samples);
  return { ok: true, samples, wallMs: performance.now() - started };
}

run()
  .catch((error: unknown): ClientResult => ({
    ok: false,
    message: String((error as Error)?.message ?? error),
  }))
  .then((result) => {
    agent.destroy();
    parentPort!.postMessage(result);
  });
