import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkQueue, runWorkers } from '../../../../src/controller/runtime/work-queue.ts';

test('adding a queued key twice processes it once', async () => {
  const q = new WorkQueue();
  q.add('a');
  q.add('a');
  q.add('b');
  assert.equal(q.length, 2);
  assert.equal(await q.get(), 'a');
  assert.equal(await q.get(), 'b');
});

test('a key added while it is processed runs once more afterwards, never concurrently', async () => {
  const q = new WorkQueue();
  const seen: string[] = [];
  let active = 0;
  let maxActive = 0;
  const ac = new AbortController();
  q.add('k');
  const run = runWorkers(q, ac.signal, {
    concurrency: 4,
    handle: async (key) => {
      active++;
      maxActive = Math.max(maxActive, active);
      seen.push(key);
      if (seen.length === 1) {
        q.add('k');
        q.add('k');
      }
      await sleep(20);
      active--;
      return {};
    },
  });
  await sleep(150);
  ac.abort();
  await run;
  assert.deepEqual(seen, ['k', 'k']);
  assert.equal(maxActive, 1);
});

test('failures back off exponentially per key and forget resets them', () => {
  const q = new WorkQueue({ baseMs: 100, maxMs: 1_000 });
  assert.equal(q.addRateLimited('x'), 100);
  assert.equal(q.addRateLimited('x'), 200);
  assert.equal(q.addRateLimited('x'), 400);
  assert.equal(q.addRateLimited('x'), 800);
  assert.equal(q.addRateLimited('x'), 1_000);
  assert.equal(q.addRateLimited('y'), 100);
  q.forget('x');
  assert.equal(q.failureCount('x'), 0);
  assert.equal(q.addRateLimited('x'), 100);
  q.shutdown();
});

test('addAfter keeps the earliest pending delay and a handler requeue comes back', async () => {
  const q = new WorkQueue();
  q.addAfter('a', 30);
  q.addAfter('a', 5_000);
  const started = Date.now();
  assert.equal(await q.get(), 'a');
  assert.ok(Date.now() - started < 1_000);
  q.done('a');
  q.shutdown();
  assert.equal(await q.get(), undefined);
});

test('a thrown error is retried after backoff and the error is reported', async () => {
  const q = new WorkQueue({ baseMs: 10, maxMs: 50 });
  const ac = new AbortController();
  let calls = 0;
  const errors: number[] = [];
  q.add('k');
  const run = runWorkers(q, ac.signal, {
    concurrency: 1,
    handle: async () => {
      calls++;
      if (calls < 3) throw new Error('transient');
      return {};
    },
    onError: (_key, _err, delay) => errors.push(delay),
  });
  await sleep(200);
  ac.abort();
  await run;
  assert.equal(calls, 3);
  assert.deepEqual(errors, [10, 20]);
});

test('the time a key waited in the queue is reported when a worker takes it', async () => {
  const waits: number[] = [];
  const q = new WorkQueue({ baseMs: 10, maxMs: 100 }, (ms) => waits.push(ms));
  q.add('a');
  q.add('a');
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(await q.get(), 'a');
  assert.equal(waits.length, 1, 'a coalesced add waits once');
  assert.ok(waits[0]! >= 25 && waits[0]! < 5_000, String(waits[0]));
  q.done('a');
  q.shutdown();
});
