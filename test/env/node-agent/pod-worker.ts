import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { ApiError, type ApiClient } from './api-client.ts';
import { startContainer, type ContainerExit, type RunningContainer } from './container-process.ts';
import { ContainerConfigError, resolveContainerEnv, type ObjectLookup } from './env.ts';
import { readImageMap, resolveArgv } from './image-map.ts';
import type { BindMount, HostView } from './mount-plan.ts';
import type { PodNetwork } from './pod-network.ts';
import { runReadinessProbe, runUntilVerdict, type ExecProbe, type ProbeResult } from './prober.ts';
import { buildPodStatus, type ContainerRecord, type PodRecord } from './pod-status.ts';
import type { KeyedData, Pod } from './types.ts';
import { materializeVolumes } from './volumes.ts';

export interface PodWorkerDeps {
  readonly api: ApiClient;
  readonly hostIP: string;
  /** Hands out the Pod's own IP (its "sandbox"), released when its containers are gone. */
  readonly network: PodNetwork;
  readonly imageMapFile: string;
  /** This pod's private directory: volumes, logs, termination-message files. */
  readonly podDir: string;
  readonly host: HostView;
  /** Where in-pod clients find the API server (KUBERNETES_SERVICE_HOST/PORT). */
  readonly apiServer: URL;
  /** Called once the pod object is gone from the API and its files are removed. */
  readonly onGone: () => void;
  /**
   * Test hook standing in for the kernel's OOM killer: a file of label selectors, one per line
   * (`key=value[,key=value]`); an app container of a Pod matching one is killed shortly after it starts
   * and reported as a kubelet reports a container its cgroup's OOM killer ended (OOMKilled, 137).
   */
  readonly oomKillFile?: string;
}

const TERMINATION_MESSAGE_LIMIT = 4096;
/**
 * How long a container selected by the OOM hook runs before it is killed: well before an operation could end
 * on its own (starting node, connecting and planning take longer). At 500 ms a small plan sometimes ended
 * first, and was reported OOMKilled with its own exit code 0.
 */
const OOM_KILL_AFTER_MS = 200;

/** Whether the labels match a line of the OOM hook's selector file. */
export function oomSelected(file: string | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (file === undefined || !existsSync(file)) return false;
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .some((line) =>
      line.split(',').every((pair) => {
        const [key, value] = pair.split('=');
        return key !== undefined && value !== undefined && labels[key.trim()] === value.trim();
      }),
    );
}
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;
const RETRY_MS = 2000;
/** Kubelet starts CrashLoopBackOff at 10 s; shorter here so tests of OnFailure stay quick. */
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;

function logPath(dir: string, restart: number): string {
  return join(dir, `${restart}.log`);
}

function lastLines(file: string, lines: number, bytes: number): string {
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(-lines)
    .map((line) => line.slice(line.indexOf(' ') + 1))
    .join('\n');
  const buffer = Buffer.from(text);
  return buffer.length > bytes ? buffer.subarray(buffer.length - bytes).toString('utf8') : text;
}

/** One pod on this node, from first sight to the final delete: the kubelet's pod worker. */
export class PodWorker {
  private pod: Pod;
  private readonly record: PodRecord;
  private readonly running = new Map<string, RunningContainer>();
  private stopping = false;
  private terminating: Promise<void> | undefined;
  private writing: Promise<void> | undefined;
  private dirty = false;
  private gone = false;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly wake = new AbortController();

  constructor(
    pod: Pod,
    private readonly deps: PodWorkerDeps,
  ) {
    this.pod = pod;
    const spec = pod.spec;
    const record = (c: V1Container): ContainerRecord => ({
      name: c.name,
      image: c.image ?? '',
      state: { waiting: { reason: spec.initContainers?.length ? 'PodInitializing' : 'ContainerCreating' } },
      lastState: {},
      restartCount: 0,
      final: false,
    });
    this.record = {
      restartPolicy:
        spec.restartPolicy === 'Never' || spec.restartPolicy === 'OnFailure' ? spec.restartPolicy : 'Always',
      init: (spec.initContainers ?? []).map(record),
      main: spec.containers.map(record),
      startTime: pod.status?.startTime ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      hostIP: deps.hostIP,
      sandboxReady: false,
    };
  }

