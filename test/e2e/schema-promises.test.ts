// The PtahSchema promises under misuse, end to end: a tampered or deleted plan, a runner upgraded between
// approval and Apply, the realm Lease taken between an Apply and its proof, a resource deleted during its
// Apply, and two realms on one database. The database's statement log is the evidence that nothing ran
// twice and nothing ran where it should not.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { coordinationDigest, realmLeaseName } from '../../src/api/fingerprint.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../src/api/ptah-schema-plan-chunk.ts';
import { LEASE_EPOCH_ANNOTATION } from '../../src/controller/realm/realm-lease.ts';
import {
  at,
  createApproval,
  createSchema,
  createSecret,
  createSource,
  declareSchema,
  dumpDebug,
  eventsOf,
  eventsOnceRecorded,
  eventually,
  getSchema,
  operationJobs,
  query,
  RUNNER_IMAGE,
  statementsIn,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const table = (name: string) => `CREATE TABLE public.${name} (id bigint PRIMARY KEY, note text);\n`;
/** How many times the table's CREATE TABLE reached the database, as the server logged it. */
const creates = (database: string, name: string) =>
  statementsIn(e2e(), database, new RegExp(`CREATE TABLE\\s+"?public"?\\."?${name}"?`, 'i')).length;

async function awaiting(name: string): Promise<PtahSchema> {
  const s = await waitForPhase(e2e(), name, ['AwaitingApproval', 'Failed', 'Blocked', 'InSync']);
  if (s.status?.phase !== 'AwaitingApproval') await dumpDebug(e2e(), name);
  assert.equal(s.status?.phase, 'AwaitingApproval', JSON.stringify(s.status?.conditions));
  return s;
}

async function approve(name: string, s: PtahSchema, approvalName: string): Promise<void> {
  const plan = s.status!.plan!;
  await createApproval(e2e(), approvalName, {
    schema: { name, uid: s.metadata.uid! },
    plan: { name: plan.name, uid: plan.uid },
    fingerprint: plan.fingerprint,
  });
}

async function approvalCondition(name: string, type: string): Promise<k8s.V1Condition | undefined> {
  const a = (await e2e().objects.getNamespacedCustomObject({
    ...at(e2e(), 'ptahschemaapprovals'),
    name,
  })) as PtahSchemaApproval;
  return (a.status?.conditions ?? []).find((c) => c.type === type && c.status === 'True') as
    k8s.V1Condition | undefined;
}

async function inSync(name: string): Promise<PtahSchema> {
  const s = await waitForPhase(e2e(), name, ['InSync'], 150_000).catch(async (error: unknown) => {
    await dumpDebug(e2e(), name);
    throw error;
  });
  return s;
}

async function restartManager(extraEnv: Record<string, string> = {}): Promise<void> {
  await e2e().manager?.stop(5_000);
  await e2e().startManager(extraEnv);
}

describe('PtahSchema promises under misuse', { skip }, () => {
  // A test that stopped the manager on purpose and failed before restarting it leaves none for the next.
  beforeEach(async () => {
    const manager = e2e().manager;
    if (manager === undefined || manager.exited()) await e2e().startManager();
  });

  it('a chunk replaced after publication retires the plan once; a new plan is published, approved and applied', async () => {
    const url = await declareSchema(e2e(), 'tamper', {
      data: { 'schema.sql': table('tampered') },
      policy: { apply: 'OnApproval' },
    });
    const first = await awaiting('tamper');
    const plan = first.status!.plan!;
    const stored = (await e2e().objects.getNamespacedCustomObject({
      ...at(e2e(), 'ptahschemaplans'),
      name: plan.name,
    })) as PtahSchemaPlan;
    const chunk = stored.spec.chunks[0]!.name;
    // Chunks are immutable: a cluster admin replaces one by deleting and recreating it, other bytes inside.
    // The forgery copies the owner and labels, so it has the shape the chunk admission policy admits; the
    // controller-write webhook holds its bytes to what the plan records and refuses it. The deletion stands
    // (nothing judges a delete): only the manager's read-back can tell the plan lost a chunk.
    const chunks = at(e2e(), 'ptahschemaplanchunks');
    const original = (await e2e().objects.getNamespacedCustomObject({
      ...chunks,
      name: chunk,
    })) as PtahSchemaPlanChunk;
    await e2e().objects.deleteNamespacedCustomObject({ ...chunks, name: chunk });
    const forged = Buffer.from('DROP TABLE public.important;\n').toString('base64');
    const forgery = await e2e()
      .objects.createNamespacedCustomObject({
        ...chunks,
        body: {
          apiVersion: original.apiVersion,
          kind: original.kind,
          metadata: {
            name: chunk,
            labels: original.metadata.labels ?? {},
            ...(original.metadata.ownerReferences !== undefined
              ? { ownerReferences: original.metadata.ownerReferences }
              : {}),
          },
          spec: { data: forged },
        },
      })
      .then(
        () => 'admitted',
        (error: unknown) => String((error as { body?: unknown }).body ?? error),
      );
    assert.match(forgery, /vcontrollerwrite: only the manager .* creates plan chunk/);

    // Who finds the forgery first is a race: the approval's read-back before Apply, or the manager reading
    // the plan again when it sees the chunk's deletion. If the manager was first, the plan is already
    // retired and admission refuses an approval of it; either way it is retired once and never applied.
    const admitted = await approve('tamper', first, 'tamper-first').then(
      () => true,
      (error: unknown) => {
        assert.match(
          String((error as { body?: unknown }).body ?? error),
          /tamper is not waiting on any plan|but the current plan of tamper is/,
        );
        return false;
      },
    );
    const republished = await eventually('a new plan under a new name', async () => {
      const s = await getSchema(e2e(), 'tamper');
      return s.status?.phase === 'AwaitingApproval' &&
        s.status.plan !== undefined &&
        s.status.plan.name !== plan.name
        ? s
        : undefined;
    });
    assert.deepEqual(
      republished.status?.retiredPlans?.map((r) => [r.name, r.reason]),
      [[plan.name, 'PlanTampered']],
    );
    if (admitted) {
      const stale = await eventually('the approval that found it is Stale', () =>
        approvalCondition('tamper-first', 'Stale'),
      );
      assert.equal(stale.reason, 'PlanTampered');
      assert.equal(await approvalCondition('tamper-first', 'Consumed'), undefined, 'never consumed');
    }
    const events = await eventsOnceRecorded(e2e(), 'tamper', 'PlanTampered');
    assert.equal(events.length, 1, 'retired once');
    // Repeats of one Event raise its count (the recorder aggregates), so once is also count 1.
    assert.equal(events[0]!.count, 1, 'retired once');
    assert.equal(events[0]!.type, 'Warning');
    assert.match(events[0]!.message ?? '', new RegExp(`chunk ${chunk}`));
    assert.deepEqual(await operationJobs(e2e(), 'tamper', 'apply'), [], 'no Apply ran on the tampered plan');

    await approve('tamper', republished, 'tamper-second');
    await inSync('tamper');
    assert.deepEqual(
      (await query(url, "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'tampered'"))[0],
      { n: 1 },
    );
    assert.equal(statementsIn(e2e(), 'tamper_db', /DROP TABLE/i).length, 0, 'the forged bytes never ran');
    assert.equal(creates('tamper_db', 'tampered'), 1);
  });

  it('a deleted plan is re-planned within seconds', async () => {
    await declareSchema(e2e(), 'replan', {
      data: { 'schema.sql': table('replanned') },
      policy: { apply: 'OnApproval' },
    });
    const s = await awaiting('replan');
    const plan = s.status!.plan!;
    const deletedAt = Date.now();
    await e2e().objects.deleteNamespacedCustomObject({ ...at(e2e(), 'ptahschemaplans'), name: plan.name });
    const again = await eventually(
      'a new plan after the deletion',
      async () => {
        const now = await getSchema(e2e(), 'replan');
        return now.status?.phase === 'AwaitingApproval' && now.status.plan?.uid !== plan.uid
          ? now
          : undefined;
      },
      60_000,
    );
    assert.ok(Date.now() - deletedAt < 60_000, 'well before the 10 m interval');
    assert.notEqual(again.status?.plan?.uid, plan.uid);
  });

  it('a runner image upgraded between approval and Apply supersedes the plan: Stale approval, a new plan', async () => {
    await declareSchema(e2e(), 'upgrade', {
      data: { 'schema.sql': table('upgraded') },
      policy: { apply: 'OnApproval' },
    });
    const s = await awaiting('upgrade');
    const plan = s.status!.plan!;
    // The new runner release: the same program under another image reference.
    const upgraded = `${RUNNER_IMAGE}-next`;
    const mapFile = e2e().env.description.imageMapFile;
    const map = JSON.parse(readFileSync(mapFile, 'utf8')) as { images: Record<string, unknown> };
    map.images[upgraded] = map.images[RUNNER_IMAGE] ?? {
      entrypoint: [process.execPath, join(ROOT, 'bin/ptah-runner.mjs')],
    };
    writeFileSync(mapFile, JSON.stringify(map, null, 2));
    await restartManager({ PTAH_RUNNER_IMAGE: upgraded });
    // A race between the person and the new manager: the approval lands first and goes Stale, or the
    // manager has already superseded the plan and admission refuses an approval of it. Either way the old
    // plan is never applied.
    const admitted = await approve('upgrade', s, 'upgrade-approval').then(
      () => true,
      (error: unknown) => {
        assert.match(
          String((error as { body?: unknown }).body ?? error),
          /upgrade is not waiting on any plan|but the current plan of upgrade is/,
        );
        return false;
      },
    );
    if (admitted) {
      const stale = await eventually('the approval goes Stale', () =>
        approvalCondition('upgrade-approval', 'Stale'),
      );
      assert.equal(
        stale.reason,
        'ExecutionBindingChanged',
        'the runner image is a release the execution binding holds',
      );
      assert.match(stale.message ?? '', /runnerImage/);
    }
    const next = await eventually('a new plan bound to the new runner', async () => {
      const now = await getSchema(e2e(), 'upgrade');
      return now.status?.phase === 'AwaitingApproval' && now.status.plan?.uid !== plan.uid ? now : undefined;
    });
    const entry = next.status?.journal?.entries.find(
      (e) => e.type === 'Verified' && e.outcome === 'Superseded',
    );
    assert.equal(entry?.plan, plan.name);
    const stored = (await e2e().objects.getNamespacedCustomObject({
      ...at(e2e(), 'ptahschemaplans'),
      name: next.status!.plan!.name,
    })) as PtahSchemaPlan;
    assert.equal(stored.spec.binding.runnerImage, upgraded);
    assert.deepEqual(await operationJobs(e2e(), 'upgrade', 'apply'), [], 'the old plan never ran');
    await restartManager();
  });

  it('a Lease taken by someone else between Apply and proof gives an unknown outcome, never InSync from that proof', async () => {
    await e2e().manager?.stop(5_000);
    // The second observe Job of this resource is the proof after its Apply: the manager dies right after it.
    const crashing = await e2e().startManager({ PTAH_TEST_CRASH_AFTER_JOB_CREATE: 'observe#2@handover' });
    await declareSchema(e2e(), 'handover', {
      data: { 'schema.sql': table('handed') },
      policy: { apply: 'Always' },
    });
    await eventually(
      'the manager dies after creating the proof',
      async () => (crashing.exited() ? true : undefined),
      150_000,
    ).catch(async (error: unknown) => {
      await dumpDebug(e2e(), 'handover');
      throw error;
    });
    const before = await getSchema(e2e(), 'handover');
    const proof = before.status!.claim!;
    assert.equal(proof.type, 'Observe');
    assert.ok(proof.leaseEpoch, 'the proof carries the Apply hold');
    // Somebody else holds the realm for a moment, then lets go: the hold is no longer uninterrupted.
    const leases = e2e().admin.makeApiClient(k8s.CoordinationV1Api);
    const name = realmLeaseName(
      coordinationDigest({ engine: 'postgres', namespace: e2e().namespace, coordinationKey: 'handover' }),
    );
    const lease = await leases.readNamespacedLease({ name, namespace: 'ptah-system' });
    await leases.replaceNamespacedLease({
      name,
      namespace: 'ptah-system',
      body: {
        metadata: {
          ...lease.metadata,
          annotations: { ...lease.metadata?.annotations, [LEASE_EPOCH_ANNOTATION]: 'v1-intruder' },
        },
        spec: {
          ...lease.spec,
          holderIdentity: 'intruder',
          leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
        },
      },
    });
    const held = await leases.readNamespacedLease({ name, namespace: 'ptah-system' });
    const released = { ...held.spec };
    delete released.holderIdentity;
    await leases.replaceNamespacedLease({
      name,
      namespace: 'ptah-system',
      body: { metadata: held.metadata, spec: released },
    });

    const restartedAt = Date.now() - 1_000;
    await e2e().startManager();
    const done = await inSync('handover');
    const lost = await eventsOnceRecorded(e2e(), 'handover', 'LeaseContinuityLost');
    assert.ok(lost.length >= 1, 'the gap is reported');
    const observes = await operationJobs(e2e(), 'handover', 'observe');
    const fresh = observes.filter(
      (j) =>
        j.metadata?.name !== proof.jobName &&
        new Date(j.metadata!.creationTimestamp!).getTime() >= restartedAt,
    );
    assert.equal(fresh.length, 1, 'InSync came from a fresh proof under a new hold, not the discarded one');
    const entries = done.status?.journal?.entries ?? [];
    assert.deepEqual(
      entries.filter((e) => e.type === 'ApplyFinished').map((e) => e.outcome),
      ['Succeeded'],
    );
    assert.equal(entries.filter((e) => e.type === 'Verified' && e.outcome === 'InSync').length, 1);
    assert.equal(creates('handover_db', 'handed'), 1, 'applied once');
  });

  it('deleting a resource during its Apply waits for the Job, journals the outcome and runs no SQL of its own', async () => {
    await e2e().manager?.stop(5_000);
    const crashing = await e2e().startManager({ PTAH_TEST_CRASH_AFTER_JOB_CREATE: 'apply@farewell' });
    const url = await declareSchema(e2e(), 'farewell', {
      data: { 'schema.sql': table('farewell') },
      policy: { apply: 'Always' },
    });
    await eventually(
      'the manager dies after creating the Apply',
      async () => (crashing.exited() ? true : undefined),
      150_000,
    );
    const [apply] = await operationJobs(e2e(), 'farewell', 'apply');
    assert.ok(apply, 'the Apply Job exists');
    await e2e().objects.deleteNamespacedCustomObject({ ...at(e2e(), 'ptahschemas'), name: 'farewell' });
    // With nobody to let it go, the guard holds the resource; the Job is not collected.
    const held = await getSchema(e2e(), 'farewell');
    assert.ok(held.metadata.deletionTimestamp, 'deletion is pending');
    // The Apply's Pod is admitted by vpodintent, which the manager serves and which fails closed: with every
    // replica down (this environment runs one) the Job waits for its Pod, as in a cluster. A manager coming
    // back finds a deleted resource with an Apply in flight.
    await e2e().startManager();
    await eventually('the Apply Job finishes', async () => {
      const [job] = await operationJobs(e2e(), 'farewell', 'apply');
      return job?.status?.succeeded === 1 ? job : undefined;
    });
    // The server writes its statement log asynchronously: take it once it has stopped growing.
    let statementsBeforeRestart = statementsIn(e2e(), 'farewell_db', /./);
    await eventually('the statement log settles', async () => {
      await sleep(1_500);
      const now = statementsIn(e2e(), 'farewell_db', /./);
      const settled = now.length === statementsBeforeRestart.length;
      statementsBeforeRestart = now;
      return settled ? true : undefined;
    });
    await eventually('the resource is gone once its Apply was accounted for', async () => {
      try {
        await getSchema(e2e(), 'farewell');
        return undefined;
      } catch (error) {
        return (error as { code?: number }).code === 404 ? true : undefined;
      }
    });
    // The recorder writes Events after the status write that let the resource go, so wait for it a moment.
    const finished = await eventually(
      'the ApplyFinished Event',
      async () => {
        const events = await eventsOf(e2e(), 'farewell', 'ApplyFinished');
        return events.some((e) => /deleted/.test(e.message ?? '')) ? events : undefined;
      },
      10_000,
    ).catch(() => eventsOf(e2e(), 'farewell', 'ApplyFinished'));
    assert.ok(
      finished.some((e) => /deleted/.test(e.message ?? '')),
      'the outcome is announced',
    );
    assert.equal(creates('farewell_db', 'farewell'), 1);
    await sleep(3_000); // a Job started now would have read the database by then
    assert.deepEqual(
      statementsIn(e2e(), 'farewell_db', /./).slice(statementsBeforeRestart.length),
      [],
      'nothing read or wrote the database after the deletion: no proof, no SQL',
    );
    assert.deepEqual(
      (await query(url, "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'farewell'"))[0],
      { n: 1 },
      'the Apply ran to its end',
    );
  });

  it('two realms on one database: the later is Blocked naming the other; one statement stream', async () => {
    const url = await e2e().env.postgres!.createDatabase('shared_db');
    await createSecret(e2e(), 'shared-db', url);
    await createSource(e2e(), 'shared-src', { 'schema.sql': table('shared') });
    await createSchema(e2e(), 'shared-first', {
      source: 'shared-src',
      secret: 'shared-db',
      key: 'realm-one',
      policy: { apply: 'Always' },
    });
    await inSync('shared-first');
    await createSchema(e2e(), 'shared-second', {
      source: 'shared-src',
      secret: 'shared-db',
      key: 'realm-two',
      policy: { apply: 'Always' },
    });
    const blocked = await waitForPhase(e2e(), 'shared-second', ['Blocked', 'InSync', 'Failed']);
    assert.equal(blocked.status?.phase, 'Blocked');
    const ready = blocked.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'RealmConflict');
    assert.match(ready?.message ?? '', new RegExp(`${e2e().namespace}/shared-first`));
    assert.deepEqual(await operationJobs(e2e(), 'shared-second', 'plan'), [], 'blocked before any Plan');
    assert.equal(creates('shared_db', 'shared'), 1);
    assert.equal((await getSchema(e2e(), 'shared-first')).status?.phase, 'InSync');
  });
});
