// MySQL/MariaDB: DDL commits implicitly, so files run statement by statement under a dirty revision row;
// the migration lock is GET_LOCK, whose wait is bounded by its own timeout argument.
import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import { mysqlConnectionConfig, parseDatabaseUrl } from '../../database-url.ts';
import type { RowDataPacket } from 'mysql2/promise';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  type ConnectOptions,
  type MigrationAdapter,
  type StatementErrorClass,
} from './migration-adapter.ts';
import type { RevisionRow, RevisionTableName } from '../revision.ts';

const quote = (ident: string) => '`' + ident.replace(/`/g, '``') + '`';

/** Client-side codes mysql2 uses when the connection, not the statement, failed. */
const CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'PROTOCOL_SEQUENCE_TIMEOUT',
]);
/** Server errors that end the session: killed connection, server shutdown. */
const CONNECTION_ERRNOS = new Set([1053, 1927, 2006, 2013]);

interface RawRevision extends RowDataPacket {
  version: string;
  description: string;
  checksum: string;
  checkpoint: number;
  /** Seconds since the epoch, independent of the session time zone. */
  applied_epoch: string;
  execution_ms: string;
  dirty: number;
  statements_done: number | null;
}

export async function openMysqlMigrationAdapter(
  url: string,
  name: RevisionTableName,
  options: ConnectOptions = {},
): Promise<MigrationAdapter> {
  // The driver connects to exactly the target the identity names.
  const conn = await mysql.createConnection({
    ...mysqlConnectionConfig(parseDatabaseUrl(url)),
    multipleStatements: false,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    connectAttributes: { program_name: 'ptah-migrations' },
  });
  conn.on('error', () => undefined);
  let schema = name.schema;
  if (schema === undefined) {
    const [rows] = await conn.query<RowDataPacket[]>('SELECT DATABASE() AS s');
    schema = (rows[0]?.['s'] as string | null) ?? undefined;
    if (schema === undefined) {
      await conn.end();
      throw new Error('the URL names no database; add /<database> or pass --revisions-table db.table');
    }
  }
  const schemaName = schema;
  let inTransactionKnown: boolean | undefined;
  const target = `${quote(schemaName)}.${quote(name.table)}`;
  // GET_LOCK names are limited to 64 characters.
  const lockName =
    'ptah:' + createHash('sha256').update(`${schemaName}.${name.table}`).digest('hex').slice(0, 40);

  return {
    dialect: 'mysql',
    supportsTransactionalDdl: false,
    defaultTxMode: 'none',
    schema: schemaName,
    revisionTable: name.table,

    async readRevisions() {
      const [exists] = await conn.query<RowDataPacket[]>(
        'SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?',
        [schemaName, name.table],
      );
      if (exists.length === 0) return [];
      const [rows] = await conn.query<RawRevision[]>(
        `SELECT CAST(version AS CHAR) AS version, description, checksum, checkpoint,
                CAST(UNIX_TIMESTAMP(applied_at) AS CHAR) AS applied_epoch,
                CAST(execution_ms AS CHAR) AS execution_ms, dirty, statements_done
         FROM ${target} ORDER BY version`,
      );
      return rows.map((row): RevisionRow => ({
        version: row.version,
        description: row.description,
        checksum: row.checksum,
        checkpoint: Boolean(row.checkpoint),
        appliedAt: new Date(Math.round(Number(row.applied_epoch) * 1000)).toISOString(),
        executionMs: Number(row.execution_ms),
        dirty: Boolean(row.dirty),
        statementsDone: row.statements_done,
      }));
    },
    async ensureRevisionTable() {
      if (name.schema !== undefined) await conn.query(`CREATE DATABASE IF NOT EXISTS ${quote(schemaName)}`);
      await conn.query(
        `CREATE TABLE IF NOT EXISTS ${target} (
          version BIGINT NOT NULL PRIMARY KEY,
          description VARCHAR(1024) NOT NULL,
          checksum CHAR(64) NOT NULL,
          checkpoint BOOLEAN NOT NULL DEFAULT FALSE,
          applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
          execution_ms BIGINT NOT NULL DEFAULT 0,
          dirty BOOLEAN NOT NULL DEFAULT FALSE,
          statements_done INT NULL
        ) ENGINE=InnoDB`,
      );
    },
    async insertRevision(row) {
      await conn.query(
        `INSERT INTO ${target} (version, description, checksum, checkpoint, execution_ms, dirty, statements_done) VALUES (?, ?, ?, ?, ?, ?, ?)`,
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
      await conn.query(
        `UPDATE ${target} SET dirty = FALSE, statements_done = NULL, execution_ms = ?, applied_at = CURRENT_TIMESTAMP(3) WHERE version = ?`,
        [executionMs, version],
      );
    },
    async markRevisionStopped(version, statementsDone) {
      await conn.query(`UPDATE ${target} SET dirty = TRUE, statements_done = ? WHERE version = ?`, [
        statementsDone,
        version,
      ]);
    },
    async deleteRevision(version) {
      await conn.query(`DELETE FROM ${target} WHERE version = ?`, [version]);
    },

    async acquireLock(timeoutMs) {
      const [rows] = await conn.query<RowDataPacket[]>('SELECT GET_LOCK(?, ?) AS got', [
        lockName,
        Math.max(0, timeoutMs / 1000),
      ]);
      return Number(rows[0]?.['got']) === 1;
    },
    async releaseLock() {
      await conn.query('SELECT RELEASE_LOCK(?)', [lockName]);
    },

    async begin() {
      await conn.query('START TRANSACTION');
    },
    async commit() {
      await conn.query('COMMIT');
    },
    async rollback() {
      await conn.query('ROLLBACK');
    },
    async execute(sql) {
      await conn.query(sql);
    },
    async inTransaction() {
      // MariaDB exposes @@in_transaction; MySQL does not (error 1193), and then the engine cannot tell.
      if (inTransactionKnown === false) return undefined;
      try {
        const [rows] = await conn.query<RowDataPacket[]>('SELECT @@in_transaction AS t');
        inTransactionKnown = true;
        return Number(rows[0]?.['t']) === 1;
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== 1193) throw error;
        inTransactionKnown = false;
        return undefined;
      }
    },
    classifyError(error): StatementErrorClass {
      const e = error as { errno?: unknown; sqlState?: unknown; code?: unknown; fatal?: unknown };
      const errno = typeof e.errno === 'number' ? e.errno : null;
      const sqlstate = typeof e.sqlState === 'string' && /^[0-9A-Z]{5}$/.test(e.sqlState) ? e.sqlState : null;
      const lost =
        e.fatal === true ||
        (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) ||
        (errno !== null && CONNECTION_ERRNOS.has(errno)) ||
        sqlstate === null;
      return { kind: lost ? 'connection' : 'statement', sqlstate, errno };
    },

    async describeColumns() {
      const [rows] = await conn.query<RowDataPacket[]>(
        `SELECT CONCAT(table_name, '.', column_name, ' ', column_type) AS c FROM information_schema.columns
         WHERE table_schema = DATABASE() AND NOT (table_schema = ? AND table_name = ?) ORDER BY 1`,
        [schemaName, name.table],
      );
      return rows.map((row) => String(row['c']));
    },
    async close() {
      await conn.end().catch(() => undefined);
    },
  };
}
