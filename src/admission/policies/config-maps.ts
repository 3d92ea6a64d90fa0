/**
 * The three ConfigMap policies. The manager creates two kinds of ConfigMap and deletes one:
 *
 * - `ptah-plan-chunk-shape`: a plan chunk, the immutable ConfigMap an Apply mounts as its plan projection:
 *   named `<plan>-NNN`, labelled with its plan and schema, one `chunk` key of bytes, owned by its plan and by
 *   nothing else. It judges every ConfigMap labelled as a chunk, whoever sends it. No image or state version:
 *   a chunk is bound to its plan by name and owner, and the plan names the manager.
 * - `ptah-config-map-shape`: the manager creates no ConfigMap but a chunk or a source snapshot; a snapshot
 *   (also when anyone else creates one labelled as such) is `ptah-src-<32 hex>`, immutable, the manifest and
 *   indexed file keys as bytes, the content digest its one annotation, owned by the resource its label
 *   names. No image or state version: a snapshot is bound to its resource, and its bytes to its source by the
 *   content digest every operation checks.
 * - `ptah-config-map-deletion`: the manager deletes no ConfigMap but a source snapshot (a source, a CA
 *   bundle or a verification policy is a person's; a chunk goes with its plan, by garbage collection).
 */
import { GROUP_VERSION, LABELS, MANAGED_BY } from '../../api/meta.ts';
import { CHUNK_COMPONENT, CHUNK_KEY } from '../../plan-store/chunk-config-map.ts';
import {
  CONTENT_DIGEST_ANNOTATION,
  SNAPSHOT_COMPONENT,
  SNAPSHOT_NAME_PREFIX,
} from '../../sources/snapshot-config-map.ts';
import { MANIFEST_KEY } from '../../sources/snapshot-manifest.ts';
import { byManager, celString as q, guardPolicy, type GuardPolicy, type ReleaseIdentity } from './cel.ts';

export const CHUNK_POLICY_NAME = 'ptah-plan-chunk-shape';
export const CONFIG_MAP_POLICY_NAME = 'ptah-config-map-shape';
export const CONFIG_MAP_DELETION_POLICY_NAME = 'ptah-config-map-deletion';

const configMaps = (operations: string[]) => ({
  resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], operations }],
});
const component = (o: string) => `${o}.metadata.?labels[?${q(LABELS.component)}].orValue('')`;
const onlyBytes = (keys: string) =>
  `object.?immutable == optional.of(true) && size(object.?data.orValue({})) == 0 && object.?binaryData.orValue({}).all(k, ${keys})`;
const ownedBy = (kinds: string, nameOf: string) =>
  `size(object.metadata.?ownerReferences.orValue([])) == 1 && object.metadata.ownerReferences.all(r, r.apiVersion == ${q(GROUP_VERSION)} && r.kind in ${kinds} && r.name == ${nameOf} && r.?controller == optional.of(true) && r.?blockOwnerDeletion == optional.of(true))`;

export function chunkPolicy(): GuardPolicy {
  const plan = `object.metadata.labels[?${q(LABELS.plan)}].orValue('')`;
  return guardPolicy(CHUNK_POLICY_NAME, {
    matchConstraints: configMaps(['CREATE']),
    matchConditions: [
      { name: 'a-plan-chunk', expression: `${component('object')} == ${q(CHUNK_COMPONENT)}` },
    ],
    validations: [
      {
        expression: `size(object.metadata.labels) == 4 && object.metadata.labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && ${plan}.matches('^ptah-plan-[0-9a-f]{24}$') && object.metadata.labels[?${q(LABELS.schema)}].orValue('') != '' && object.metadata.name.matches('^' + ${plan} + '-[0-9]{3}$') && size(object.metadata.?annotations.orValue({})) == 0`,
        messageExpression: `'plan chunk ' + object.metadata.name + ' must be named <plan>-NNN and carry exactly the labels ' + ${q(`${LABELS.managedBy}=${MANAGED_BY}, ${LABELS.component}=${CHUNK_COMPONENT}, ${LABELS.plan}, ${LABELS.schema}`)} + ' and no annotation'`,
        reason: 'Forbidden',
      },
      {
        expression: `${onlyBytes(`k == ${q(CHUNK_KEY)}`)} && ${q(CHUNK_KEY)} in object.binaryData`,
        messageExpression: `'plan chunk ' + object.metadata.name + ' is immutable and holds one binaryData key, ' + ${q(CHUNK_KEY)} + ', and no data'`,
        reason: 'Forbidden',
      },
      {
        expression: ownedBy("['PtahSchemaPlan']", plan),
        messageExpression: `'plan chunk ' + object.metadata.name + ' must have exactly one owner, the controller reference to the PtahSchemaPlan its label names, blocking its deletion'`,
        reason: 'Forbidden',
      },
    ],
  });
}

