import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Retries `probe` until it returns a value other than undefined. Things the API server does asynchronously
 * (admission configuration, RBAC, controllers) need this; a probe that throws is retried too, and the last
 * error is named if the deadline passes.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      assert.fail(
        `${what}: not observed within ${timeoutMs} ms${last === undefined ? '' : ` (${String(last)})`}`,
      );
    }
    await sleep(intervalMs);
  }
}
