/**
 * The credential-free identity of the database a Pod was pointed at. The manager never sees the URL; it
 * compares this digest with the one it recorded, so a Secret repointed at another database is noticed.
 * Binds engine, host, port, database and user, exactly as the driver is handed them (pgConnectionConfig,
 * mysqlConnectionConfig); never the password or the tuning parameters. A URL whose query would move the
 * connection elsewhere (?host=, ?port=, ?user=, ?dbname= …) is refused by parseDatabaseUrl.
 */
import { canonicalDigest } from '../api/digest.ts';
import { parseDatabaseUrl } from '../engine/database-url.ts';
import type { TargetReport } from '../protocol/result.ts';

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
