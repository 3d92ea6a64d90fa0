import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cachedThenLive, type Reads } from '../../../src/admission/reads.ts';
import { allowed, denied, type AdmissionDecision } from '../../../src/admission/review.ts';
import { ConfigMapData } from '../../../src/controller/admission-reads.ts';

/** A judge deciding by where it reads, recording each read. */
function judge(by: Record<Reads, () => AdmissionDecision>) {
  const asked: Reads[] = [];
  return {
    asked,
    judge: async (reads: Reads) => {
      asked.push(reads);
      return by[reads]();
    },
  };
}

describe('cachedThenLive', () => {
  it('admits from the cache without asking the API server', async () => {
    const j = judge({ cached: () => allowed(), live: () => denied('live') });
    assert.equal((await cachedThenLive(j.judge)).allowed, true);
    assert.deepEqual(j.asked, ['cached']);
  });

  it('decides a refusal from the cache again from the API server, whose answer stands either way', async () => {
    const lagging = judge({ cached: () => denied('no claim yet'), live: () => allowed() });
    assert.equal((await cachedThenLive(lagging.judge)).allowed, true);
    assert.deepEqual(lagging.asked, ['cached', 'live']);
    const refused = await cachedThenLive(
      judge({ cached: () => denied('cached'), live: () => denied('live says no') }).judge,
    );
    assert.equal(refused.allowed, false);
    assert.equal(refused.status?.message, 'live says no');
  });

  it('a cached read that throws is decided from the API server; a live read that throws is not admitted', async () => {
    const thrown = judge({
      cached: () => {
        throw new Error('cache');
      },
      live: () => allowed(),
    });
    assert.equal((await cachedThenLive(thrown.judge)).allowed, true);
    await assert.rejects(
      cachedThenLive(
        judge({
          cached: () => denied('x'),
          live: () => {
            throw new Error('API server unreachable');
          },
        }).judge,
      ),
      /API server unreachable/,
    );
  });
});

describe('ConfigMapData', () => {
  const cm = (uid: string, rv: string, text: string) => ({
    metadata: { uid, resourceVersion: rv, name: uid },
    data: { 'schema.sql': text },
  });

  it('serves a ConfigMap only at the resourceVersion it kept', () => {
    const data = new ConfigMapData();
    data.keep(cm('a', '1', 'one'));
    assert.equal(data.get('a', '1')?.data?.['schema.sql'], 'one');
    assert.equal(data.get('a', '2'), undefined);
    assert.equal(data.get('a', undefined), undefined);
    data.keep(cm('a', '2', 'two!'));
    assert.equal(data.get('a', '1'), undefined);
    assert.equal(data.get('a', '2')?.data?.['schema.sql'], 'two!');
    assert.equal(data.heldBytes, 4);
  });

  it('holds at most its byte budget, dropping the least recently read first', () => {
    const data = new ConfigMapData(10);
    data.keep(cm('a', '1', 'aaaa'));
    data.keep(cm('b', '1', 'bbbb'));
    assert.ok(data.get('a', '1'));
    data.keep(cm('c', '1', 'cccc'));
    assert.equal(data.get('b', '1'), undefined);
    assert.ok(data.get('a', '1') && data.get('c', '1'));
    assert.equal(data.heldBytes, 8);
    data.keep(cm('d', '1', 'x'.repeat(11)));
    assert.equal(data.get('d', '1'), undefined);
    assert.equal(data.heldBytes, 8);
  });
});
