/** Identifies one object the reconciler converges. */
export interface ObjectKey {
  readonly namespace: string;
  readonly name: string;
}

export function keyString(key: ObjectKey): string {
  return `${key.namespace}/${key.name}`;
}

export function parseKey(s: string): ObjectKey {
  const slash = s.indexOf('/');
  if (slash < 0) return { namespace: '', name: s };
  return { namespace: s.slice(0, slash), name: s.slice(slash + 1) };
}

/** Waiting (for a Job, for an interval) is a requeue, never an error. */
export interface ReconcileResult {
  readonly requeueAfterMs?: number;
}

/**
 * An error the controller records in status and does not retry with backoff: retrying would give the same
 * answer until somebody changes an input. A plain thrown Error means "retry with per-key backoff".
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export type Reconciler = (key: ObjectKey, signal: AbortSignal) => Promise<ReconcileResult>;
