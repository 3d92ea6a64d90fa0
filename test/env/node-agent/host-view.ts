import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import type { HostView, PathKind } from './mount-plan.ts';

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The real host, as the container's fresh mount namespace will first see it. */
export const realHost: HostView = {
  kind(path: string): PathKind {
    try {
      return statSync(path).isDirectory() ? 'dir' : 'file';
    } catch {
      return 'missing';
    }
  },
  rootEntries() {
    return readdirSync('/').flatMap(
      (name): { name: string; kind: 'dir' | 'file' | 'symlink'; link?: string }[] => {
        const path = `/${name}`;
        try {
          const stat = lstatSync(path);
          if (stat.isSymbolicLink()) return [{ name, kind: 'symlink', link: readlinkSync(path) }];
          return [{ name, kind: stat.isDirectory() ? 'dir' : 'file' }];
        } catch {
          return [];
        }
      },
    );
  },
  resolve(path: string): string {
    const rest: string[] = [];
    for (let prefix = path; ; prefix = posix.dirname(prefix)) {
      try {
        return posix.join(realpathSync(prefix), ...rest.reverse());
      } catch {
        if (prefix === '/') return path;
        rest.push(posix.basename(prefix));
      }
    }
  },
  mountPoints() {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => unescapeMountPath(line.split(' ')[4] ?? '/'));
  },
};
