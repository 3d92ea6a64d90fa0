// Benchmark of the migrations engine on a real PostgreSQL:
//   1. status on a history of 2,000 applied versions (engine in-process, and the CLI end to end);
//   2. up of 500 small files: total time and the engine's own overhead per file compared with running the
//      same SQL through psql in one run.
// Run: node --import tsx bench/migrations-bench.ts
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../test/env/postgres.ts';
import { openMigrationAdapter } from '../src/engine/migrations/dialects/open-adapter.ts';
import {
  hashMigrationDirectory,
  loadMigrationDirectory,
} from '../src/engine/migrations/migration-directory.ts';
import { computeStatus } from '../src/engine/migrations/migration-status.ts';
import { migrateUp } from '../src/engine/migrations/migrate-up.ts';
import { parseRevisionTableName } from '../src/engine/migrations/revision.ts';

const run = promisify(execFile);
const PTAH = join(import.meta.dirname, '..', 'bin', 'ptah.mjs');

/** The least disturbed run: on a shared machine, interference only ever adds time. */
function best(xs: number[]): number {
  return Math.min(...xs);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function makeDir(count: number, body: (i: number) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-bench-'));
  for (let i = 1; i <= count; i++) writeFileSync(join(dir, `${i}_step_${i}.sql`), body(i));
  hashMigrationDirectory(dir);
  return dir;
}

/** libpq environment for psql: the password travels in PGPASSWORD, never in argv. */
function psqlEnv(url: string): NodeJS.ProcessEnv {
  const u = new URL(url);
  return {
    ...process.env,
    PGHOST: u.hostname,
    PGPORT: u.port,
    PGUSER: decodeURIComponent(u.username),
    PGPASSWORD: decodeURIComponent(u.password),
    PGDATABASE: u.pathname.slice(1),
  };
}

const server = await startPostgres();
const dirs: string[] = [];
try {
  // 1. Status on 2,000 applied versions.
  const statusDir = makeDir(2000, (i) => `SELECT ${i};\n`);
  dirs.push(statusDir);
  const statusUrl = await server.createDatabase('bench_status');
  const files = loadMigrationDirectory(statusDir);
  const db = await openMigrationAdapter(statusUrl, parseRevisionTableName(undefined));
  await db.ensureRevisionTable();
  const seed = new pg.Client({ connectionString: statusUrl });
  await seed.connect();
  await seed.query(
    `INSERT INTO ptah_schema_revisions (version, description, checksum, execution_ms)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])`,
    [
      files.map((f) => f.version),
      files.map((f) => f.description),
      files.map((f) => f.checksum),
      files.map(() => 1),
    ],
  );
  await seed.end();
  const inProcess: number[] = [];
  let verdict = '';
  for (let k = 0; k < 7; k++) {
    const t = performance.now();
    const s = computeStatus(loadMigrationDirectory(statusDir), await db.readRevisions());
    inProcess.push(performance.now() - t);
    verdict = s.verdict;
  }
  await db.close();
  const cli: number[] = [];
  for (let k = 0; k < 3; k++) {
    const t = performance.now();
    await run(process.execPath, [PTAH, 'migrations', 'status', '--json', '--dir', statusDir], {
      env: { ...process.env, PTAH_DB_URL: statusUrl },
      maxBuffer: 64 << 20,
    });
    cli.push(performance.now() - t);
  }
  console.log(`status, 2,000 applied versions (verdict ${verdict}):`);
  console.log(
    `  engine in-process (read dir + sum check + history + verdict): median ${median(inProcess).toFixed(1)} ms`,
  );
  console.log(`  CLI end to end (node start + tsx + the above): median ${median(cli).toFixed(0)} ms`);

  // 2. Up of 500 small files vs psql running the same SQL in one run.
  const count = 500;
  const body = (i: number) =>
    `CREATE TABLE t_${i} (id int PRIMARY KEY, name text NOT NULL);\nINSERT INTO t_${i} VALUES (1, 'row ${i}');\n`;
  const upDir = makeDir(count, body);
  dirs.push(upDir);
  const upFiles = loadMigrationDirectory(upDir);
  // One untimed run first, so the timed one measures the engine rather than JIT warm-up.
  const warm = await openMigrationAdapter(
    await server.createDatabase('bench_warm'),
    parseRevisionTableName(undefined),
  );
  await migrateUp(warm, { files: upFiles, lockTimeoutMs: 10_000 });
  await warm.close();
  // The machine is shared: run the three contenders interleaved, several rounds, and compare medians.
  const script = join(upDir, '..', `${upDir.split('/').at(-1)}-all.sql`);
  writeFileSync(script, Array.from({ length: count }, (_, i) => body(i + 1)).join(''));
  const txScript = script.replace(/\.sql$/, '-tx.sql');
  writeFileSync(
    txScript,
    Array.from({ length: count }, (_, i) => `BEGIN;\n${body(i + 1)}COMMIT;\n`).join(''),
  );
  const engine: number[] = [];
  const psql: number[] = [];
  const psqlTx: number[] = [];
  const engineCpu: number[] = [];
  const rounds = 5;
  for (let round = 0; round < rounds; round++) {
    const target = await openMigrationAdapter(
      await server.createDatabase(`bench_up_${round}`),
      parseRevisionTableName(undefined),
    );
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await migrateUp(target, { files: upFiles, lockTimeoutMs: 10_000 });
    engine.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    engineCpu.push((cpu.user + cpu.system) / 1000);
    await target.close();
    if (result.outcome !== 'applied' || result.applied.length !== count)
      throw new Error(`up: ${result.outcome}`);
    for (const [file, into, name] of [
      [script, psql, 'psql'],
      [txScript, psqlTx, 'psqltx'],
    ] as const) {
      const url = await server.createDatabase(`bench_${name}_${round}`);
      const t = performance.now();
      await run('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', file], { env: psqlEnv(url) });
      into.push(performance.now() - t);
    }
  }
  rmSync(script);
  rmSync(txScript);
  const engineMs = best(engine);
  const psqlMs = best(psql);
  const psqlTxMs = best(psqlTx);
  const cpuPerFile = best(engineCpu) / count;

  const cliUrl = await server.createDatabase('bench_up_cli');
  const tc = performance.now();
  await run(process.execPath, [PTAH, 'migrations', 'up', '--json', '--dir', upDir], {
    env: { ...process.env, PTAH_DB_URL: cliUrl },
  });
  const cliUpMs = performance.now() - tc;

  console.log(
    `up, ${count} small files (2 statements each), file transaction mode, best of ${rounds} interleaved rounds:`,
  );
  console.log(
    `  engine in-process: ${engineMs.toFixed(0)} ms (${(engineMs / count).toFixed(2)} ms/file; rounds ${engine.map((x) => x.toFixed(0)).join(', ')})`,
  );
  console.log(`  engine client CPU (node, pg driver, bookkeeping): ${cpuPerFile.toFixed(2)} ms/file`);
  console.log(`  CLI end to end (one run): ${cliUpMs.toFixed(0)} ms`);
  console.log(
    `  psql, same SQL, one run (autocommit): ${psqlMs.toFixed(0)} ms (rounds ${psql.map((x) => x.toFixed(0)).join(', ')})`,
  );
  console.log(
    `  psql, same SQL, BEGIN/COMMIT per file: ${psqlTxMs.toFixed(0)} ms (rounds ${psqlTx.map((x) => x.toFixed(0)).join(', ')})`,
  );
  console.log(
    `  engine overhead per file vs psql autocommit: ${((engineMs - psqlMs) / count).toFixed(2)} ms`,
  );
  console.log(
    `  engine overhead per file vs psql per-file transactions: ${((engineMs - psqlTxMs) / count).toFixed(2)} ms`,
  );
} finally {
  await server.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
