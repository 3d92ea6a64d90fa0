import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { sha256Digest } from '../../../src/api/digest.ts';
import {
  coordinationDigest,
  FingerprintError,
  planName,
  policyFingerprint,
  realmLeaseName,
  schemaPlanFingerprint,
} from '../../../src/api/fingerprint.ts';
import { planBinding, type PlanBinding } from '../../../src/api/ptah-schema-plan.ts';
import { validate } from '../../../src/api/schema-dsl.ts';

const d = (s: string) => sha256Digest(s);
const binding: PlanBinding = {
  contractVersion: 3,
  schemaUID: '6f1c1d2e-0000-4000-8000-000000000001',
  planContentDigest: d('plan bytes'),
  sourceType: 'ConfigMap',
  configMapUID: '6f1c1d2e-0000-4000-8000-000000000002',
  verificationPolicyUID: '6f1c1d2e-0000-4000-8000-000000000003',
  verificationPolicyDigest: d('policy bytes'),
  sourceDigest: d('repository and path'),
  sourcePolicyUID: '6f1c1d2e-0000-4000-8000-000000000004',
  sourcePolicyDigest: d('source policy data'),
  contentDigest: d('manifest'),
  coordinationDigest: d('realm'),
  targetIdentityDigest: d('route'),
  observedStateFingerprint: d('observed'),
  desiredStateFingerprint: d('desired'),
  policyFingerprint: policyFingerprint({ apply: 'OnApproval' }),
  executionEpoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
  managerRevision: 'abc1234',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
  runnerProtocolVersion: 1,
  dialect: 'postgres',
  destructive: false,
  statementCount: 3,
};

/** Another valid value of the same field, whatever its type. */
function changed(key: keyof PlanBinding, value: unknown): unknown {
  if (key === 'sourceType') return 'Git';
  if (key === 'dialect') return 'mysql';
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'string' && value.startsWith('sha256:')) return d(`${value} changed`);
  return `${String(value)}-changed`;
}

describe('schema plan fingerprint', () => {
  it('the fixture is a valid binding', () => {
    assert.deepEqual(validate(planBinding, binding).errors, []);
  });

  it('the fixture sets every binding the plan schema declares', () => {
    const declared = Object.keys(planBinding.openApi().properties ?? {}).sort();
    assert.deepEqual(Object.keys(binding).sort(), declared);
  });

  const base = schemaPlanFingerprint(binding);
  for (const key of Object.keys(binding) as (keyof PlanBinding)[]) {
    if (key === 'contractVersion') continue;
    it(`changes when ${key} changes`, () => {
      const other = { ...binding, [key]: changed(key, binding[key]) } as PlanBinding;
      if (key === 'sourceType') Object.assign(other, { configMapUID: binding.configMapUID });
      assert.notEqual(schemaPlanFingerprint(other), base);
    });
  }

  it('is the same for the same bindings written in another order', () => {
    const reordered = Object.fromEntries(Object.entries(binding).reverse()) as PlanBinding;
    assert.equal(schemaPlanFingerprint(reordered), base);
  });

  it('refuses another contract version and a ConfigMap source without its UID', () => {
    assert.throws(() => schemaPlanFingerprint({ ...binding, contractVersion: 2 }), FingerprintError);
    assert.throws(() => schemaPlanFingerprint({ ...binding, configMapUID: undefined }), FingerprintError);
  });

  it('refuses a Git source without the digest of its repository and path', () => {
    const git = { ...binding, sourceType: 'Git' as const };
    assert.throws(() => schemaPlanFingerprint({ ...git, sourceDigest: undefined }), FingerprintError);
    assert.notEqual(
      schemaPlanFingerprint(git),
      schemaPlanFingerprint({ ...git, sourceDigest: d('other path') }),
    );
  });

  it('refuses an OCI source whose plan does not bind the verification policy UID and digest', () => {
    const oci: PlanBinding = { ...binding, sourceType: 'OCI', configMapUID: undefined };
    assert.match(schemaPlanFingerprint(oci), /^sha256:/);
    for (const missing of ['verificationPolicyUID', 'verificationPolicyDigest'] as const) {
      assert.throws(() => schemaPlanFingerprint({ ...oci, [missing]: undefined }), FingerprintError);
    }
  });

  it('names the plan from the fingerprint', () => {
    assert.match(planName(base), /^ptah-plan-[0-9a-f]{24}$/);
    assert.equal(planName(base), `ptah-plan-${base.slice(7, 31)}`);
  });
});

