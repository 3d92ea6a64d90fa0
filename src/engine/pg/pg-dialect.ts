/** The PostgreSQL dialect: its inspector, desired-state loader, renderer and adapter in one object. */
import type { SchemaDialect } from '../dialect.ts';
import { connectPostgres, pgAdapterFacts } from './pg-adapter.ts';
import { loadDesiredSql } from './pg-desired.ts';
import { loadIntoDevDatabase } from './pg-dev-load.ts';
import {
  CATALOG_QUERY_COUNT,
  countData,
  inspectPostgres,
  resolveDefaultOpclasses,
  normaliseRowValues,
  readRows,
} from './pg-inspector.ts';
import { quoteIdent } from './pg-normalize.ts';
import { refuseTypeChangesWithoutCast } from './pg-casts.ts';
import { resolvePartitionBounds } from './pg-partitions.ts';
import { normaliseTemporalLiterals } from './pg-literals.ts';
import { renderPostgres } from './pg-renderer.ts';
import { refuseSequenceBoundsPastValue } from './pg-sequence-bounds.ts';
import { refuseToastWithoutToastTable } from './pg-storage.ts';
import { refuseUnmanagedNeedsMissing } from './pg-unmanaged-needs.ts';

export const postgresDialect: SchemaDialect = {
  name: 'postgres',
  supportsTransactionalDdl: pgAdapterFacts.supportsTransactionalDdl,
  connect: (url) => connectPostgres(url),
  catalogQueryCount: CATALOG_QUERY_COUNT,
  // server_version reads `15.8 (Debian 15.8-0+deb12u1)`; the release is its first word.
  describeServer: async (session) => ({
    product: 'PostgreSQL',
    version:
      /^\d+(?:\.\d+){0,2}/.exec(
        String((await session.query('SHOW server_version')).rows[0]?.['server_version'] ?? ''),
      )?.[0] ?? 'unknown',
  }),
  inspect: inspectPostgres,
  readRows,
  normaliseRows: normaliseRowValues,
  loadDesired: loadDesiredSql,
  loadIntoDev: loadIntoDevDatabase,
  resolveDesired: async (session, desired) =>
    normaliseTemporalLiterals(
      session,
      await resolvePartitionBounds(session, await resolveDefaultOpclasses(session, desired)),
    ),
  render: renderPostgres,
  checkChanges: async (session, changes, desired) => [
    ...(await refuseTypeChangesWithoutCast(session, changes)),
    ...(await refuseUnmanagedNeedsMissing(session, changes, desired)),
    ...(await refuseSequenceBoundsPastValue(session, changes)),
    ...(await refuseToastWithoutToastTable(session, changes)),
  ],
  countData,
  // Not created when missing: a desired state that declares it would then fail on its CREATE SCHEMA.
  useDefaultSchema: (schema) => [`SET LOCAL search_path TO ${quoteIdent(schema)}`],
  // Applies serialise on one transaction-scoped advisory lock (bounded by lock_timeout), so a second apply
  // of the same plan re-checks the fingerprint after the first committed and is refused as stale.
  beginApply: (ms) => [
    'BEGIN',
    `SET LOCAL lock_timeout = ${Math.max(0, Math.floor(ms))}`,
    "SELECT pg_advisory_xact_lock(hashtext('ptah.schema.apply'))",
  ],
  beginReadOnly: () => ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'],
};
