/**
 * The account the operator image declares for its UID (deploy/images/operator/Dockerfile), as the node agent
 * shows it: a container here sees the node's /etc, so the image map binds a passwd and a group file holding
 * the node's entries and the image's own. Without an entry for its UID, programs that look the user up
 * refuse to run: OpenSSH's client exits with "No user exists for uid 65532", which is every SSH Git source.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const IMAGE_ACCOUNT = { name: 'ptah', uid: 65532, gid: 65532, home: '/ptah/work' } as const;

/** Writes the two files beside the image map (once per map) and returns them as image-map `files`. */
export function imageAccountFiles(imageMapFile: string): Record<'/etc/passwd' | '/etc/group', string> {
  const { name, uid, gid, home } = IMAGE_ACCOUNT;
  const passwd = join(dirname(imageMapFile), 'image-passwd');
  const group = join(dirname(imageMapFile), 'image-group');
  const without = (file: string, id: number) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && line.split(':')[2] !== String(id) && line.split(':')[0] !== name);
  writeFileSync(
    passwd,
    [...without('/etc/passwd', uid), `${name}:x:${uid}:${gid}::${home}:/usr/sbin/nologin`, ''].join('\n'),
  );
  writeFileSync(group, [...without('/etc/group', gid), `${name}:x:${gid}:`, ''].join('\n'));
  return { '/etc/passwd': passwd, '/etc/group': group };
}
