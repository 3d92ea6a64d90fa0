/**
 * The classified cause `ptah --json` states beside an error, for the operator's runner to carry to
 * status (src/protocol/cause.ts): codes only for the database, file:line:column and the loader's words
 * for the user's own desired-state files. Undefined when the error is of no class a person can act on
 * from status alone (the message on stderr still says everything).
 */
import { desiredStateCause, type FailureCause } from '../protocol/cause.ts';
import { DesiredStateError } from '../engine/desired-state-error.ts';
import { DesiredSourceError } from '../engine/schema-engine.ts';
import { DatabaseError } from '../engine/session.ts';

export function failureCauseOf(error: unknown, desiredRoot?: string): FailureCause | undefined {
  if (error instanceof DesiredStateError || error instanceof DesiredSourceError) {
    return desiredStateCause(error.message, desiredRoot);
  }
  if (error instanceof DatabaseError) {
    if (error.connection !== undefined) return { kind: 'connection', failure: error.connection };
    const sqlstate =
      error.sqlstate !== undefined && /^[0-9A-Z]{5}$/.test(error.sqlstate) ? error.sqlstate : undefined;
    const errno =
      error.errno !== undefined && Number.isSafeInteger(error.errno) && error.errno > 0
        ? error.errno
        : undefined;
    if (sqlstate === undefined && errno === undefined) return undefined;
    return {
      kind: 'database',
      ...(sqlstate !== undefined ? { sqlstate } : {}),
      ...(errno !== undefined ? { errno } : {}),
    };
  }
  return undefined;
}
