import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';
import { crdClientModel } from '../../../src/api/crd-client-model.ts';
import { buildCrds, crdFileName, renderCrdYaml } from '../../../src/api/crds.ts';
import type { OpenApiSchema } from '../../../src/api/schema-dsl.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const crds = buildCrds();
const byKind = (kind: string) => {
  const crd = crds.find((c) => c.spec.names.kind === kind);
  assert.ok(crd, kind);
  return crd.spec.versions[0]!;
};

describe('CRDs', () => {
  for (const crd of crds) {
    it(`${crdFileName(crd)} is what scripts/gen-crds.ts generates (run it after changing src/api)`, () => {
      assert.equal(readFileSync(join(root, crdFileName(crd)), 'utf8'), renderCrdYaml(crd));
    });
    const inChart = join('deploy/helm/ptah-operator/crds', basename(crdFileName(crd)));
    it(`${inChart} is the same generated file (run scripts/gen-crds.ts after changing src/api)`, () => {
      assert.equal(readFileSync(join(root, inChart), 'utf8'), renderCrdYaml(crd));
    });
  }

  it('names the kinds, short names and group the operator serves', () => {
    assert.deepEqual(
      crds.map((c) => [c.metadata.name, c.spec.names.shortNames]),
      [
        ['ptahschemas.operator.ptah.run', ['ptahs']],
        ['ptahschemaplans.operator.ptah.run', ['ptahplan']],
        ['ptahschemaplanchunks.operator.ptah.run', ['ptahchunk']],
        ['ptahschemaapprovals.operator.ptah.run', ['ptahapprove']],
        ['ptahmigrations.operator.ptah.run', ['ptahm']],
        ['ptahmigrationplans.operator.ptah.run', ['ptahmplan']],
        ['ptahmigrationapprovals.operator.ptah.run', ['ptahmapprove']],
        ['ptahmigrationrunacknowledgments.operator.ptah.run', ['ptahmack']],
        ['ptahrealms.operator.ptah.run', ['ptahr']],
      ],
    );
    for (const c of crds) {
      // A PtahRealm is an admin's grant with no status: the manager only reads it. A plan chunk is bytes,
      // written once, with nothing to report.
      const realm = c.spec.names.kind === 'PtahRealm';
      const statusless = realm || c.spec.names.kind === 'PtahSchemaPlanChunk';
      assert.deepEqual(c.spec.versions[0]!.subresources, statusless ? undefined : { status: {} });
      assert.equal(c.spec.scope, realm ? 'Cluster' : 'Namespaced');
      assert.equal(c.spec.versions[0]!.name, 'v1alpha1');
    }
  });

  it('holds a plan chunk to 512 KiB of bytes, immutable, its plan shown', () => {
    const chunk = byKind('PtahSchemaPlanChunk');
    const spec = chunk.schema.openAPIV3Schema.properties!['spec']!;
    assert.equal(spec.properties!['data']!.format, 'byte');
    // 512 KiB as base64: the API server counts characters of the encoded form.
    assert.equal(spec.properties!['data']!.maxLength, 699052);
    assert.deepEqual(spec['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'a plan chunk is immutable' },
    ]);
    assert.deepEqual(
      chunk.additionalPrinterColumns.map((c) => c.name),
      ['Plan', 'Age'],
    );
  });

  it("names a realm by exactly one of coordinationKey and realmRef, and keeps a realm's engine", () => {
    const target = byKind('PtahSchema').schema.openAPIV3Schema.properties!['spec']!.properties!['target']!;
    assert.deepEqual(
      target['x-kubernetes-validations']?.map((r) => r.rule),
      ['has(self.coordinationKey) != has(self.realmRef)'],
    );
    assert.equal(target.properties!['sharedRealm']!.default, false);
    const realm = byKind('PtahRealm').schema.openAPIV3Schema.properties!['spec']!;
    assert.deepEqual(
      realm.properties!['engine']!['x-kubernetes-validations']?.map((r) => r.rule),
      ['self == oldSelf'],
    );
    assert.deepEqual(realm.properties!['sharing']!.enum, ['Exclusive', 'Shared']);
    assert.deepEqual(
      byKind('PtahRealm').additionalPrinterColumns.map((c) => c.name),
      ['Engine', 'Sharing', 'Namespaces', 'Age'],
    );
  });

  it('makes plans and approvals immutable with self == oldSelf on spec', () => {
    for (const kind of ['PtahSchemaPlan', 'PtahSchemaApproval']) {
      const spec = byKind(kind).schema.openAPIV3Schema.properties!['spec']!;
      assert.ok(
        spec['x-kubernetes-validations']?.some((r) => r.rule === 'self == oldSelf'),
        kind,
      );
    }
  });

  it('requires exactly one desired source and defaults apply to OnApproval', () => {
    const spec = byKind('PtahSchema').schema.openAPIV3Schema.properties!['spec']!;
    const desired = spec.properties!['desired']!;
    assert.deepEqual(
      desired['x-kubernetes-validations']?.map((r) => r.rule),
      ['[has(self.configMap), has(self.oci), has(self.git)].exists_one(x, x)'],
    );
    assert.deepEqual(
      spec['x-kubernetes-validations']?.map((r) => r.rule),
      [
        'has(self.desired.oci) == has(self.verificationPolicyFrom)',
        '!has(self.sourcePolicyFrom) || !has(self.desired.oci)',
      ],
    );
    assert.equal(spec.properties!['policy']!.properties!['apply']!.default, 'OnApproval');
    assert.deepEqual(spec.properties!['policy']!.default, {});
  });

  it('bounds every string and list a CEL rule reads, so the API server can estimate its cost', () => {
    const unbounded: string[] = [];
    const walk = (s: OpenApiSchema, at: string) => {
      if (
        s.type === 'string' &&
        s.maxLength === undefined &&
        s.enum === undefined &&
        s.format !== 'date-time'
      ) {
        unbounded.push(at);
      }
      if (s.type === 'array' && s.maxItems === undefined) unbounded.push(at);
      for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${at}.${k}`);
      if (s.items) walk(s.items, `${at}[]`);
    };
    for (const c of crds) {
      const props = c.spec.versions[0]!.schema.openAPIV3Schema.properties!;
      walk(props['spec']!, `${c.spec.names.kind}.spec`);
      if (props['status'] !== undefined) walk(props['status'], `${c.spec.names.kind}.status`);
    }
    assert.deepEqual(unbounded, []);
  });

  it('prints phase, drift and readiness for a PtahSchema', () => {
    assert.deepEqual(
      byKind('PtahSchema').additionalPrinterColumns.map((c) => c.name),
      ['Phase', 'Plan', 'Approval', 'Drift', 'Findings', 'In Sync', 'Ready', 'Failure', 'Digest', 'Age'],
    );
  });
});

describe('CRDs as client models', () => {
  // dumpYaml runs the client's own serialiser, the one every typed API call uses on the way out.
  const sent = (model: unknown) => parse(k8s.dumpYaml(model)) as unknown;

  it('survive the typed client serialiser with defaults and CEL rules intact', () => {
    for (const crd of crds) assert.deepEqual(sent(crdClientModel(crd)), JSON.parse(JSON.stringify(crd)));
  });

  it('are needed: a plain manifest loses defaults and rules in that serialiser', () => {
    type Schema = {
      properties?: Record<string, Schema>;
      default?: unknown;
      'x-kubernetes-validations'?: unknown;
    };
    const spec = (crd: unknown) =>
      (crd as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }).spec.versions[0]!.schema
        .openAPIV3Schema.properties!['spec']!;
    const plain = spec(sent(crds[0]));
    assert.equal(plain.properties!['policy']!.properties!['apply']!.default, undefined);
    assert.equal(plain.properties!['desired']!['x-kubernetes-validations'], undefined);
    const model = spec(sent(crdClientModel(crds[0]!)));
    assert.equal(model.properties!['policy']!.properties!['apply']!.default, 'OnApproval');
    assert.ok(model.properties!['desired']!['x-kubernetes-validations']);
  });
});
