import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { currentExecutionBinding } from '../../../src/controller/execution-binding.ts';
import type { ManagerIdentity } from '../../../src/controller/jobs/operation-job.ts';
import {
  fenceRefusal,
  newerStoredState,
  StoredStateNewer,
} from '../../../src/controller/stored-state-fence.ts';

const release: ManagerIdentity = {
  managerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
  managerRevision: 'a1',
  controllerStateVersion: 2,
  ptahVersion: '0.1.0',
  runnerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
};

const resource = (name: string, version?: number) => ({
  metadata: { name, namespace: 'apps' },
  ...(version !== undefined ? { status: { executionBinding: { controllerStateVersion: version } } } : {}),
});
const plan = (name: string, version: number) => ({
  metadata: { name, namespace: 'apps' },
  spec: { binding: { controllerStateVersion: version } },
});

describe('stored-state version fence', () => {
  it('names only the objects a newer controller-state version wrote, where each kind records it', () => {
    const items = [
      resource('older', 1),
      resource('same', 2),
      resource('newer', 3),
      resource('never-written'),
    ];
    assert.deepEqual(newerStoredState('ptahschemas', items, 2), [
      { kind: 'PtahSchema', namespace: 'apps', name: 'newer', controllerStateVersion: 3 },
    ]);
    assert.deepEqual(
      newerStoredState('ptahmigrations', items, 2).map((n) => n.kind),
      ['PtahMigration'],
    );
    // A plan records it in its binding, not in status.
    assert.deepEqual(newerStoredState('ptahschemaplans', [plan('p1', 2), plan('p2', 4)], 2), [
      { kind: 'PtahSchemaPlan', namespace: 'apps', name: 'p2', controllerStateVersion: 4 },
    ]);
    assert.deepEqual(newerStoredState('ptahschemaplans', items, 2), []);
  });

  it('refuses to start naming the objects, how many more, and the version to roll forward to', () => {
    const newer = Array.from({ length: 7 }, (_, i) => ({
      kind: 'PtahSchema',
      namespace: 'apps',
      name: `s${i}`,
      controllerStateVersion: i === 3 ? 5 : 3,
    }));
    const text = fenceRefusal(newer, 2);
    assert.match(text, /^refusing to start: PtahSchema apps\/s0 \(version 3\), /);
    assert.match(
      text,
      / and 2 more hold state written by a newer controller-state version than this manager's 2/,
    );
    assert.match(text, /Roll forward to a release of controller-state version 5 or later$/);
  });

  it('a reconcile that meets newer state gets no binding to write, so it writes nothing', () => {
    const newer = { ...currentExecutionBinding(undefined, release), controllerStateVersion: 3 };
    assert.throws(() => currentExecutionBinding(newer, release), StoredStateNewer);
    assert.throws(
      () => currentExecutionBinding(newer, release),
      /written by controller-state version 3; this manager runs version 2/,
    );
    // An older recorded version is an upgrade: a new epoch, not a refusal.
    const older = { ...newer, controllerStateVersion: 1 };
    assert.notEqual(currentExecutionBinding(older, release).epoch, older.epoch);
  });
});
