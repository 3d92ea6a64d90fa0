/**
 * The PostgreSQL grammar (libpg-query, WebAssembly), loaded once per process and only by a command that has
 * SQL to parse.
 */
import { setFlagsFromString } from 'node:v8';

type LibPgQuery = typeof import('libpg-query');

let grammar: LibPgQuery | undefined;
let loading: Promise<void> | undefined;

/** Loads the grammar; every parse waits for this once. */
export async function ensureParser(): Promise<void> {
  loading ??= load();
  await loading;
}

async function load(): Promise<void> {
  // The grammar is megabytes of WebAssembly. By default V8 compiles it twice: with its baseline compiler,
  // then again with its optimising one on background threads. That second compile cost more CPU than a
  // whole plan won back from the faster code, and its compiler's memory added ~70 MiB to the peak RSS of
  // every `ptah` run (`npm run bench -- engine`, issue 9). libpg-query compiles its module as it is
  // imported, so the flag is set first and the import is dynamic.
  setFlagsFromString('--liftoff-only');
  const m = await import('libpg-query');
  await m.loadModule();
  grammar = m;
}

/** libpg-query's JSON parse tree of `sql`; throws the grammar's SqlError on a syntax error. */
export function parseSync(sql: string): unknown {
  if (grammar === undefined)
    throw new Error('the PostgreSQL grammar is not loaded: await ensureParser() first');
  return grammar.parseSync(sql);
}
