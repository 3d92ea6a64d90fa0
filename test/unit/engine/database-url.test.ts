import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DatabaseUrlError,
  mysqlConnectionConfig,
  parseDatabaseUrl,
  pgConnectionConfig,
} from '../../../src/engine/database-url.ts';
import { targetReport } from '../../../src/runner/target-identity.ts';

const refusal = (url: string, pattern: RegExp) =>
  assert.throws(
    () => parseDatabaseUrl(url),
    (e: unknown) => e instanceof DatabaseUrlError && pattern.test(e.message) && !e.message.includes('s3cret'),
  );

describe('database URL: the target the driver uses is the target the identity names', () => {
  for (const name of ['host', 'hostaddr', 'port', 'user', 'dbname', 'database', 'db', 'service', 'options']) {
    it(`refuses ?${name}= by name, without echoing the URL`, () => {
      refusal(
        `postgres://app:s3cret@db.a:5432/orders?sslmode=disable&${name}=elsewhere`,
        new RegExp(`"${name}"`),
      );
    });
  }

  it('refuses unknown parameters, naming them only when the name is plain', () => {
    refusal('postgres://app:s3cret@db.a/orders?target_session_attrs=any', /"target_session_attrs"/);
    refusal('postgres://app:s3cret@db.a/orders?frobnicate=1', /"frobnicate" is not one ptah passes/);
    refusal('postgres://app:s3cret@db.a/orders?s3cret%20x=1', /\(a name not shown\)/);
    refusal('mysql://app:s3cret@db.a/orders?ssl=true', /a mysql URL takes no query parameters/);
  });

  it('refuses unix sockets, several hosts, and a missing user or host', () => {
    refusal('postgres://app:s3cret@%2Fvar%2Frun%2Fpostgresql/orders', /unix socket/);
    refusal('postgres://app:s3cret@a.example,b.example/orders', /several hosts/);
    refusal('postgres://db.a/orders', /names no user/);
    refusal('postgres://app:s3cret@/orders', /not a valid URL|names no host/);
  });

  it('hands the driver exactly the fields the identity binds', () => {
    const p = parseDatabaseUrl('postgres://App%40x:s3cret@DB.Example:6543/My%2FDb?sslmode=disable');
    assert.deepEqual([p.host, p.port, p.user, p.database], ['db.example', '6543', 'App@x', 'My/Db']);
    const config = pgConnectionConfig(p);
    assert.deepEqual(
      [config.host, config.port, config.user, config.database, config.password, config.ssl],
      ['db.example', 6543, 'App@x', 'My/Db', 's3cret', false],
    );
    const v6 = pgConnectionConfig(parseDatabaseUrl('postgres://u@[::1]/d'));
    assert.deepEqual([v6.host, v6.port, v6.database], ['::1', 5432, 'd']);
    // No database: PostgreSQL's default (the user's name) is made explicit, so PGDATABASE cannot move it.
    assert.equal(pgConnectionConfig(parseDatabaseUrl('postgres://app@h/')).database, 'app');
    const my = mysqlConnectionConfig(parseDatabaseUrl('mysql://root:pa%24s@H/shop'));
    assert.deepEqual(my, { host: 'h', port: 3306, user: 'root', password: 'pa$s', database: 'shop' });
  });

  it('tuning parameters do not change the identity; the target parts do', () => {
    const base = targetReport('postgres://app:s3cret@db.a:5432/orders').identityDigest;
    assert.equal(
      targetReport('postgres://app:other@db.a:5432/orders?sslmode=disable&application_name=x').identityDigest,
      base,
    );
    for (const other of [
      'postgres://app:s3cret@db.b:5432/orders',
      'postgres://app:s3cret@db.a:5433/orders',
      'postgres://app:s3cret@db.a:5432/orders2',
      'postgres://app2:s3cret@db.a:5432/orders',
    ])
      assert.notEqual(targetReport(other).identityDigest, base, other);
  });
});
