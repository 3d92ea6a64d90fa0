/**
 * Resolve → Verify → read for an OCI source, through both families' decide: the shared steps
 * (snapshot/artifact-steps.ts) with each family's own claim, block and conditions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, type DecideInput } from '../../../../src/controller/schema/decide.ts';
import { decideMigration, type MigrationDecideInput } from '../../../../src/controller/migration/decide.ts';
import type { SchemaStatus, SchemaView } from '../../../../src/controller/schema/model.ts';
import type { MigrationStatus, MigrationView } from '../../../../src/controller/migration/model.ts';
import type { ArtifactInput, OciArtifactInput } from '../../../../src/controller/snapshot/artifact-steps.ts';
import type { RunnerOutputs } from '../../../../src/protocol/result.ts';
import { sourceBinding } from '../../../../src/controller/snapshot/source-binding.ts';
import {
  digest,
  finishedJob,
  migrationInputOf,
  migrationViewOf,
  schemaInputOf,
  schemaViewOf,
  T0,
} from './pipeline-fixture.ts';

const REF = 'registry.example:5000/schemas/orders:v1';
const REPO = 'registry.example:5000/schemas/orders';
const SCHEMA_TYPE = 'application/vnd.ptah.schema.v1';
const MIGRATIONS_TYPE = 'application/vnd.ptah.migrations.v1';
const POLICY = { ok: true as const, name: 'policy', uid: 'pol-1', digest: digest('p') };

const oci = { reference: REF, credentialsSecretName: 'registry', plainHttp: false };
const source = { configMap: { name: '', files: [] }, oci, verificationPolicyName: 'policy' };

const schemaView = (status: SchemaStatus, generation = 1): SchemaView =>
  schemaViewOf(source, status, generation);
const migrationView = (status: MigrationStatus): MigrationView => migrationViewOf(source, status, 'uid-m');

function artifact(type: string, policy: OciArtifactInput['policy'] = POLICY): ArtifactInput {
  return { kind: 'oci', reference: REF, artifactType: type, policy };
}

const schemaInput = (view: SchemaView, at: number, extra: Partial<DecideInput> = {}): DecideInput =>
  schemaInputOf(view, at, 'OCI', artifact(SCHEMA_TYPE), extra);
const migrationInput = (view: MigrationView, at: number, extra: Partial<MigrationDecideInput> = {}) =>
  migrationInputOf(view, at, 'OCI', artifact(MIGRATIONS_TYPE), extra);
const finished = finishedJob;

const resolved = (d: string) => ({
  artifact: {
    requestedReference: REF,
    resolvedReference: `${REPO}@${d}`,
    digest: d,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    artifactType: SCHEMA_TYPE,
    size: 512,
  },
});

const verdict = (d: string, over: Partial<NonNullable<RunnerOutputs['verification']>> = {}) => ({
  verification: {
    satisfied: true,
    policyDigest: POLICY.digest,
    digest: d,
    inspectedArtifactType: SCHEMA_TYPE,
    findings: [],
    signers: ['release'],
    ...over,
  },
});

const cond = (
  status: { conditions?: readonly { type: string; status: string; reason: string }[] },
  t: string,
) => status.conditions?.find((c) => c.type === t);

/** A schema taken through Resolve and Verify to its Observe claim; returns every status on the way. */
function schemaToObserve(d = digest('a')) {
  const first = decide(schemaInput(schemaView({}), T0));
  const resolve = first.status.claim!;
  const afterResolve = decide(
    schemaInput(schemaView(first.status), T0 + 1000, finished(resolve, 'resolve', resolved(d))),
  );
  const verify = afterResolve.status.claim!;
  const afterVerify = decide(
    schemaInput(schemaView(afterResolve.status), T0 + 2000, finished(verify, 'verify', verdict(d))),
  );
  return { first, afterResolve, afterVerify };
}

