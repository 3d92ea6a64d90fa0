import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { ApiError, createApiClient, type ApiClient } from '../env/node-agent/api-client.ts';
import { startNodeAgent, type NodeAgent } from '../env/node-agent/index.ts';
import type { Pod } from '../env/node-agent/types.ts';
import { eventually } from '../env/eventually.ts';

// Containers here run /bin/sh scripts: starting a shell costs milliseconds, a Node program a second.
const SHELL_IMAGE = 'registry.test/ptah/shell:1';

let cp: ControlPlane;
let agent: NodeAgent;
let admin: ApiClient;
let workDir: string;
let ns: string;

before(async () => {
  cp = await startControlPlane();
  workDir = mkdtempSync(join(tmpdir(), 'ptah-node-agent-'));
  const imageMapFile = join(workDir, 'images.json');
  writeFileSync(
    imageMapFile,
    JSON.stringify({ images: { [SHELL_IMAGE]: { entrypoint: ['/bin/sh', '-c'] } } }),
  );
  agent = await startNodeAgent({
    kubeconfig: cp.kubeconfigs.node,
    nodeName: cp.nodeName,
    servingCert: cp.nodeServing,
    caFile: cp.caFile,
    imageMapFile,
    workDir: join(workDir, 'agent'),
  });
  admin = await createApiClient(cp.kubeconfigs.admin);
  ns = cp.testNamespace;
});

after(async () => {
  await agent?.stop();
  admin?.close();
  await cp?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

function shellContainer(name: string, script: string, extra: Record<string, unknown> = {}) {
  return { name, image: SHELL_IMAGE, args: [script], ...extra };
}

async function createPod(
  name: string,
  spec: Record<string, unknown>,
  labels: Record<string, string> = {},
): Promise<Pod> {
  return admin.send<Pod>('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { restartPolicy: 'Never', automountServiceAccountToken: false, ...spec },
  });
}

const getPod = (name: string) => admin.get<Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);

async function waitForPhase(name: string, phase: string, timeoutMs?: number): Promise<Pod> {
  return eventually(
    `pod ${name} phase ${phase}`,
    async () => {
      const pod = await getPod(name);
      return pod.status?.phase === phase ? pod : undefined;
    },
    timeoutMs,
  );
}

const podLog = (name: string, query = '') =>
  admin.getText(`/api/v1/namespaces/${ns}/pods/${name}/log${query}`);

test('the node registers Ready with its kubelet port and keeps a Lease', async () => {
  const node = await admin.get<{
    status: {
      conditions: { type: string; status: string }[];
      daemonEndpoints: { kubeletEndpoint: { Port: number } };
      addresses: { type: string; address: string }[];
      allocatable: Record<string, string>;
    };
  }>(`/api/v1/nodes/${agent.nodeName}`);
  assert.equal(node.status.conditions.find((c) => c.type === 'Ready')?.status, 'True');
  assert.equal(node.status.daemonEndpoints.kubeletEndpoint.Port, agent.port);
  assert.deepEqual(node.status.addresses[0], { type: 'InternalIP', address: '127.0.0.1' });
  assert.equal(node.status.allocatable['pods'], '110');
  const lease = await admin.get<{ spec: { holderIdentity: string } }>(
    `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${agent.nodeName}`,
  );
  assert.equal(lease.spec.holderIdentity, agent.nodeName);
});

