// MySQL schema engine benchmark on MariaDB: inspect and a no-op plan against generated 200- and
// 2,000-table schemas (columns, indexes, foreign keys, a check), with the time spent inside the catalog
// queries themselves, so the engine's own share is visible (ratio = engine time / catalog query time).
// Each size runs in its own process so peak RSS is that size's alone.
//
//   node --import tsx bench/mysql-schema-bench.ts            # both sizes, a table
//   node --import tsx bench/mysql-schema-bench.ts --size 200 # one size, JSON on stdout
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';
import { startMariadb } from '../test/env/mariadb.ts';
import { mysqlDialect } from '../src/engine/mysql/mysql-dialect.ts';
import type { SchemaDialect, Session } from '../src/engine/dialect.ts';
import { inspect, plan } from '../src/engine/schema-engine.ts';

interface Figures {
  tables: number;
  inspectMs: number;
  inspectCatalogMs: number;
  inspectRatio: number;
  inspectRoundTrips: number;
  noopPlanMs: number;
  noopPlanCatalogMs: number;
  noopPlanRatio: number;
  noopPlanStatements: number;
  peakRssMiB: number;
}

function generate(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const cols = [
      'id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY',
      'code varchar(32) NOT NULL',
      "name varchar(200) NOT NULL DEFAULT ''",
      'amount decimal(12,2) DEFAULT NULL',
      "kind enum('a','b','c') NOT NULL DEFAULT 'a'",
      'created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP',
      'parent_id bigint unsigned DEFAULT NULL',
      'UNIQUE KEY uq_code (code)',
      'KEY ix_name (name(20))',
      'CONSTRAINT ck_amount CHECK (amount >= 0)',
    ];
    if (i > 0)
      cols.push(
        `CONSTRAINT fk_parent_${i} FOREIGN KEY (parent_id) REFERENCES t${i - 1} (id) ON DELETE CASCADE`,
      );
    out.push(`CREATE TABLE t${i} (${cols.join(', ')}) ENGINE=InnoDB;`);
  }
  return out.join('\n');
}

/** The dialect with a session that times its own queries: the catalog's share of an operation. */
function timedDialect(): { dialect: SchemaDialect; catalogMs: () => number; reset: () => void } {
  let spent = 0;
  const wrap = (s: Session): Session => ({
    async query(sql, params) {
      const t = performance.now();
      try {
        return await s.query(sql, params);
      } finally {
        spent += performance.now() - t;
      }
    },
    get roundTrips() {
      return s.roundTrips;
    },
    close: () => s.close(),
  });
  return {
    dialect: { ...mysqlDialect, connect: async (url) => wrap(await mysqlDialect.connect(url)) },
    catalogMs: () => Math.round(spent),
    reset: () => (spent = 0),
  };
}

async function measure(n: number): Promise<Figures> {
  const server = await startMariadb();
  try {
    const url = await server.createDatabase('bench');
    const sql = generate(n);
    const c = await mysql.createConnection({ uri: url, multipleStatements: true });
    await c.query(sql);
    await c.end();
    const t = timedDialect();
    const timed = async <T>(f: () => Promise<T>): Promise<[T, number, number]> => {
      await f(); // warm: connection setup, parser and JIT
      t.reset();
      const start = performance.now();
      const r = await f();
      return [r, Math.round(performance.now() - start), t.catalogMs()];
    };
    const [ins, inspectMs, inspectCatalogMs] = await timed(() => inspect(url, t.dialect));
    const desired = { files: [{ path: 'desired.sql', sql }] };
    const [p, noopPlanMs, noopPlanCatalogMs] = await timed(() => plan(url, t.dialect, desired));
    return {
      tables: ins.model.tables.length,
      inspectMs,
      inspectCatalogMs,
      inspectRatio: Number((inspectMs / Math.max(1, inspectCatalogMs)).toFixed(2)),
      inspectRoundTrips: ins.roundTrips,
      noopPlanMs,
      noopPlanCatalogMs,
      noopPlanRatio: Number((noopPlanMs / Math.max(1, noopPlanCatalogMs)).toFixed(2)),
      noopPlanStatements: p.plan?.statements.length ?? -1,
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    };
  } finally {
    await server.stop();
  }
}

const sizeArg = process.argv.indexOf('--size');
if (sizeArg >= 0) {
  process.stdout.write(JSON.stringify(await measure(Number(process.argv[sizeArg + 1]))) + '\n');
} else {
  const run = (n: number): Figures =>
    JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--size', String(n)], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      }),
    ) as Figures;
  const small = run(200);
  const large = run(2000);
  console.log('metric'.padEnd(20), '200'.padStart(10), '2000'.padStart(10), '2000/200'.padStart(9));
  for (const k of Object.keys(small) as (keyof Figures)[]) {
    const ratio = small[k] === 0 ? '-' : (large[k] / small[k]).toFixed(2);
    console.log(
      k.padEnd(20),
      String(small[k]).padStart(10),
      String(large[k]).padStart(10),
      ratio.padStart(9),
    );
  }
}
