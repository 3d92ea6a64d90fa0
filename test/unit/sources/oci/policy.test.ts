// The verification policy parser and the signature primitives, on keys made here with node:crypto.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { checkBundle, dssePae } from '../../../../src/sources/oci/bundle.ts';
import { keyThatSigned, signedDigestOf } from '../../../../src/sources/oci/cosign.ts';
import { parseVerificationPolicy, PolicyError, type PolicyKey } from '../../../../src/sources/oci/policy.ts';

const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const ed = generateKeyPairSync('ed25519');
const pem = (k: typeof ec.publicKey) => k.export({ format: 'pem', type: 'spki' }).toString();
const indent = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => `        ${l}`)
    .join('\n');

function policyYaml(
  extra = '',
  keys = `    - name: release\n      public_key: |\n${indent(pem(ec.publicKey))}\n`,
): string {
  return `version: 1\nartifact_types: [application/vnd.ptah.schema.v1]\n${extra}signatures:\n  keys:\n${keys}`;
}

describe('parseVerificationPolicy', () => {
  it('reads types, annotations, pin and keys, with one signer required by default', () => {
    const p = parseVerificationPolicy({
      'policy.yaml': policyYaml(
        'require_annotations:\n  org.opencontainers.image.source: https://x\nrequire_digest_pin: true\n',
      ),
    });
    assert.equal(p.sourceKey, 'policy.yaml');
    assert.deepEqual(p.artifactTypes, ['application/vnd.ptah.schema.v1']);
    assert.deepEqual(p.requiredAnnotations, [
      { name: 'org.opencontainers.image.source', value: 'https://x' },
    ]);
    assert.equal(p.requireDigestPin, true);
    assert.equal(p.signatures?.requiredSigners, 1);
    assert.equal(p.signatures?.keys[0]?.algorithm, 'ecdsa-p256');
    assert.match(p.signatures?.keys[0]?.keyId ?? '', /^sha256:[0-9a-f]{64}$/);
  });
  it('takes JSON and the only key of a ConfigMap', () => {
    const p = parseVerificationPolicy({
      anything: JSON.stringify({ version: 1, artifact_types: ['application/vnd.ptah.migrations.v1'] }),
    });
    assert.equal(p.signatures, undefined);
    assert.equal(p.sourceKey, 'anything');
  });
  it('refuses, naming the field, what would relax or break the policy', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ 'policy.yaml': 'version: 2\nartifact_types: [a/b]' }, /version must be 1/],
      [{ 'policy.yaml': 'version: 1\nartifact_types: []' }, /artifact_types must list/],
      [
        { 'policy.yaml': 'version: 1\nartifact_types: [a/b]\nrequire_signatures: true' },
        /unknown field "require_signatures"/,
      ],
      [
        { 'policy.yaml': policyYaml().replace('keys:', 'required_signers: 2\n  keys:') },
        /required_signers is 2 but only 1 keys/,
      ],
      [
        {
          'policy.yaml': policyYaml(
            '',
            '    - name: bad\n      public_key: |\n        -----BEGIN PUBLIC KEY-----\n        AAAA\n        -----END PUBLIC KEY-----\n',
          ),
        },
        /not a readable PEM public key/,
      ],
      [
        {
          'policy.yaml': policyYaml(
            '',
            `    - name: a\n      public_key: |\n${indent(pem(ec.publicKey))}\n    - name: b\n      public_key: |\n${indent(pem(ec.publicKey))}\n`,
          ),
        },
        /same public key twice/,
      ],
      [{ a: 'x', b: 'y' }, /no key policy.yaml/],
      [{ 'policy.yaml': '{' }, /not YAML or JSON/],
    ];
    for (const [data, message] of cases)
      assert.throws(
        () => parseVerificationPolicy(data),
        (e: unknown) => e instanceof PolicyError && message.test(e.message),
        message.source,
      );
  });
});

describe('signature primitives', () => {
  const keys = parseVerificationPolicy({
    'policy.yaml': policyYaml(
      '',
      `    - name: ec\n      public_key: |\n${indent(pem(ec.publicKey))}\n    - name: ed\n      public_key: |\n${indent(pem(ed.publicKey))}\n`,
    ),
  }).signatures!.keys as PolicyKey[];
  const digest = `sha256:${'ab'.repeat(32)}`;
  const payload = Buffer.from(
    JSON.stringify({
      critical: {
        identity: { 'docker-reference': 'r/x' },
        image: { 'docker-manifest-digest': digest },
        type: 'cosign container image signature',
      },
      optional: null,
    }),
  );

  it('finds the key that signed, for ECDSA and Ed25519, and none for changed bytes', () => {
    assert.equal(keyThatSigned(payload, sign('sha256', payload, ec.privateKey), keys)?.name, 'ec');
    assert.equal(keyThatSigned(payload, sign(null, payload, ed.privateKey), keys)?.name, 'ed');
    const changed = Buffer.from(payload);
    changed[10] = changed[10]! ^ 1;
    assert.equal(keyThatSigned(changed, sign('sha256', payload, ec.privateKey), keys), undefined);
    assert.equal(keyThatSigned(payload, Buffer.from('garbage'), keys), undefined);
  });
  it('reads the signed digest of a simple-signing payload', () => {
    assert.deepEqual(signedDigestOf(payload), { digest });
    assert.ok('why' in signedDigestOf(Buffer.from('{"critical":{"type":"other"}}')));
  });
  it('checks a DSSE bundle: valid, another digest, another key', () => {
    const statement = Buffer.from(
      JSON.stringify({
        _type: 'https://in-toto.io/Statement/v1',
        subject: [{ digest: { sha256: 'ab'.repeat(32) } }],
        predicateType: 'https://sigstore.dev/cosign/sign/v1',
      }),
    );
    const bundle = (body: Buffer, key = ec.privateKey) =>
      Buffer.from(
        JSON.stringify({
          dsseEnvelope: {
            payload: body.toString('base64'),
            payloadType: 'application/vnd.in-toto+json',
            signatures: [
              { sig: sign('sha256', dssePae('application/vnd.in-toto+json', body), key).toString('base64') },
            ],
          },
        }),
      );
    assert.equal(checkBundle(bundle(statement), digest, Buffer.alloc(0), keys).verdict, 'valid');
    assert.equal(
      checkBundle(bundle(statement), `sha256:${'cd'.repeat(32)}`, Buffer.alloc(0), keys).verdict,
      'otherDigest',
    );
    const stranger = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    assert.equal(
      checkBundle(bundle(statement, stranger), digest, Buffer.alloc(0), keys).verdict,
      'untrusted',
    );
  });
});
