/**
 * The plan-chunk policy and the two ConfigMap policies. The manager creates two kinds of ConfigMap and
 * deletes one:
 *
 * - `ptah-plan-chunk-shape`: a PtahSchemaPlanChunk is named `<plan>-NNN`, labelled with its plan and schema,
 *   owned by its plan and by nothing else (its bytes are the CRD's: one `data` field, immutable). It judges
 *   every chunk created, whoever sends it. No image or state version: a chunk is bound to its plan by name
 *   and owner, and the plan names the manager.
 * - `ptah-config-map-shape`: the manager creates no ConfigMap but a plan projection or a source snapshot.
 *   A projection (the copy of a chunk an Apply mounts; also when anyone else creates one labelled as such) is
 *   named `<plan>-NNN`, immutable, one `chunk` key of bytes, owned by the plan its label names and nothing
 *   else. A snapshot is `ptah-src-<32 hex>`, immutable, the manifest and indexed file keys as bytes, the
 *   content digest its one annotation, owned by the resource its label names. No image or state version: a
 *   projection is bound to its plan by name and owner (and its bytes to its chunk by vcontrollerwrite); a
 *   snapshot is bound to its resource, and its bytes to its source by the content digest every operation
 *   checks.
 * - `ptah-config-map-deletion`: the manager deletes no ConfigMap but a source snapshot (a source, a CA
 *   bundle or a verification policy is a person's; a projection goes with its plan, by garbage collection).
 */
import { API_GROUP, GROUP_VERSION, LABELS, MANAGED_BY } from '../../api/meta.ts';
import { CHUNK_COMPONENT } from '../../plan-store/plan-chunk.ts';
import { CHUNK_KEY, PROJECTION_COMPONENT } from '../../plan-store/plan-projection.ts';
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

const planLabel = `object.metadata.labels[?${q(LABELS.plan)}].orValue('')`;
/** `<plan>-NNN` for the plan its label names, exactly the four labels of a plan piece, no annotation. */
const planPieceShape = (pieceComponent: string) =>
  `size(object.metadata.labels) == 4 && object.metadata.labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && ${component('object')} == ${q(pieceComponent)} && ${planLabel}.matches('^ptah-plan-[0-9a-f]{24}$') && object.metadata.labels[?${q(LABELS.schema)}].orValue('') != '' && object.metadata.name.matches('^' + ${planLabel} + '-[0-9]{3}$') && size(object.metadata.?annotations.orValue({})) == 0`;
const planPieceLabels = (pieceComponent: string) =>
  q(
    `${LABELS.managedBy}=${MANAGED_BY}, ${LABELS.component}=${pieceComponent}, ${LABELS.plan}, ${LABELS.schema}`,
  );

export function chunkPolicy(): GuardPolicy {
  return guardPolicy(CHUNK_POLICY_NAME, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [API_GROUP],
          apiVersions: ['*'],
          resources: ['ptahschemaplanchunks'],
          operations: ['CREATE'],
        },
      ],
    },
    validations: [
      {
        expression: `has(object.metadata.labels) && ${planPieceShape(CHUNK_COMPONENT)}`,
        messageExpression: `'plan chunk ' + object.metadata.name + ' must be named <plan>-NNN and carry exactly the labels ' + ${planPieceLabels(CHUNK_COMPONENT)} + ' and no annotation'`,
        reason: 'Forbidden',
      },
      {
        expression: ownedBy("['PtahSchemaPlan']", planLabel),
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
        name: 'by-the-manager-or-a-projection-or-a-snapshot',
        expression: `${byManager(release)} || ${component('object')} in [${q(PROJECTION_COMPONENT)}, ${q(SNAPSHOT_COMPONENT)}]`,
      },
    ],
    variables: [
      { name: 'component', expression: component('object') },
      { name: 'resourceLabel', expression: `has(object.metadata.labels) ? (${resourceLabel}) : ''` },
    ],
    validations: [
      {
        expression: `variables.component in [${q(PROJECTION_COMPONENT)}, ${q(SNAPSHOT_COMPONENT)}]`,
        messageExpression: `'the Ptah manager creates no ConfigMap but a plan projection or a source snapshot; ' + object.metadata.name + ' is labelled ' + ${q(`${LABELS.component}=`)} + variables.component`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(PROJECTION_COMPONENT)} || (${planPieceShape(PROJECTION_COMPONENT)})`,
        messageExpression: `'plan projection ' + object.metadata.name + ' must be named <plan>-NNN and carry exactly the labels ' + ${planPieceLabels(PROJECTION_COMPONENT)} + ' and no annotation'`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(PROJECTION_COMPONENT)} || (${onlyBytes(`k == ${q(CHUNK_KEY)}`)} && ${q(CHUNK_KEY)} in object.binaryData)`,
        messageExpression: `'plan projection ' + object.metadata.name + ' is immutable and holds one binaryData key, ' + ${q(CHUNK_KEY)} + ', and no data'`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.component != ${q(PROJECTION_COMPONENT)} || (${ownedBy("['PtahSchemaPlan']", planLabel)})`,
        messageExpression: `'plan projection ' + object.metadata.name + ' must have exactly one owner, the controller reference to the PtahSchemaPlan its label names, blocking its deletion'`,
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