describe('policy fingerprint', () => {
  it('treats defaults, set order, duplicates and table-name case as the same policy', () => {
    assert.equal(
      policyFingerprint(undefined),
      policyFingerprint({ apply: 'OnApproval', allowDestructive: false }),
    );
    assert.equal(
      policyFingerprint({ protectedTables: ['b', 'A', 'a'], exclude: ['y', 'x'] }),
      policyFingerprint({ protectedTables: ['a', 'b'], exclude: ['x', 'y', 'x'] }),
    );
  });

  it('folds protected tables as PostgreSQL does: unquoted folds, quoted keeps case', () => {
    const fp = (names: string[]) => policyFingerprint({ protectedTables: names });
    assert.equal(fp(['Orders']), fp(['orders']), 'Orders and orders are one table');
    assert.equal(fp(['Orders']), fp(['"orders"']), 'unquoted Orders is the quoted lower-case name');
    assert.equal(fp(['Sales.Orders']), fp(['sales."orders"']));
    assert.notEqual(fp(['"Orders"']), fp(['orders']), '"Orders" is another table than orders');
    assert.notEqual(fp(['"Orders"']), fp(['Orders']));
    assert.notEqual(fp(['public.orders']), fp(['orders']), 'a qualified name protects less');
  });

  const changes: [string, Parameters<typeof policyFingerprint>[0]][] = [
    ['apply', { apply: 'Always' }],
    ['allowDestructive', { allowDestructive: true }],
    ['protectedTables', { protectedTables: ['orders'] }],
    ['exclude', { exclude: ['audit_log'] }],
  ];
  for (const [field, policy] of changes) {
    it(`changes when ${field} changes`, () => {
      assert.notEqual(policyFingerprint(policy), policyFingerprint(undefined));
    });
  }
});

describe('coordination digest', () => {
  const realm = { engine: 'postgres' as const, namespace: 'shop', coordinationKey: 'orders' };
  for (const [field, value] of [
    ['engine', 'mysql'],
    ['namespace', 'other'],
    ['coordinationKey', 'billing'],
  ] as const) {
    it(`changes when ${field} changes`, () => {
      assert.notEqual(coordinationDigest({ ...realm, [field]: value }), coordinationDigest(realm));
    });
  }

  it('names a Lease that is a DNS label', () => {
    const name = realmLeaseName(coordinationDigest(realm));
    assert.match(name, /^ptah-t-[a-z2-7]{52}$/);
    assert.ok(name.length <= 63);
  });
});

describe('fingerprint contract stability', () => {
  // Written out by hand: if the canonical form ever changes, every stored plan and approval retires on
  // upgrade, so that must be a deliberate contract change, not a side effect.
  it('is the SHA-256 of the sorted, whitespace-free JSON of the binding', () => {
    // A ConfigMap source's binding, as contract version 2 has always written it.
    const {
      verificationPolicyUID: _u,
      verificationPolicyDigest: _d,
      sourceDigest: _s,
      sourcePolicyUID: _pu,
      sourcePolicyDigest: _pd,
      ...configMapBinding
    } = binding;
    const small = { ...configMapBinding, managerImage: 'm', runnerImage: 'r' };
    const text =
      '{"configMapUID":"6f1c1d2e-0000-4000-8000-000000000002","contentDigest":"' +
      d('manifest') +
      '",' +
      '"contractVersion":3,"controllerStateVersion":1,"coordinationDigest":"' +
      d('realm') +
      '",' +
      '"desiredStateFingerprint":"' +
      d('desired') +
      '","destructive":false,"dialect":"postgres",' +
      `"executionEpoch":"v1-${'e'.repeat(32)}",` +
      '"managerImage":"m","managerRevision":"abc1234","observedStateFingerprint":"' +
      d('observed') +
      '",' +
      '"planContentDigest":"' +
      d('plan bytes') +
      '","policyFingerprint":"' +
      binding.policyFingerprint +
      '",' +
      '"ptahVersion":"0.1.0","runnerImage":"r","runnerProtocolVersion":1,' +
      '"schemaUID":"6f1c1d2e-0000-4000-8000-000000000001","sourceType":"ConfigMap","statementCount":3,' +
      '"targetIdentityDigest":"' +
      d('route') +
      '"}';
    assert.equal(schemaPlanFingerprint(small), `sha256:${createHash('sha256').update(text).digest('hex')}`);
  });
});
