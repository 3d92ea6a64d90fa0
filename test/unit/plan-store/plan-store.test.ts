import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMapObject } from '../../../src/api/core.ts';
import type { PtahSchemaPlanChunk } from '../../../src/api/ptah-schema-plan-chunk.ts';
import { sha256Digest } from '../../../src/api/digest.ts';
import { schemaPlanFingerprint } from '../../../src/api/fingerprint.ts';
import {
  MAX_CHUNK_BYTES,
  MAX_PLAN_BYTES,
  MAX_PLAN_CHUNKS,
  type PtahSchemaPlan,
} from '../../../src/api/ptah-schema-plan.ts';
import { buildSchemaPlan, type PlanInputs } from '../../../src/plan-store/build-plan.ts';
import { buildPlanChunk, checkChunk } from '../../../src/plan-store/plan-chunk.ts';
import {
  buildPlanProjection,
  CHUNK_KEY,
  projectPlan,
  ProjectionError,
  type ProjectionStore,
} from '../../../src/plan-store/plan-projection.ts';
import { reassemblePlan, verifyPublication } from '../../../src/plan-store/reassemble-plan.ts';
import { PlanSizeError, splitPlan } from '../../../src/plan-store/split-plan.ts';

const schema = {
  apiVersion: 'operator.ptah.run/v1alpha1' as const,
  kind: 'PtahSchema' as const,
  metadata: { name: 'orders', namespace: 'shop', uid: 'uid-orders' },
};
const d = (s: string) => sha256Digest(s);
const inputs: PlanInputs = {
  sourceType: 'ConfigMap',
  configMapUID: 'uid-cm',
  contentDigest: d('manifest'),
  coordinationDigest: d('realm'),
  targetIdentityDigest: d('route'),
  observedStateFingerprint: d('observed'),
  desiredStateFingerprint: d('desired'),
  policyFingerprint: d('policy'),
  executionEpoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'm@sha256:' + '1'.repeat(64),
  managerRevision: 'r1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'r@sha256:' + '2'.repeat(64),
  runnerProtocolVersion: 1,
  dialect: 'postgres',
  destructive: false,
  statementCount: 2,
};

/** Deterministic, non-repeating bytes so a swapped or shifted chunk cannot hash the same. */
function bytesOf(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >> 8)) & 0xff;
  return b;
}

/** Publishes a plan the way the manager will: create chunks, read back (here: assign UIDs), commit. */
function publish(bytes: Uint8Array) {
  const built = buildSchemaPlan(schema, inputs, bytes);
  const plan = { ...built.plan, metadata: { ...built.plan.metadata, uid: 'uid-plan' } };
  const store = new Map<string, PtahSchemaPlanChunk>();
  for (const piece of built.pieces) {
    const c = buildPlanChunk(plan, piece);
    store.set(c.metadata.name, { ...c, metadata: { ...c.metadata, uid: `uid-${c.metadata.name}` } });
  }
  const published: PtahSchemaPlan = {
    ...plan,
    status: {
      publishedChunks: plan.spec.chunks.map((c) => ({ name: c.name, uid: `uid-${c.name}`, index: c.index })),
    },
  };
  return { plan: published, store, pieces: built.pieces };
}

describe('plan limits', () => {
  it('derives sixteen chunks from an 8 MiB plan in 512 KiB chunks', () => {
    assert.equal(MAX_PLAN_CHUNKS, 16);
    const pieces = splitPlan('p', bytesOf(MAX_PLAN_BYTES));
    assert.equal(pieces.length, 16);
    assert.ok(pieces.every((p) => p.size === MAX_CHUNK_BYTES));
  });

  it('cuts at 512 KiB and keeps the remainder in a last, smaller chunk', () => {
    const pieces = splitPlan('ptah-plan-x', bytesOf(MAX_CHUNK_BYTES + 1));
    assert.deepEqual(
      pieces.map((p) => [p.name, p.index, p.size]),
      [
        ['ptah-plan-x-000', 0, MAX_CHUNK_BYTES],
        ['ptah-plan-x-001', 1, 1],
      ],
    );
    assert.equal(pieces[1]!.digest, sha256Digest(bytesOf(MAX_CHUNK_BYTES + 1).subarray(MAX_CHUNK_BYTES)));
  });

  it('refuses an empty plan and one byte over 8 MiB', () => {
    assert.throws(() => splitPlan('p', new Uint8Array()), PlanSizeError);
    assert.throws(() => splitPlan('p', bytesOf(MAX_PLAN_BYTES + 1)), PlanSizeError);
  });
});

