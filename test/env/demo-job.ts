/**
 * The demo's first act: as the ordinary user, run a Job whose Pod runs a local program on the
 * node agent, then read its log back through the API server (pods/log), as `kubectl logs` would.
 * Reads the environment from $PTAH_ENV_DIR/env.json (written by `npm run env -- up`).
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import type { EnvironmentDescription } from './environment.ts';

const IMAGE = 'ptah.local/demo-hello:1';
const PROGRAM = `#!/bin/sh
echo "hello from Pod $POD_NAME on node $NODE_NAME"
echo "running as a local process: $(uname -s) $(uname -m), pid $$"
echo "arguments: $*"
`;

async function main(): Promise<number> {
  const stateDir = process.env['PTAH_ENV_DIR'] ?? join(tmpdir(), 'ptah-env');
  const description = JSON.parse(readFileSync(join(stateDir, 'env.json'), 'utf8')) as EnvironmentDescription;

  const program = join(description.dir, 'demo-hello.sh');
  writeFileSync(program, PROGRAM);
  chmodSync(program, 0o755);
  const map = JSON.parse(readFileSync(description.imageMapFile, 'utf8')) as {
    images: Record<string, { entrypoint: string[] }>;
  };
  map.images[IMAGE] = { entrypoint: [program] };
  writeFileSync(description.imageMapFile, JSON.stringify(map, null, 2) + '\n');

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(description.kubeconfigs.user);
  const batch = kc.makeApiClient(k8s.BatchV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = description.testNamespace;
  const name = `demo-hello-${Date.now().toString(36)}`;
  console.log(`demo: creating Job ${namespace}/${name} as ${description.identities.user} (image ${IMAGE})`);
  await batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [
              {
                name: 'hello',
                image: IMAGE,
                args: ['--greeting', 'ptah'],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                ],
              },
            ],
          },
        },
      },
    },
  });

  const deadline = Date.now() + 120_000;
  let outcome: string | undefined;
  while (outcome === undefined && Date.now() < deadline) {
    const job = await batch.readNamespacedJob({ namespace, name });
    outcome = job.status?.conditions?.find(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    )?.type;
    if (outcome === undefined) await sleep(250);
  }
  const pods = await core.listNamespacedPod({
    namespace,
    labelSelector: `batch.kubernetes.io/job-name=${name}`,
  });
  const pod = pods.items[0];
  console.log(
    `demo: Job ${outcome ?? 'did not finish within 120 s'}; Pod ${pod?.metadata?.name} is ${pod?.status?.phase}`,
  );
  if (pod?.metadata?.name) {
    const log = await core.readNamespacedPodLog({ namespace, name: pod.metadata.name, container: 'hello' });
    console.log('demo: the Pod log, read back through the API server (pods/log):');
    console.log(log.trimEnd().replace(/^/gm, '  | '));
  }
  return outcome === 'Complete' ? 0 : 1;
}

process.exitCode = await main();
