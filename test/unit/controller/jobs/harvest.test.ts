import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import type { Claim } from '../../../../src/api/ptah-schema.ts';
import {
  credentialUnavailable,
  harvestJob,
  harvestPod,
  POD_LOG_LIMIT_BYTES,
} from '../../../../src/controller/jobs/harvest.ts';
import { FETCH_CONTAINER } from '../../../../src/controller/jobs/oci-job-source.ts';
import { sourceRefusalMessage } from '../../../../src/controller/snapshot/artifact-steps.ts';
import { createRedactor } from '../../../../src/runner/redact.ts';
import { terminationSummary } from '../../../../src/runner/termination.ts';
import { controlledBy } from '../../../../src/controller/runtime/kube.ts';
import { encodeFrame, MAX_FRAME_PAYLOAD_BYTES } from '../../../../src/protocol/frame.ts';
import { RUNNER_PROTOCOL_VERSION, type RunnerResult } from '../../../../src/protocol/result.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const JOB = 'ptah-plan-orders-aaaaaaaaaaaaaaaa';
const JOB_UID = 'job-uid-1';

const claim: Claim = {
  type: 'Observe',
  operationId: digest('a'),
  inputsFingerprint: digest('b'),
  jobName: JOB,
  attempt: 1,
  generation: 1,
  startedAt: '2026-01-01T00:00:00.000Z',
};

function frame(outcome: RunnerResult['outcome'], total: number): string {
  return encodeFrame({
    protocolVersion: RUNNER_PROTOCOL_VERSION,
    operation: 'observe',
    operationId: claim.operationId,
    exitCode: outcome === 'succeeded' ? 0 : 1,
    childExitCode: outcome === 'succeeded' ? 0 : 1,
    outcome,
    startedAt: '2026-01-01T00:00:01.000Z',
    finishedAt: '2026-01-01T00:00:02.000Z',
    outputs: {
      drift: {
        reportDigest: digest('d'),
        drifted: total > 0,
        total,
        highestSeverity: 'none',
        categories: {},
      },
    },
  });
}

/** A finished operation Pod carrying the `job-name` label, controlled by the Job with `ownerUid`. */
function pod(name: string, ownerUid: string, kind = 'Job'): V1Pod {
  return {
    metadata: {
      name,
      labels: { 'job-name': JOB },
      ownerReferences: [{ apiVersion: 'batch/v1', kind, name: JOB, uid: ownerUid, controller: true }],
    },
    status: { containerStatuses: [{ name: 'ptah', state: { terminated: { exitCode: 0 } } } as never] },
  };
}

/** The two calls harvestJob makes, answered from memory: a label-selected list and each Pod's log. */
function core(pods: V1Pod[], logs: Record<string, string>): CoreV1Api {
  return {
    listNamespacedPod: async ({ labelSelector }: { labelSelector?: string }) => ({
      items: pods.filter((p) => labelSelector === `job-name=${p.metadata?.labels?.['job-name']}`),
    }),
    readNamespacedPodLog: async ({ name }: { name: string }) => logs[name] ?? '',
  } as unknown as CoreV1Api;
}

describe('harvest: only Pods the claimed Job controls', () => {
  const planted = pod('planted', 'someone-else');
  const ours = pod('ours', JOB_UID);
  // The planted Pod reports a clean, in-sync reading for the claim's very operation id.
  const logs = { planted: frame('succeeded', 0), ours: frame('failed', 3) };

  it('a planted Pod with the same label and another owner is ignored', async () => {
    const h = await harvestJob(core([planted, ours], logs), 'ns', claim, JOB_UID);
    assert.equal(h.kind, 'accepted', JSON.stringify(h));
    assert.equal(h.kind === 'accepted' && h.result.outcome, 'failed', "the result is our Pod's");
  });

  it('a planted Pod alone is no Pod at all, never a result', async () => {
    const h = await harvestJob(core([planted], logs), 'ns', claim, JOB_UID);
    assert.deepEqual(h, { kind: 'refused', message: 'the Job has no Pod' });
  });

  it('a Job recreated under the claimed name is not read, however clean its own Pod reports', async () => {
    const recorded: Claim = { ...claim, jobUID: JOB_UID };
    const theirs = pod('theirs', 'recreated-uid');
    const h = await harvestJob(
      core([theirs], { theirs: frame('succeeded', 0) }),
      'ns',
      recorded,
      'recreated-uid',
    );
    assert.equal(h.kind, 'refused', JSON.stringify(h));
    const same = await harvestJob(core([ours], logs), 'ns', recorded, JOB_UID);
    assert.equal(same.kind, 'accepted', 'the recorded Job itself is still read');
  });

  it('an owner that is not a Job, or no controller reference, does not count', () => {
    const notController = pod('loose', JOB_UID);
    notController.metadata!.ownerReferences![0]!.controller = false;
    assert.deepEqual(
      controlledBy([pod('rs', JOB_UID, 'ReplicaSet'), notController, ours], JOB_UID).map(
        (p) => p.metadata?.name,
      ),
      ['ours'],
    );
    assert.deepEqual(controlledBy([ours], ''), [], 'an unknown Job UID matches nothing');
  });
});