describe('OCI source, schema family', () => {
  it('resolves, then verifies under the bound policy, then observes the pinned artifact', () => {
    const { first, afterResolve, afterVerify } = schemaToObserve();
    const resolve = first.status.claim!;
    assert.equal(resolve.type, 'Resolve');
    assert.equal(resolve.artifactReference, REF);
    assert.equal(first.status.phase, 'Resolving');
    // The claim is durable first; the next pass creates its Job.
    const dispatch = decide(schemaInput(schemaView(first.status), T0 + 10));
    assert.deepEqual(dispatch.post, [{ kind: 'createJob', claim: resolve }]);

    const verify = afterResolve.status.claim!;
    assert.equal(verify.type, 'Verify');
    assert.equal(afterResolve.status.phase, 'Verifying');
    assert.equal(verify.artifactReference, `${REPO}@${digest('a')}`);
    assert.deepEqual(verify.verificationPolicy, { name: 'policy', uid: 'pol-1', digest: digest('p') });
    const res = afterResolve.status.resolution!;
    assert.equal(res.sourceType, 'OCI');
    assert.equal(res.requestedReference, REF);
    assert.equal(res.digest, digest('a'));
    assert.equal(res.contentDigest, digest('a'));
    assert.equal(res.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.equal(res.artifactType, SCHEMA_TYPE);
    assert.equal(res.size, 512);
    assert.equal(cond(afterResolve.status, 'ArtifactResolved')?.reason, 'DigestPinned');
    // The first resolution deletes any snapshot a ConfigMap source left behind.
    assert.ok(afterResolve.post.some((p) => p.kind === 'collectSnapshots' && p.keep.length === 0));

    const observe = afterVerify.status.claim!;
    assert.equal(observe.type, 'Observe');
    assert.equal(observe.artifactReference, `${REPO}@${digest('a')}`);
    assert.equal(observe.contentDigest, digest('a'));
    assert.equal(cond(afterVerify.status, 'ArtifactVerified')?.reason, 'PolicySatisfied');
    assert.deepEqual(afterVerify.status.resolution!.verification?.signers, ['release']);
    const binding = sourceBinding(afterVerify.status.resolution);
    assert.ok(binding.ok);
    assert.equal(binding.value.verificationPolicyUID, 'pol-1');
    assert.equal(binding.value.verificationPolicyDigest, digest('p'));
  });

  it('blocks a refused artifact with the finding named, and refreshes it on its interval', () => {
    const first = decide(schemaInput(schemaView({}), T0));
    const afterResolve = decide(
      schemaInput(
        schemaView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    const refused = decide(
      schemaInput(
        schemaView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), {
            satisfied: false,
            findings: [{ rule: 'signature-untrusted', message: 'signed by a key the policy does not list' }],
            signers: [],
          }),
        ),
      ),
    );
    assert.equal(refused.status.phase, 'Blocked');
    assert.equal(refused.status.claim, undefined);
    const verified = cond(refused.status, 'ArtifactVerified');
    assert.equal(verified?.status, 'False');
    assert.equal(verified?.reason, 'PolicyRefused');
    assert.match((verified as { message?: string }).message ?? '', /signature-untrusted/);
    assert.ok(!sourceBinding(refused.status.resolution).ok, 'a refused artifact binds no plan');

    // Before the interval nothing starts; at the interval the whole pipeline runs again from Resolve.
    const waiting = decide(schemaInput(schemaView(refused.status), T0 + 60_000));
    assert.equal(waiting.status.claim, undefined);
    const due = Date.parse(refused.status.nextReconciliationTime!);
    const refresh = decide(schemaInput(schemaView(refused.status), due + 1));
    assert.equal(refresh.status.claim?.type, 'Resolve');
  });

  it('names a signature over another digest whole: both digests reach the condition and status', () => {
    const first = decide(schemaInput(schemaView({}), T0));
    const afterResolve = decide(
      schemaInput(
        schemaView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    // As src/sources/oci/cosign.ts words it: the signature tag, the key and the two digests (276 characters;
    // the runner used to cut findings at 256, before the artifact's own digest).
    const finding = `cosign signature 0 (tag ${digest('a').replace(':', '-')}.sig) by key release-2026 covers ${digest('b')}, not ${digest('a')}`;
    const refused = decide(
      schemaInput(
        schemaView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), {
            satisfied: false,
            findings: [{ rule: 'signature-digest', message: finding }],
            signers: [],
          }),
        ),
      ),
    );
    const verified = cond(refused.status, 'ArtifactVerified') as { message?: string } | undefined;
    assert.equal(verified?.message, `policy policy refused ${digest('a')}: signature-digest: ${finding}`);
    assert.equal(refused.status.resolution?.verification?.refused?.message, finding);

    // A longer finding is kept to what status holds of one (512 characters), not cut at the old 300.
    const long = decide(
      schemaInput(
        schemaView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), {
            satisfied: false,
            findings: [{ rule: 'signature-digest', message: `${finding} ${'x'.repeat(400)}` }],
            signers: [],
          }),
        ),
      ),
    );
    assert.equal(long.status.resolution?.verification?.refused?.message.length, 512);
  });

  it('a tag that moves to a new digest retires the plan and stales its approvals', () => {
    const { afterVerify } = schemaToObserve();
    const status: SchemaStatus = {
      ...afterVerify.status,
      claim: undefined,
      phase: 'AwaitingApproval',
      nextReconciliationTime: new Date(T0 + 3000).toISOString(),
      plan: {
        name: 'ptah-plan-1',
        uid: 'plan-1',
        fingerprint: digest('f'),
        contentDigest: digest('e'),
        destructive: false,
        statementCount: 1,
        createdAt: new Date(T0).toISOString(),
      },
    };
    const refresh = decide(schemaInput(schemaView(status), T0 + 4000, { planCheck: { ok: true } }));
    assert.equal(refresh.status.claim?.type, 'Resolve');
    const moved = decide(
      schemaInput(
        schemaView(refresh.status),
        T0 + 5000,
        finished(refresh.status.claim!, 'resolve', resolved(digest('b'))),
      ),
    );
    assert.equal(moved.status.plan, undefined);
    assert.ok(moved.post.some((p) => p.kind === 'staleApprovals'));
    assert.equal(moved.status.resolution!.digest, digest('b'));
    assert.equal(moved.status.resolution!.verification, undefined, 'a new digest is verified afresh');
    assert.equal(moved.status.claim?.type, 'Verify');
  });

  it('the same digest again keeps the plan and its verdict', () => {
    const { afterVerify } = schemaToObserve();
    const status: SchemaStatus = {
      ...afterVerify.status,
      claim: undefined,
      phase: 'InSync',
      nextReconciliationTime: new Date(T0 + 3000).toISOString(),
    };
    const refresh = decide(schemaInput(schemaView(status), T0 + 4000));
    const again = decide(
      schemaInput(
        schemaView(refresh.status),
        T0 + 5000,
        finished(refresh.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    assert.ok(!again.post.some((p) => p.kind === 'staleApprovals'));
    assert.equal(again.status.resolution!.verification?.policyUID, 'pol-1');
  });

  it('a policy replaced in the cluster retires the plan at once and verifies again', () => {
    const { afterVerify } = schemaToObserve();
    const status: SchemaStatus = {
      ...afterVerify.status,
      claim: undefined,
      phase: 'AwaitingApproval',
      nextReconciliationTime: new Date(T0 + 600_000).toISOString(),
      plan: {
        name: 'ptah-plan-1',
        uid: 'plan-1',
        fingerprint: digest('f'),
        contentDigest: digest('e'),
        destructive: false,
        statementCount: 1,
        createdAt: new Date(T0).toISOString(),
      },
    };
    const replaced = { ...POLICY, uid: 'pol-2' };
    const next = decide(
      schemaInput(schemaView(status), T0 + 4000, { artifact: artifact(SCHEMA_TYPE, replaced) }),
    );
    assert.equal(next.status.plan, undefined);
    assert.ok(next.post.some((p) => p.kind === 'staleApprovals' && p.reason === 'PolicyChanged'));
    assert.equal(next.status.claim?.type, 'Resolve');
  });

  it('a mutable or missing policy blocks with the fix named, before any Job', () => {
    const next = decide(
      schemaInput(schemaView({}), T0, {
        artifact: artifact(SCHEMA_TYPE, {
          ok: false,
          reason: 'PolicyMutable',
          message: 'verification policy ConfigMap policy is mutable; it must be created with immutable: true',
        }),
      }),
    );
    assert.equal(next.status.phase, 'Blocked');
    assert.equal(next.status.claim, undefined);
    assert.equal(cond(next.status, 'ArtifactVerified')?.reason, 'PolicyMutable');
    assert.ok(!next.post.some((p) => p.kind === 'createJob'));
  });

  it('a registry that cannot be reached leaves the resolution and says its freshness is unknown', () => {
    const { afterVerify } = schemaToObserve();
    const status: SchemaStatus = {
      ...afterVerify.status,
      claim: undefined,
      phase: 'InSync',
      nextReconciliationTime: new Date(T0 + 3000).toISOString(),
    };
    const refresh = decide(schemaInput(schemaView(status), T0 + 4000));
    const down = decide(
      schemaInput(
        schemaView(refresh.status),
        T0 + 5000,
        finished(refresh.status.claim!, 'resolve', {}, 'failed', {
          code: 'unreachable',
          message: 'connection refused',
        }),
      ),
    );
    assert.equal(down.status.phase, 'Failed');
    assert.equal(cond(down.status, 'ArtifactResolved')?.status, 'Unknown');
    assert.equal(cond(down.status, 'ArtifactResolved')?.reason, 'RefreshFailed');
    assert.equal(cond(down.status, 'InSync')?.reason, 'SourceFreshnessUnknown');
    assert.equal(cond(down.status, 'PlanReady')?.status, 'Unknown');
    assert.equal(down.status.resolution!.digest, digest('a'));
    // Retried after the retry interval, from Resolve.
    const early = decide(schemaInput(schemaView(down.status), T0 + 6000));
    assert.equal(early.status.claim, undefined);
    const retry = decide(
      schemaInput(schemaView(down.status), Date.parse(down.status.nextReconciliationTime!) + 1),
    );
    assert.equal(retry.status.claim?.type, 'Resolve');
  });

  it('refuses a verdict whose independently inspected artifact type is another family', () => {
    const first = decide(schemaInput(schemaView({}), T0));
    const afterResolve = decide(
      schemaInput(
        schemaView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    const next = decide(
      schemaInput(
        schemaView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), { inspectedArtifactType: MIGRATIONS_TYPE }),
        ),
      ),
    );
    assert.equal(next.status.phase, 'Blocked');
    assert.match(
      (cond(next.status, 'ArtifactVerified') as { message?: string }).message ?? '',
      /artifact-type/,
    );
  });

  it('withdraws a Verify claimed under a policy since replaced', () => {
    const first = decide(schemaInput(schemaView({}), T0));
    const afterResolve = decide(
      schemaInput(
        schemaView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    const next = decide(
      schemaInput(schemaView(afterResolve.status), T0 + 2000, {
        job: { state: 'running', uid: 'job-2' },
        artifact: artifact(SCHEMA_TYPE, { ...POLICY, digest: digest('q') }),
      }),
    );
    assert.equal(next.status.claim, undefined);
    assert.ok(next.post.some((p) => p.kind === 'finishJob'));
  });
});

describe('OCI source, migration family', () => {
  it('resolves, verifies, then reads the history of the pinned directory', () => {
    const first = decideMigration(migrationInput(migrationView({}), T0));
    assert.equal(first.status.claim?.type, 'Resolve');
    assert.equal(first.status.phase, 'Resolving');
    const afterResolve = decideMigration(
      migrationInput(
        migrationView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', {
          artifact: { ...resolved(digest('a')).artifact, artifactType: MIGRATIONS_TYPE },
        }),
      ),
    );
    assert.equal(afterResolve.status.claim?.type, 'Verify');
    assert.equal(afterResolve.status.phase, 'Verifying');
    const afterVerify = decideMigration(
      migrationInput(
        migrationView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), { inspectedArtifactType: MIGRATIONS_TYPE }),
        ),
      ),
    );
    assert.equal(afterVerify.status.claim?.type, 'History');
    assert.equal(afterVerify.status.claim?.artifactReference, `${REPO}@${digest('a')}`);
    assert.equal(cond(afterVerify.status, 'ArtifactVerified')?.reason, 'PolicySatisfied');
  });

  it('blocks a refused directory with the finding named', () => {
    const first = decideMigration(migrationInput(migrationView({}), T0));
    const afterResolve = decideMigration(
      migrationInput(
        migrationView(first.status),
        T0 + 1000,
        finished(first.status.claim!, 'resolve', resolved(digest('a'))),
      ),
    );
    const refused = decideMigration(
      migrationInput(
        migrationView(afterResolve.status),
        T0 + 2000,
        finished(
          afterResolve.status.claim!,
          'verify',
          verdict(digest('a'), {
            satisfied: false,
            inspectedArtifactType: MIGRATIONS_TYPE,
            findings: [{ rule: 'signature-missing', message: 'no signature is attached' }],
          }),
        ),
      ),
    );
    assert.equal(refused.status.phase, 'Blocked');
    assert.equal(cond(refused.status, 'Blocked')?.reason, 'PolicyRefused');
    assert.match(
      (cond(refused.status, 'ArtifactVerified') as { message?: string }).message ?? '',
      /signature-missing/,
    );
  });
});
