/**
 * The stored-state version fence: a manager never runs against state a newer controller-state version
 * wrote. Such state may mean something this release cannot read (a field it does not know, a claim in a
 * shape it would misjudge), and rewriting it in the older form would lose what the newer release decided.
 * A rollback past a controller-state version is therefore refused, not attempted: the manager scans every
 * object that records the version before it serves or reconciles anything, and a reconcile that meets
 * newer state later (a newer replica wrote it after the scan) writes nothing.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/meta.ts';

/** The kinds that record the controller-state version, and where. */
const RECORDED_AT = {
  ptahschemas: {
    kind: 'PtahSchema',
    version: (o: Stored) => o.status?.executionBinding?.controllerStateVersion,
  },
  ptahmigrations: {
    kind: 'PtahMigration',
    version: (o: Stored) => o.status?.executionBinding?.controllerStateVersion,
  },
  ptahschemaplans: {
    kind: 'PtahSchemaPlan',
    version: (o: Stored) => o.spec?.binding?.controllerStateVersion,
  },
  ptahmigrationplans: {
    kind: 'PtahMigrationPlan',
    version: (o: Stored) => o.spec?.binding?.controllerStateVersion,
  },
} as const satisfies Record<string, { kind: string; version: (o: Stored) => unknown }>;

type FencedPlural = keyof typeof RECORDED_AT;

/** The parts of a stored object the fence reads. */
export interface Stored {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly status?: { readonly executionBinding?: { readonly controllerStateVersion?: unknown } };
  readonly spec?: { readonly binding?: { readonly controllerStateVersion?: unknown } };
}

export interface NewerState {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly controllerStateVersion: number;
}

/** Thrown where a reconcile meets state written by a newer controller-state version. */
export class StoredStateNewer extends Error {
  constructor(recorded: number, own: number) {
    super(
      `stored state was written by controller-state version ${recorded}; this manager runs version ${own} and ` +
        `must not rewrite it: roll forward to a release of controller-state version ${recorded} or later`,
    );
    this.name = 'StoredStateNewer';
  }
}

/** Refuses a recorded version newer than this manager's; older or absent is this release's to carry on. */
export function fenceRecordedVersion(recorded: unknown, own: number): void {
  if (typeof recorded === 'number' && recorded > own) throw new StoredStateNewer(recorded, own);
}

/** The objects among `items` whose recorded controller-state version is newer than `own`. */
export function newerStoredState(plural: FencedPlural, items: readonly Stored[], own: number): NewerState[] {
  const { kind, version } = RECORDED_AT[plural];
  return items.flatMap((o) => {
    const v = version(o);
    return typeof v === 'number' && v > own
      ? [
          {
            kind,
            namespace: o.metadata?.namespace ?? '',
            name: o.metadata?.name ?? '',
            controllerStateVersion: v,
          },
        ]
      : [];
  });
}

/** Pages of at most this many objects, so the scan's memory is bounded whatever the cluster holds. */
const PAGE = 250;

/**
 * Every stored object newer than `own`, in every namespace, page by page. The continue token keeps every
 * page at the first page's resourceVersion, so the scan reads one consistent snapshot.
 */
export async function scanStoredState(api: CustomObjectsApi, own: number): Promise<NewerState[]> {
  const newer: NewerState[] = [];
  for (const plural of Object.keys(RECORDED_AT) as FencedPlural[]) {
    let token: string | undefined;
    do {
      const page = (await api.listClusterCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        plural,
        limit: PAGE,
        ...(token !== undefined ? { _continue: token } : {}),
      })) as { items?: Stored[]; metadata?: { _continue?: string; continue?: string } };
      newer.push(...newerStoredState(plural, page.items ?? [], own));
      const next = page.metadata?.continue ?? page.metadata?._continue;
      token = next !== undefined && next !== '' ? next : undefined;
    } while (token !== undefined);
  }
  return newer;
}

/** What the manager says when it refuses to start: the objects (the first few) and the fix. */
export function fenceRefusal(newer: readonly NewerState[], own: number): string {
  const highest = Math.max(...newer.map((n) => n.controllerStateVersion));
  const named = newer
    .slice(0, 5)
    .map((n) => `${n.kind} ${n.namespace}/${n.name} (version ${n.controllerStateVersion})`)
    .join(', ');
  const more = newer.length > 5 ? ` and ${newer.length - 5} more` : '';
  return (
    `refusing to start: ${named}${more} hold state written by a newer controller-state version than this ` +
    `manager's ${own}; an older manager must not rewrite it. Roll forward to a release of controller-state ` +
    `version ${highest} or later`
  );
}
