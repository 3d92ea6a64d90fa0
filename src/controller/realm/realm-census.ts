/**
 * The reads behind `realmVerdict`, shared by both reconcilers: the PtahRealm a resource names (always from
 * the API server, so a withdrawn grant stops the next mutating operation at once) and the resources of both
 * families that may claim the same realm (from the watch caches when they have listed, else listed).
 * A coordination key is namespace-scoped, so its census reads one namespace; a PtahRealm spans the
 * namespaces it lists, so its census reads the cluster.
 */
import type { PtahMigration } from '../../api/ptah-migration.ts';
import { realmRefOf, type PtahRealm } from '../../api/ptah-realm.ts';
import { canonicalEngine, type PtahSchema } from '../../api/ptah-schema.ts';
import type { PtahObjects } from '../runtime/kube.ts';
import {
  realmVerdict,
  type ClaimantFamily,
  type RealmClaimant,
  type RealmGrant,
  type RealmVerdict,
} from './realm-grant.ts';

/** A watch cache of one family: undefined until its first list arrived (an empty cache is not an empty cluster). */
export interface FamilyCache<T> {
  list(namespace?: string): readonly T[] | undefined;
}

export interface RealmCensusDeps {
  readonly ptah: PtahObjects;
  readonly schemas?: FamilyCache<PtahSchema>;
  readonly migrations?: FamilyCache<PtahMigration>;
}

type Claiming = PtahSchema | PtahMigration;

export function realmClaimant(family: ClaimantFamily, obj: Claiming): RealmClaimant {
  const target = obj.spec.target;
  return {
    family,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    engine: canonicalEngine(target.engine),
    realm: realmRefOf(target),
    shared: target.sharedRealm === true,
    active: obj.metadata.deletionTimestamp === undefined && obj.spec.suspend !== true,
  };
}

export function grantOf(realm: PtahRealm): RealmGrant {
  return {
    name: realm.metadata.name,
    engine: realm.spec.engine,
    namespaces: realm.spec.namespaces,
    sharing: realm.spec.sharing,
  };
}

export class RealmCensus {
  constructor(private readonly deps: RealmCensusDeps) {}

  async verdict(family: ClaimantFamily, obj: Claiming): Promise<RealmVerdict> {
    const self = realmClaimant(family, obj);
    const ref = self.realm;
    const realm = ref.kind === 'PtahRealm' ? await this.deps.ptah.getRealm<PtahRealm>(ref.name) : undefined;
    const namespace = ref.kind === 'PtahRealm' ? undefined : self.namespace;
    const [schemas, migrations] = await Promise.all([
      this.family<PtahSchema>('ptahschemas', this.deps.schemas, namespace),
      this.family<PtahMigration>('ptahmigrations', this.deps.migrations, namespace),
    ]);
    return realmVerdict(self, realm === undefined ? undefined : grantOf(realm), [
      ...schemas.map((s) => realmClaimant('PtahSchema', s)),
      ...migrations.map((m) => realmClaimant('PtahMigration', m)),
    ]);
  }

  private async family<T>(
    plural: 'ptahschemas' | 'ptahmigrations',
    cache: FamilyCache<T> | undefined,
    namespace: string | undefined,
  ): Promise<readonly T[]> {
    const cached = cache?.list(namespace);
    if (cached !== undefined) return cached;
    return namespace === undefined
      ? this.deps.ptah.listAll<T>(plural)
      : this.deps.ptah.list<T>(plural, namespace);
  }
}
