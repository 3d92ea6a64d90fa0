/**
 * The credential-free identity of the database a Pod was pointed at. The manager never sees the URL; it
 * compares this digest with the one it recorded, so a Secret repointed at another database is noticed.
 * Binds engine, host, port, database and user, exactly as the driver is handed them (pgConnectionConfig,
 * mysqlConnectionConfig); never the password or the tuning parameters. A URL whose query would move the
 * connection elsewhere (?host=, ?port=, ?user=, ?dbname= …) is refused by parseDatabaseUrl.
 */
import { canonicalDigest } from '../api/digest.ts';
import { parseDatabaseUrl } from '../engine/database-url.ts';
import type { RunnerOutputs, TargetReport } from '../protocol/result.ts';
import { refused, type OperationReport } from './operation.ts';
import type { CompiledRunOptions } from './options.ts';

export function targetReport(databaseUrl: string): TargetReport {
  const parsed = parseDatabaseUrl(databaseUrl);
  const identityDigest = canonicalDigest({
    dialect: parsed.dialect,
    host: parsed.host,
    port: parsed.port,
    database: parsed.database,
    user: parsed.user,
  });
  return { dialect: parsed.dialect, identityDigest };
}

/**
 * The guard of every mutating operation: a plan was computed against one database, and a Secret repointed
 * since then (even at a database in the same state, which the plan's own fingerprints would not notice)
 * must not receive it. Only digests are compared and named, never the URL. Undefined when the URL names the
 * expected database.
 */
export function otherTargetRefusal(
  options: Pick<CompiledRunOptions, 'databaseUrl' | 'expectedTargetIdentity'>,
  outputs: RunnerOutputs,
): OperationReport | undefined {
  if (targetReport(options.databaseUrl).identityDigest === options.expectedTargetIdentity) return undefined;
  return refused(
    'target_identity_mismatch',
    'the database URL names another database than the one the plan was computed against; nothing ran',
    outputs,
  );
}
