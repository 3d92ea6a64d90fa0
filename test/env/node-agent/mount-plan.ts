import { posix } from 'node:path';

/** One bind mount a container sees: a host file or directory at a path inside the container. */
export interface BindMount {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
  readonly kind: 'dir' | 'file';
}

export type PathKind = 'dir' | 'file' | 'missing';

export interface ContainerLaunch {
  /** An empty host directory; a tmpfs is mounted on it inside the namespace for private layers. */
  readonly scratchDir: string;
  readonly mounts: readonly BindMount[];
  readonly workingDir: string;
  readonly argv: readonly string[];
  readonly user?: { readonly uid: number; readonly gid: number; readonly groups: readonly number[] };
}

/** What the planner may ask about the host; injected so the plan is a pure function. */
export interface HostView {
  kind(path: string): PathKind;
  /** Entries of the host's `/` with their kinds; symlinks carry their target. */
  rootEntries(): readonly { name: string; kind: 'dir' | 'file' | 'symlink'; link?: string }[];
  /** Every mount point on the host, from /proc/self/mountinfo. */
  mountPoints(): readonly string[];
  /**
   * The path with every symlink in its existing part resolved (the rest kept as written): the
   * container's root is the host's, so `/var/run -> /run` must be followed on the host before any
   * mount, or a mirror root's absolute symlink would lead the mount out of the container's view.
   */
  resolve(path: string): string;
}

const NODE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function isUnder(path: string, dir: string): boolean {
  return dir === '/' ? path.startsWith('/') : path === dir || path.startsWith(`${dir}/`);
}

function ancestors(path: string): string[] {
  const result: string[] = [];
  for (let dir = posix.dirname(path); ; dir = posix.dirname(dir)) {
    result.push(dir);
    if (dir === '/') return result;
  }
}

/**
 * The shell script that runs inside `unshare --mount --propagation private` and ends by exec'ing
 * the container's program. Nothing it does is visible outside the namespace, so the host file
 * system is never changed:
 * - a mount path whose parent exists gets an overlay on the nearest existing ancestor, its upper
 *   layer on the namespace's tmpfs; the ancestor's sub-mounts are bound back on top of it;
 * - a mount path under a top-level directory the host lacks (e.g. /workspace) makes the script
 *   build a mirror root on the tmpfs (every top-level entry bound in) and chroot into it.
 */
