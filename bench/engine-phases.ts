// Where a no-op plan's time goes, phase by phase, in one process: loading the engine's modules, the
// parser's WebAssembly, the catalog queries, turning catalog rows into the model, parsing and loading the
// desired SQL, fingerprinting, the diff, rendering and hashing the plan. CPU time (user + system) of this
// process per phase, and wall time; CPU is what a loaded machine does not distort.
//
//   node --import tsx bench/engine-phases.ts URL DESIRED.sql     # one JSON line on stdout
//   node --expose-gc --import tsx bench/engine-phases.ts ...     # heap after each phase, what it holds
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface Phase {
  readonly phase: string;
  readonly cpuMs: number;
  readonly wallMs: number;
  /** The JavaScript heap in use after the phase (a full collection first when run with --expose-gc). */
  readonly heapMiB: number;
  /** The process's peak RSS so far: the phase that raises it is the one holding the most at once. */
  readonly peakRssMiB: number;
}

const phases: Phase[] = [];
const collect = (globalThis as { gc?: () => void }).gc;
function heapMiB(): number {
  collect?.();
  return Math.round(process.memoryUsage().heapUsed / 2 ** 20);
}
async function timed<T>(phase: string, f: () => Promise<T> | T): Promise<T> {
  const c = process.cpuUsage();
  const t = performance.now();
  const r = await f();
  const used = process.cpuUsage(c);
  phases.push({
    phase,
    cpuMs: Math.round((used.user + used.system) / 1000),
    wallMs: Math.round(performance.now() - t),
    heapMiB: heapMiB(),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  });
  return r;
}

const [url, desiredPath] = process.argv.slice(2);
if (url === undefined || desiredPath === undefined) {
  process.stderr.write('usage: engine-phases.ts URL DESIRED.sql\n');
  process.exit(2);
}
const sql = readFileSync(desiredPath, 'utf8');
const { engine, inspector, desired, parser, canonical, diff, plans } = await timed(
  'load modules',
  async () => ({
    engine: await import('../src/engine/pg/pg-dialect.ts'),
    inspector: await import('../src/engine/pg/pg-inspector.ts'),
    desired: await import('../src/engine/pg/pg-desired.ts'),
    parser: await import('../src/engine/pg/pg-parser.ts'),
    canonical: await import('../src/engine/canonical-json.ts'),
    diff: await import('../src/engine/diff.ts'),
    plans: await import('../src/engine/plan-file.ts'),
  }),
);
const dialect = engine.postgresDialect;
await timed('parser WebAssembly', () => parser.ensureParser());
const session = await timed('connect', () => dialect.connect(url));
for (const s of dialect.beginReadOnly()) await session.query(s);
const catalog = await timed('catalog queries', () =>
  inspector.readCatalog(session, { openReader: () => dialect.connect(url) }),
);
const live = await timed('catalog rows to model', () =>
  inspector.modelFromCatalog(catalog.defaultSchema, catalog.rows),
);
await timed('desired: parse only', () => desired.parseStatements(sql, desiredPath));
const wanted = await timed('desired: parse and load', () =>
  desired.loadDesiredSql([{ path: desiredPath, sql }], catalog.defaultSchema),
);
await timed('fingerprint live', () =>
  canonical.canonicalDigest({ dialect: 'postgres', model: live, rows: [] }),
);
const changes = await timed('diff', () => diff.diffModels({ from: live, to: wanted, liveRows: [] }));
await timed('render, serialise, hash', () => {
  const statements = changes.flatMap((c) =>
    dialect.render(c).map((text) => ({ sql: text, severity: 'safe' as const, reason: '' })),
  );
  const bytes = plans.serialisePlan({
    format_version: plans.PLAN_FORMAT_VERSION,
    dialect: 'postgres',
    from_fingerprint: '',
    to_fingerprint: canonical.canonicalDigest({ dialect: 'postgres', model: wanted }),
    destructive: false,
    statements,
    managed_rows: [],
    rows_fingerprint: '',
  });
  return canonical.digestOf(bytes);
});
await session.query('COMMIT');
await session.close();
process.stdout.write(
  JSON.stringify({
    tables: live.tables.length,
    changes: changes.length,
    phases,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  }) + '\n',
);
