// Engine benchmark: whole `ptah` processes (the dist bundle, as a user or the runner starts it) against
// generated PostgreSQL schemas and a real public one, beside the catalog floor and migra.
//
// Scenarios per schema: empty → N (plan against an empty database), no-op (plan against the loaded one),
// small change (one more column and index), drift (`ptah schema drift` against the loaded database, what
// the operator runs at every interval). Beside them: the floor, i.e. the inspector's own catalog queries run
// alone through psql, and `pg_dump --schema-only`; and migra (installed from PyPI into a virtualenv by this
// benchmark), which compares two databases, given the same pairs; and psqldef (`--dry-run`, the same desired
// files), when PTAH_BENCH_PSQLDEF names its binary. The Go module proxy does not serve
// github.com/sqldef/sqldef here (403 for every version), so the bench cannot install it itself: build
// psqldef from a checkout of sqldef (`go build ./cmd/psqldef`) and point the variable at it.
//
// Each command runs RUNS times, the tools in turn, and the median is reported: wall time, the process's
// CPU (user + system), the server's CPU for it (what its backend used, read from the postmaster's reaped
// children), their sum, and peak RSS. The ratio to the floor is given for wall and for CPU; on a machine
// shared with other work, CPU is the figure the load does not distort, and the load average is printed.
//
//   npm run bench -- engine                          200 and 2,000 tables, 200 and 2,000 mixed, the real schema
//   PTAH_BENCH_SIZES=200,2000,5000 npm run bench -- engine
//   PTAH_BENCH_MIXED_SIZES=200,2000 ...              sizes of the mixed schema (functions, triggers, views
//                                                    and partitions beside the tables; '' for none)
//   PTAH_BENCH_RUNS=5 ...                            runs per command (default 3)
//   PTAH_BENCH_PSQLDEF=/path/to/psqldef ...          measure psqldef side by side
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../test/env/postgres.ts';
import { builtProgram } from '../test/env/build-output.ts';
import { PTAH_NODE_FLAGS } from '../src/build-info.ts';
import { catalogQueryScript } from '../src/engine/pg/pg-inspector.ts';
import { generatedSchema } from './generated-schema.ts';

const ROOT = join(import.meta.dirname, '..');
const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const RUNS = Number(process.env['PTAH_BENCH_RUNS'] ?? 3);
const SIZES = (process.env['PTAH_BENCH_SIZES'] ?? '200,2000').split(',').map(Number);
const MIXED_SIZES = (process.env['PTAH_BENCH_MIXED_SIZES'] ?? '200,2000')
  .split(',')
  .filter((x) => x.trim() !== '')
  .map(Number);
const REAL_SCHEMA = process.env['PTAH_BENCH_REAL'] ?? 'gisia';
const WORK = join(tmpdir(), `ptah-engine-bench-${process.pid}`);
const MIGRA_VENV = join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'ptah-bench', 'migra');
const PSQLDEF = process.env['PTAH_BENCH_PSQLDEF'];

interface Sample {
  wall: number;
  cpu: number;
  server: number;
  rssMiB: number;
  ok: boolean;
}