export function planContainerScript(requested: ContainerLaunch, host: HostView): string {
  const launch: ContainerLaunch = {
    ...requested,
    mounts: requested.mounts.map((m) => ({ ...m, target: host.resolve(posix.normalize(m.target)) })),
    workingDir: host.resolve(posix.normalize(requested.workingDir)),
  };
  const lines = [
    'set -e',
    // The node's own tools (mount, chroot, setpriv) are found on the node's PATH, not on the image's,
    // which is the container's PATH again for the program.
    'ptah_container_path="$PATH"',
    `PATH=${NODE_PATH}`,
    `mount -t tmpfs -o mode=0700 ptah-scratch ${shellQuote(launch.scratchDir)}`,
  ];
  // Sources are pinned on the tmpfs first: a later overlay could otherwise hide the host path
  // they live under, and a bind through the overlay would write to its private upper layer.
  const staged = launch.mounts.map((m, i) => {
    const at = posix.join(launch.scratchDir, `source-${i}`);
    lines.push(
      m.kind === 'dir' ? `mkdir ${shellQuote(at)}` : `touch ${shellQuote(at)}`,
      `mount --bind ${shellQuote(m.source)} ${shellQuote(at)}`,
    );
    return { ...m, staged: at };
  });
  const ensure: { path: string; kind: 'dir' | 'file' }[] = [
    ...[...launch.mounts]
      .sort((a, b) => a.target.split('/').length - b.target.split('/').length)
      .map((m) => ({ path: posix.normalize(m.target), kind: m.kind })),
    { path: posix.normalize(launch.workingDir), kind: 'dir' as const },
  ];
  const needsRoot = ensure.some((e) => {
    const top = `/${e.path.split('/')[1] ?? ''}`;
    return top !== '/' && host.kind(top) === 'missing';
  });
  const root = needsRoot ? posix.join(launch.scratchDir, 'root') : '';
  const inNs = (path: string) => (root ? posix.join(root, path) : path);

  // Paths whose contents live only inside this namespace: creating entries there is harmless.
  const privateDirs: string[] = [];
  // Container paths already bound from a host source: entries there are resolved in the source.
  const bound: { target: string; source: string }[] = [];

  if (root) {
    lines.push(`mkdir -p ${shellQuote(root)}`);
    for (const entry of host.rootEntries()) {
      const at = shellQuote(posix.join(root, entry.name));
      const from = shellQuote(`/${entry.name}`);
      if (entry.kind === 'symlink') lines.push(`ln -s ${shellQuote(entry.link ?? '')} ${at}`);
      else if (entry.kind === 'dir') lines.push(`mkdir ${at}`, `mount --rbind ${from} ${at}`);
      else lines.push(`touch ${at}`, `mount --bind ${from} ${at}`);
    }
    for (const e of ensure) {
      const top = `/${e.path.split('/')[1]}`;
      if (host.kind(top) === 'missing' && !privateDirs.includes(top)) privateDirs.push(top);
    }
  }

  function hostKind(path: string): PathKind {
    const bind = [...bound].reverse().find((b) => isUnder(path, b.target));
    if (bind) return host.kind(bind.source + path.slice(bind.target.length));
    if (privateDirs.some((dir) => isUnder(path, dir))) return 'missing';
    return host.kind(path);
  }
  function writable(dir: string): boolean {
    return privateDirs.some((d) => isUnder(dir, d)) || bound.some((b) => isUnder(dir, b.target));
  }

  let overlays = 0;
  function makePath(path: string, kind: 'dir' | 'file'): void {
    const isPrivate = privateDirs.some((d) => isUnder(path, d));
    if (!isPrivate && hostKind(path) !== 'missing') return;
    const existing = ancestors(path).find((dir) => writable(dir) || hostKind(dir) === 'dir') ?? '/';
    if (!isPrivate && !writable(existing)) {
      const layer = posix.join(launch.scratchDir, `overlay-${overlays++}`);
      const stash = posix.join(layer, 'stash');
      lines.push(
        `mkdir -p ${shellQuote(`${layer}/upper`)} ${shellQuote(`${layer}/work`)} ${shellQuote(stash)}`,
        `mount --rbind ${shellQuote(inNs(existing))} ${shellQuote(stash)}`,
        // Relative paths from here on: the overlay may hide the scratch directory's own path.
        `cd ${shellQuote(stash)}`,
        `mount -t overlay ptah-overlay -o ${shellQuote(
          `lowerdir=${inNs(existing)},upperdir=${layer}/upper,workdir=${layer}/work`,
        )} ${shellQuote(inNs(existing))}`,
      );
      const subMounts = [
        ...host.mountPoints(),
        ...bound.map((b) => b.target),
        ...(root ? [] : [launch.scratchDir]),
      ]
        .filter((mp) => mp !== existing && isUnder(mp, existing))
        .sort((a, b) => a.length - b.length);
      const topSubMounts = subMounts.filter((mp, i) => !subMounts.slice(0, i).some((p) => isUnder(mp, p)));
      for (const mp of topSubMounts) {
        const rel = mp.slice(existing === '/' ? 1 : existing.length + 1);
        lines.push(`mount --rbind ${shellQuote(`./${rel}`)} ${shellQuote(inNs(mp))}`);
      }
      lines.push('cd /');
      privateDirs.push(existing);
    }
    if (kind === 'dir') lines.push(`mkdir -p ${shellQuote(inNs(path))}`);
    else lines.push(`mkdir -p ${shellQuote(inNs(posix.dirname(path)))}`, `touch ${shellQuote(inNs(path))}`);
  }

  for (const m of [...staged].sort((a, b) => a.target.split('/').length - b.target.split('/').length)) {
    const target = posix.normalize(m.target);
    makePath(target, m.kind);
    lines.push(`mount --bind ${shellQuote(m.staged)} ${shellQuote(inNs(target))}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${shellQuote(inNs(target))}`);
    bound.push({ target, source: m.source });
  }
  makePath(posix.normalize(launch.workingDir), 'dir');

  const quoted = launch.user
    ? [
        '"$ptah_setpriv"',
        ...[
          `--reuid=${launch.user.uid}`,
          `--regid=${launch.user.gid}`,
          launch.user.groups.length > 0 ? `--groups=${launch.user.groups.join(',')}` : '--clear-groups',
          '--',
          ...launch.argv,
        ].map(shellQuote),
      ].join(' ')
    : launch.argv.map(shellQuote).join(' ');
  if (launch.user) lines.push('ptah_setpriv="$(command -v setpriv)"');
  if (root) {
    lines.push(
      'ptah_chroot="$(command -v chroot)"',
      'PATH="$ptah_container_path"',
      `exec "$ptah_chroot" ${shellQuote(root)} /bin/sh -c 'cd "$1"; shift; exec "$@"' sh ${shellQuote(launch.workingDir)} ${quoted}`,
    );
  } else {
    lines.push(`cd ${shellQuote(launch.workingDir)}`, 'PATH="$ptah_container_path"', `exec ${quoted}`);
  }
  return `${lines.join('\n')}\n`;
}
