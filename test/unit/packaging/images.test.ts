// The Dockerfiles (deploy/images): digest-pinned Node 22 bases, a non-root final stage that writes nowhere
// but its work volume, git in the operator image for Git sources, and the operator image laid out exactly
// as the node agent's image map runs it (test/env/operator-image.ts), since no container runtime runs here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { PTAH_NODE_FLAGS } from '../../../src/build-info.ts';
import { ptahCommand } from '../../../src/runner/options.ts';
import { MANAGER_NODE_FLAGS } from '../../env/manager-process.ts';
import { OPERATOR_IMAGE } from '../../env/operator-image.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const DIGEST = /@sha256:[0-9a-f]{64}$/;

interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** Instructions in order, continuation lines joined, comments dropped; ARG defaults substituted in FROM. */
function instructions(file: string): Instruction[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const args = new Map<string, string>();
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      let value = rest.join(' ');
      if (op === 'ARG') {
        const [name = '', ...def] = value.split('=');
        args.set(name, def.join('='));
      }
      if (op === 'FROM') value = value.replace(/\$\{(\w+)\}/g, (_, n: string) => args.get(n) ?? '');
      return { op: op.toUpperCase(), args: value };
    });
}

/** The last stage: what the image is. */
function finalStage(all: Instruction[]): Instruction[] {
  const last = all.map((i) => i.op).lastIndexOf('FROM');
  return all.slice(last);
}

function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.filter((x) => x.op === 'ENV')) {
    for (const m of i.args.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  }
  return env;
}

const one = (stage: Instruction[], op: string) => stage.filter((i) => i.op === op).at(-1)?.args;

describe('the images', () => {
  for (const file of ['deploy/images/operator/Dockerfile', 'deploy/images/engine/Dockerfile']) {
    it(`${file}: every base is Node 22 pinned by digest, and the image runs as a non-root user`, () => {
      const all = instructions(file);
      const bases = all.filter((i) => i.op === 'FROM').map((i) => i.args.split(/\s+/)[0]!);
      assert.ok(bases.length >= 2, 'a build stage and the image');
      for (const base of bases) {
        assert.match(base, DIGEST, `${base} is pinned by digest`);
        assert.match(base, /node(js)?[:-]?22|nodejs22/, `${base} is Node 22`);
      }
      const user = one(finalStage(all), 'USER') ?? '';
      assert.match(user, /^[1-9]\d*:[1-9]\d*$/, 'a numeric non-root uid:gid, as runAsNonRoot can check');
    });
  }

  it('the operator image has git for Git sources and writes only to the work volume the chart mounts', () => {
    const stage = finalStage(instructions('deploy/images/operator/Dockerfile'));
    assert.match(
      stage
        .filter((i) => i.op === 'RUN')
        .map((i) => i.args)
        .join(' '),
      /apt-get install .*\bgit\b/,
    );
    const env = envOf(stage);
    const deployment = readFileSync(
      join(ROOT, 'deploy/helm/ptah-operator/templates/deployment.yaml'),
      'utf8',
    );
    assert.match(deployment, /readOnlyRootFilesystem: true/);
    for (const dir of [env['HOME'], env['TMPDIR']]) {
      assert.match(deployment, new RegExp(`mountPath: ${dir}\\n`), `the chart mounts a volume at ${dir}`);
    }
  });

  it("the node agent's image map runs the operator image as the Dockerfile builds it", () => {
    const all = instructions('deploy/images/operator/Dockerfile');
    const stage = finalStage(all);
    assert.equal(one(stage, 'WORKDIR'), OPERATOR_IMAGE.workingDir);
    assert.deepEqual(JSON.parse(one(stage, 'ENTRYPOINT') ?? '[]'), OPERATOR_IMAGE.entrypoint);
    assert.equal(one(stage, 'USER'), OPERATOR_IMAGE.user);
    // The UID has an account (the SSH client needs one), the one the image map gives the node agent's Pods.
    const { name, uid, gid, home } = OPERATOR_IMAGE.account;
    const run = stage
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' ');
    assert.match(run, new RegExp(`groupadd --gid ${gid} ${name}\\b`));
    assert.match(
      run,
      new RegExp(`useradd --uid ${uid} --gid ${gid} --home-dir ${home} --no-create-home .*\\b${name}\\b`),
    );
    assert.deepEqual(envOf(stage), OPERATOR_IMAGE.env);
    // The build stage gathers /out, which the image copies to /app: the same paths the image map binds.
    assert.match(one(stage, 'COPY') ?? '', /--from=build .*\/out\/ \/app\/$/);
    const built = all
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' ');
    for (const [at, from] of Object.entries(OPERATOR_IMAGE.files)) {
      const inOut = at.replace(/^\/app\//, '/out/');
      assert.ok(
        built.includes(`${from} ${inOut}`) ||
          built.includes(`${from} /out/`) ||
          built.includes(`mkdir -p ${inOut}`),
        `${at} (from ${from}) is gathered into ${inOut}`,
      );
    }
    // The chart runs the manager from the same image by command; that bundle is among the image's files.
    const values = parse(readFileSync(join(ROOT, 'deploy/helm/ptah-operator/values.yaml'), 'utf8')) as {
      command: string[];
    };
    assert.equal(values.command[0], 'node');
    assert.match(values.command.at(-1) ?? '', /^\/app\/dist\/ptah-operator\.mjs$/);
    // The tests run the manager with the chart's Node flags.
    assert.deepEqual(values.command.slice(1, -1), MANAGER_NODE_FLAGS);
    assert.match(readFileSync(join(ROOT, 'scripts/build.ts'), 'utf8'), /ptah-operator/);
  });

  it('ptah runs with the same Node flags wherever Ptah starts it: the engine image, bin/ptah.mjs, the runner', () => {
    assert.ok(PTAH_NODE_FLAGS.length > 0);
    const stage = finalStage(instructions('deploy/images/engine/Dockerfile'));
    assert.deepEqual(JSON.parse(one(stage, 'ENTRYPOINT') ?? '[]'), [
      '/nodejs/bin/node',
      ...PTAH_NODE_FLAGS,
      '/app/dist/ptah.mjs',
    ]);
    const shebang = readFileSync(join(ROOT, 'bin/ptah.mjs'), 'utf8').split('\n')[0];
    assert.equal(shebang, `#!/usr/bin/env -S node ${PTAH_NODE_FLAGS.join(' ')}`);
    const runner = ptahCommand(undefined);
    assert.equal(runner.file, process.execPath);
    assert.deepEqual(runner.prefixArgs.slice(0, -1), PTAH_NODE_FLAGS);
    assert.match(runner.prefixArgs.at(-1) ?? '', /ptah\.mjs$/);
  });
});