test('an init container fills an emptyDir the main container reads; the log reads back through pods/log', async () => {
  await createPod('init-then-main', {
    volumes: [{ name: 'shared', emptyDir: {} }],
    initContainers: [
      shellContainer('fill', 'echo "made by init" > /work-area/note', {
        volumeMounts: [{ name: 'shared', mountPath: '/work-area' }],
      }),
    ],
    containers: [
      shellContainer('read', 'echo first line; cat /work-area/note; echo last line', {
        volumeMounts: [{ name: 'shared', mountPath: '/work-area', readOnly: true }],
      }),
    ],
  });
  const pod = await waitForPhase('init-then-main', 'Succeeded');
  assert.equal(pod.status?.initContainerStatuses?.[0]?.state.terminated?.reason, 'Completed');
  assert.equal(pod.status?.containerStatuses?.[0]?.state.terminated?.exitCode, 0);
  assert.match(pod.status?.podIP ?? '', /^198\.(18|19)\.\d+\.\d+$/, 'a Pod IP of its own, not loopback');
  assert.equal(pod.status?.hostIP, '127.0.0.1');
  const types = (pod.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`).sort();
  assert.ok(
    types.includes('Initialized=True') &&
      types.includes('Ready=False') &&
      types.includes('PodScheduled=True'),
  );
  assert.equal(await podLog('init-then-main', '?container=read'), 'first line\nmade by init\nlast line\n');
  assert.equal(await podLog('init-then-main', '?container=read&tailLines=1'), 'last line\n');
  assert.match(
    await podLog('init-then-main', '?container=read&tailLines=1&timestamps=true'),
    /^\d{4}-\d\d-\d\dT\S+Z last line\n$/,
  );
  assert.equal(await podLog('init-then-main', '?container=read&limitBytes=5'), 'first');
});

test('env from a Secret, a ConfigMap and fieldRefs; a configMap volume with mode 0400 at its mountPath', async () => {
  await admin.send('POST', `/api/v1/namespaces/${ns}/secrets`, {
    metadata: { name: 'db-credentials' },
    stringData: { password: 's3cret-value' },
  });
  await admin.send('POST', `/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'settings' },
    data: { mode: 'strict', 'app.conf': 'retries=3\n' },
  });
  await createPod('env-and-volume', {
    volumes: [
      {
        name: 'conf',
        configMap: { name: 'settings', items: [{ key: 'app.conf', path: 'app.conf', mode: 0o400 }] },
      },
    ],
    containers: [
      shellContainer(
        'show',
        'echo "pw=$PASSWORD mode=$MODE pod=$POD_NAME ns=$POD_NS node=$NODE ip=$IP host=$HOST_IP uid=$POD_UID"; ' +
          'stat -L -c "%a" /etc/ptah-agent-test/conf/app.conf; cat /etc/ptah-agent-test/conf/app.conf; ' +
          'touch /etc/ptah-agent-test/conf/x 2>/dev/null && echo writable || echo read-only',
        {
          env: [
            { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db-credentials', key: 'password' } } },
            { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode' } } },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
            { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
            { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          ],
          volumeMounts: [{ name: 'conf', mountPath: '/etc/ptah-agent-test/conf', readOnly: true }],
        },
      ),
    ],
  });
  const pod = await waitForPhase('env-and-volume', 'Succeeded');
  assert.equal(
    await podLog('env-and-volume'),
    `pw=s3cret-value mode=strict pod=env-and-volume ns=${ns} node=${agent.nodeName} ip=${pod.status?.podIP} host=127.0.0.1 uid=${pod.metadata.uid}\n` +
      '400\nretries=3\nread-only\n',
  );
});

test('runAsUser and runAsGroup run the process as that uid and gid; runAsNonRoot without a uid is refused', async () => {
  await createPod('run-as', {
    securityContext: { runAsUser: 4321, runAsGroup: 4322 },
    containers: [shellContainer('who', 'echo "$(id -u):$(id -g)"')],
  });
  await createPod('non-root', {
    securityContext: { runAsNonRoot: true },
    containers: [shellContainer('who', 'id -u')],
  });
  await waitForPhase('run-as', 'Succeeded');
  assert.equal(await podLog('run-as'), '4321:4322\n');
  const refused = await eventually('non-root refused', async () => {
    const pod = await getPod('non-root');
    return pod.status?.containerStatuses?.[0]?.state.waiting?.reason === 'CreateContainerConfigError'
      ? pod
      : undefined;
  });
  assert.equal(refused.status?.phase, 'Pending');
});

test('a missing Secret and an unmapped image leave the Pod Pending with the kubelet reasons', async () => {
  await createPod('unconfigurable', {
    containers: [
      shellContainer('needs-secret', 'true', {
        env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'absent', key: 'k' } } }],
      }),
      { name: 'unknown-image', image: 'registry.test/not/mapped:0' },
    ],
  });
  const pod = await eventually('waiting reasons', async () => {
    const p = await getPod('unconfigurable');
    const reasons = (p.status?.containerStatuses ?? []).map((c) => c.state.waiting?.reason);
    return reasons[0] === 'CreateContainerConfigError' && /Image/.test(reasons[1] ?? '') ? p : undefined;
  });
  assert.equal(pod.status?.phase, 'Pending');
  assert.match(pod.status?.containerStatuses?.[0]?.state.waiting?.message ?? '', /secret "absent" not found/);
});

