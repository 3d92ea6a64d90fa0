import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { desiredStateCause, MAX_PROBLEMS, readCause } from '../../../src/protocol/cause.ts';
import { connectionFailureOf } from '../../../src/engine/connection-failure.ts';

describe('failure causes', () => {
  it('reads the problems of a desired-state message relative to its root', () => {
    assert.deepEqual(
      desiredStateCause(
        '/ptah/work/schema/sub/a.sql:2:8: SQL syntax error: syntax error at or near "TABL"; fix the statement and plan again',
        '/ptah/work/schema',
      ),
      {
        kind: 'desired-state',
        problems: [
          {
            file: 'sub/a.sql',
            line: 2,
            column: 8,
            message: 'SQL syntax error: syntax error at or near "TABL"; fix the statement and plan again',
          },
        ],
        total: 1,
      },
    );
    const many = desiredStateCause(
      `7 problems in the desired state:\n${Array.from({ length: 7 }, (_, i) => `  /r/a.sql:${i + 1}:1: bad ${i}`).join('\n')}`,
      '/r',
    );
    assert.equal(many.kind, 'desired-state');
    if (many.kind !== 'desired-state') return;
    assert.equal(many.total, 7);
    assert.equal(many.problems.length, MAX_PROBLEMS);
    assert.deepEqual(many.problems[4], { file: 'a.sql', line: 5, column: 1, message: 'bad 4' });
    assert.deepEqual(desiredStateCause('/elsewhere/b.sql: no statements', '/r').kind, 'desired-state');
  });

  it('refuses junk and bounds what it keeps', () => {
    assert.equal(readCause({ kind: 'database', sqlstate: "x'; --" }), undefined);
    assert.equal(readCause({ kind: 'connection', failure: 'exploded' }), undefined);
    assert.equal(readCause({ kind: 'other' }), undefined);
    assert.equal(readCause('deadline'), undefined);
    assert.deepEqual(readCause({ kind: 'database', sqlstate: '28P01', errno: -111 }), {
      kind: 'database',
      sqlstate: '28P01',
    });
    const long = readCause({
      kind: 'desired-state',
      problems: [{ file: '../etc/passwd', line: 1, column: 2, message: `a\nb${'x'.repeat(1000)}` }],
      total: 1,
    });
    assert.ok(long?.kind === 'desired-state');
    assert.equal(long.problems[0]!.file, undefined, 'a path out of the root is not a file');
    assert.equal(long.problems[0]!.line, undefined);
    assert.ok(Array.from(long.problems[0]!.message).length <= 300);
    assert.ok(!long.problems[0]!.message.includes('\n'));
  });

  it('classifies connection failures by driver code, never by server text', () => {
    assert.equal(connectionFailureOf({ code: 'ECONNREFUSED' }), 'refused');
    assert.equal(connectionFailureOf({ code: 'ENOTFOUND' }), 'host-not-found');
    assert.equal(connectionFailureOf({ message: 'timeout expired' }), 'timed-out');
    assert.equal(
      connectionFailureOf({
        code: '28000',
        message: 'no pg_hba.conf entry for host "1.2.3.4", user "u", database "d", no encryption',
      }),
      'tls-required',
    );
    assert.equal(
      connectionFailureOf({ code: '28000', message: 'role "u" is not permitted to log in' }),
      undefined,
    );
    assert.equal(connectionFailureOf({ errno: 3159, code: 'ER_SECURE_TRANSPORT_REQUIRED' }), 'tls-required');
    assert.equal(
      connectionFailureOf({ errors: [{ code: 'ECONNREFUSED' }, { code: 'ETIMEDOUT' }] }),
      'refused',
    );
    assert.equal(connectionFailureOf({ code: '28P01' }), undefined);
  });
});
