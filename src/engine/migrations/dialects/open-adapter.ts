import { parseDatabaseUrl } from '../../database-url.ts';
import { toDatabaseError as toMysqlDatabaseError } from '../../mysql/mysql-adapter.ts';
import { toDatabaseError as toPgDatabaseError } from '../../pg/pg-adapter.ts';
import type { RevisionTableName } from '../revision.ts';
import type { ConnectOptions, MigrationAdapter } from './migration-adapter.ts';
import { openMysqlMigrationAdapter } from './mysql-migration-adapter.ts';
import { openPgMigrationAdapter } from './pg-migration-adapter.ts';

/**
 * Opens the revision table's connection. A failure is the engine's DatabaseError, as the schema engine's
 * is: redacted, with the SQLSTATE or errno and the way the connection failed, so `--json` can state a cause.
 */
export async function openMigrationAdapter(
  url: string,
  table: RevisionTableName,
  options: ConnectOptions = {},
): Promise<MigrationAdapter> {
  const parsed = parseDatabaseUrl(url);
  try {
    return parsed.dialect === 'postgres'
      ? await openPgMigrationAdapter(url, table, options)
      : await openMysqlMigrationAdapter(url, table, options);
  } catch (error) {
    throw parsed.dialect === 'postgres' ? toPgDatabaseError(error, url) : toMysqlDatabaseError(error, url);
  }
}