describe('building a plan', () => {
  it('binds the bytes and names the plan and its chunks from the fingerprint', () => {
    const bytes = bytesOf(1000);
    const { plan } = buildSchemaPlan(schema, inputs, bytes);
    assert.equal(plan.spec.binding.planContentDigest, sha256Digest(bytes));
    assert.equal(plan.spec.fingerprint, schemaPlanFingerprint(plan.spec.binding));
    assert.equal(plan.metadata.name, `ptah-plan-${plan.spec.fingerprint.slice(7, 31)}`);
    assert.deepEqual(plan.spec.schemaRef, { name: 'orders', uid: 'uid-orders' });
    assert.equal(plan.metadata.ownerReferences?.[0]?.uid, 'uid-orders');
    assert.equal(plan.spec.chunks[0]!.name, `${plan.metadata.name}-000`);
  });

  it('builds identical objects for identical inputs and another plan for other bytes', () => {
    assert.deepEqual(
      buildSchemaPlan(schema, inputs, bytesOf(10)),
      buildSchemaPlan(schema, inputs, bytesOf(10)),
    );
    assert.notEqual(
      buildSchemaPlan(schema, inputs, bytesOf(10)).plan.metadata.name,
      buildSchemaPlan(schema, inputs, bytesOf(11)).plan.metadata.name,
    );
  });

  it('stores each chunk as a chunk object owned by the plan, holding its raw byte cut', () => {
    const b = bytesOf(MAX_CHUNK_BYTES + 5);
    const { plan, store } = publish(b);
    const chunk = store.get(plan.spec.chunks[1]!.name)!;
    assert.equal(chunk.kind, 'PtahSchemaPlanChunk');
    assert.equal(chunk.metadata.ownerReferences?.[0]?.uid, 'uid-plan');
    assert.equal(chunk.metadata.labels?.['operator.ptah.run/plan'], plan.metadata.name);
    assert.equal(chunk.metadata.labels?.['app.kubernetes.io/component'], 'plan-chunk');
    assert.ok(Buffer.from(chunk.spec.data, 'base64').equals(b.subarray(MAX_CHUNK_BYTES)));
  });
});

