import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Container, V1Probe } from '@kubernetes/client-node';

/** One probe attempt: success, or why it failed (the kubelet's "Readiness probe failed: ..."). */
export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly why: string };

/** A named port (`port: webhook`) is the container's port of that name, as the kubelet resolves it. */
export function probePort(port: number | string | undefined, container: V1Container): number {
  if (typeof port === 'number') return port;
  const numeric = Number(port);
  if (port !== undefined && Number.isInteger(numeric) && numeric > 0) return numeric;
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`port "${port}" is not a port of container ${container.name}`);
  return named.containerPort;
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ ok: true });
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ ok: false, why: `dial tcp ${host}:${port}: i/o timeout` });
    });
    socket.once('error', (error) =>
      resolve({ ok: false, why: `dial tcp ${host}:${port}: ${(error as NodeJS.ErrnoException).code}` }),
    );
  });
}

function httpProbe(
  scheme: 'HTTP' | 'HTTPS',
  host: string,
  port: number,
  path: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<ProbeResult> {
  const request = scheme === 'HTTPS' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    // The kubelet does not verify a probe's certificate.
    const req = request(
      { host, port, path, headers, timeout: timeoutMs, method: 'GET', rejectUnauthorized: false },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(
          code >= 200 && code < 400
            ? { ok: true }
            : { ok: false, why: `HTTP probe failed with statuscode: ${code}` },
        );
      },
    );
    req.once('timeout', () => req.destroy(new Error('context deadline exceeded')));
    req.once('error', (error) => resolve({ ok: false, why: `Get "${path}": ${error.message}` }));
    req.end();
  });
}

/**
 * Runs a probe's command in the container: in its mount namespace, root and working directory, as its user,
 * with its environment. Exit 0 is success, as for the kubelet's exec probe.
 */
export type ExecProbe = (command: readonly string[], timeoutMs: number) => Promise<ProbeResult>;

/** Runs the probe's handler once against the Pod's IP, or its command through `exec`. */
export function probeOnce(
  probe: V1Probe,
  container: V1Container,
  podIP: string,
  exec?: ExecProbe,
): Promise<ProbeResult> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.tcpSocket) {
      return tcpProbe(probe.tcpSocket.host ?? podIP, probePort(probe.tcpSocket.port, container), timeoutMs);
    }
    if (probe.httpGet) {
      const g = probe.httpGet;
      const headers = Object.fromEntries((g.httpHeaders ?? []).map((h) => [h.name, h.value]));
      return httpProbe(
        g.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP',
        g.host ?? podIP,
        probePort(g.port, container),
        g.path ?? '/',
        headers,
        timeoutMs,
      );
    }
    if (probe.exec?.command?.length && exec) return exec(probe.exec.command, timeoutMs);
  } catch (error) {
    return Promise.resolve({ ok: false, why: (error as Error).message });
  }
  return Promise.resolve({
    ok: false,
    why: 'this node runs tcpSocket, httpGet and exec probes only (no grpc)',
  });
}

interface ProbeTarget {
  readonly probe: V1Probe;
  readonly container: V1Container;
  readonly podIP: string;
  readonly exec?: ExecProbe;
  /** The container exited (or the Pod stops): the worker ends. */
  readonly signal: AbortSignal;
}

const waitFor = (ms: number, signal: AbortSignal) =>
  sleep(ms, undefined, { signal }).then(
    () => true,
    () => false,
  );

/**
 * The kubelet's readiness worker for one running container: after initialDelaySeconds, one probe every
 * periodSeconds; successThreshold successes in a row make it ready, failureThreshold failures unready.
 * Runs until `signal` aborts (the container exited); `onChange` hears each change of readiness.
 */
export async function runReadinessProbe(
  target: ProbeTarget,
  onChange: (ready: boolean, why?: string) => void,
): Promise<void> {
  const { probe, signal } = target;
  const period = (probe.periodSeconds ?? 10) * 1000;
  const successes = probe.successThreshold ?? 1;
  const failures = probe.failureThreshold ?? 3;
  let ready = false;
  let streak = 0;
  if (!(await waitFor((probe.initialDelaySeconds ?? 0) * 1000, signal))) return;
  for (;;) {
    const result = await probeOnce(probe, target.container, target.podIP, target.exec);
    if (signal.aborted) return;
    const same = result.ok === ready;
    streak = same ? 0 : streak + 1;
    if (!same && streak >= (result.ok ? successes : failures)) {
      ready = result.ok;
      streak = 0;
      onChange(ready, result.ok ? undefined : result.why);
    }
    if (!(await waitFor(period, signal))) return;
  }
}

/**
 * The kubelet's liveness and startup workers: one probe every periodSeconds after initialDelaySeconds until
 * failureThreshold failures in a row (the container is to be killed: resolves with the last failure) or, for
 * a startup probe, the first success (resolves `started`; liveness and readiness begin only then). A liveness
 * probe runs until the container exits (resolves undefined).
 */
export async function runUntilVerdict(
  kind: 'Liveness' | 'Startup',
  target: ProbeTarget,
): Promise<{ readonly failed: string } | 'started' | undefined> {
  const { probe, signal } = target;
  const period = (probe.periodSeconds ?? 10) * 1000;
  const failures = probe.failureThreshold ?? 3;
  let streak = 0;
  if (!(await waitFor((probe.initialDelaySeconds ?? 0) * 1000, signal))) return undefined;
  for (;;) {
    const result = await probeOnce(probe, target.container, target.podIP, target.exec);
    if (signal.aborted) return undefined;
    if (result.ok) {
      if (kind === 'Startup') return 'started';
      streak = 0;
    } else if (++streak >= failures) {
      return { failed: result.why };
    }
    if (!(await waitFor(period, signal))) return undefined;
  }
}
