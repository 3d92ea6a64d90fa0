// The admission bench's Go client: vegeta (github.com/tsenart/vegeta), built from its Go module by the bench
// itself, sends one webhook's AdmissionReview from CONCURRENCY workers over kept-alive HTTP/1.1 connections,
// as the API server's own Go HTTP client does. The Node client (admission-client.ts) shares the event loop's
// cores with the server on a small machine and spent as much CPU per review as the server did: a server that
// admits everything undecided measured 26–63 ms p99 through it and 16 ms through vegeta on 2 cores.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const VEGETA_VERSION = 'v12.13.0';
/** Beside the engine bench's migra virtualenv: a tool of the benches only, not of the tests. */
const VEGETA_DIR = join(
  process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'),
  'ptah-bench',
  `vegeta-${VEGETA_VERSION}`,
);

/** vegeta's path, built once into the tools cache; why not, when Go is not there or the build fails. */
export function vegeta(): { bin: string } | { missing: string } {
  const bin = join(VEGETA_DIR, 'vegeta');
  if (existsSync(bin)) return { bin };
  try {
    mkdirSync(`${VEGETA_DIR}.tmp`, { recursive: true });
    execFileSync('go', ['install', `github.com/tsenart/vegeta/v12@${VEGETA_VERSION}`], {
      env: { ...process.env, GOBIN: `${VEGETA_DIR}.tmp`, CGO_ENABLED: '0' },
      stdio: 'pipe',
      timeout: 600_000,
    });
    rmSync(VEGETA_DIR, { recursive: true, force: true });
    renameSync(`${VEGETA_DIR}.tmp`, VEGETA_DIR);
    return { bin };
  } catch (error) {
    return {
      missing: `vegeta could not be built from its Go module (${String((error as Error).message).split('\n')[0]})`,
    };
  }
}

export interface VegetaRun {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly perSecond: number;
  /**
   * This process's CPU (user + system) per review during the timed run, in microseconds: what serving one
   * costs, which the machine's other load does not distort as it does latency.
   */
  readonly cpuPerReviewUs: number;
}

interface Report {
  latencies: { '50th': number; '99th': number; max: number };
  throughput: number;
  requests: number;
  success: number;
  status_codes: Record<string, number>;
  errors: string[] | null;
}

/**
 * A warm-up, then `seconds` of reviews from `concurrency` workers; latencies in ms. Every answer of the
 * timed run must be an admission (the body is read back for `"allowed":true`), else it throws.
 */
export async function attack(
  bin: string,
  job: { url: string; ca: string; body: string; concurrency: number; seconds: number },
): Promise<VegetaRun> {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-vegeta-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), job.ca);
    writeFileSync(join(dir, 'body.json'), job.body);
    writeFileSync(
      join(dir, 'targets.txt'),
      `POST ${job.url}\nContent-Type: application/json\n@${join(dir, 'body.json')}\n`,
    );
    // Not execFileSync: the server under test may share this process's event loop.
    const run = (seconds: number, out: string) =>
      promisify(execFile)(bin, [
        'attack',
        `-targets=${join(dir, 'targets.txt')}`,
        `-root-certs=${join(dir, 'ca.pem')}`,
        '-rate=0',
        `-workers=${job.concurrency}`,
        `-max-workers=${job.concurrency}`,
        `-duration=${seconds}s`,
        '-keepalive=true',
        '-http2=false',
        `-output=${join(dir, out)}`,
      ]);
    await run(1, 'warm.bin');
    const cpu = process.cpuUsage();
    await run(job.seconds, 'results.bin');
    const used = process.cpuUsage(cpu);
    const results = join(dir, 'results.bin');
    const report = JSON.parse(
      execFileSync(bin, ['report', '-type=json', results], { encoding: 'utf8', maxBuffer: 16 << 20 }),
    ) as Report;
    if (report.success !== 1)
      throw new Error(
        `not every review was answered 200: ${JSON.stringify(report.status_codes)} ${(report.errors ?? []).slice(0, 3).join('; ')}`,
      );
    // Each answer's body, base64 in vegeta's JSON encoding: every one must admit.
    const encoded = execFileSync(bin, ['encode', '-to=json', results], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    for (const line of encoded.split('\n')) {
      if (line === '') continue;
      const body = Buffer.from((JSON.parse(line) as { body: string }).body, 'base64').toString('utf8');
      if (!body.includes('"allowed":true')) throw new Error(`refused under load: ${body.slice(0, 500)}`);
    }
    const ms = (ns: number) => ns / 1e6;
    return {
      p50: ms(report.latencies['50th']),
      p99: ms(report.latencies['99th']),
      max: ms(report.latencies.max),
      perSecond: report.throughput,
      cpuPerReviewUs: (used.user + used.system) / report.requests,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
