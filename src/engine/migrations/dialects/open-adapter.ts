import { parseDatabaseUrl } from '../../database-url.ts';
import type { RevisionTableName } from '../revision.ts';
import type { MigrationAdapter } from './migration-adapter.ts';
import { openMysqlMigrationAdapter } from './mysql-migration-adapter.ts';
import { openPgMigrationAdapter } from './pg-migration-adapter.ts';

export async function openMigrationAdapter(url: string, table: RevisionTableName): Promise<MigrationAdapter> {
  const parsed = parseDatabaseUrl(url);
  return parsed.dialect === 'postgres'
    ? await openPgMigrationAdapter(url, table)
    : await openMysqlMigrationAdapter(url, table);
}
