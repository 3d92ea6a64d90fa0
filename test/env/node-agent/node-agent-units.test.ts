import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContainerConfigError, resolveContainerEnv, type ObjectLookup } from './env.ts';
import { expandVariables, resolveArgv } from './image-map.ts';
import type { Pod } from './types.ts';
import { oomSelected } from './pod-worker.ts';
import { planContainerScript, type HostView } from './mount-plan.ts';
import { buildPodStatus, podPhase, type ContainerRecord, type PodRecord } from './pod-status.ts';

const host: HostView = {
  kind: (path) => (['/', '/etc', '/dev', '/tmp', '/usr'].includes(path) ? 'dir' : 'missing'),
  rootEntries: () => [
    { name: 'etc', kind: 'dir' },
    { name: 'bin', kind: 'symlink', link: 'usr/bin' },
  ],
  mountPoints: () => ['/', '/dev', '/dev/pts'],
  resolve: (path) => path.replace(/^\/var\/run(?=\/|$)/, '/run'),
};

test('$(VAR) expands from the env, $$ escapes, unknown variables stay as written', () => {
  const env = new Map([['NAME', 'ptah']]);
  assert.equal(expandVariables('$(NAME)-$(MISSING)-$$(NAME)-$$', env), 'ptah-$(MISSING)-$(NAME)-$');
  assert.deepEqual(resolveArgv({ entrypoint: ['node', 'main.ts'] }, undefined, ['--x=$(NAME)'], env), [
    'node',
    'main.ts',
    '--x=ptah',
  ]);
  assert.deepEqual(resolveArgv({ entrypoint: ['node'] }, ['sh', '-c'], ['true'], env), ['sh', '-c', 'true']);
});

