// Property tests for the database-URL parser (src/engine/database-url.ts): it never throws anything but a
// DatabaseUrlError that echoes no credential, every URL built from parts parses back to those parts (the
// ones the driver is handed), and no query parameter outside the tuning list is ever accepted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  DatabaseUrlError,
  mysqlConnectionConfig,
  parseDatabaseUrl,
  pgConnectionConfig,
} from '../../../src/engine/database-url.ts';
import { targetReport } from '../../../src/runner/target-identity.ts';
import { runs } from './settings.ts';

const TUNING = ['sslmode', 'application_name', 'statement_timeout', 'connect_timeout', 'lock_timeout'];

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const host = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join('.')),
  fc.ipV4(),
);
const part = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 });
const parts = fc.record({
  scheme: fc.constantFrom('postgres', 'postgresql', 'mysql', 'mariadb'),
  user: part,
  password: fc.string({ unit: 'grapheme', maxLength: 24 }),
  host,
  port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
  database: part,
});
type Parts = typeof parts extends fc.Arbitrary<infer T> ? T : never;

function urlOf(p: Parts, query = ''): string {
  const auth = `${encodeURIComponent(p.user)}${p.password === '' ? '' : `:${encodeURIComponent(p.password)}`}`;
  const port = p.port === undefined ? '' : `:${p.port}`;
  return `${p.scheme}://${auth}@${p.host}${port}/${encodeURIComponent(p.database)}${query}`;
}

describe('database URL parser (property)', () => {
  it('never throws anything but a DatabaseUrlError, and never echoes the input', () => {
    const urlish = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      parts.chain((p) =>
        fc
          .array(fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 })), { maxLength: 3 })
          .map((q) => urlOf(p, q.length === 0 ? '' : `?${new URLSearchParams(q).toString()}`)),
      ),
    );
    fc.assert(
      fc.property(urlish, (raw) => {
        try {
          parseDatabaseUrl(raw);
        } catch (error) {
          assert.ok(error instanceof DatabaseUrlError, `threw ${String(error)}`);
          if (raw.length >= 8) assert.ok(!error.message.includes(raw), 'the message repeats the URL');
        }
      }),
      runs(500),
    );
  });

  it('every URL built from parts parses back to them, and the driver is handed exactly those', () => {
    fc.assert(
      fc.property(parts, (p) => {
        const parsed = parseDatabaseUrl(urlOf(p));
        const port = String(p.port ?? (p.scheme.startsWith('postgres') ? 5432 : 3306));
        assert.deepEqual(
          [parsed.host, parsed.port, parsed.user, parsed.database],
          [p.host.toLowerCase(), port, p.user, p.database],
        );
        const driver =
          parsed.dialect === 'postgres' ? pgConnectionConfig(parsed) : mysqlConnectionConfig(parsed);
        assert.deepEqual(
          [driver.host, driver.port, driver.user, driver.database, driver.password ?? ''],
          [parsed.host, Number(parsed.port), parsed.user, parsed.database, p.password],
        );
      }),
      runs(300),
    );
  });

  it('the identity ignores the password and tuning parameters and follows every target part', () => {
    fc.assert(
      fc.property(
        parts.filter((p) => p.scheme.startsWith('postgres')),
        fc.string({ unit: 'grapheme', maxLength: 12 }),
        fc.subarray(TUNING),
        (p, otherPassword, tuning) => {
          const base = targetReport(urlOf(p)).identityDigest;
          const query = tuning.length === 0 ? '' : `?${tuning.map((k) => `${k}=1`).join('&')}`;
          assert.equal(targetReport(urlOf({ ...p, password: otherPassword }, query)).identityDigest, base);
          for (const other of [
            { ...p, user: `${p.user}x` },
            { ...p, database: `${p.database}x` },
            { ...p, host: `x${p.host}` },
            { ...p, port: ((p.port ?? 5432) % 65535) + 1 },
          ])
            assert.notEqual(targetReport(urlOf(other)).identityDigest, base);
        },
      ),
      runs(150),
    );
  });

  it('no query parameter outside the tuning list is accepted', () => {
    const name = fc.string({ minLength: 1, maxLength: 16 });
    fc.assert(
      fc.property(parts, name, (p, param) => {
        const url = urlOf(p, `?${new URLSearchParams([[param, 'x']]).toString()}`);
        const accepted = (() => {
          try {
            parseDatabaseUrl(url);
            return true;
          } catch (error) {
            assert.ok(error instanceof DatabaseUrlError);
            return false;
          }
        })();
        const tuning =
          p.scheme.startsWith('postgres') &&
          (TUNING.includes(param) ||
            [
              'ssl',
              'sslrootcert',
              'sslcert',
              'sslkey',
              'sslnegotiation',
              'uselibpqcompat',
              'fallback_application_name',
              'idle_in_transaction_session_timeout',
              'query_timeout',
              'password',
            ].includes(param));
        assert.equal(accepted, tuning, `?${param}= on ${p.scheme}`);
      }),
      runs(300),
    );
  });
});
