/**
 * Another release of the operator, made from this checkout's build for upgrade tests: its bundles with
 * another controller-state version compiled in, and the chart generated for that version (the typed
 * policies carry it as a literal), as a release that raised the version would ship both. The bundles are
 * copied and the one constant replaced, never rebuilt, so everything else is this build.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMISSION_POLICY_TEMPLATE, admissionPolicyTemplate } from '../../scripts/gen-admission-policies.ts';
import { CONTROLLER_STATE_VERSION } from '../../src/api/meta.ts';
import { builtProgram } from './build-output.ts';
import { CHART } from './operator-chart.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface OperatorBuild {
  /** Its bundles, for the image map (`registerOperatorImage`'s `dist`). */
  readonly dist: string;
  /** Its chart directory, for `helm upgrade`. */
  readonly chart: string;
  readonly controllerStateVersion: number;
}

export function stateVersionBuild(workDir: string, controllerStateVersion: number): OperatorBuild {
  builtProgram('ptah-operator');
  const dist = join(workDir, `dist-state-${controllerStateVersion}`);
  cpSync(join(ROOT, 'dist'), dist, { recursive: true });
  // The bundler writes the constant once, in the chunk every program that needs it imports.
  const compiled = `var CONTROLLER_STATE_VERSION=${CONTROLLER_STATE_VERSION};`;
  const holding = readdirSync(dist).filter(
    (name) => name.endsWith('.mjs') && readFileSync(join(dist, name), 'utf8').includes(compiled),
  );
  if (holding.length !== 1) {
    throw new Error(
      `expected "${compiled}" in exactly one bundle of dist/, found it in ${holding.length}: the bundler changed how it writes the constant`,
    );
  }
  const file = join(dist, holding[0]!);
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace(compiled, `var CONTROLLER_STATE_VERSION=${controllerStateVersion};`),
  );
  const chart = join(workDir, `chart-state-${controllerStateVersion}`);
  cpSync(CHART, chart, { recursive: true });
  writeFileSync(
    join(chart, ADMISSION_POLICY_TEMPLATE.replace(/^deploy\/helm\/ptah-operator\//, '')),
    admissionPolicyTemplate(controllerStateVersion),
  );
  return { dist, chart, controllerStateVersion };
}
