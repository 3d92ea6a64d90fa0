// Installs the operator's CRDs on a test API server and waits until each is served. Established is not yet
// served (storage may answer 429 for a moment after it), so each kind is listed until a list answers. The
// list is cluster-wide, which a namespaced kind answers as well as a cluster-scoped one (PtahRealm).
import * as k8s from '@kubernetes/client-node';
import { crdClientModels } from '../../src/api/crd-client-model.ts';
import { buildCrds } from '../../src/api/crds.ts';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import { eventually } from './eventually.ts';

export async function installCrds(admin: k8s.KubeConfig): Promise<void> {
  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  const custom = admin.makeApiClient(k8s.CustomObjectsApi);
  for (const body of crdClientModels()) await ext.createCustomResourceDefinition({ body });
  for (const crd of buildCrds()) {
    await eventually(`CRD ${crd.metadata.name} served`, async () => {
      try {
        await custom.listClusterCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          plural: crd.spec.names.plural,
          limit: 1,
        });
        return true;
      } catch {
        return undefined;
      }
    });
  }
}
