/**
 * `npm run build`: bundles each program into one ES module under dist/ with esbuild, so a start loads a few
 * files instead of the TypeScript sources through a loader and thousands of package files (the Kubernetes
 * client alone takes seconds to import file by file). Shared code goes into chunks beside the entry points;
 * a command's heavy modules are imported dynamically, so `ptah --version` loads none of them.
 *
 * Kept outside the bundle: libpg-query, which loads its WebAssembly file relative to its own module, and
 * pg's optional native binding, which is never installed.
 */
import { build } from 'esbuild';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist');

/** Program name → its source entry. The names are the files the images and the node agent's map run. */
export const ENTRY_POINTS = {
  ptah: 'src/cli/ptah.ts',
  'ptah-runner': 'src/runner/cli.ts',
  'ptah-operator': 'src/controller/main.ts',
  'kubectl-ptah': 'src/cli/kubectl-ptah.ts',
} as const;

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const started = performance.now();
await build({
  absWorkingDir: ROOT,
  entryPoints: Object.entries(ENTRY_POINTS).map(([out, src]) => ({ in: src, out })),
  outdir: OUT,
  outExtension: { '.js': '.mjs' },
  // Chunks sit beside the entry points, so `new URL('./ptah.mjs', import.meta.url)` holds in any of them.
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  sourcemap: true,
  external: ['libpg-query', 'pg-native'],
  define: { PTAH_BUNDLE: 'true', PTAH_VERSION: JSON.stringify(pkg.version) },
  // Bundled CommonJS packages call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __ptahCreateRequire } from 'node:module'; const require = __ptahCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  // V8 keeps every module's source text while the process runs (functions compile lazily from it): with
  // comments and indentation that was 7.4 MB for the Kubernetes client's chunk alone, held two bytes a
  // character because one comment had a character outside Latin-1, 15 MiB of the manager's heap. Only
  // whitespace goes: names stay, and the source maps map positions back.
  minifyWhitespace: true,
});
// esbuild escapes every non-ASCII character in code; what is left is in the licence comments it keeps at
// the end of a file. Escaped there too (one \uXXXX per UTF-16 unit, which means the same character in a
// string, a template or a regular expression), a file's source is one byte a character in V8.
for (const file of readdirSync(OUT).filter((f) => f.endsWith('.mjs'))) {
  const text = readFileSync(join(OUT, file), 'utf8');
  if (/[\u0080-\uffff]/.test(text)) {
    writeFileSync(
      join(OUT, file),
      text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    );
  }
}
// The stamp a launcher compares with the sources' modification times (bin/*.mjs).
writeFileSync(join(OUT, 'build-stamp'), `${new Date().toISOString()}\n`);
console.log(`build: dist/ in ${Math.round(performance.now() - started)} ms`);
