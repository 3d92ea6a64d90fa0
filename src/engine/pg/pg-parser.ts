/**
 * The PostgreSQL grammar (libpg-query's WebAssembly build), loaded once per process and only by a command
 * that has SQL to parse.
 *
 * The grammar's own module is called here directly rather than through the package's `parseSync`. Its JS
 * glue copies the text into the module's memory and finds the end of the JSON answer one byte at a time in
 * JavaScript loops; on a 2,000-table file those loops cost about as much as a tenth of the whole plan
 * (`npm run bench -- engine`, issue 9). `TextEncoder.encodeInto` and `Uint8Array.indexOf` do the same
 * natively. The exports used are the ones the package's `parseSync` itself calls, which is why the
 * package's version is pinned exactly in package.json.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';

/** The members of the Emscripten module that a parse uses. */
interface GrammarModule {
  readonly HEAPU8: Uint8Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  /** A `PgQueryParseResult *`: { char *parse_tree; char *stderr_buffer; PgQueryError *error; }. */
  _wasm_parse_query_raw(sqlPointer: number): number;
  _wasm_free_parse_result(resultPointer: number): void;
}

/** The position of a syntax error, as libpg-query's own SqlError carries it (0-based, in characters). */
export class SqlSyntaxError extends Error {
  constructor(
    message: string,
    readonly sqlDetails: { readonly cursorPosition: number },
  ) {
    super(message);
    this.name = 'SqlSyntaxError';
  }
}

let grammar: GrammarModule | undefined;
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
  // every `ptah` run (`npm run bench -- engine`, issue 9). So the flag is set before the module compiles.
  setFlagsFromString('--liftoff-only');
  // The factory is CommonJS and finds its .wasm file beside itself; required at run time, the bundle keeps
  // it outside (scripts/build.ts marks the package external).
  const factory = createRequire(import.meta.url)(
    'libpg-query/wasm/libpg-query.js',
  ) as () => Promise<GrammarModule>;
  grammar = await factory();
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** libpg-query's JSON parse tree of `sql`; throws SqlSyntaxError on a syntax error. */
export function parseSync(sql: string): unknown {
  const m = grammar;
  if (m === undefined) throw new Error('the PostgreSQL grammar is not loaded: await ensureParser() first');
  // A UTF-16 unit encodes to at most 3 bytes; one more for the terminating NUL.
  const capacity = sql.length * 3 + 1;
  const sqlPointer = m._malloc(capacity);
  let result = 0;
  try {
    // HEAPU8 is read again after each call into the module: a call that grows its memory replaces it.
    const { written } = encoder.encodeInto(sql, m.HEAPU8.subarray(sqlPointer, sqlPointer + capacity - 1));
    m.HEAPU8[sqlPointer + written] = 0;
    result = m._wasm_parse_query_raw(sqlPointer);
    if (result === 0) throw new Error('the PostgreSQL grammar could not allocate its parse result');
    const heap = m.HEAPU8;
    const words = new DataView(heap.buffer);
    const tree = words.getUint32(result, true);
    const error = words.getUint32(result + 8, true);
    if (error !== 0) {
      // PgQueryError: { char *message; char *funcname; char *filename; int lineno; int cursorpos; ... }
      const message = cString(heap, words.getUint32(error, true)) || 'unknown syntax error';
      const cursor = words.getInt32(error + 16, true);
      throw new SqlSyntaxError(message, { cursorPosition: cursor > 0 ? cursor - 1 : 0 });
    }
    if (tree === 0) throw new Error('the PostgreSQL grammar returned no parse tree');
    return JSON.parse(cString(heap, tree));
  } finally {
    m._free(sqlPointer);
    if (result !== 0) m._wasm_free_parse_result(result);
  }
}

/** The NUL-terminated UTF-8 string at `pointer`. */
function cString(heap: Uint8Array, pointer: number): string {
  if (pointer === 0) return '';
  return decoder.decode(heap.subarray(pointer, heap.indexOf(0, pointer)));
}