  matches(namespace: string, name: string): boolean {
    return this.pod.metadata.namespace === namespace && this.pod.metadata.name === name;
  }

  get uid(): string {
    return this.pod.metadata.uid;
  }

  /** The latest object from the watch; a deletion timestamp starts graceful termination. */
  update(pod: Pod): void {
    this.pod = pod;
    if (pod.metadata.deletionTimestamp) {
      const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
      void this.terminate(grace).then(() => this.finalDelete());
    }
  }

  /** The watch reported the object deleted: stop everything and forget the pod. */
  forget(): void {
    this.gone = true;
    void this.terminate(0).then(() => this.cleanUp());
  }

  /** Agent shutdown: kill the processes quickly, leave the API alone. */
  async shutdown(graceSeconds: number): Promise<void> {
    this.gone = true;
    await this.terminate(graceSeconds);
    this.cleanUp();
  }

  /** The log file of a container instance, for the kubelet API; undefined when there is none. */
  containerLog(
    name: string,
    previous: boolean,
  ): { file: string; isDone: () => boolean } | { error: string; status: number } {
    const record = [...this.record.init, ...this.record.main].find((c) => c.name === name);
    if (!record)
      return { status: 404, error: `container ${name} is not valid for pod ${this.pod.metadata.name}` };
    const instance = previous ? record.restartCount - 1 : record.restartCount;
    const file = logPath(join(this.deps.podDir, 'containers', name), instance);
    if (instance < 0 || !existsSync(file)) {
      const waiting = record.state.waiting;
      const why = previous
        ? 'previous terminated container not found'
        : `is waiting to start: ${waiting?.reason}`;
      return { status: 400, error: `container "${name}" in pod "${this.pod.metadata.name}" ${why}` };
    }
    return { file, isDone: () => previous || record.state.running === undefined };
  }

  async run(): Promise<void> {
    const spec = this.pod.spec;
    try {
      this.record.podIP = this.deps.network.assign(this.uid);
    } catch (error) {
      console.error(`node-agent: pod ${this.pod.metadata.name}: no pod IP: ${(error as Error).message}`);
    }
    await this.writeStatus();
    if (spec.activeDeadlineSeconds !== undefined) {
      const elapsed = Date.now() - Date.parse(this.record.startTime);
      this.deadlineTimer = setTimeout(
        () => void this.deadlineExceeded(),
        spec.activeDeadlineSeconds * 1000 - elapsed,
      );
    }
    if (!(await this.setUpVolumes())) return;
    for (let i = 0; i < this.record.init.length; i++) {
      const ok = await this.runWithRestarts(
        spec.initContainers?.[i] as V1Container,
        this.record.init[i] as ContainerRecord,
        true,
      );
      if (!ok) return this.finish();
    }
    await Promise.all(
      spec.containers.map((c, i) => this.runWithRestarts(c, this.record.main[i] as ContainerRecord, false)),
    );
    this.finish();
  }

  private finish(): void {
    clearTimeout(this.deadlineTimer);
    // Every container is done for good: the sandbox goes, and its address with it.
    this.deps.network.release(this.uid);
  }

  private get podIP(): string {
    return this.record.podIP ?? this.deps.hostIP;
  }

  private async deadlineExceeded(): Promise<void> {
    if (this.stopping) return;
    this.record.failure = {
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    };
    await this.terminate(this.pod.spec.terminationGracePeriodSeconds ?? 30);
    await this.writeStatus();
  }

