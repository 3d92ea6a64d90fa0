import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { nodeAgentAvailable, startEnvironment, type Environment } from '../env/environment.ts';

// Jobs need the node agent; until it exists this file has nothing to prove.
const skip = nodeAgentAvailable() ? false : 'the node agent (test/env/node-agent) is not available';

let env: Environment;
let batch: k8s.BatchV1Api;
let core: k8s.CoreV1Api;
let namespace: string;

before(async () => {
  if (skip) return;
  env = await startEnvironment({ components: ['node'] });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(env.controlPlane.kubeconfigs.user);
  batch = kc.makeApiClient(k8s.BatchV1Api);
  core = kc.makeApiClient(k8s.CoreV1Api);
  namespace = env.controlPlane.testNamespace;
});

after(async () => {
  await env?.stop();
});

/** Registers a local program under an image reference, as the node agent's image map expects. */
function addImage(reference: string, programName: string, script: string): void {
  const program = join(env.dir, programName);
  writeFileSync(program, script);
  chmodSync(program, 0o755);
  const map = JSON.parse(readFileSync(env.description.imageMapFile, 'utf8')) as {
    images: Record<string, { entrypoint: string[] }>;
  };
  map.images[reference] = { entrypoint: [program] };
  writeFileSync(env.description.imageMapFile, JSON.stringify(map, null, 2));
}

async function runJob(name: string, image: string, args: string[], env: k8s.V1EnvVar[] = []): Promise<void> {
  await batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'main', image, args, env }],
          },
        },
      },
    },
  });
}

async function waitForJobCondition(name: string, timeoutMs = 60_000): Promise<k8s.V1Job> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await batch.readNamespacedJob({ namespace, name });
    const done = job.status?.conditions?.find(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    if (done) return job;
    if (Date.now() > deadline) assert.fail(`job ${name}: neither Complete nor Failed after ${timeoutMs} ms`);
    await sleep(250);
  }
}

async function jobPod(name: string): Promise<k8s.V1Pod> {
  const pods = await core.listNamespacedPod({
    namespace,
    labelSelector: `batch.kubernetes.io/job-name=${name}`,
  });
  assert.equal(pods.items.length, 1, `job ${name} should have exactly one pod`);
  return pods.items[0] as k8s.V1Pod;
}

test(
  'a Job created by the ordinary user runs on the node agent and its log reads back through the API server',
  { skip },
  async () => {
    addImage(
      'ptah.local/greeter:1',
      'greeter.sh',
      '#!/bin/sh\necho "hello, $1, from $GREETER_NODE"\necho "second line"\n',
    );
    await runJob(
      'greeter',
      'ptah.local/greeter:1',
      ['operator'],
      [{ name: 'GREETER_NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
    );
    const job = await waitForJobCondition('greeter');
    assert.deepEqual(
      job.status?.conditions
        ?.filter((c) => c.status === 'True')
        .map((c) => c.type)
        .filter((t) => t === 'Complete' || t === 'Failed'),
      ['Complete'],
    );
    assert.equal(job.status?.succeeded, 1);
    const pod = await jobPod('greeter');
    assert.equal(pod.status?.phase, 'Succeeded');
    assert.equal(pod.spec?.nodeName, env.controlPlane.nodeName);
    assert.equal(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    const log = await core.readNamespacedPodLog({ namespace, name: pod.metadata!.name!, container: 'main' });
    assert.equal(log, `hello, operator, from ${env.controlPlane.nodeName}\nsecond line\n`);
  },
);

test(
  'a failing program fails its Job, with exit code and termination message in the Pod status',
  { skip },
  async () => {
    addImage(
      'ptah.local/failer:1',
      'failer.sh',
      '#!/bin/sh\necho "about to fail"\nprintf "schema drift in %s" "$1" > /dev/termination-log\nexit 3\n',
    );
    await runJob('failer', 'ptah.local/failer:1', ['orders']);
    const job = await waitForJobCondition('failer');
    assert.ok(job.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True'));
    assert.ok(!job.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'));
    const pod = await jobPod('failer');
    assert.equal(pod.status?.phase, 'Failed');
    const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 3);
    assert.equal(terminated?.message, 'schema drift in orders');
    const log = await core.readNamespacedPodLog({ namespace, name: pod.metadata!.name!, container: 'main' });
    assert.equal(log, 'about to fail\n');
  },
);
