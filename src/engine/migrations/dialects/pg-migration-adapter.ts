// PostgreSQL: transactional DDL, a session advisory lock waited for under lock_timeout.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { parseDatabaseUrl, pgConnectionConfig } from '../../database-url.ts';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  type ConnectOptions,
  type MigrationAdapter,
  type StatementErrorClass,
} from './migration-adapter.ts';
import type { RevisionRow, RevisionTableName } from '../revision.ts';

const quote = (ident: string) => `"${ident.replace(/"/g, '""')}"`;

/** SQLSTATE classes/codes that mean the session is gone rather than that the statement failed. */
function isConnectionState(sqlstate: string | null): boolean {
  if (sqlstate === null) return false;
  return sqlstate.startsWith('08') || sqlstate === '57P01' || sqlstate === '57P02' || sqlstate === '57P03';
}

interface RawRevision {
  version: string;
  description: string;
  checksum: string;
  checkpoint: boolean;
  applied_at: Date;
  execution_ms: string;
  dirty: boolean;
  statements_done: number | null;
}

export async function openPgMigrationAdapter(
  url: string,
  name: RevisionTableName,
  options: ConnectOptions = {},
): Promise<MigrationAdapter> {
  // The driver connects to exactly the target the identity names: never a connection string it re-reads.
  const client = new pg.Client({
    application_name: 'ptah-migrations',
    ...pgConnectionConfig(parseDatabaseUrl(url)),
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  });
  // A broken connection is reported through the failing query; without a listener it would crash the process.
  client.on('error', () => undefined);
  await client.connect();
  let schema = name.schema;
  if (schema === undefined) {
    const r = await client.query<{ s: string | null }>('SELECT current_schema() AS s');
    schema = r.rows[0]?.s ?? undefined;
    if (schema === undefined) {
      await client.end();
      throw new Error('the connection has no current schema; pass --revisions-table schema.table');
    }
  }
  const target = `${quote(schema)}.${quote(name.table)}`;
  // One lock per revision table: two directories migrating different schemas do not wait for each other.
  const lockKey = createHash('sha256')
    .update(`ptah:migrations:${schema}.${name.table}`)
    .digest()
    .readBigInt64BE(0)
    .toString();
  const schemaName = schema;

  return {
    dialect: 'postgres',
    supportsTransactionalDdl: true,
    defaultTxMode: 'file',
    schema: schemaName,
    revisionTable: name.table,

    async readRevisions() {
      const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [target]);
      if (exists.rows[0]?.t == null) return [];
      const r = await client.query<RawRevision>(
        `SELECT version::text AS version, description, checksum, checkpoint, applied_at, execution_ms::text AS execution_ms, dirty, statements_done FROM ${target} ORDER BY version`,
      );
      return r.rows.map((row): RevisionRow => ({
        version: row.version,
        description: row.description,
        checksum: row.checksum,
        checkpoint: row.checkpoint,
        appliedAt: row.applied_at.toISOString(),
        executionMs: Number(row.execution_ms),
        dirty: row.dirty,
        statementsDone: row.statements_done,
      }));
    },
    async ensureRevisionTable() {
      if (name.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quote(schemaName)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${target} (
          version bigint PRIMARY KEY,
          description text NOT NULL,
          checksum text NOT NULL,
          checkpoint boolean NOT NULL DEFAULT false,
          applied_at timestamptz NOT NULL DEFAULT now(),
          execution_ms bigint NOT NULL DEFAULT 0,
          dirty boolean NOT NULL DEFAULT false,
          statements_done integer
        )`,
      );
    },
    async insertRevision(row) {
      await client.query(
        `INSERT INTO ${target} (version, description, checksum, checkpoint, execution_ms, dirty, statements_done) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          row.version,
          row.description,
          row.checksum,
          row.checkpoint,
          row.executionMs,
          row.dirty,
          row.statementsDone,
        ],
      );
    },
    async markRevisionClean(version, executionMs) {
      await client.query(
        `UPDATE ${target} SET dirty = false, statements_done = NULL, execution_ms = $2, applied_at = now() WHERE version = $1`,
        [version, executionMs],
      );
    },
    async markRevisionStopped(version, statementsDone) {
      await client.query(`UPDATE ${target} SET dirty = true, statements_done = $2 WHERE version = $1`, [
        version,
        statementsDone,
      ]);
    },
    async deleteRevision(version) {
      await client.query(`DELETE FROM ${target} WHERE version = $1`, [version]);
    },

    async acquireLock(timeoutMs) {
      // lock_timeout bounds the wait of pg_advisory_lock; reset it so it never applies to migration SQL.
      await client.query(`SET lock_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
      try {
        await client.query('SELECT pg_advisory_lock($1::bigint)', [lockKey]);
        return true;
      } catch (error) {
        if ((error as { code?: string }).code === '55P03') return false;
        throw error;
      } finally {
        await client.query('RESET lock_timeout').catch(() => undefined);
      }
    },
    async releaseLock() {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey]);
    },

    async begin() {
      await client.query('BEGIN');
    },
    async commit() {
      await client.query('COMMIT');
    },
    async rollback() {
      await client.query('ROLLBACK');
    },
    async execute(sql) {
      await client.query(sql);
    },
    async inTransaction() {
      // PostgreSQL never commits implicitly inside a transaction block.
      return true;
    },
    classifyError(error): StatementErrorClass {
      const code = (error as { code?: unknown }).code;
      const sqlstate = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
      if (sqlstate === null || isConnectionState(sqlstate))
        return { kind: 'connection', sqlstate, errno: null };
      return { kind: 'statement', sqlstate, errno: null };
    },

    async describeColumns() {
      const r = await client.query<{ c: string }>(
        `SELECT table_name || '.' || column_name || ' ' || data_type AS c FROM information_schema.columns
         WHERE table_schema = current_schema() AND NOT (table_schema = $1 AND table_name = $2) ORDER BY 1`,
        [schemaName, name.table],
      );
      return r.rows.map((row) => row.c);
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}