export function configMapPolicy(release: ReleaseIdentity): GuardPolicy {
  const resourceLabel = `object.metadata.labels.exists(k, k == ${q(LABELS.schema)}) ? ${q(LABELS.schema)} : ${q(LABELS.migration)}`;
  const ownerKind = `variables.resourceLabel == ${q(LABELS.schema)} ? 'PtahSchema' : 'PtahMigration'`;
  return guardPolicy(CONFIG_MAP_POLICY_NAME, {
    matchConstraints: configMaps(['CREATE']),
    matchConditions: [
      {
        name: 'by-the-manager-or-a-snapshot',
        expression: `${byManager(release)} || ${component('object')} == ${q(SNAPSHOT_COMPONENT)}`,
      },
    ],
    variables: [
      { name: 'component', expression: component('object') },
      { name: 'resourceLabel', expression: `has(object.metadata.labels) ? (${resourceLabel}) : ''` },
    ],
    validations: [
      {
        expression: `variables.component in [${q(CHUNK_COMPONENT)}, ${q(SNAPSHOT_COMPONENT)}]`,
        messageExpression: `'the Ptah manager creates no ConfigMap but a plan chunk or a source snapshot; ' + object.metadata.name + ' is labelled ' + ${q(`${LABELS.component}=`)} + variables.component`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(SNAPSHOT_COMPONENT)} || (object.metadata.name.matches(${q(`^${SNAPSHOT_NAME_PREFIX}[0-9a-f]{32}$`)}) && size(object.metadata.labels) == 3 && object.metadata.labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && object.metadata.labels[?variables.resourceLabel].orValue('') != '' && size(object.metadata.?annotations.orValue({})) == 1 && object.metadata.?annotations[?${q(CONTENT_DIGEST_ANNOTATION)}].orValue('').matches('^sha256:[0-9a-f]{64}$'))`,
        messageExpression: `'source snapshot ' + object.metadata.name + ' must be named ${SNAPSHOT_NAME_PREFIX}<32 hex>, carry exactly the labels ' + ${q(`${LABELS.managedBy}=${MANAGED_BY}, ${LABELS.component}=${SNAPSHOT_COMPONENT}`)} + ' and its resource\\'s, and one annotation, ' + ${q(CONTENT_DIGEST_ANNOTATION)}`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(SNAPSHOT_COMPONENT)} || (${onlyBytes(`k == ${q(MANIFEST_KEY)} || k.matches('^file-[0-9]{3}$')`)} && ${q(MANIFEST_KEY)} in object.binaryData)`,
        messageExpression: `'source snapshot ' + object.metadata.name + ' is immutable and holds its manifest (' + ${q(MANIFEST_KEY)} + ') and indexed files (file-NNN) as binaryData, and no data'`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(SNAPSHOT_COMPONENT)} || (${ownedBy(`[${ownerKind}]`, `object.metadata.labels[?variables.resourceLabel].orValue('')`)})`,
        messageExpression: `'source snapshot ' + object.metadata.name + ' must have exactly one owner, the controller reference to the resource its label names, blocking its deletion'`,
        reason: 'Forbidden',
      },
    ],
  });
}

export function configMapDeletionPolicy(release: ReleaseIdentity): GuardPolicy {
  return guardPolicy(CONFIG_MAP_DELETION_POLICY_NAME, {
    matchConstraints: configMaps(['DELETE']),
    matchConditions: [{ name: 'by-the-manager', expression: byManager(release) }],
    validations: [
      {
        expression: `oldObject != null && ${component('oldObject')} == ${q(SNAPSHOT_COMPONENT)} && oldObject.metadata.?labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && oldObject.metadata.name.startsWith(${q(SNAPSHOT_NAME_PREFIX)})`,
        messageExpression: `'the Ptah manager deletes no ConfigMap but a source snapshot it made (${SNAPSHOT_NAME_PREFIX}…, ${LABELS.component}=${SNAPSHOT_COMPONENT}); ' + request.name + ' is not one'`,
        reason: 'Forbidden',
      },
    ],
  });
}
