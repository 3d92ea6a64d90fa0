import { parseArgs } from 'node:util';
import { startNodeAgent } from './index.ts';

/**
 * The node agent as its own process, as a kubelet runs:
 *   node --import tsx test/env/node-agent/main.ts --kubeconfig K --image-map M --work-dir D \
 *     --serving-cert C --serving-key K --ca-file CA [--node-name N]
 * SIGTERM or SIGINT stops it, killing every process of its pods first.
 */
const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'node-name': { type: 'string', default: 'ptah-node' },
    'image-map': { type: 'string' },
    'work-dir': { type: 'string' },
    'serving-cert': { type: 'string' },
    'serving-key': { type: 'string' },
    'ca-file': { type: 'string' },
  },
});
const missing = ['kubeconfig', 'image-map', 'work-dir', 'serving-cert', 'serving-key', 'ca-file'].filter(
  (name) => values[name as keyof typeof values] === undefined,
);
if (missing.length > 0) {
  console.error(`node-agent: missing ${missing.map((m) => `--${m}`).join(', ')}`);
  process.exit(2);
}
const agent = await startNodeAgent({
  kubeconfig: values.kubeconfig as string,
  nodeName: values['node-name'] as string,
  imageMapFile: values['image-map'] as string,
  workDir: values['work-dir'] as string,
  servingCert: { certFile: values['serving-cert'] as string, keyFile: values['serving-key'] as string },
  caFile: values['ca-file'] as string,
});
console.log(JSON.stringify({ nodeName: agent.nodeName, port: agent.port }));
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    agent.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`node-agent: stop failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  });
}
