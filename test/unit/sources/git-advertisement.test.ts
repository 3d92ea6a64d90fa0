import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { parseAdvertisement } from '../../../src/sources/git/advertisement.ts';
import { GitSourceError } from '../../../src/sources/git/errors.ts';
import { readPktLines } from '../../../src/sources/git/pkt-line.ts';
import { parseRemote } from '../../../src/sources/git/remote.ts';
import { selectRef } from '../../../src/sources/git/select-ref.ts';

const pkt = (s: string) => (s.length + 4).toString(16).padStart(4, '0') + s;
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const T = 'c'.repeat(40);

function advertisement(caps: string): Buffer {
  return Buffer.from(
    pkt('# service=git-upload-pack\n') +
      '0000' +
      pkt(`${A} HEAD\0${caps}\n`) +
      pkt(`${A} refs/heads/main\n`) +
      pkt(`${T} refs/tags/v1\n`) +
      pkt(`${B} refs/tags/v1^{}\n`) +
      pkt(`${B} refs/tags/light\n`) +
      '0000',
  );
}

test('a smart-HTTP advertisement: refs, peeled tags and capabilities', () => {
  const lines = readPktLines(advertisement('multi_ack allow-reachable-sha1-in-want object-format=sha1'), 2)!;
  const ad = parseAdvertisement(lines.lines, true);
  assert.equal(ad.refs.get('refs/heads/main'), A);
  assert.equal(ad.peeled.get('refs/tags/v1'), B);
  assert.ok(ad.capabilities.has('allow-reachable-sha1-in-want'));
  assert.equal(ad.objectFormat, 'sha1');
});

test('ref selection: branch, annotated tag peeled, commit by tip or by id only when allowed', () => {
  const strict = parseAdvertisement(readPktLines(advertisement('multi_ack'), 2)!.lines, true);
  const open = parseAdvertisement(
    readPktLines(advertisement('allow-reachable-sha1-in-want'), 2)!.lines,
    true,
  );
  assert.deepEqual(selectRef(strict, 'main', 'r'), {
    kind: 'branch',
    refName: 'refs/heads/main',
    commit: A,
    fetch: { by: 'ref', name: 'refs/heads/main' },
  });
  assert.equal(selectRef(strict, 'v1', 'r').commit, B);
  // B is the commit the annotated tag v1 peels to and the lightweight tag's own object: only the latter counts.
  assert.deepEqual(selectRef(strict, B, 'r').fetch, { by: 'ref', name: 'refs/tags/light' });
  const D = 'd'.repeat(40);
  assert.throws(
    () => selectRef(strict, D, 'r'),
    (e: GitSourceError) => e.reason === 'CommitNotAdvertised',
  );
  assert.deepEqual(selectRef(open, D, 'r').fetch, { by: 'id' });
  for (const bad of ['../x', 'a..b', 'x.lock', '-x', 'a b', 'x@{1}'])
    assert.throws(
      () => selectRef(open, bad, 'r'),
      (e: GitSourceError) => e.reason === 'InvalidRef',
      bad,
    );
});

test('remotes: https, ssh and scp forms; passwords, plain HTTP and odd paths refused', () => {
  assert.equal(parseRemote('https://git.example.com/a/b.git').authority, 'git.example.com');
  assert.equal(parseRemote('ssh://git@127.0.0.1:2222/x.git').authority, '127.0.0.1:2222');
  assert.deepEqual(
    (({ transport, user, host, path }) => ({ transport, user, host, path }))(
      parseRemote('git@github.com:org/repo.git'),
    ),
    { transport: 'ssh', user: 'git', host: 'github.com', path: 'org/repo.git' },
  );
  const reason = (url: string, opts = {}) => {
    try {
      parseRemote(url, opts);
      return 'accepted';
    } catch (e) {
      return (e as GitSourceError).reason;
    }
  };
  assert.equal(reason('https://u:p@h/x.git'), 'InvalidRepository');
  assert.equal(reason('http://h/x.git'), 'InsecureTransport');
  assert.equal(reason('http://h/x.git', { allowPlainHttp: true }), 'accepted');
  assert.equal(reason('ext::sh -c id'), 'InvalidRepository');
  assert.equal(reason('file:///etc'), 'InvalidRepository');
  assert.equal(reason("ssh://git@h/x'; id"), 'InvalidRepository');
  assert.equal(reason('ssh://h/x.git'), 'InvalidRepository');
  assert.equal(
    reason('-oProxyCommand@h:x'),
    'InvalidRepository',
    'nothing git or ssh could read as an option',
  );
  assert.equal(
    reason('https://h/a/../b'),
    'accepted',
    'URL parsing folds the dot segments before the path is checked',
  );
});

test('fuzz: random and mutated advertisements never throw anything but a GitSourceError', () => {
  const base = advertisement('multi_ack allow-reachable-sha1-in-want');
  for (let i = 0; i < 5000; i++) {
    const bytes = i % 2 === 0 ? randomBytes(1 + (i % 300)) : Buffer.from(base);
    if (i % 2 === 1)
      for (let k = 0; k < 1 + (i % 7); k++) bytes[(i * 31 + k * 17) % bytes.length] = (i * k) & 0xff;
    try {
      const lines = readPktLines(bytes, 2);
      if (lines !== undefined) parseAdvertisement(lines.lines, true);
    } catch (e) {
      assert.ok(e instanceof GitSourceError, String(e));
    }
  }
});
