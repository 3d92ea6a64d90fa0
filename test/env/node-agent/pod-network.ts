import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Pod IPs for a node whose Pods share the host's network namespace. A kubelet's CNI plugin gives every
 * Pod its own address; here every Pod gets its own address too, added to the host's loopback device,
 * so two replicas can listen on the same port and the API server can dial a Pod by its IP. The
 * addresses come from 198.18.0.0/15 (RFC 2544, set aside for benchmarking: no real host lives there)
 * and not from 127.0.0.0/8, because EndpointSlice validation refuses loopback addresses: a Service in
 * front of Pods at 127.x.y.z would never get endpoints.
 *
 * Each node agent claims one /24 through an owner file under the claims directory (exclusive create;
 * a claim whose owner process is gone is taken over and its leftover addresses removed), so parallel
 * environments on one machine never hand out the same address.
 */
export interface PodNetwork {
  /** The node's Pod CIDR, e.g. 198.18.7.0/24; undefined when Pods fall back to the host's address. */
  readonly cidr: string | undefined;
  /** A free address for the Pod, added to the loopback device; the same one on a second call. */
  assign(podUid: string): string;
  /** Removes the Pod's address, if it had one. */
  release(podUid: string): void;
  /** Removes every address and the claim. */
  close(): void;
}

const SUBNETS = 512;
const FIRST_HOST = 2;
const LAST_HOST = 254;
const DEFAULT_CLAIMS_DIR = '/run/ptah-node-agent/pod-networks';

/** The i-th /24 of 198.18.0.0/15, as its first three octets. */
export function subnetPrefix(index: number): string {
  return `198.${18 + Math.floor(index / 256)}.${index % 256}`;
}

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Loopback addresses in the subnet, as the kernel lists them. */
function addressesIn(prefix: string): string[] {
  return ip(['-o', '-4', 'addr', 'show', 'dev', 'lo'])
    .split('\n')
    .flatMap((line) => {
      const m = /\binet (\d+\.\d+\.\d+\.\d+)\/32\b/.exec(line);
      return m && m[1]!.startsWith(`${prefix}.`) ? [m[1]!] : [];
    });
}

function claim(dir: string, start: number): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (let n = 0; n < SUBNETS; n++) {
    const prefix = subnetPrefix((start + n) % SUBNETS);
    const owner = join(dir, `${prefix}.0-24`);
    try {
      const fd = openSync(owner, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number(readFileSync(owner, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) continue;
      // A crashed agent's claim: its addresses go with it, then the claim is taken over.
      for (const address of addressesIn(prefix)) ip(['addr', 'del', `${address}/32`, 'dev', 'lo']);
      rmSync(owner, { force: true });
      n -= 1;
      continue;
    }
    return prefix;
  }
  return undefined;
}

/**
 * Claims a /24 for this node. Without the right to add addresses (not root, no CAP_NET_ADMIN), every
 * Pod gets `fallbackIP`, as before Pods had addresses of their own; `onFallback` says why.
 */
export function openPodNetwork(
  fallbackIP: string,
  onFallback: (why: string) => void,
  claimsDir = DEFAULT_CLAIMS_DIR,
): PodNetwork {
  let prefix: string | undefined;
  try {
    ip(['-o', '-4', 'addr', 'show', 'dev', 'lo']);
    prefix = claim(claimsDir, process.pid % SUBNETS);
    if (prefix === undefined) onFallback('every /24 of 198.18.0.0/15 is claimed by a running node agent');
  } catch (error) {
    onFallback((error as Error).message.split('\n')[0] ?? 'ip failed');
  }
  const assigned = new Map<string, string>();
  const fallback = (): PodNetwork => ({
    cidr: undefined,
    assign: () => fallbackIP,
    release: () => undefined,
    close: () => undefined,
  });
  if (prefix === undefined) return fallback();
  const owner = join(claimsDir, `${prefix}.0-24`);
  return {
    cidr: `${prefix}.0/24`,
    assign(podUid) {
      const existing = assigned.get(podUid);
      if (existing) return existing;
      const used = new Set(assigned.values());
      for (let host = FIRST_HOST; host <= LAST_HOST; host++) {
        const address = `${prefix}.${host}`;
        if (used.has(address)) continue;
        try {
          ip(['addr', 'add', `${address}/32`, 'dev', 'lo']);
        } catch {
          continue; // left over from a run of this claim that did not clean up: skip it
        }
        assigned.set(podUid, address);
        return address;
      }
      throw new Error(`pod network ${prefix}.0/24 is full`);
    },
    release(podUid) {
      const address = assigned.get(podUid);
      if (!address) return;
      assigned.delete(podUid);
      try {
        ip(['addr', 'del', `${address}/32`, 'dev', 'lo']);
      } catch {
        // already gone
      }
    },
    close() {
      for (const uid of [...assigned.keys()]) this.release(uid);
      rmSync(owner, { force: true });
    },
  };
}