/** Children of the postmaster that have exited: their CPU, in ms (clock ticks of 10 ms). */
function serverCpuMs(postmaster: number): number {
  const fields = readFileSync(`/proc/${postmaster}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After the ") ": field 3 is index 0, so cutime (16) and cstime (17) are 13 and 14.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One process, timed by /usr/bin/time; `ok` is whether it exited as the scenario expects. */
async function runOnce(
  postmaster: number,
  cmd: string,
  args: readonly string[],
  okCodes: readonly number[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Sample> {
  const out = join(WORK, 'time.txt');
  const before = serverCpuMs(postmaster);
  const started = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', '-o', out, cmd, ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    maxBuffer: 64 << 20,
  });
  const wall = (performance.now() - started) / 1000;
  // The backend exits after its client; the postmaster reaps it a moment later.
  await sleep(150);
  const server = (serverCpuMs(postmaster) - before) / 1000;
  const [user = 0, sys = 0, rss = 0] = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .pop()!
    .split(' ')
    .map(Number);
  const ok = okCodes.includes(r.status ?? -1);
  if (!ok)
    process.stderr.write(
      `bench: ${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(-400)}\n`,
    );
  return { wall, cpu: user + sys, server, rssMiB: Math.round(rss / 1024), ok };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

interface Row {
  schema: string;
  scenario: string;
  tool: string;
  samples: Sample[];
}

/** Installs migra into a virtualenv once; undefined (and why) when PyPI or python3 is not there. */
function migra(): { bin: string } | { missing: string } {
  const bin = join(MIGRA_VENV, 'bin', 'migra');
  if (existsSync(bin)) return { bin };
  try {
    mkdirSync(MIGRA_VENV, { recursive: true });
    execFileSync('python3', ['-m', 'venv', MIGRA_VENV], { stdio: 'pipe' });
    execFileSync(join(MIGRA_VENV, 'bin', 'pip'), ['install', '-q', 'migra[pg]'], {
      stdio: 'pipe',
      timeout: 600_000,
    });
    return { bin };
  } catch (error) {
    rmSync(MIGRA_VENV, { recursive: true, force: true });
    return {
      missing: `migra could not be installed from PyPI (${String((error as Error).message).split('\n')[0]})`,
    };
  }
}

async function main(): Promise<void> {
  const ptah = builtProgram('ptah');
  if (!existsSync(ptah)) throw new Error('bench: dist/ptah.mjs is missing; run npm run build first');
  mkdirSync(WORK, { recursive: true });
  const loadBefore = loadavg();
  const migraTool = migra();
  const server = await startPostgres({
    // Large schemas load (and pg_dump locks) thousands of tables in one transaction; no autovacuum worker
    // adds its CPU to the server's figures.
    settings: { max_locks_per_transaction: '1024', autovacuum: 'off', log_statement: 'none' },
  });
  const rows: Row[] = [];
  try {
    const url = (db: string) => server.adminUrl.replace(/\/postgres$/, `/${db}`);
    const psql = (db: string, args: readonly string[], input?: string) =>
      execFileSync(join(PG_BIN, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url(db), ...args], {
        input,
        stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'],
        maxBuffer: 64 << 20,
      });
    const floorFile = join(WORK, 'floor.sql');
    writeFileSync(
      floorFile,
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;\n${catalogQueryScript().join(';\n')};\nCOMMIT;\n`,
    );
    const real = readFileSync(
      join(ROOT, 'test', 'fixtures', 'real-schemas', REAL_SCHEMA, 'schema.sql'),
      'utf8',
    );
    const schemas: { name: string; sql: string; changed?: string }[] = [
      ...SIZES.map((n) => ({
        name: String(n),
        sql: generatedSchema(n),
        changed: generatedSchema(n, { change: true }),
      })),
      ...MIXED_SIZES.map((n) => ({
        name: `${n} mixed`,
        sql: generatedSchema(n, { mixed: true }),
        changed: generatedSchema(n, { mixed: true, change: true }),
      })),
      { name: REAL_SCHEMA, sql: real },
    ];
    for (const s of schemas) {
      const id = s.name.replace(/[^a-z0-9]/gi, '_').toLowerCase();
      const [empty, live, twin, changed] = [`e_${id}`, `l_${id}`, `t_${id}`, `c_${id}`];
      const loadInto = (db: string, sql: string) => {
        psql('postgres', ['-c', `CREATE DATABASE ${db}`]);
        if (sql.length < 1 << 20) {
          psql(db, [], sql);
          return;
        }
        // A large generated schema (one statement a line) loads in slices, so no transaction holds every lock.
        const statements = sql.trim().replace(/;$/, '').split(/;\n/);
        for (let i = 0; i < statements.length; i += 3000)
          psql(db, [], `BEGIN;\n${statements.slice(i, i + 3000).join(';\n')};\nCOMMIT;\n`);
      };
      psql('postgres', ['-c', `CREATE DATABASE ${empty}`]);
      loadInto(live, s.sql);
      loadInto(twin, s.sql);
      if (s.changed !== undefined) loadInto(changed, s.changed);
      const desired = join(WORK, `${id}.sql`);
      writeFileSync(desired, s.sql);
      const desiredChanged = join(WORK, `${id}-changed.sql`);
      if (s.changed !== undefined) writeFileSync(desiredChanged, s.changed);

      type Cmd = {
        tool: string;
        scenario: string;
        cmd: string;
        args: string[];
        ok: number[];
        env?: NodeJS.ProcessEnv;
      };
      const ptahCmd = (scenario: string, sub: string, db: string, file: string, ok: number[]): Cmd => ({
        tool: 'ptah',
        scenario,
        cmd: process.execPath,
        // As the runner, the engine image and bin/ptah.mjs run it.
        args: [...PTAH_NODE_FLAGS, ptah, 'schema', sub, '--url', url(db), '--desired', file],
        ok,
      });
      const cmds: Cmd[] = [
        ptahCmd('empty → N', 'plan', empty, desired, [3]),
        ptahCmd('no-op', 'plan', live, desired, [0]),
        ...(s.changed !== undefined ? [ptahCmd('small change', 'plan', live, desiredChanged, [3])] : []),
        ptahCmd('drift (no-op)', 'drift', live, desired, [0]),
        {
          tool: 'floor: catalog queries (psql)',
          scenario: 'floor',
          cmd: join(PG_BIN, 'psql'),
          args: [
            '-X',
            '-q',
            '-At',
            '-v',
            'ON_ERROR_STOP=1',
            '-o',
            '/dev/null',
            '-f',
            floorFile,
            '-d',
            url(live),
          ],
          ok: [0],
        },
        {
          tool: 'floor: pg_dump --schema-only',
          scenario: 'floor',
          cmd: join(PG_BIN, 'pg_dump'),
          args: ['--schema-only', '-f', '/dev/null', url(live)],
          ok: [0],
        },
      ];
      if ('bin' in migraTool) {
        const m = (scenario: string, from: string, to: string): Cmd => ({
          tool: 'migra',
          scenario,
          cmd: migraTool.bin,
          args: [
            '--unsafe',
            url(from).replace(/^postgres:/, 'postgresql+psycopg2:'),
            url(to).replace(/^postgres:/, 'postgresql+psycopg2:'),
          ],
          // 2: differences found.
          ok: [0, 2],
        });
        cmds.push(m('empty → N', empty, live), m('no-op', live, twin));
        if (s.changed !== undefined) cmds.push(m('small change', live, changed));
      }
      if (PSQLDEF !== undefined) {
        // psqldef takes the server as flags and the password from the environment, not a URL.
        const at = new URL(server.adminUrl);
        const env = { ...process.env, PGPASSWORD: decodeURIComponent(at.password), PGSSLMODE: 'disable' };
        const d = (scenario: string, db: string, file: string): Cmd => ({
          tool: 'psqldef',
          scenario,
          cmd: PSQLDEF,
          args: ['-U', at.username, '-h', at.hostname, '-p', at.port, '--dry-run', '-f', file, db],
          ok: [0],
          env,
        });
        cmds.push(d('empty → N', empty, desired), d('no-op', live, desired));
        if (s.changed !== undefined) cmds.push(d('small change', live, desiredChanged));
      }
      // One warm-up of each (the page cache, the server's catalog caches), then RUNS rounds in turn.
      for (const c of cmds) await runOnce(server.pid, c.cmd, c.args, c.ok, c.env);
      const samples = new Map<Cmd, Sample[]>(cmds.map((c) => [c, []]));
      for (let r = 0; r < RUNS; r++)
        for (const c of cmds) samples.get(c)!.push(await runOnce(server.pid, c.cmd, c.args, c.ok, c.env));
      for (const c of cmds)
        rows.push({ schema: s.name, scenario: c.scenario, tool: c.tool, samples: samples.get(c)! });
      for (const db of [empty, live, twin, ...(s.changed !== undefined ? [changed] : [])])
        psql('postgres', ['-c', `DROP DATABASE ${db}`]);
    }
  } finally {
    await server.stop();
    rmSync(WORK, { recursive: true, force: true });
  }
  print(rows, loadBefore, migraTool);
}

