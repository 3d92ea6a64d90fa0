// ptah's artifacts and signature checks against clients nobody here wrote: oras (pull ptah's pushes, push
// what ptah pulls) and cosign (sign with a key pair and no transparency log; ptah verifies the signature
// cryptographically). Real registry with TLS and basic auth; the CLI is run as a user runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import { findOciTools } from '../env/tools.ts';
import { buildManifest } from '../../src/sources/snapshot-manifest.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import {
  ARTIFACT_TYPE,
  RegistryClient,
  parseReference,
  type VerificationOutcome,
} from '../../src/sources/oci/index.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/ptah.mjs');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function ptah(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Setup {
  readonly registry: RegistryServer;
  readonly dir: string;
  readonly configFile: string;
  readonly dockerConfigDir: string;
  readonly caFile: string;
  readonly password: string;
  readonly tools: { readonly oras: string; readonly cosign: string };
}

async function setUp(): Promise<Setup> {
  const tools = findOciTools();
  const registry = await startRegistry({ tls: true, auth: true });
  const dir = mkdtempSync(join(tmpdir(), 'ptah-oci-interop-'));
  const dockerConfigDir = join(dir, 'docker');
  mkdirSync(dockerConfigDir);
  const configFile = join(dockerConfigDir, 'config.json');
  const { username, password } = registry.auth!;
  writeFileSync(
    configFile,
    JSON.stringify({
      auths: { [registry.host]: { auth: Buffer.from(`${username}:${password}`).toString('base64') } },
    }),
    { mode: 0o600 },
  );
  return { registry, dir, configFile, dockerConfigDir, caFile: registry.caFile!, password, tools };
}

async function tearDown(s: Setup): Promise<void> {
  await s.registry.stop();
  rmSync(s.dir, { recursive: true, force: true });
}

function access(s: Setup) {
  return { dockerConfigJson: readFileSync(s.configFile, 'utf8'), caPem: readFileSync(s.caFile, 'utf8') };
}

function registryFlags(s: Setup): string[] {
  return ['--registry-config', s.configFile, '--ca-file', s.caFile];
}

function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

const schemaFiles = {
  'schema.sql': 'create table account (id bigint primary key, email text not null);\n',
  'extra/index.sql': 'create index account_email on account (email);\n',
};

test('ptah schema push → oras pull gets the same files; oras push → ptah pull gets them with the ConfigMap content digest', async () => {
  const s = await setUp();
  try {
    const src = join(s.dir, 'src');
    writeTree(src, schemaFiles);
    const pushed = await ptah([
      'schema',
      'push',
      `${s.registry.host}/app/schema:v1`,
      src,
      ...registryFlags(s),
      '--annotation',
      'org.opencontainers.image.source=https://example.invalid/app',
      '--json',
    ]);
    assert.equal(pushed.code, 0, pushed.stderr);
    const doc = JSON.parse(pushed.stdout) as {
      artifact: { resolvedReference: string; artifactType: string };
      contentDigest: string;
      files: string[];
    };
    assert.equal(doc.artifact.artifactType, ARTIFACT_TYPE.schema);
    assert.deepEqual(doc.files, ['extra/index.sql', 'schema.sql']);
    const expectedDigest = buildManifest(
      Object.entries(schemaFiles).map(([path, c]) => ({ path, bytes: Buffer.from(c) })),
    ).contentDigest;
    assert.equal(doc.contentDigest, expectedDigest);
    assert.ok(!pushed.stdout.includes(s.password) && !pushed.stderr.includes(s.password));

    // oras reads the manifest ptah wrote: its artifact type, and the files under their titles.
    const orasOut = join(s.dir, 'oras-out');
    await run(s.tools.oras, [
      'pull',
      '--registry-config',
      s.configFile,
      '--ca-file',
      s.caFile,
      '-o',
      orasOut,
      doc.artifact.resolvedReference,
    ]);
    for (const [path, content] of Object.entries(schemaFiles))
      assert.equal(readFileSync(join(orasOut, path), 'utf8'), content);
    const fetched = await run(s.tools.oras, [
      'manifest',
      'fetch',
      '--registry-config',
      s.configFile,
      '--ca-file',
      s.caFile,
      doc.artifact.resolvedReference,
    ]);
    const manifest = JSON.parse(fetched.stdout) as {
      artifactType: string;
      config: { mediaType: string };
      annotations: Record<string, string>;
    };
    assert.equal(manifest.artifactType, ARTIFACT_TYPE.schema);
    assert.equal(manifest.config.mediaType, 'application/vnd.oci.empty.v1+json');
    assert.equal(manifest.annotations['org.opencontainers.image.source'], 'https://example.invalid/app');

    // oras pushes a migration directory, file by file, with ptah's artifact type.
    const migrations = {
      '20260101000000_init.sql': 'create table t (id int);\n',
      '20260102000000_more.sql': 'alter table t add column n int;\n',
    };
    const orasSrc = join(s.dir, 'oras-src');
    writeTree(orasSrc, migrations);
    await run(
      s.tools.oras,
      [
        'push',
        '--registry-config',
        s.configFile,
        '--ca-file',
        s.caFile,
        '--artifact-type',
        ARTIFACT_TYPE.migrations,
        '--annotation',
        'org.opencontainers.image.revision=abc123',
        `${s.registry.host}/app/migrations:v1`,
        ...Object.keys(migrations).map((f) => `${f}:application/sql`),
      ],
      { cwd: orasSrc },
    );
    const resolved = await ptah([
      'oci',
      'resolve',
      `oci://${s.registry.host}/app/migrations:v1`,
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(resolved.code, 0, resolved.stderr);
    const artifact = JSON.parse(resolved.stdout) as {
      resolvedReference: string;
      artifactType: string;
      mediaType: string;
      digest: string;
      size: number;
      requestedReference: string;
    };
    assert.equal(artifact.artifactType, ARTIFACT_TYPE.migrations);
    assert.equal(artifact.requestedReference, `oci://${s.registry.host}/app/migrations:v1`);
    assert.match(
      artifact.resolvedReference,
      new RegExp(`^${s.registry.host}/app/migrations@sha256:[0-9a-f]{64}$`),
    );

    const into = join(s.dir, 'pulled');
    const pulled = await ptah([
      'migrations',
      'pull',
      artifact.resolvedReference,
      '--dir',
      into,
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(pulled.code, 0, pulled.stderr);
    const pulledDoc = JSON.parse(pulled.stdout) as {
      contentDigest: string;
      files: string[];
      artifact: { digest: string };
    };
    assert.equal(
      pulledDoc.contentDigest,
      buildManifest(Object.entries(migrations).map(([path, c]) => ({ path, bytes: Buffer.from(c) })))
        .contentDigest,
    );
    assert.deepEqual(pulledDoc.files, Object.keys(migrations).sort());
    assert.deepEqual(readdirSync(into).sort(), Object.keys(migrations).sort());
    assert.equal(
      readFileSync(join(into, '20260101000000_init.sql'), 'utf8'),
      migrations['20260101000000_init.sql'],
    );

    // The wrong family is refused: a migrations artifact is not a schema.
    const wrong = await ptah([
      'schema',
      'pull',
      artifact.resolvedReference,
      '--dir',
      join(s.dir, 'wrong'),
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(wrong.code, EXIT.failed);
    assert.equal((JSON.parse(wrong.stdout) as { reason: string }).reason, 'WrongArtifactType');

    // An oras push of a directory packs it as one tarball: ptah refuses it rather than guess.
    await run(
      s.tools.oras,
      [
        'push',
        '--registry-config',
        s.configFile,
        '--ca-file',
        s.caFile,
        '--artifact-type',
        ARTIFACT_TYPE.schema,
        `${s.registry.host}/app/packed:v1`,
        'extra',
      ],
      { cwd: src },
    );
    const packedRef = JSON.parse(
      (await ptah(['oci', 'resolve', `${s.registry.host}/app/packed:v1`, ...registryFlags(s), '--json']))
        .stdout,
    ) as { resolvedReference: string };
    const packed = await ptah([
      'schema',
      'pull',
      packedRef.resolvedReference,
      '--dir',
      join(s.dir, 'packed'),
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(packed.code, EXIT.failed);
    assert.equal((JSON.parse(packed.stdout) as { reason: string }).reason, 'UnsafeContent');
  } finally {
    await tearDown(s);
  }
});

function policyFile(s: Setup, name: string, keys: Record<string, string>, extra = ''): string {
  const file = join(s.dir, `${name}.yaml`);
  const keyList = Object.entries(keys)
    .map(
      ([n, pem]) =>
        `    - name: ${n}\n      public_key: |\n${pem
          .trim()
          .split('\n')
          .map((l) => `        ${l}`)
          .join('\n')}\n`,
    )
    .join('');
  writeFileSync(
    file,
    `version: 1\nartifact_types: [${ARTIFACT_TYPE.schema}]\n${extra}signatures:\n  required_signers: 1\n  keys:\n${keyList}`,
  );
  return file;
}

async function verify(
  s: Setup,
  reference: string,
  policy: string,
): Promise<{ code: number | null; outcome: VerificationOutcome }> {
  const r = await ptah(['oci', 'verify', reference, '--policy', policy, ...registryFlags(s), '--json']);
  assert.ok(r.code === EXIT.ok || r.code === EXIT.refused, `exit ${r.code}: ${r.stderr}`);
  return { code: r.code, outcome: JSON.parse(r.stdout) as VerificationOutcome };
}

const rules = (o: VerificationOutcome) =>
  o.findings
    .filter((f) => (f as { blocking?: boolean }).blocking !== false)
    .map((f) => f.rule)
    .sort();

test('cosign signatures (key pair, no transparency log) are verified cryptographically against the policy keys', async () => {
  const s = await setUp();
  try {
    const cosignEnv = {
      ...process.env,
      HOME: s.dir,
      DOCKER_CONFIG: s.dockerConfigDir,
      COSIGN_PASSWORD: 'test-key-password',
      COSIGN_YES: 'true',
    };
    const cosign = (args: string[]) => run(s.tools.cosign, args, { env: cosignEnv, cwd: s.dir });
    await cosign(['generate-key-pair', '--output-key-prefix', 'release']);
    await cosign(['generate-key-pair', '--output-key-prefix', 'other']);
    const releasePub = readFileSync(join(s.dir, 'release.pub'), 'utf8');
    const otherPub = readFileSync(join(s.dir, 'other.pub'), 'utf8');

    const src = join(s.dir, 'src');
    writeTree(src, schemaFiles);
    const push = async (tag: string, extraFile?: string) => {
      if (extraFile !== undefined) writeFileSync(join(src, 'extra', 'tag.sql'), extraFile);
      const r = await ptah([
        'schema',
        'push',
        `${s.registry.host}/app/signed:${tag}`,
        src,
        ...registryFlags(s),
        '--json',
      ]);
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { artifact: { resolvedReference: string; digest: string } }).artifact;
    };
    const signed = await push('v1');
    const trusted = policyFile(s, 'trusted', { 'release-2026': releasePub });
    const untrustedOnly = policyFile(s, 'other-key', { 'someone-else': otherPub });

    // Unsigned: refused, the finding says no signature is attached.
    const unsigned = await verify(s, signed.resolvedReference, trusted);
    assert.equal(unsigned.code, EXIT.refused);
    assert.equal(unsigned.outcome.satisfied, false);
    assert.deepEqual(rules(unsigned.outcome), ['signature-missing', 'signer-count']);

    await cosign([
      'sign',
      '--key',
      join(s.dir, 'release.key'),
      '--tlog-upload=false',
      '--registry-cacert',
      s.caFile,
      signed.resolvedReference,
    ]);
    const ok = await verify(s, signed.resolvedReference, trusted);
    assert.equal(ok.code, EXIT.ok, JSON.stringify(ok.outcome.findings));
    assert.equal(ok.outcome.satisfied, true);
    assert.deepEqual(ok.outcome.signers, ['release-2026']);
    assert.equal(ok.outcome.artifact.digest, signed.digest);

    // Signed by a key the policy does not list.
    const other = await verify(s, signed.resolvedReference, untrustedOnly);
    assert.equal(other.code, EXIT.refused);
    assert.deepEqual(rules(other.outcome), ['signature-untrusted', 'signer-count']);
    assert.deepEqual(other.outcome.signers, []);

    // Two signers required, one signed: refused on the count alone.
    const two = join(s.dir, 'two.yaml');
    writeFileSync(
      two,
      readFileSync(
        policyFile(s, 'both', { 'release-2026': releasePub, 'someone-else': otherPub }),
        'utf8',
      ).replace('required_signers: 1', 'required_signers: 2'),
    );
    const short = await verify(s, signed.resolvedReference, two);
    assert.equal(short.code, EXIT.refused);
    assert.deepEqual(rules(short.outcome), ['signer-count']);

    const client = new RegistryClient(access(s));
    const ref = parseReference(signed.resolvedReference);
    const sigTag = `${signed.digest.replace(':', '-')}.sig`;
    const sig = await client.getManifest(ref, sigTag);
    assert.equal(sig.manifest.kind, 'manifest');
    const layer = sig.manifest.kind === 'manifest' ? sig.manifest.layers[0]! : assert.fail();

    // A signature whose payload names another digest: cosign signs artifact v2, its .sig manifest is copied
    // to v1's signature tag. The signature is genuine, by a listed key, over the wrong artifact.
    const second = await push('v2', 'select 2;\n');
    await cosign([
      'sign',
      '--key',
      join(s.dir, 'release.key'),
      '--tlog-upload=false',
      '--registry-cacert',
      s.caFile,
      second.resolvedReference,
    ]);
    const secondSig = await client.getManifest(ref, `${second.digest.replace(':', '-')}.sig`);
    await client.putManifest(ref, sigTag, secondSig.bytes, secondSig.mediaType);
    const moved = await verify(s, signed.resolvedReference, trusted);
    assert.equal(moved.code, EXIT.refused);
    assert.deepEqual(rules(moved.outcome), ['signature-digest', 'signer-count']);
    assert.match(
      moved.outcome.findings.find((f) => f.rule === 'signature-digest')!.message,
      new RegExp(second.digest),
    );

    // A tampered payload: the same signature over a payload with one field changed.
    const payload = Buffer.from(await client.getBlob(ref, layer, 1 << 20));
    const tampered = Buffer.from(
      payload.toString('utf8').replace(/"optional":[^}]*}?/, '"optional":{"tampered":"yes"}'),
    );
    assert.notDeepEqual(tampered, payload);
    const tamperedDigest = await client.pushBlob(ref, tampered);
    const doc = JSON.parse(Buffer.from(sig.bytes).toString('utf8')) as {
      layers: { digest: string; size: number }[];
    };
    doc.layers[0] = { ...doc.layers[0]!, digest: tamperedDigest, size: tampered.length };
    await client.putManifest(ref, sigTag, Buffer.from(JSON.stringify(doc)), sig.mediaType);
    const changed = await verify(s, signed.resolvedReference, trusted);
    assert.equal(changed.code, EXIT.refused);
    assert.deepEqual(rules(changed.outcome), ['signature-untrusted', 'signer-count']);

    // The genuine signature back: accepted again. Artifact type and annotation rules are checked too.
    await client.putManifest(ref, sigTag, sig.bytes, sig.mediaType);
    const strict = policyFile(
      s,
      'strict',
      { 'release-2026': releasePub },
      'require_annotations: [org.opencontainers.image.source]\nrequire_digest_pin: true\n',
    );
    const strictRun = await verify(s, `${s.registry.host}/app/signed:v1`, strict);
    assert.equal(strictRun.code, EXIT.refused);
    assert.deepEqual(rules(strictRun.outcome), ['digest-pin', 'required-annotation']);
    assert.deepEqual(strictRun.outcome.signers, ['release-2026']);
  } finally {
    await tearDown(s);
  }
});

test('Sigstore bundles that cosign attaches as referrers (--new-bundle-format) are verified against the policy keys', async () => {
  const s = await setUp();
  try {
    const cosignEnv = {
      ...process.env,
      HOME: s.dir,
      DOCKER_CONFIG: s.dockerConfigDir,
      COSIGN_PASSWORD: 'test-key-password',
      COSIGN_YES: 'true',
    };
    const cosign = (args: string[]) => run(s.tools.cosign, args, { env: cosignEnv, cwd: s.dir });
    await cosign(['generate-key-pair', '--output-key-prefix', 'release']);
    await cosign(['generate-key-pair', '--output-key-prefix', 'other']);
    const src = join(s.dir, 'src');
    writeTree(src, schemaFiles);
    const pushed = await ptah([
      'schema',
      'push',
      `${s.registry.host}/app/bundled:v1`,
      src,
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(pushed.code, 0, pushed.stderr);
    const artifact = (
      JSON.parse(pushed.stdout) as { artifact: { resolvedReference: string; digest: string } }
    ).artifact;
    await cosign([
      'sign',
      '--new-bundle-format',
      '--key',
      join(s.dir, 'release.key'),
      '--tlog-upload=false',
      '--registry-cacert',
      s.caFile,
      artifact.resolvedReference,
    ]);

    // This registry has no referrers API: cosign wrote the sha256-<hex> index, and ptah read it.
    const inspected = await ptah([
      'oci',
      'inspect',
      artifact.resolvedReference,
      ...registryFlags(s),
      '--json',
    ]);
    assert.equal(inspected.code, 0, inspected.stderr);
    const view = JSON.parse(inspected.stdout) as {
      referrersVia: string;
      referrers: unknown[];
      signatureTag: string | null;
    };
    assert.equal(view.referrersVia, 'tag');
    assert.equal(view.referrers.length, 1);
    assert.equal(view.signatureTag, null);

    const trusted = policyFile(s, 'trusted', {
      'release-2026': readFileSync(join(s.dir, 'release.pub'), 'utf8'),
    });
    const ok = await verify(s, artifact.resolvedReference, trusted);
    assert.equal(ok.code, EXIT.ok, JSON.stringify(ok.outcome.findings));
    assert.deepEqual(ok.outcome.signers, ['release-2026']);

    const other = await verify(
      s,
      artifact.resolvedReference,
      policyFile(s, 'other', { 'someone-else': readFileSync(join(s.dir, 'other.pub'), 'utf8') }),
    );
    assert.equal(other.code, EXIT.refused);
    assert.deepEqual(rules(other.outcome), ['signature-untrusted', 'signer-count']);

    // A genuine bundle over another artifact, re-attached to this one: a referrer manifest naming this
    // artifact as its subject, carrying the bundle cosign made for v2, listed in this artifact's index.
    writeFileSync(join(src, 'extra', 'v2.sql'), 'select 2;\n');
    const v2 = await ptah([
      'schema',
      'push',
      `${s.registry.host}/app/bundled:v2`,
      src,
      ...registryFlags(s),
      '--json',
    ]);
    const second = (JSON.parse(v2.stdout) as { artifact: { resolvedReference: string; digest: string } })
      .artifact;
    await cosign([
      'sign',
      '--new-bundle-format',
      '--key',
      join(s.dir, 'release.key'),
      '--tlog-upload=false',
      '--registry-cacert',
      s.caFile,
      second.resolvedReference,
    ]);
    const client = new RegistryClient(access(s));
    const ref = parseReference(artifact.resolvedReference);
    const [secondEntry] = (await client.referrers(ref, second.digest)).descriptors;
    const secondReferrer = await client.getManifest(ref, secondEntry!.digest);
    const moved = JSON.parse(Buffer.from(secondReferrer.bytes).toString('utf8')) as {
      subject: { digest: string; size: number };
    };
    const own = await client.getManifest(ref, artifact.digest);
    moved.subject = { ...moved.subject, digest: artifact.digest, size: own.bytes.length };
    const movedBytes = Buffer.from(JSON.stringify(moved));
    const movedDigest = await client.putManifest(
      ref,
      `sha256:${createHash('sha256').update(movedBytes).digest('hex')}`,
      movedBytes,
      secondReferrer.mediaType,
    );
    const indexTag = artifact.digest.replace(':', '-');
    const index = await client.getManifest(ref, indexTag);
    const indexDoc = JSON.parse(Buffer.from(index.bytes).toString('utf8')) as { manifests: unknown[] };
    indexDoc.manifests = [{ ...secondEntry, digest: movedDigest, size: movedBytes.length }];
    await client.putManifest(ref, indexTag, Buffer.from(JSON.stringify(indexDoc)), index.mediaType);
    const covered = await verify(s, artifact.resolvedReference, trusted);
    assert.equal(covered.code, EXIT.refused);
    assert.deepEqual(rules(covered.outcome), ['signature-digest', 'signer-count']);
    assert.match(
      covered.outcome.findings.find((f) => f.rule === 'signature-digest')!.message,
      new RegExp(second.digest),
    );
  } finally {
    await tearDown(s);
  }
});