describe('credentialUnavailable', () => {
  function waitingPod(message: string, reason = 'CreateContainerConfigError'): V1Pod {
    return {
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        containers: [
          {
            name: 'ptah',
            env: [{ name: 'PTAH_DB_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } }],
          },
        ],
      },
      status: { containerStatuses: [waitingStatus(reason, message)] },
    } as V1Pod;
  }
  function waitingStatus(reason: string, message: string) {
    return {
      name: 'ptah',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason, message } },
    };
  }

  it('names the Secret and key for the kubelet messages, and nothing else', () => {
    assert.deepEqual(credentialUnavailable(waitingPod('secret "db" not found')), {
      kind: 'credential-unavailable',
      message: 'Secret ns/db key url: the Secret does not exist',
    });
    assert.deepEqual(credentialUnavailable(waitingPod("couldn't find key url in Secret ns/db")), {
      kind: 'credential-unavailable',
      message: 'Secret ns/db key url: the Secret has no such key',
    });
    // Another Secret's message, another config error or another waiting reason is not this cause.
    assert.equal(credentialUnavailable(waitingPod('secret "other" not found')), undefined);
    assert.equal(credentialUnavailable(waitingPod('unsupported fieldRef x')), undefined);
    assert.equal(credentialUnavailable(waitingPod('secret "db" not found', 'ContainerCreating')), undefined);
  });
});

describe('harvest: the container log is read with a byte limit', () => {
  const ours = pod('ours', JOB_UID);
  /** The API server's limitBytes: the first bytes of the log, never more. */
  function limitedCore(log: string, asked: { limitBytes?: number }): CoreV1Api {
    return {
      listNamespacedPod: async () => ({ items: [ours] }),
      readNamespacedPodLog: async ({ limitBytes }: { limitBytes?: number }) => {
        asked.limitBytes = limitBytes;
        return limitBytes === undefined ? log : Buffer.from(log).subarray(0, limitBytes).toString('latin1');
      },
    } as unknown as CoreV1Api;
  }

  it('asks for no more than the largest frame and the runner’s bounded lines', async () => {
    const asked: { limitBytes?: number } = {};
    const h = await harvestJob(limitedCore(frame('succeeded', 0), asked), 'ns', claim, JOB_UID);
    assert.equal(h.kind, 'accepted');
    assert.equal(asked.limitBytes, POD_LOG_LIMIT_BYTES);
    assert.ok(
      POD_LOG_LIMIT_BYTES > MAX_FRAME_PAYLOAD_BYTES && POD_LOG_LIMIT_BYTES <= MAX_FRAME_PAYLOAD_BYTES * 2,
    );
  });

  it('a log longer than the limit is refused by name, even with a frame beyond the limit', async () => {
    const chatter = `${'x'.repeat(1023)}\n`.repeat(POD_LOG_LIMIT_BYTES / 1024 + 1);
    const h = await harvestJob(limitedCore(chatter + frame('succeeded', 0), {}), 'ns', claim, JOB_UID);
    assert.equal(h.kind, 'refused');
    assert.match(
      h.kind === 'refused' ? h.message : '',
      /log is longer than \d+ bytes; its result frame was not read/,
    );
  });
});

