import { parseDatabaseUrl } from '../../database-url.ts';
import type { RevisionTableName } from '../revision.ts';
import type { ConnectOptions, MigrationAdapter } from './migration-adapter.ts';
import { openMysqlMigrationAdapter } from './mysql-migration-adapter.ts';
import { openPgMigrationAdapter } from './pg-migration-adapter.ts';

export async function openMigrationAdapter(
  url: string,
  table: RevisionTableName,
  options: ConnectOptions = {},
): Promise<MigrationAdapter> {
  const parsed = parseDatabaseUrl(url);
  return parsed.dialect === 'postgres'
    ? await openPgMigrationAdapter(url, table, options)
    : await openMysqlMigrationAdapter(url, table, options);
}
