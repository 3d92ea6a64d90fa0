// Start-up benchmark: wall time of commands that do no work, so what is measured is loading the program.
// The bundles in dist/ (what the images and the e2e tests run) against the same programs from the sources
// through tsx. Each command runs RUNS times after one warm-up; min, median and max are reported.
//
//   node --import tsx bench/startup-bench.ts
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { builtProgram } from '../test/env/build-output.ts';

const RUNS = Number(process.env['PTAH_BENCH_RUNS'] ?? 15);
const ROOT = join(import.meta.dirname, '..');

function time(args: readonly string[]): number[] {
  const samples: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const started = performance.now();
    spawnSync(process.execPath, [...args], { stdio: 'ignore' });
    if (i > 0) samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b);
}

const cases: [string, string[]][] = [
  ['node -e 0 (the floor)', ['-e', '0']],
  ['dist/ptah.mjs --version', [builtProgram('ptah'), '--version']],
  ['dist/ptah.mjs --help', [builtProgram('ptah'), '--help']],
  ['bin/ptah.mjs --version (launcher, bundle)', [join(ROOT, 'bin', 'ptah.mjs'), '--version']],
  ['dist/kubectl-ptah.mjs --help', [builtProgram('kubectl-ptah'), '--help']],
  ['dist/ptah-runner.mjs (usage error)', [builtProgram('ptah-runner')]],
  ['tsx src/cli/ptah.ts --version', ['--import', 'tsx', join(ROOT, 'src', 'cli', 'ptah.ts'), '--version']],
  ['tsx src/cli/ptah.ts --help', ['--import', 'tsx', join(ROOT, 'src', 'cli', 'ptah.ts'), '--help']],
];

console.log(`start-up, ${RUNS} runs each (ms)`);
console.log(`${'command'.padEnd(44)} ${'min'.padStart(6)} ${'median'.padStart(7)} ${'max'.padStart(6)}`);
for (const [name, args] of cases) {
  const s = time(args);
  const median = s[Math.floor(s.length / 2)]!;
  console.log(
    `${name.padEnd(44)} ${s[0]!.toFixed(0).padStart(6)} ${median.toFixed(0).padStart(7)} ${s.at(-1)!.toFixed(0).padStart(6)}`,
  );
}