  private lookup: ObjectLookup = async (kind, namespace, name) => {
    try {
      return await this.deps.api.get<KeyedData>(`/api/v1/namespaces/${namespace}/${kind}/${name}`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  };

  private async requestToken(
    audience: string | undefined,
    expirationSeconds: number,
  ): Promise<string | undefined> {
    const { name, namespace, uid } = this.pod.metadata;
    const account = this.pod.spec.serviceAccountName ?? 'default';
    try {
      const response = await this.deps.api.send<{ status?: { token?: string } }>(
        'POST',
        `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`,
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            audiences: audience ? [audience] : [],
            expirationSeconds: Math.max(600, expirationSeconds),
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name, uid },
          },
        },
      );
      return response.status?.token;
    } catch (error) {
      console.error(
        `node-agent: no service account token for ${namespace}/${name}: ${(error as Error).message}`,
      );
      return undefined;
    }
  }

  private setWaiting(reason: string, message: string, records: readonly ContainerRecord[]): void {
    for (const record of records) {
      if (!record.state.terminated && !record.state.running) record.state = { waiting: { reason, message } };
    }
  }

  private async setUpVolumes(): Promise<boolean> {
    while (!this.stopping) {
      try {
        const paths = await materializeVolumes(this.pod, join(this.deps.podDir, 'volumes'), {
          lookup: this.lookup,
          requestToken: (audience, seconds) => this.requestToken(audience, seconds),
          ips: { podIP: this.podIP, hostIP: this.deps.hostIP },
        });
        this.volumePaths = paths;
        this.record.sandboxReady = true;
        return true;
      } catch (error) {
        // The kubelet reports a volume it cannot mount as an event and keeps the pod creating.
        this.setWaiting('ContainerCreating', `MountVolume.SetUp failed: ${(error as Error).message}`, [
          ...this.record.init,
          ...this.record.main,
        ]);
        await this.writeStatus();
        await this.pause(RETRY_MS);
      }
    }
    return false;
  }

  private volumePaths = new Map<string, string>();

  private async pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.wake.signal }).catch(() => undefined);
  }

  /** Runs a container until it may not run again; resolves whether its last run succeeded. */
  private async runWithRestarts(
    spec: V1Container,
    record: ContainerRecord,
    isInit: boolean,
  ): Promise<boolean> {
    let backoff = FIRST_BACKOFF_MS;
    for (;;) {
      const exit = await this.runOnce(spec, record);
      if (exit === undefined) {
        record.final = true;
        await this.writeStatus();
        return false;
      }
      const ok = exit.exitCode === 0;
      const policy = this.record.restartPolicy;
      const restart = isInit
        ? !ok && policy !== 'Never'
        : policy === 'Always' || (policy === 'OnFailure' && !ok);
      if (!restart || this.stopping) {
        record.final = true;
        await this.writeStatus();
        return ok;
      }
      record.lastState = record.state;
      record.restartCount += 1;
      record.state = {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off ${backoff / 1000}s restarting failed container=${record.name} pod=${this.pod.metadata.name}`,
        },
      };
      await this.writeStatus();
      await this.pause(backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  /** Prepares and runs one instance; undefined when the pod stopped before it could start. */
  private async runOnce(spec: V1Container, record: ContainerRecord): Promise<ContainerExit | undefined> {
    let pulls = 0;
    while (!this.stopping) {
      const prepared = await this.prepare(spec).catch((error: unknown) => error as Error);
      if (prepared instanceof Error) {
        const imageMissing = prepared instanceof ImageNotMappedError;
        const reason = imageMissing
          ? pulls++ === 0
            ? 'ErrImagePull'
            : 'ImagePullBackOff'
          : 'CreateContainerConfigError';
        record.state = { waiting: { reason, message: prepared.message } };
        await this.writeStatus();
        await this.pause(RETRY_MS);
        continue;
      }
      if (this.stopping) break;
      const dir = join(this.deps.podDir, 'containers', spec.name);
      const instance = record.restartCount;
      const messageFile = join(dir, `${instance}.termination-log`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(messageFile, '');
      // The program may run as any uid; the file is private to this pod's directory anyway.
      chmodSync(messageFile, 0o666);
      const scratchDir = join(dir, `${instance}.mounts`);
      mkdirSync(scratchDir, { recursive: true });
      const mounts: BindMount[] = [
        ...prepared.mounts,
        {
          source: messageFile,
          target: spec.terminationMessagePath ?? '/dev/termination-log',
          readOnly: false,
          kind: 'file',
        },
      ];
      const process = startContainer(
        {
          scratchDir,
          mounts,
          workingDir: prepared.workingDir,
          argv: prepared.argv,
          ...(prepared.user ? { user: prepared.user } : {}),
        },
        prepared.env,
        logPath(dir, instance),
        this.deps.host,
      );
      const startedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      record.containerID = `ptah-node-agent://${this.pod.metadata.uid}/${spec.name}/${instance}`;
      record.state = { running: { startedAt } };
      this.running.set(spec.name, process);
      const probing = new AbortController();
      this.probe(spec, record, process, prepared.env, probing.signal);
      void this.writeStatus();
      let oomKilled = false;
      const oomTimer =
        !isInitContainer(this.pod, spec.name) &&
        oomSelected(this.deps.oomKillFile, this.pod.metadata.labels ?? {})
          ? setTimeout(() => {
              oomKilled = true;
              process.kill('SIGKILL');
            }, OOM_KILL_AFTER_MS)
          : undefined;
      const exit = await process.exited;
      clearTimeout(oomTimer);
      probing.abort();
      delete record.probeReady;
      delete record.started;
      this.running.delete(spec.name);
      rmSync(scratchDir, { recursive: true, force: true });
      let message = readFileSync(messageFile).subarray(0, TERMINATION_MESSAGE_LIMIT).toString('utf8');
      if (!message && exit.exitCode !== 0 && spec.terminationMessagePolicy === 'FallbackToLogsOnError') {
        message = lastLines(logPath(dir, instance), FALLBACK_LOG_LINES, FALLBACK_LOG_BYTES);
      }
      record.state = {
        terminated: {
          exitCode: exit.exitCode,
          ...(exit.signal ? { signal: exit.signal } : {}),
          // OOMKilled only where the kill ended it, as a kubelet reports only what the kernel killed.
          reason:
            oomKilled && exit.signal === osConstants.signals.SIGKILL
              ? 'OOMKilled'
              : exit.exitCode === 0
                ? 'Completed'
                : 'Error',
          ...(message ? { message } : {}),
          startedAt,
          finishedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          containerID: record.containerID,
        },
      };
      return exit;
    }
    return undefined;
  }

  /**
   * The kubelet's probe workers for one running container: the startup probe first (liveness and readiness
   * wait for it; `started` stays false until it passes), then liveness and readiness side by side. A startup
   * or liveness probe failing failureThreshold times in a row kills the container, SIGTERM then SIGKILL
   * after the probe's (or the Pod's) grace period; the restart policy then decides, as for any exit, so a
   * restarted container counts in restartCount with the killed run in lastState.terminated.
   */
  private probe(
    spec: V1Container,
    record: ContainerRecord,
    container: RunningContainer,
    env: ReadonlyMap<string, string>,
    signal: AbortSignal,
  ): void {
    const exec = execInContainer(container.pid, env, signal);
    const target = (probe: V1Probe) => ({ probe, container: spec, podIP: this.podIP, exec, signal });
    const say = (what: string) => console.error(`node-agent: pod ${this.pod.metadata.name}: ${what}`);
    const kill = (probe: V1Probe, kind: string, why: string) => {
      say(`${kind} probe failed: ${why}; container ${spec.name} will be killed`);
      const grace = probe.terminationGracePeriodSeconds ?? this.pod.spec.terminationGracePeriodSeconds ?? 30;
      container.kill(grace > 0 ? 'SIGTERM' : 'SIGKILL');
      const timer = setTimeout(() => container.kill('SIGKILL'), grace * 1000);
      void container.exited.then(() => clearTimeout(timer));
    };
    if (spec.readinessProbe) record.probeReady = false;
    if (spec.startupProbe) record.started = false;
    void (async () => {
      if (spec.startupProbe) {
        const verdict = await runUntilVerdict('Startup', target(spec.startupProbe));
        if (verdict === undefined) return;
        if (verdict !== 'started') return kill(spec.startupProbe, 'Startup', verdict.failed);
        record.started = true;
        void this.writeStatus();
      }
      if (spec.readinessProbe) {
        void runReadinessProbe(target(spec.readinessProbe), (ready, why) => {
          record.probeReady = ready;
          if (why) say(`Readiness probe failed: ${why}`);
          void this.writeStatus();
        });
      }
      if (spec.livenessProbe) {
        const verdict = await runUntilVerdict('Liveness', target(spec.livenessProbe));
        if (verdict !== undefined && verdict !== 'started')
          kill(spec.livenessProbe, 'Liveness', verdict.failed);
      }
    })();
  }

  private async prepare(spec: V1Container) {
    const pod = this.pod;
    const entry = readImageMap(this.deps.imageMapFile).images[spec.image ?? ''];
    if (!entry) {
      throw new ImageNotMappedError(
        `Failed to pull image "${spec.image}": not in the node agent's image map ${this.deps.imageMapFile}`,
      );
    }
    const context = { ...pod.spec.securityContext, ...spec.securityContext };
    const uid = context.runAsUser;
    if (context.runAsNonRoot && uid === undefined) {
      throw new ContainerConfigError(
        `container has runAsNonRoot and image will run as root (pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})", container: ${spec.name})`,
      );
    }
    if (context.runAsNonRoot && uid === 0) {
      throw new ContainerConfigError(
        `container's runAsUser breaks non-root policy (pod: "${pod.metadata.name}", container: ${spec.name})`,
      );
    }
    const own = await resolveContainerEnv(pod, spec, this.lookup, {
      podIP: this.podIP,
      hostIP: this.deps.hostIP,
    });
    const api = this.deps.apiServer;
    const env = new Map<string, string>([
      ['PATH', process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin'],
      ['HOSTNAME', pod.metadata.name],
      ['HOME', uid === undefined || uid === 0 ? '/root' : '/'],
      ['KUBERNETES_SERVICE_HOST', api.hostname],
      ['KUBERNETES_SERVICE_PORT', api.port || '443'],
      ['KUBERNETES_SERVICE_PORT_HTTPS', api.port || '443'],
      ...Object.entries(entry.env ?? {}),
      ...own,
    ]);
    const groups = [...(pod.spec.securityContext?.supplementalGroups ?? [])];
    const fsGroup = pod.spec.securityContext?.fsGroup;
    if (fsGroup !== undefined) groups.push(fsGroup);
    const gid = context.runAsGroup;
    const user =
      uid !== undefined || gid !== undefined || groups.length > 0
        ? { uid: uid ?? 0, gid: gid ?? 0, groups }
        : undefined;
    const imageFiles: BindMount[] = Object.entries(entry.files ?? {}).map(([target, source]) => {
      if (!existsSync(source)) throw new ImageNotMappedError(`image "${spec.image}": ${source} is missing`);
      return {
        source,
        target,
        readOnly: true,
        kind: statSync(source).isDirectory() ? ('dir' as const) : ('file' as const),
      };
    });
    const volumeMounts: BindMount[] = (spec.volumeMounts ?? []).map((m) => {
      const volume = this.volumePaths.get(m.name);
      if (volume === undefined)
        throw new ContainerConfigError(`volume "${m.name}" is not declared by the pod`);
      const source = m.subPath ? join(volume, m.subPath) : volume;
      if (m.subPath && !existsSync(source)) mkdirSync(source, { recursive: true });
      return {
        source,
        target: m.mountPath,
        readOnly: m.readOnly === true,
        kind: statSync(source).isDirectory() ? ('dir' as const) : ('file' as const),
      };
    });
    return {
      argv: resolveArgv(entry, spec.command, spec.args, env),
      env,
      user,
      mounts: [...imageFiles, ...volumeMounts],
      workingDir: spec.workingDir ?? entry.workingDir ?? '/',
    };
  }

  /** SIGTERM to every running container, SIGKILL after the grace period; resolves when all exited. */
  private terminate(graceSeconds: number): Promise<void> {
    if (this.terminating) return this.terminating;
    this.stopping = true;
    this.wake.abort();
    clearTimeout(this.deadlineTimer);
    const processes = [...this.running.values()];
    this.terminating = (async () => {
      for (const p of processes) p.kill(graceSeconds > 0 ? 'SIGTERM' : 'SIGKILL');
      const all = Promise.all(processes.map((p) => p.exited));
      const timer = setTimeout(() => processes.forEach((p) => p.kill('SIGKILL')), graceSeconds * 1000);
      await all;
      clearTimeout(timer);
      // Let runOnce record the terminated states before the final status is written.
      await sleep(50);
    })();
    return this.terminating;
  }

  private finalDeleting = false;

  private async finalDelete(): Promise<void> {
    // Every watch event after the deletion timestamp chains here; one delete is enough.
    if (this.finalDeleting) return;
    this.finalDeleting = true;
    for (const record of [...this.record.init, ...this.record.main]) record.final = true;
    await this.writeStatus();
    const { name, namespace, uid } = this.pod.metadata;
    try {
      await this.deps.api.send('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid },
      });
      // The object may linger on finalizers, but this node may no longer read or write it.
      this.gone = true;
    } catch (error) {
      if (!(error instanceof ApiError && (error.status === 404 || error.status === 409))) {
        console.error(`node-agent: final delete of ${namespace}/${name} failed: ${(error as Error).message}`);
      }
    }
  }

  private cleanUp(): void {
    this.deps.network.release(this.uid);
    rmSync(this.deps.podDir, { recursive: true, force: true });
    this.deps.onGone();
  }

  /** Coalesces status writes: at most one in flight, the latest record always written last. */
  private writeStatus(): Promise<void> {
    this.dirty = true;
    if (!this.writing) this.writing = this.flush();
    return this.writing;
  }

  private async flush(): Promise<void> {
    while (this.dirty && !this.gone) {
      this.dirty = false;
      try {
        await this.putStatus();
      } catch (error) {
        // 403: the Node authorizer no longer relates the pod to this node, i.e. it is gone.
        if (error instanceof ApiError && (error.status === 404 || error.status === 403)) break;
        if (!(error instanceof ApiError && error.status === 409)) {
          console.error(`node-agent: status of ${this.pod.metadata.name}: ${(error as Error).message}`);
          await sleep(500);
        }
        this.dirty = true;
      }
    }
    this.writing = undefined;
  }

  private async putStatus(): Promise<void> {
    const { name, namespace } = this.pod.metadata;
    const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
    const current = await this.deps.api.get<Pod>(path);
    if (current.metadata.uid !== this.uid) return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const status = buildPodStatus(this.record, current.status, now);
    await this.deps.api.send('PUT', `${path}/status`, { ...current, status });
  }
}

