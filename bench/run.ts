// `npm run bench [-- NAME ...]`: runs the benchmarks by name (all of them without a name), one after the
// other in their own process so one's memory and caches never colour the next one's figures.
//
//   npm run bench                     every benchmark
//   npm run bench -- startup schema   just those
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const BENCHMARKS: Readonly<Record<string, string>> = {
  startup: 'startup-bench.ts',
  schema: 'schema-bench.ts',
  engine: 'engine-bench.ts',
  'mysql-schema': 'mysql-schema-bench.ts',
  migrations: 'migrations-bench.ts',
  capacity: 'capacity-bench.ts',
  admission: 'admission-bench.ts',
};

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  process.stderr.write(
    `bench: no benchmark named ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}\n`,
  );
  process.exit(2);
}
let failed = 0;
for (const name of asked.length > 0 ? asked : Object.keys(BENCHMARKS)) {
  process.stdout.write(`\n== ${name} ==\n`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, BENCHMARKS[name]!)], {
    stdio: 'inherit',
  });
  if (run.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
