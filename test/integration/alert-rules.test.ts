// The chart's alerts as Prometheus loads them: the PrometheusRule helm renders is checked by promtool and
// each alert is unit-tested (test/fixtures/alerts) at the default thresholds, and the thresholds in values
// reach the expressions.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { findPackagingTools, type PackagingTools } from '../env/tools.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'deploy/helm/ptah-operator');
const DIGEST = `sha256:${'1'.repeat(64)}`;
let tools: PackagingTools;
let dir: string;

interface Rule {
  alert: string;
  expr: string;
  for?: string;
}

function renderRules(...set: string[]): { groups: { name: string; rules: Rule[] }[] } {
  const out = execFileSync(
    tools.helm,
    [
      'template',
      'ptah',
      CHART,
      '-n',
      'ptah-system',
      '--set',
      `image.digest=${DIGEST},runnerImage.digest=${DIGEST},monitoring.prometheusRule.enabled=true`,
      ...set.flatMap((s) => ['--set', s]),
    ],
    { env: { PATH: process.env['PATH'] ?? '', HOME: dir }, encoding: 'utf8' },
  );
  const rule = parseAllDocuments(out)
    .map((d) => d.toJSON() as { kind?: string; spec?: unknown } | null)
    .find((o) => o?.kind === 'PrometheusRule');
  assert.ok(rule, 'the chart renders a PrometheusRule when monitoring.prometheusRule.enabled');
  return rule.spec as { groups: { name: string; rules: Rule[] }[] };
}

function promtool(...args: string[]): { code: number; output: string } {
  const r = spawnSync(tools.promtool, args, { cwd: dir, encoding: 'utf8' });
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

before(() => {
  tools = findPackagingTools();
  dir = mkdtempSync(join(tmpdir(), 'ptah-alerts-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('PrometheusRule', () => {
  it('passes promtool check rules and every alert unit test', () => {
    writeFileSync(join(dir, 'rules.yaml'), stringify(renderRules()));
    const check = promtool('check', 'rules', 'rules.yaml');
    assert.equal(check.code, 0, check.output);
    assert.match(check.output, /SUCCESS: 4 rules found/);

    copyFileSync(join(ROOT, 'test/fixtures/alerts/ptah-operator.test.yaml'), join(dir, 'alerts.test.yaml'));
    const test = promtool('test', 'rules', 'alerts.test.yaml');
    assert.equal(test.code, 0, test.output);
    assert.match(test.output, /SUCCESS/);
  });

  it('has a unit test for each alert, and promtool fails a test whose expectation is wrong', () => {
    const alerts = renderRules().groups.flatMap((g) => g.rules.map((r) => r.alert));
    assert.deepEqual(alerts, [
      'PtahResourceFailed',
      'PtahUnresolvedRun',
      'PtahDriftDetected',
      'PtahApprovalWaiting',
    ]);
    writeFileSync(join(dir, 'rules.yaml'), stringify(renderRules()));
    writeFileSync(
      join(dir, 'wrong.test.yaml'),
      stringify({
        rule_files: ['rules.yaml'],
        tests: [
          {
            interval: '1m',
            input_series: [{ series: 'ptah_resources{kind="PtahSchema",phase="Failed"}', values: '1x5' }],
            alert_rule_test: [
              {
                eval_time: '5m',
                alertname: 'PtahResourceFailed',
                exp_alerts: [{ exp_labels: { kind: 'PtahSchema', severity: 'warning' } }],
              },
            ],
          },
        ],
      }),
    );
    const test = promtool('test', 'rules', 'wrong.test.yaml');
    assert.notEqual(test.code, 0, 'a Failed resource of 5 minutes must not alert at the 15-minute default');
  });

  it('takes its thresholds from values', () => {
    const rules = renderRules(
      'monitoring.prometheusRule.failedForMinutes=3',
      'monitoring.prometheusRule.approvalWaitingHours=2',
      'monitoring.prometheusRule.drift.severities={destructive}',
    ).groups[0]!.rules;
    const by = (name: string) => rules.find((r) => r.alert === name)!;
    assert.equal(by('PtahResourceFailed').for, '3m');
    assert.match(by('PtahApprovalWaiting').expr, /> 7200$/);
    assert.match(by('PtahDriftDetected').expr, /severity=~"destructive"/);
  });
});