describe('reassembling a plan', () => {
  const bytes = bytesOf(2 * MAX_CHUNK_BYTES + 100);

  it('returns exactly the published bytes', () => {
    const { plan, store } = publish(bytes);
    const r = reassemblePlan(plan, (n) => store.get(n));
    assert.ok(r.ok);
    assert.ok(Buffer.from(r.bytes).equals(bytes));
  });

  const replaceChunk = (
    index: number,
    change: (c: PtahSchemaPlanChunk) => PtahSchemaPlanChunk | undefined,
  ) => {
    const { plan, store } = publish(bytes);
    const name = plan.spec.chunks[index]!.name;
    const next = change(store.get(name)!);
    if (next === undefined) store.delete(name);
    else store.set(name, next);
    return reassemblePlan(plan, (n) => store.get(n));
  };
  const withBytes = (c: PtahSchemaPlanChunk, b: Uint8Array): PtahSchemaPlanChunk => ({
    ...c,
    spec: { data: Buffer.from(b).toString('base64') },
  });

  const failures: [string, ReturnType<typeof reassemblePlan>, string, string][] = [
    ['a deleted chunk', replaceChunk(1, () => undefined), '-001', 'Missing'],
    [
      'a chunk recreated with the same bytes (another UID)',
      replaceChunk(2, (cm) => ({ ...cm, metadata: { ...cm.metadata, uid: 'uid-new' } })),
      '-002',
      'UIDMismatch',
    ],
    [
      'a chunk whose bytes changed at the same size',
      replaceChunk(0, (cm) => withBytes(cm, Buffer.alloc(MAX_CHUNK_BYTES, 7))),
      '-000',
      'DigestMismatch',
    ],
    ['a truncated chunk', replaceChunk(2, (cm) => withBytes(cm, bytesOf(99))), '-002', 'SizeMismatch'],
    [
      'a chunk owned by something else',
      replaceChunk(1, (cm) => ({
        ...cm,
        metadata: {
          ...cm.metadata,
          ownerReferences: [{ ...cm.metadata.ownerReferences![0]!, uid: 'other' }],
        },
      })),
      '-001',
      'WrongOwner',
    ],
    [
      'a chunk whose data is not canonical base64',
      replaceChunk(0, (c) => ({ ...c, spec: { data: `${c.spec.data}\n` } })),
      '-000',
      'Malformed',
    ],
  ];
  for (const [name, result, failing, reason] of failures) {
    it(`refuses ${name}, naming the chunk`, () => {
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.ok(result.failing.endsWith(failing), result.failing);
      assert.equal(result.reason, reason);
    });
  }

  for (const size of [
    1,
    MAX_CHUNK_BYTES - 1,
    MAX_CHUNK_BYTES,
    MAX_CHUNK_BYTES + 1,
    MAX_PLAN_BYTES - 1,
    MAX_PLAN_BYTES,
  ]) {
    it(`round-trips a plan of ${size} bytes through ${Math.ceil(size / MAX_CHUNK_BYTES)} chunks`, () => {
      const b = bytesOf(size);
      const { plan, store } = publish(b);
      assert.equal(plan.spec.chunks.length, Math.ceil(size / MAX_CHUNK_BYTES));
      const r = reassemblePlan(plan, (n) => store.get(n));
      assert.ok(r.ok && Buffer.from(r.bytes).equals(b));
    });
  }

  it('refuses chunks committed out of order', () => {
    const { plan, store } = publish(bytes);
    const chunks = plan.status!.publishedChunks!;
    const swapped: PtahSchemaPlan = {
      ...plan,
      status: { publishedChunks: [chunks[1]!, chunks[0]!, chunks[2]!] },
    };
    const r = reassemblePlan(swapped, (n) => store.get(n));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [plan.spec.chunks[0]!.name, 'OrderMismatch']);
  });

  it('refuses a plan whose chunks were never committed', () => {
    const { plan, store } = publish(bytes);
    const r = reassemblePlan({ ...plan, status: {} }, (n) => store.get(n));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [plan.metadata.name, 'NotPublished']);
  });

  it('refuses chunks that each verify but do not give the plan content digest', () => {
    const { plan, store } = publish(bytes);
    const forged: PtahSchemaPlan = {
      ...plan,
      spec: { ...plan.spec, binding: { ...plan.spec.binding, planContentDigest: d('another plan') } },
    };
    const r = reassemblePlan(forged, (n) => store.get(n));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [plan.metadata.name, 'PlanDigestMismatch']);
  });

  it('checks a single chunk on read-back without a UID to compare yet', () => {
    const { plan, store } = publish(bytes);
    const chunk = plan.spec.chunks[0]!;
    assert.ok(checkChunk(chunk, 'uid-plan', store.get(chunk.name)).ok);
  });
});