test('activeDeadlineSeconds kills the Pod and fails it with DeadlineExceeded', async () => {
  await createPod('deadline', {
    activeDeadlineSeconds: 2,
    terminationGracePeriodSeconds: 1,
    containers: [shellContainer('sleep', 'sleep 60')],
  });
  const pod = await waitForPhase('deadline', 'Failed', 20_000);
  assert.equal(pod.status?.reason, 'DeadlineExceeded');
  assert.ok((pod.status?.containerStatuses?.[0]?.state.terminated?.exitCode ?? 0) > 128);
});

test('termination messages: from the termination-log file, and from the log on error', async () => {
  await createPod('messages', {
    containers: [
      shellContainer('writes-file', 'echo "schema drift found" > /dev/termination-log; exit 3'),
      shellContainer('custom-path', 'echo "custom" > /tmp/ptah-agent-msg; exit 0', {
        terminationMessagePath: '/tmp/ptah-agent-msg',
      }),
      shellContainer('falls-back', 'echo one; echo "fatal: boom"; exit 1', {
        terminationMessagePolicy: 'FallbackToLogsOnError',
      }),
    ],
  });
  const pod = await waitForPhase('messages', 'Failed');
  const byName = new Map((pod.status?.containerStatuses ?? []).map((c) => [c.name, c.state.terminated]));
  assert.deepEqual(
    [
      byName.get('writes-file')?.exitCode,
      byName.get('writes-file')?.reason,
      byName.get('writes-file')?.message,
    ],
    [3, 'Error', 'schema drift found\n'],
  );
  assert.equal(byName.get('custom-path')?.message, 'custom\n');
  assert.equal(byName.get('falls-back')?.message, 'one\nfatal: boom');
});

test('Jobs run on the node: a succeeding one becomes Complete, a failing one Failed', async () => {
  const job = (name: string, script: string) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: { spec: { restartPolicy: 'Never', containers: [shellContainer('main', script)] } },
    },
  });
  await admin.send('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, job('job-ok', 'echo done'));
  await admin.send('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, job('job-bad', 'exit 7'));
  const condition = (name: string, type: string) =>
    eventually(`job ${name} ${type}`, async () => {
      const j = await admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `/apis/batch/v1/namespaces/${ns}/jobs/${name}`,
      );
      return j.status?.conditions?.some((c) => c.type === type && c.status === 'True') ? true : undefined;
    });
  await condition('job-ok', 'Complete');
  await condition('job-bad', 'Failed');
});

