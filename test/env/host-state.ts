import { readFileSync } from 'node:fs';

const TCP_LISTEN = '0A';

/** Local TCP ports in LISTEN state on this host (IPv4 and IPv6), read from /proc/net. */
export function listeningPorts(): Set<number> {
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (!local || fields[3] !== TCP_LISTEN) continue;
      ports.add(parseInt(local.slice(local.lastIndexOf(':') + 1), 16));
    }
  }
  return ports;
}

/** True while a process with this pid exists and is not a zombie waiting to be reaped. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
