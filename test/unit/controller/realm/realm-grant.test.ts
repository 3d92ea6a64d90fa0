import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  realmVerdict,
  type RealmClaimant,
  type RealmGrant,
  type RealmVerdict,
} from '../../../../src/controller/realm/realm-grant.ts';

const granted = (name: string, uid: string, extra: Partial<RealmClaimant> = {}): RealmClaimant => ({
  family: 'PtahSchema',
  namespace: 'shop',
  name,
  uid,
  engine: 'postgres',
  realm: { kind: 'PtahRealm', name: 'orders' },
  shared: false,
  active: true,
  ...extra,
});

const realm = (extra: Partial<RealmGrant> = {}): RealmGrant => ({
  name: 'orders',
  engine: 'postgresql',
  namespaces: ['shop', 'billing'],
  sharing: 'Exclusive',
  ...extra,
});

const NOT_AUTHORIZED_SHOP =
  'PtahRealm orders does not admit namespace shop for engine postgres: an admin must create it with that engine and list shop in its spec.namespaces';

interface Row {
  readonly name: string;
  readonly self: RealmClaimant;
  readonly grant: RealmGrant | undefined;
  readonly others: readonly RealmClaimant[];
  readonly want: RealmVerdict;
}

const rows: readonly Row[] = [
  {
    name: 'a listed namespace of the realm engine (an alias) is admitted',
    self: granted('a', 'u1'),
    grant: realm(),
    others: [],
    want: { admitted: true },
  },
  {
    name: 'an unlisted namespace is not authorized, naming the realm and the namespace',
    self: granted('a', 'u1'),
    grant: realm({ namespaces: ['billing'] }),
    others: [],
    want: { admitted: false, reason: 'RealmNotAuthorized', message: NOT_AUTHORIZED_SHOP },
  },
  {
    name: 'a realm of another engine gives the same message as an unlisted namespace',
    self: granted('a', 'u1'),
    grant: realm({ engine: 'mysql' }),
    others: [],
    want: { admitted: false, reason: 'RealmNotAuthorized', message: NOT_AUTHORIZED_SHOP },
  },
  {
    name: 'a missing realm gives the same message too',
    self: granted('a', 'u1'),
    grant: undefined,
    others: [],
    want: { admitted: false, reason: 'RealmNotAuthorized', message: NOT_AUTHORIZED_SHOP },
  },
  {
    name: 'an Exclusive realm with a second claimant in another namespace refuses both',
    self: granted('a', 'u1'),
    grant: realm(),
    others: [granted('b', 'u2', { namespace: 'billing', family: 'PtahMigration', shared: true })],
    want: {
      admitted: false,
      reason: 'RealmConflict',
      message:
        'PtahRealm orders is Exclusive and 2 resources claim it (PtahMigration billing/b, PtahSchema shop/a); all are refused until one remains or an admin makes it Shared',
    },
  },
  {
    name: 'a Shared realm with one non-consenting claimant refuses all, naming the one that did not consent',
    self: granted('a', 'u1', { shared: true }),
    grant: realm({ sharing: 'Shared' }),
    others: [granted('b', 'u2', { family: 'PtahMigration' })],
    want: {
      admitted: false,
      reason: 'RealmConflict',
      message:
        'PtahRealm orders is claimed by 2 resources (PtahMigration shop/b, PtahSchema shop/a) and PtahMigration shop/b did not consent to share it; all are refused until every claimant sets spec.target.sharedRealm or one remains',
    },
  },
  {
    name: 'a Shared realm every claimant consents to admits them',
    self: granted('a', 'u1', { shared: true }),
    grant: realm({ sharing: 'Shared' }),
    others: [granted('b', 'u2', { family: 'PtahMigration', namespace: 'billing', shared: true })],
    want: { admitted: true },
  },
  {
    name: 'claimants the realm does not admit, suspended ones and self are left out of the census',
    self: granted('a', 'u1'),
    grant: realm(),
    others: [
      granted('a', 'u1'),
      granted('x', 'u3', { namespace: 'elsewhere' }),
      granted('y', 'u4', { active: false }),
      granted('z', 'u5', { realm: { kind: 'PtahRealm', name: 'invoices' } }),
    ],
    want: { admitted: true },
  },
  {
    name: 'a coordination key of another namespace is another realm',
    self: granted('a', 'u1', { realm: { kind: 'CoordinationKey', coordinationKey: 'orders' } }),
    grant: undefined,
    others: [
      granted('b', 'u2', {
        namespace: 'billing',
        realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
      }),
    ],
    want: { admitted: true },
  },
  {
    name: 'a coordination key claimed by both families in one namespace refuses both',
    self: granted('a', 'u1', { realm: { kind: 'CoordinationKey', coordinationKey: 'orders' } }),
    grant: undefined,
    others: [
      granted('b', 'u2', {
        family: 'PtahMigration',
        realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
      }),
    ],
    want: {
      admitted: false,
      reason: 'RealmConflict',
      message:
        'coordination key orders of namespace shop is claimed by 2 resources (PtahMigration shop/b, PtahSchema shop/a) and PtahMigration shop/b, PtahSchema shop/a did not consent to share it; all are refused until every claimant sets spec.target.sharedRealm or one remains',
    },
  },
];

describe('realm grant and census', () => {
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(realmVerdict(row.self, row.grant, row.others), row.want);
    });
  }

  it('a realm named PtahRealm never shares a Lease with a coordination key of the same name', () => {
    // The census compares coordination digests: a key and a granted realm of one name are two realms.
    const key = granted('b', 'u2', { realm: { kind: 'CoordinationKey', coordinationKey: 'orders' } });
    assert.deepEqual(realmVerdict(granted('a', 'u1'), realm(), [key]), { admitted: true });
  });
});