test('deleting a running Pod sends SIGTERM, waits, and the agent removes the Pod', async () => {
  await createPod('long-running', {
    terminationGracePeriodSeconds: 5,
    // $$ is the kubelet's escape for a literal $, so $$$$ reaches the shell as $$.
    containers: [
      shellContainer(
        'loop',
        'echo "pid=$$$$"; trap "echo got TERM; exit 0" TERM; while :; do sleep 0.1; done',
      ),
    ],
  });
  await waitForPhase('long-running', 'Running');
  const pid = Number(
    (await eventually('pid in log', async () => /pid=(\d+)/.exec(await podLog('long-running'))?.[1])) ?? 0,
  );
  assert.doesNotThrow(() => process.kill(pid, 0));
  await admin.send('DELETE', `/api/v1/namespaces/${ns}/pods/long-running`, {});
  await eventually('pod removed', async () => {
    try {
      await getPod('long-running');
      return undefined;
    } catch (error) {
      return error instanceof ApiError && error.status === 404 ? true : undefined;
    }
  });
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
});

test('every Pod has an IP of its own: two listen on one port, a Service gets both as endpoints, an unready one is not ready', async () => {
  await admin.send('POST', `/api/v1/namespaces/${ns}/services`, {
    metadata: { name: 'echo' },
    spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  });
  // A Node program answering with its Pod's name on the Pod's own IP, port 8080; `quiet` never listens.
  const serve = `exec ${process.execPath} -e "require('node:http').createServer((q, r) => r.end(process.env.NAME)).listen(8080, process.env.IP)"`;
  const listener = (name: string, script: string) =>
    createPod(
      name,
      {
        containers: [
          shellContainer('serve', script, {
            ports: [{ name: 'http', containerPort: 8080 }],
            env: [
              { name: 'NAME', value: name },
              { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            ],
            readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 1 },
          }),
        ],
      },
      { app: 'echo' },
    );
  for (const name of ['echo-a', 'echo-b']) await listener(name, serve);
  await listener('echo-quiet', 'sleep 600');
  const ready = async (name: string) => {
    const pod = await getPod(name);
    return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? pod : undefined;
  };
  const [a, b] = [
    await eventually('echo-a Ready', () => ready('echo-a')),
    await eventually('echo-b Ready', () => ready('echo-b')),
  ];
  assert.notEqual(a.status?.podIP, b.status?.podIP);
  for (const pod of [a, b]) {
    const response = await fetch(`http://${pod.status?.podIP}:8080/`);
    assert.equal(await response.text(), pod.metadata.name, `${pod.metadata.name} answers on its own IP`);
  }
  const quiet = await waitForPhase('echo-quiet', 'Running');
  assert.equal(
    quiet.status?.containerStatuses?.[0]?.ready,
    false,
    'a failing readiness probe keeps it unready',
  );
  assert.equal(quiet.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');

  // The EndpointSlice controller accepts the addresses (it refuses loopback ones) and marks readiness.
  const slice = await eventually('the EndpointSlice lists all three', async () => {
    const list = await admin.get<{
      items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[];
    }>(
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Decho`,
    );
    const endpoints = list.items.flatMap((s) => s.endpoints ?? []);
    // The controller follows the Pods' Ready conditions a moment later.
    const readyOnes = endpoints.filter((ep) => ep.conditions?.ready === true).length;
    return endpoints.length === 3 && readyOnes === 2 ? endpoints : undefined;
  });
  const readyByIP = new Map(slice.map((e) => [e.addresses[0], e.conditions?.ready]));
  assert.equal(readyByIP.get(a.status?.podIP ?? ''), true);
  assert.equal(readyByIP.get(b.status?.podIP ?? ''), true);
  assert.equal(readyByIP.get(quiet.status?.podIP ?? ''), false);

  // A deleted Pod's address leaves the host with its sandbox.
  for (const name of ['echo-a', 'echo-b', 'echo-quiet']) {
    await admin.send('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, { gracePeriodSeconds: 1 });
  }
  await eventually('the Pod addresses are released', async () => {
    const listed = execFileSync('ip', ['-o', '-4', 'addr', 'show', 'dev', 'lo'], { encoding: 'utf8' });
    return [a, b, quiet].every((p) => !listed.includes(` ${p.status?.podIP}/32`)) ? true : undefined;
  });
});

test('a failing liveness probe (exec, in the container) kills the container and restarts it: restartCount and lastState.terminated', async () => {
  // The first run never creates /probe/alive; the restarted one does, and lives.
  const script =
    'if [ -f /probe/first ]; then touch /probe/alive; else touch /probe/first; fi; exec sleep 600';
  await createPod('liveness', {
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 1,
    volumes: [{ name: 'probe', emptyDir: {} }],
    containers: [
      shellContainer('app', script, {
        volumeMounts: [{ name: 'probe', mountPath: '/probe' }],
        livenessProbe: {
          exec: { command: ['sh', '-c', 'test -f /probe/alive'] },
          periodSeconds: 1,
          failureThreshold: 2,
        },
      }),
    ],
  });
  const restarted = await eventually(
    'the container restarted once after failing its liveness probe',
    async () => {
      const status = (await getPod('liveness')).status?.containerStatuses?.[0];
      return status?.restartCount === 1 && status.state?.running ? status : undefined;
    },
    30_000,
  );
  const killed = restarted.lastState?.terminated;
  assert.ok(killed, JSON.stringify(restarted));
  assert.equal(
    killed.exitCode,
    143,
    'SIGTERM, as the kubelet kills a container that fails its liveness probe',
  );
  assert.equal(killed.reason, 'Error');
  assert.ok(killed.startedAt && killed.finishedAt);
  // The second run passes the probe: it keeps running, and stays the container the log reads.
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  const later = (await getPod('liveness')).status?.containerStatuses?.[0];
  assert.equal(later?.restartCount, 1, 'a passing liveness probe restarts nothing');
  assert.ok(later?.state?.running);
  assert.equal(later?.ready, true);
  await admin.send('DELETE', `/api/v1/namespaces/${ns}/pods/liveness`, { gracePeriodSeconds: 1 });
});

test('a startup probe holds liveness and readiness until it passes; one that never passes kills the container', async () => {
  await createPod('slow-start', {
    terminationGracePeriodSeconds: 1,
    volumes: [{ name: 'probe', emptyDir: {} }],
    containers: [
      shellContainer('app', 'sleep 3; touch /probe/up; exec sleep 600', {
        volumeMounts: [{ name: 'probe', mountPath: '/probe' }],
        startupProbe: {
          exec: { command: ['test', '-f', '/probe/up'] },
          periodSeconds: 1,
          failureThreshold: 20,
        },
        // Would fail at once if it ran before the startup probe passed.
        livenessProbe: {
          exec: { command: ['test', '-f', '/probe/up'] },
          periodSeconds: 1,
          failureThreshold: 1,
        },
        readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
      }),
    ],
  });
  const starting = await eventually('running, not started yet', async () => {
    const status = (await getPod('slow-start')).status?.containerStatuses?.[0];
    return status?.state?.running ? status : undefined;
  });
  assert.equal(starting.started, false);
  assert.equal(starting.ready, false, 'readiness waits for the startup probe');
  const started = await eventually(
    'started and ready',
    async () => {
      const status = (await getPod('slow-start')).status?.containerStatuses?.[0];
      return status?.started === true && status.ready === true ? status : undefined;
    },
    30_000,
  );
  assert.equal(started.restartCount, 0, 'liveness did not run before startup passed');

  await createPod('never-starts', {
    terminationGracePeriodSeconds: 1,
    containers: [
      shellContainer('app', 'exec sleep 600', {
        ports: [{ name: 'http', containerPort: 8080 }],
        startupProbe: { tcpSocket: { port: 'http' }, periodSeconds: 1, failureThreshold: 2 },
      }),
    ],
  });
  const failed = await waitForPhase('never-starts', 'Failed', 30_000);
  const status = failed.status?.containerStatuses?.[0];
  assert.equal(status?.started, false);
  assert.equal(status?.state?.terminated?.exitCode, 143, JSON.stringify(status));
  for (const name of ['slow-start', 'never-starts']) {
    await admin.send('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, { gracePeriodSeconds: 1 });
  }
});
