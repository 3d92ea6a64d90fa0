/**
 * The source policy document (src/sources/source-policy.ts) and the checks both families make with it
 * (src/controller/snapshot/source-policy.ts): strict parsing with the field named, and refusals that name
 * the rule, the policy and the value refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkConfigMapName,
  checkGitHost,
  checkSelectedSize,
  parseSourcePolicy,
  SOURCE_POLICY_KEY,
  sourcePolicyDigest,
} from '../../../src/sources/source-policy.ts';
import {
  checkSource,
  configMapNameCheck,
  gitHostCheck,
  samePolicy,
  selectedSizeCheck,
  type SourcePolicyRead,
} from '../../../src/controller/snapshot/source-policy.ts';

const doc = (text: string) => ({ [SOURCE_POLICY_KEY]: text });

const FULL = `version: 1
git:
  allowed_hosts: [git.example.com, "*.corp.example", "127.0.0.1:8443"]
config_map:
  allowed_names: [orders-schema, "orders-*"]
max_selected_bytes: 1000
`;

describe('source policy document', () => {
  it('parses every rule, hosts in lower case', () => {
    const p = parseSourcePolicy(doc(FULL.replace('git.example.com', 'Git.Example.com')));
    assert.deepEqual(p, {
      version: 1,
      allowedGitHosts: ['git.example.com', '*.corp.example', '127.0.0.1:8443'],
      allowedConfigMapNames: ['orders-schema', 'orders-*'],
      maxSelectedBytes: 1000,
    });
  });

  it('accepts JSON and a policy with no rules (it restricts nothing)', () => {
    assert.deepEqual(parseSourcePolicy(doc('{"version": 1}')), { version: 1 });
  });

  it('refuses an unknown field, naming it and what is allowed', () => {
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\ngit:\n  allowed_host: [a.example]\n')),
      /source-policy\.yaml: git has the unknown field "allowed_host" \(allowed: allowed_hosts\)/,
    );
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\nmax_bytes: 5\n')),
      /the top level has the unknown field "max_bytes"/,
    );
  });

  it('refuses another version, a bad host, a bad size and a bad name pattern', () => {
    assert.throws(() => parseSourcePolicy(doc('version: 2\n')), /source-policy\.yaml: version must be 1/);
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\ngit:\n  allowed_hosts: ["https://x.example"]\n')),
      /git\.allowed_hosts\[0\] is not a host/,
    );
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\nmax_selected_bytes: -3\n')),
      /max_selected_bytes must be a whole number of bytes, at least 1/,
    );
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\nconfig_map:\n  allowed_names: ["Orders"]\n')),
      /config_map\.allowed_names\[0\] is not a ConfigMap name pattern/,
    );
    assert.throws(
      () => parseSourcePolicy(doc('version: 1\nconfig_map:\n  allowed_names: orders\n')),
      /config_map\.allowed_names must be a list/,
    );
  });

  it('needs exactly the one key, and YAML', () => {
    assert.throws(() => parseSourcePolicy({}), /exactly one key, source-policy\.yaml/);
    assert.throws(
      () => parseSourcePolicy({ 'policy.yaml': 'version: 1' }),
      /exactly one key, source-policy\.yaml, not policy\.yaml/,
    );
    assert.throws(() => parseSourcePolicy(doc('version: [1')), /source-policy\.yaml is not YAML or JSON/);
  });

  it('binds the data by digest: an edit gives another digest, key order does not', () => {
    assert.notEqual(sourcePolicyDigest(doc(FULL)), sourcePolicyDigest(doc(`${FULL}\n`)));
    assert.equal(sourcePolicyDigest({ a: '1', b: '2' }), sourcePolicyDigest({ b: '2', a: '1' }));
  });
});

describe('source policy rules', () => {
  const p = parseSourcePolicy(doc(FULL));

  it('git.allowed_hosts: exact host, *.domain, and host:port pins the port', () => {
    assert.equal(checkGitHost(p, 'https://git.example.com/org/repo.git'), undefined);
    assert.equal(checkGitHost(p, 'ssh://git@GIT.example.com:2222/org/repo.git'), undefined);
    assert.equal(checkGitHost(p, 'git@a.b.corp.example:org/repo.git'), undefined);
    assert.equal(checkGitHost(p, 'http://127.0.0.1:8443/repo.git'), undefined);
    assert.deepEqual(checkGitHost(p, 'http://127.0.0.1:8444/repo.git'), {
      rule: 'git.allowed_hosts',
      message: 'host 127.0.0.1:8444 is not among git.example.com, *.corp.example, 127.0.0.1:8443',
    });
    // A suffix is a domain, not a string: evilcorp.example is not under corp.example.
    assert.equal(checkGitHost(p, 'https://evilcorp.example/r.git')?.rule, 'git.allowed_hosts');
    assert.equal(checkGitHost(p, 'https://corp.example/r.git')?.rule, 'git.allowed_hosts');
    assert.equal(checkGitHost(p, 'not a url')?.rule, 'git.allowed_hosts');
  });

  it('config_map.allowed_names: the whole name must match a pattern', () => {
    assert.equal(checkConfigMapName(p, 'orders-schema'), undefined);
    assert.equal(checkConfigMapName(p, 'orders-v2'), undefined);
    assert.deepEqual(checkConfigMapName(p, 'billing'), {
      rule: 'config_map.allowed_names',
      message: 'ConfigMap name billing matches none of orders-schema, orders-*',
    });
    assert.equal(checkConfigMapName(p, 'xorders-v2')?.rule, 'config_map.allowed_names');
  });

  it('max_selected_bytes: at the limit passes, over it refuses', () => {
    assert.equal(checkSelectedSize(p, 1000), undefined);
    assert.deepEqual(checkSelectedSize(p, 1001), {
      rule: 'max_selected_bytes',
      message: 'the selected files hold 1001 bytes, over the limit of 1000',
    });
  });

  it('an absent rule restricts nothing', () => {
    const none = parseSourcePolicy(doc('version: 1'));
    assert.equal(checkGitHost(none, 'https://anywhere.example/r.git'), undefined);
    assert.equal(checkConfigMapName(none, 'anything'), undefined);
    assert.equal(checkSelectedSize(none, 10 ** 9), undefined);
  });
});

describe('checkSource', () => {
  const read: SourcePolicyRead = {
    ok: true,
    name: 'sources',
    uid: 'u-1',
    digest: sourcePolicyDigest(doc(FULL)),
    policy: parseSourcePolicy(doc(FULL)),
  };

  it('names the rule, the policy and the value, and stops at the first refusal', () => {
    const v = checkSource(read, configMapNameCheck('billing'), selectedSizeCheck(5000, 'x'));
    assert.deepEqual(v, {
      ok: false,
      reason: 'SourcePolicyRefused',
      message:
        'source policy sources refused ConfigMap billing: config_map.allowed_names: ConfigMap name billing matches none of orders-schema, orders-*',
    });
  });

  it('passes with the policy to record, or nothing when none is named', () => {
    assert.deepEqual(checkSource(read, gitHostCheck('https://git.example.com/r.git')), {
      ok: true,
      policy: { name: 'sources', uid: 'u-1', digest: read.digest },
    });
    assert.deepEqual(checkSource(undefined, configMapNameCheck('billing')), {
      ok: true,
      policy: undefined,
    });
  });

  it('a policy that could not be read refuses every source', () => {
    const missing: SourcePolicyRead = {
      ok: false,
      reason: 'SourcePolicyNotFound',
      message: 'source policy ConfigMap sources does not exist',
    };
    assert.deepEqual(checkSource(missing, configMapNameCheck('orders-schema')), missing);
  });

  it('samePolicy: bound by UID and digest; absent on both sides agree', () => {
    const ref = { name: 'sources', uid: 'u-1', digest: read.digest };
    assert.ok(samePolicy(ref, read));
    assert.ok(!samePolicy({ ...ref, digest: sourcePolicyDigest({}) }, read));
    assert.ok(!samePolicy({ ...ref, uid: 'u-2' }, read));
    assert.ok(samePolicy(undefined, undefined));
    assert.ok(!samePolicy(ref, undefined));
    assert.ok(!samePolicy(undefined, read));
  });
});