describe('harvest: a source init container refusal carries the runner’s reason', () => {
  const commit = 'c'.repeat(40);
  const password = 'hunter2-hunter2-hunter2';
  /** The termination message the runner writes for a refused fetch-git, through its own summary and redactor. */
  function summary(message: string): string {
    return terminationSummary(
      {
        protocolVersion: RUNNER_PROTOCOL_VERSION,
        operation: 'fetch-git',
        operationId: claim.operationId,
        exitCode: 3,
        childExitCode: 3,
        outcome: 'refused',
        startedAt: '2026-01-01T00:00:01.000Z',
        finishedAt: '2026-01-01T00:00:02.000Z',
        outputs: {},
        error: { code: 'commit_unreachable', message },
      },
      undefined,
      createRedactor([], [password]),
    );
  }
  function refusedPod(message: string | undefined): V1Pod {
    return {
      metadata: { name: 'p' },
      status: {
        initContainerStatuses: [
          {
            name: FETCH_CONTAINER,
            image: 'i',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 3, ...(message !== undefined ? { message } : {}) } },
          },
        ],
        containerStatuses: [
          { name: 'ptah', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: {} } },
        ],
      },
    };
  }

  it('the last line Ptah wrote reaches the message, with the code, and nothing ran', () => {
    const line = `ptah git: CommitUnreachable: ${commit} is no longer reachable from refs/heads/main within 4096 commits (was it force-pushed?); the next resolution reads the ref again`;
    const h = harvestPod(refusedPod(summary(line)), undefined, claim);
    assert.deepEqual(h, {
      kind: 'source-refused',
      container: FETCH_CONTAINER,
      code: 'commit_unreachable',
      detail: line,
    });
    assert.equal(
      sourceRefusalMessage(h as Extract<typeof h, { kind: 'source-refused' }>),
      `the ${FETCH_CONTAINER} init container stopped the Pod (commit_unreachable); nothing ran: ${line}`,
    );
  });

  it('is one bounded line, without a credential the runner knew or any URL’s user info', () => {
    const h = harvestPod(
      refusedPod(
        summary(
          `fatal: https://ptah:${password}@git.example/x.git\nsecond\u0007line ssh://u:p@h/r ${'y'.repeat(900)}`,
        ),
      ),
      undefined,
      claim,
    );
    assert.equal(h.kind, 'source-refused');
    const detail = h.kind === 'source-refused' ? h.detail! : '';
    assert.ok(!detail.includes(password), detail);
    assert.ok(!detail.includes('u:p@'), detail);
    assert.match(detail, /^fatal: https:\/\/\*\*\*@git\.example\/x\.git second line ssh:\/\/\*\*\*@h\/r y+/);
    assert.ok(detail.length <= 512, `${detail.length} characters`);
    assert.ok(![...detail].some((c) => c.charCodeAt(0) < 0x20), 'no control character');
    // The manager holds to this itself, whatever a container wrote.
    const forged = harvestPod(
      refusedPod(
        `PTAH_RUNNER_SUMMARY_V1 ${JSON.stringify({ errorCode: 'x', message: `a https://u:pw@h/r\nb${'z'.repeat(2000)}` })}`,
      ),
      undefined,
      claim,
    );
    const forgedDetail = forged.kind === 'source-refused' ? forged.detail! : '';
    assert.match(forgedDetail, /^a https:\/\/\*\*\*@h\/r bz+…$/);
    assert.equal(forgedDetail.length, 512);
  });

  it('a summary without a message (or none at all) still names the container, and the code when there is one', () => {
    const bare = harvestPod(
      refusedPod('PTAH_RUNNER_SUMMARY_V1 {"errorCode":"host_grant_mismatch"}'),
      undefined,
      claim,
    );
    assert.deepEqual(bare, {
      kind: 'source-refused',
      container: FETCH_CONTAINER,
      code: 'host_grant_mismatch',
    });
    assert.deepEqual(harvestPod(refusedPod(undefined), undefined, claim), {
      kind: 'source-refused',
      container: FETCH_CONTAINER,
    });
    assert.equal(
      sourceRefusalMessage({ container: FETCH_CONTAINER }),
      `the ${FETCH_CONTAINER} init container stopped the Pod; nothing ran`,
    );
  });
});
