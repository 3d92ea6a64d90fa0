/**
 * The options of a source command (`resolve`, `verify`, `fetch-oci`, `resolve-git`, `fetch-git` …) as the
 * Job builder writes them: `--name value` pairs and the bare `--plain-http`. One reader and one refusal for
 * every source, so an OCI and a Git command refuse a stray option in the same words.
 */
import { parseArgs } from 'node:util';

export class SourceOptionsError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SourceFlags<F extends string> {
  readonly values: Partial<Record<F, string>>;
  readonly plainHttp: boolean;
}

/** Reads argv after the command word; an unknown, repeated-as-boolean or valueless option is refused. */
export function readSourceFlags<F extends string>(
  args: readonly string[],
  flags: readonly F[],
): SourceFlags<F> {
  const options: Record<string, { type: 'string' | 'boolean' }> = { 'plain-http': { type: 'boolean' } };
  for (const f of flags) options[f] = { type: 'string' };
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals: false });
  } catch (error) {
    // parseArgs names the option it stopped at; bounded, as every refusal that reaches a frame is.
    throw new SourceOptionsError('invalid_option', (error as Error).message.slice(0, 160));
  }
  const values: Partial<Record<F, string>> = {};
  for (const f of flags) {
    const v = parsed.values[f];
    if (typeof v === 'string') values[f] = v;
  }
  return { values, plainHttp: parsed.values['plain-http'] === true };
}