class ImageNotMappedError extends Error {}

function isInitContainer(pod: Pod, name: string): boolean {
  return (pod.spec.initContainers ?? []).some((c) => c.name === name);
}

/**
 * An exec probe: the command runs in the container's mount namespace, root and working directory (nsenter
 * into the running program), as the container's user (nsenter's setuid/setgid, which also drops the
 * supplementary groups), with the container's environment; killed at the probe's timeout.
 */
function execInContainer(pid: number, env: ReadonlyMap<string, string>, signal: AbortSignal): ExecProbe {
  return (command, timeoutMs) =>
    new Promise<ProbeResult>((resolve) => {
      let uid: number | undefined;
      let gid: number | undefined;
      try {
        // The program's own credentials, as setpriv left them.
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
        gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
      } catch {
        return resolve({ ok: false, why: 'the container is not running' });
      }
      const child = spawn(
        'nsenter',
        [
          `--target=${pid}`,
          '--mount',
          '--root',
          '--wd',
          ...(uid ? [`--setuid=${uid}`] : []),
          ...(gid ? [`--setgid=${gid}`] : []),
          '--',
          ...command,
        ],
        { env: Object.fromEntries(env), stdio: ['ignore', 'pipe', 'pipe'], signal },
      );
      let output = '';
      const collect = (d: Buffer) => {
        if (output.length < 1024) output += d.toString('utf8');
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        resolve({ ok: false, why: error.message });
      });
      child.once('close', (code, killed) => {
        clearTimeout(timer);
        if (code === 0) return resolve({ ok: true });
        const why = killed ? `command timed out after ${timeoutMs / 1000}s` : `command exited with ${code}`;
        resolve({ ok: false, why: `${why}: ${output.trim().slice(0, 1024)}` });
      });
    });
}