function print(
  rows: readonly Row[],
  loadBefore: number[],
  migraTool: { bin: string } | { missing: string },
): void {
  const fmt = (x: number) => x.toFixed(2);
  const head = [
    'schema',
    'scenario',
    'tool',
    'wall s',
    'cpu s',
    'server s',
    'total cpu s',
    'rss MiB',
    '×floor wall',
    '×floor cpu',
  ];
  const table: string[][] = [head];
  for (const r of rows) {
    const floor = rows.find((x) => x.schema === r.schema && x.tool === 'floor: catalog queries (psql)');
    const wall = median(r.samples.map((s) => s.wall));
    const total = median(r.samples.map((s) => s.cpu + s.server));
    const fWall = floor ? median(floor.samples.map((s) => s.wall)) : 0;
    const fTotal = floor ? median(floor.samples.map((s) => s.cpu + s.server)) : 0;
    table.push([
      r.schema,
      r.scenario,
      r.tool + (r.samples.every((s) => s.ok) ? '' : ' (failed)'),
      fmt(wall),
      fmt(median(r.samples.map((s) => s.cpu))),
      fmt(median(r.samples.map((s) => s.server))),
      fmt(total),
      String(median(r.samples.map((s) => s.rssMiB))),
      fWall > 0 ? fmt(wall / fWall) : '-',
      fTotal > 0 ? fmt(total / fTotal) : '-',
    ]);
  }
  const widths = head.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  console.log(
    `engine: medians of ${RUNS} runs after a warm-up; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} after (2 cores)`,
  );
  for (const row of table)
    console.log(row.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  if ('missing' in migraTool) console.log(`migra: not measured: ${migraTool.missing}`);
  if (PSQLDEF === undefined)
    console.log(
      'psqldef: not measured: set PTAH_BENCH_PSQLDEF to a psqldef binary (the Go module proxy does not serve github.com/sqldef/sqldef, so the bench cannot install it)',
    );
}

await main();
