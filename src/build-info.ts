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
