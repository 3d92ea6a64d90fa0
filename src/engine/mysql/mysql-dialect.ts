/** The MySQL/MariaDB dialect: its inspector, desired-state loader, renderer and adapter in one object. */
import type { SchemaDialect } from '../dialect.ts';
import { connectMysql, LOCK_RESULT, mysqlAdapterFacts } from './mysql-adapter.ts';
import { type DesiredModel, loadDesiredMysql, resolveWith } from './mysql-desired.ts';
import {
  CATALOG_QUERY_COUNT,
  countData,
  inspectMysql,
  normaliseRowValues,
  readRows,
  mysqlServerOf,
  readServerFacts,
} from './mysql-inspector.ts';
import { mysqlTableWork } from './mysql-online.ts';
import { mysqlTypeRisk } from './mysql-type-risk.ts';
import { withDelimiters } from './mysql-delimiters.ts';
import { partitionRefusals } from './mysql-partitions.ts';
import { renderMysql } from './mysql-renderer.ts';

/** GET_LOCK names are server-wide: the database's name keeps two databases' applies apart. */
const LOCK_NAME = "CONCAT('ptah.schema.apply:', DATABASE())";

export const mysqlDialect: SchemaDialect = {
  name: 'mysql',
  supportsTransactionalDdl: mysqlAdapterFacts.supportsTransactionalDdl,
  protectedNamesIgnoreCase: true,
  connect: (url) => connectMysql(url),
  catalogQueryCount: CATALOG_QUERY_COUNT,
  describeServer: async (session) =>
    mysqlServerOf(String((await session.query('SELECT VERSION() AS v')).rows[0]?.['v'] ?? '')),
  inspect: inspectMysql,
  readRows,
  normaliseRows: normaliseRowValues,
  loadDesired: loadDesiredMysql,
  resolveDesired: async (session, desired) =>
    resolveWith(desired as DesiredModel, await readServerFacts(session)),
  render: renderMysql,
  tableWork: mysqlTableWork,
  typeChangeRisk: mysqlTypeRisk,
  scriptText: withDelimiters,
  checkChanges: partitionRefusals,
  countData,
  // A MySQL schema is the connected database: unqualified names can mean nothing else.
  useDefaultSchema: () => [],
  // No transaction: each DDL statement commits on its own (and would commit an open transaction anyway).
  // Applies serialise on a session lock held until the connection closes; lock_wait_timeout bounds each
  // statement's wait for table metadata locks. Both are in seconds.
  beginApply: (ms) => {
    const seconds = Math.max(0, Math.ceil(ms / 1000));
    return [
      `SET SESSION lock_wait_timeout = ${Math.max(1, seconds)}`,
      `SELECT GET_LOCK(${LOCK_NAME}, ${seconds}) AS ${LOCK_RESULT}`,
    ];
  },
  beginReadOnly: () => ['START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY'],
};
