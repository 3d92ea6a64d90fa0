/**
 * Durations in spec fields are written the way Kubernetes and Go write them (`30s`, `10m`, `1h30m`), so
 * that the CEL `duration()` function the CRD uses to bound them reads the same value the manager does.
 */

export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$';
const whole = new RegExp(DURATION_PATTERN);
const part = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export class DurationError extends Error {
  override readonly name = 'DurationError';
}

/** Milliseconds in a duration such as `1h30m`; throws on anything else. */
export function parseDuration(text: string): number {
  if (!whole.test(text)) {
    throw new DurationError(`"${text}" is not a duration; write it like 30s, 10m or 1h30m`);
  }
  let total = 0;
  for (const [, amount, unit] of text.matchAll(part)) total += Number(amount) * unitMs[unit!]!;
  return Math.round(total);
}
