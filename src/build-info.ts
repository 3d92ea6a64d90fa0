/**
 * What the build (scripts/build.ts) stamps into the bundles. Run from the TypeScript sources, neither
 * constant exists and the values come from the checkout instead.
 */
import { readFileSync } from 'node:fs';

declare const PTAH_BUNDLE: boolean | undefined;
declare const PTAH_VERSION: string | undefined;

/** True in dist/*.mjs: the programs sit side by side there, not under bin/. */
export const BUNDLED: boolean = typeof PTAH_BUNDLE !== 'undefined' && PTAH_BUNDLE;

export const VERSION: string =
  typeof PTAH_VERSION !== 'undefined'
    ? PTAH_VERSION
    : (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
        .version;

/** The `ptah` program next to the caller: dist/ptah.mjs in a build, bin/ptah.mjs in a checkout. */
export function ptahProgramUrl(): URL {
  return BUNDLED ? new URL('./ptah.mjs', import.meta.url) : new URL('../bin/ptah.mjs', import.meta.url);
}

/**
 * How node runs `ptah` wherever Ptah starts it (the runner in a Job, the engine image, bin/ptah.mjs and the
 * engine bench). A plan allocates fast and briefly: with V8's default young generation (16 MiB
 * semi-spaces) the heap of a 2,000-table no-op plan grew to ~80 MiB for ~27 MiB that stay live, and the
 * process peaked at 161-175 MiB RSS; 4 MiB semi-spaces keep it at 141-152 MiB for the same CPU
 * (`npm run bench -- engine`, issue 9). A heap's size is fixed as node starts, so these are node's
 * arguments, not something the program can set itself.
 */
export const PTAH_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