test('a mount path under an existing directory overlays it and binds its sub-mounts back', () => {
  const script = planContainerScript(
    {
      scratchDir: '/work/s',
      mounts: [{ source: '/vol/log', target: '/dev/termination-log', readOnly: false, kind: 'file' }],
      workingDir: '/',
      argv: ['echo', "it's"],
    },
    host,
  );
  assert.match(script, /mount -t overlay ptah-overlay -o 'lowerdir=\/dev,/);
  assert.match(script, /mount --rbind '\.\/pts' '\/dev\/pts'/);
  assert.match(
    script,
    /touch '\/dev\/termination-log'\nmount --bind '\/work\/s\/source-0' '\/dev\/termination-log'/,
  );
  assert.match(script, /exec 'echo' 'it'\\''s'\n$/);
  assert.doesNotMatch(script, /chroot/);
});

test('a mount path under a missing top-level directory builds a mirror root and chroots into it', () => {
  const script = planContainerScript(
    {
      scratchDir: '/work/s',
      mounts: [{ source: '/vol/conf', target: '/workspace/conf', readOnly: true, kind: 'dir' }],
      workingDir: '/workspace',
      argv: ['id'],
      user: { uid: 1000, gid: 1001, groups: [] },
    },
    host,
  );
  assert.match(script, /mount --rbind '\/etc' '\/work\/s\/root\/etc'/);
  assert.match(script, /ln -s 'usr\/bin' '\/work\/s\/root\/bin'/);
  assert.match(script, /mount -o remount,bind,ro '\/work\/s\/root\/workspace\/conf'/);
  assert.match(
    script,
    /exec "\$ptah_chroot" '\/work\/s\/root' .* '\/workspace' "\$ptah_setpriv" '--reuid=1000' '--regid=1001' '--clear-groups' '--' 'id'/,
  );
  assert.doesNotMatch(script, /overlay/);
});

test('a mount path through a host symlink (/var/run -> /run) is mounted where the symlink leads', () => {
  const script = planContainerScript(
    {
      scratchDir: '/work/s',
      mounts: [
        {
          source: '/vol/sa',
          target: '/var/run/secrets/kubernetes.io/serviceaccount',
          readOnly: true,
          kind: 'dir',
        },
        { source: '/vol/work', target: '/workspace', readOnly: false, kind: 'dir' },
      ],
      workingDir: '/workspace',
      argv: ['id'],
    },
    { ...host, kind: (path) => (['/', '/etc', '/run', '/var'].includes(path) ? 'dir' : 'missing') },
  );
  // Inside a mirror root, /var/run is the host's absolute symlink: a mount through it would land
  // on the host's /run, outside the root the container is chrooted into.
  assert.match(
    script,
    /mount --bind '\/work\/s\/source-0' '\/work\/s\/root\/run\/secrets\/kubernetes.io\/serviceaccount'/,
  );
  assert.doesNotMatch(script, /root\/var\/run/);
});

function container(name: string, state: ContainerRecord['state'], final = false): ContainerRecord {
  return { name, image: 'i', state, lastState: {}, restartCount: 0, final };
}

const done = (exitCode: number) => ({
  terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: 't', finishedAt: 't' },
});

function pod(init: ContainerRecord[], main: ContainerRecord[]): PodRecord {
  return { restartPolicy: 'Never', init, main, startTime: 't0', hostIP: '127.0.0.1', sandboxReady: true };
}

test('pod phase follows the kubelet: Pending through init, Running, then Succeeded or Failed', () => {
  assert.equal(
    podPhase(
      pod(
        [container('i', { running: { startedAt: 't' } })],
        [container('m', { waiting: { reason: 'PodInitializing' } })],
      ),
    ),
    'Pending',
  );
  assert.equal(
    podPhase(
      pod([container('i', done(1), true)], [container('m', { waiting: { reason: 'PodInitializing' } })]),
    ),
    'Failed',
  );
  assert.equal(
    podPhase(pod([container('i', done(0), true)], [container('m', { running: { startedAt: 't' } })])),
    'Running',
  );
  assert.equal(
    podPhase(pod([], [container('a', done(0), true), container('b', done(0), true)])),
    'Succeeded',
  );
  assert.equal(podPhase(pod([], [container('a', done(0), true), container('b', done(2), true)])), 'Failed');
  assert.equal(
    podPhase({
      ...pod([], [container('a', { running: { startedAt: 't' } })]),
      failure: { reason: 'DeadlineExceeded', message: 'm' },
    }),
    'Failed',
  );
});

test('status keeps the scheduler condition and transition times that did not change', () => {
  const previous = {
    conditions: [
      { type: 'PodScheduled', status: 'True' as const, lastProbeTime: null, lastTransitionTime: 'sched' },
      { type: 'Initialized', status: 'True' as const, lastProbeTime: null, lastTransitionTime: 'before' },
    ],
  };
  const status = buildPodStatus(
    { ...pod([], [container('m', done(0), true)]), podIP: '198.18.0.5' },
    previous,
    'now',
  );
  const byType = new Map(status.conditions?.map((c) => [c.type, c]));
  assert.equal(byType.get('PodScheduled')?.lastTransitionTime, 'sched');
  assert.equal(byType.get('Initialized')?.lastTransitionTime, 'before');
  assert.deepEqual([byType.get('Ready')?.status, byType.get('Ready')?.reason], ['False', 'PodCompleted']);
  assert.equal(status.containerStatuses?.[0]?.state.terminated?.reason, 'Completed');
  assert.equal(status.podIP, '198.18.0.5');
  assert.deepEqual(status.hostIPs, [{ ip: '127.0.0.1' }]);
  assert.equal(buildPodStatus(pod([], []), undefined, 'now').podIP, undefined, 'no sandbox, no pod IP');
});

test('a missing Secret or key is a CreateContainerConfigError worded as the kubelet words it', async () => {
  const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: {} } as unknown as Pod;
  const lookup: ObjectLookup = async (kind, _namespace, name) =>
    kind === 'secrets' && name === 'db'
      ? { metadata: { name, namespace: 'ns' }, data: { other: Buffer.from('x').toString('base64') } }
      : undefined;
  const needs = (secret: string) => ({
    name: 'c',
    env: [{ name: 'URL', valueFrom: { secretKeyRef: { name: secret, key: 'url' } } }],
  });
  const configError = (message: string) => (error: unknown) =>
    error instanceof ContainerConfigError && error.message === message;
  await assert.rejects(
    resolveContainerEnv(pod, needs('absent'), lookup, { podIP: '198.18.0.2', hostIP: '127.0.0.1' }),
    configError('secret "absent" not found'),
  );
  await assert.rejects(
    resolveContainerEnv(pod, needs('db'), lookup, { podIP: '198.18.0.2', hostIP: '127.0.0.1' }),
    configError("couldn't find key url in Secret ns/db"),
  );
});

test('the OOM hook selects Pods by every label of one selector line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'node-agent-oom-'));
  const file = join(dir, 'oom-kill');
  assert.equal(oomSelected(file, { app: 'x' }), false, 'no file selects nothing');
  writeFileSync(file, '# comment\noperator.ptah.run/schema=oomer,operator.ptah.run/operation=observe\n');
  assert.equal(
    oomSelected(file, { 'operator.ptah.run/schema': 'oomer', 'operator.ptah.run/operation': 'observe' }),
    true,
  );
  assert.equal(oomSelected(file, { 'operator.ptah.run/schema': 'oomer' }), false);
  assert.equal(oomSelected(file, { 'operator.ptah.run/schema': 'other' }), false);
  rmSync(dir, { recursive: true, force: true });
});