describe('verifying publication', () => {
  it('commits the read-back UIDs in index order when every chunk verifies', () => {
    const { plan, store } = publish(bytesOf(MAX_CHUNK_BYTES * 2));
    const r = verifyPublication({ ...plan, status: {} }, (n) => store.get(n));
    assert.ok(r.ok);
    assert.deepEqual(r.publishedChunks, plan.status!.publishedChunks);
  });

  it('commits nothing when a chunk read back differs, naming it', () => {
    const { plan, store } = publish(bytesOf(MAX_CHUNK_BYTES * 2));
    const name = plan.spec.chunks[1]!.name;
    store.set(name, {
      ...store.get(name)!,
      spec: { data: Buffer.alloc(MAX_CHUNK_BYTES).toString('base64') },
    });
    const r = verifyPublication({ ...plan, status: {} }, (n) => store.get(n));
    assert.deepEqual(r.ok ? undefined : [r.failing, r.reason], [name, 'DigestMismatch']);
  });

  // One verifier for every reader: the read-back holds the chunks to the whole plan exactly as an Apply will,
  // so a plan whose chunks each match their own record but not the plan as a whole is never committed.
  it('commits nothing when the chunks do not make up the plan their records describe', () => {
    const { plan, store } = publish(bytesOf(MAX_CHUNK_BYTES * 2));
    const unpublished = { ...plan, status: {} };
    const wrongWhole = {
      ...unpublished,
      spec: { ...plan.spec, binding: { ...plan.spec.binding, planContentDigest: d('another plan') } },
    };
    const r1 = verifyPublication(wrongWhole, (n) => store.get(n));
    assert.deepEqual(r1.ok ? undefined : [r1.failing, r1.reason], [plan.metadata.name, 'PlanDigestMismatch']);
    const [first, second] = plan.spec.chunks;
    const swapped = { ...unpublished, spec: { ...plan.spec, chunks: [second!, first!] } };
    const r2 = verifyPublication(swapped, (n) => store.get(n));
    assert.deepEqual(r2.ok ? undefined : [r2.failing, r2.reason], [second!.name, 'OrderMismatch']);
    const apply = reassemblePlan({ ...swapped, status: plan.status! }, (n) => store.get(n));
    assert.equal(apply.ok ? undefined : apply.reason, 'OrderMismatch', 'the Apply refuses it alike');
  });
});

describe('projecting a plan for an Apply', () => {
  const bytes = bytesOf(MAX_CHUNK_BYTES + 10);
  const chunkBytes = [bytes.subarray(0, MAX_CHUNK_BYTES), bytes.subarray(MAX_CHUNK_BYTES)];
  const storeOf = (existing: Map<string, ConfigMapObject>): ProjectionStore => ({
    create: async (cm) => {
      if (existing.has(cm.metadata.name)) return false;
      existing.set(cm.metadata.name, cm);
      return true;
    },
    get: async (n) => existing.get(n),
  });

  it('projects the chunks reassembly verified, one immutable ConfigMap each, named as the chunk', async () => {
    const { plan, store } = publish(bytes);
    const r = reassemblePlan(plan, (n) => store.get(n));
    assert.ok(r.ok);
    const written = new Map<string, ConfigMapObject>();
    await projectPlan(storeOf(written), plan, r.chunks);
    assert.deepEqual(
      [...written.keys()],
      plan.spec.chunks.map((c) => c.name),
    );
    const cm = written.get(plan.spec.chunks[1]!.name)!;
    assert.equal(cm.immutable, true);
    assert.deepEqual(
      cm.metadata.ownerReferences?.map((o) => [o.uid, o.controller]),
      [['uid-plan', true]],
    );
    assert.equal(cm.metadata.labels?.['app.kubernetes.io/component'], 'plan-projection');
    assert.deepEqual(Object.keys(cm.binaryData ?? {}), [CHUNK_KEY]);
    assert.ok(Buffer.from(cm.binaryData![CHUNK_KEY]!, 'base64').equals(chunkBytes[1]!));
  });

  it('uses a projection that exists when it is byte-equal, again and again', async () => {
    const { plan } = publish(bytes);
    const written = new Map<string, ConfigMapObject>();
    await projectPlan(storeOf(written), plan, chunkBytes);
    await projectPlan(storeOf(written), plan, chunkBytes);
    assert.equal(written.size, 2);
  });

  const differing: [string, (cm: ConfigMapObject) => ConfigMapObject][] = [
    ['other bytes', (cm) => ({ ...cm, binaryData: { [CHUNK_KEY]: Buffer.from('x').toString('base64') } })],
    ['a mutable one', (cm) => ({ ...cm, immutable: false })],
    ['an extra key', (cm) => ({ ...cm, data: { extra: 'x' } })],
    ['another owner', (cm) => ({ ...cm, metadata: { ...cm.metadata, ownerReferences: [] } })],
  ];
  for (const [what, change] of differing) {
    it(`refuses a projection that exists with ${what}, naming it`, async () => {
      const { plan } = publish(bytes);
      const name = plan.spec.chunks[1]!.name;
      const existing = new Map([[name, change(buildPlanProjection(plan, name, chunkBytes[1]!))]]);
      await assert.rejects(
        projectPlan(storeOf(existing), plan, chunkBytes),
        (e: unknown) => e instanceof ProjectionError && e.message.includes(name),
      );
    });
  }
});
