/**
 * `ptah-operator`: the manager process. Configuration comes from the environment (a Deployment sets it):
 *   KUBECONFIG                    a kubeconfig file; in a Pod the ServiceAccount is used
 *   PTAH_COORDINATION_NAMESPACE   where the leader and realm Leases live (default ptah-system)
 *   PTAH_RUNNER_IMAGE             the image operation Pods run (`ptah-runner` + `ptah`)
 *   PTAH_MANAGER_IMAGE, PTAH_MANAGER_REVISION, PTAH_VERSION   recorded on Jobs and bound into plans
 *   PTAH_MANAGER_IDENTITY         this replica's leader-election identity (default hostname-pid)
 *   PTAH_LOG_LEVEL                pino level (default info)
 *   PTAH_WEBHOOK_CERT_FILE, PTAH_WEBHOOK_KEY_FILE   serve the admission webhooks (every replica
 *                                 serves them, leader or not); a changed pair is served without a
 *                                 restart
 *   PTAH_WEBHOOK_BIND_ADDRESS     where they listen, host:port (e.g. `:9443` for every address); default
 *                                 127.0.0.1 on PTAH_WEBHOOK_PORT (default: a free port)
 * Approvals are accepted only while the approval webhooks are registered pointing at this manager's paths
 * (src/controller/runtime/approval-webhook-gate.ts); otherwise a waiting resource says why and waits.
 *   PTAH_METRICS_BIND_ADDRESS     serve Prometheus metrics on GET /metrics at host:port (e.g. `:8080`);
 *                                 unset, no metrics endpoint
 * SIGTERM or SIGINT stops the workers after the keys in flight and exits 0; losing leadership exits 1.
 */
import { readFileSync } from 'node:fs';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { hostname } from 'node:os';
import { pino } from 'pino';
import { kubernetesApprovalSubjects } from '../admission/approval-subjects.ts';
import { startAdmissionServer, type AdmissionServer } from '../admission/server.ts';
import { approvalWebhooks, controllerWebhooks } from '../admission/webhooks.ts';
import { reloadCertificateOnChange } from '../admission/certificate-reload.ts';
import { controllerWriteSources, managerUsername } from './admission-sources.ts';
import { CONTROLLER_STATE_VERSION } from '../api/meta.ts';
import { fenceRefusal, scanStoredState } from './stored-state-fence.ts';
import { Manager } from './manager.ts';
import { SharedConnectionKubeConfig } from './runtime/kube-config.ts';
import { parseBindAddress, startMetricsServer, type MetricsServer } from './metrics/metrics-server.ts';
import { OperatorMetrics } from './metrics/operator-metrics.ts';

const env = process.env;
const log = pino({ level: env['PTAH_LOG_LEVEL'] ?? 'info', base: { component: 'ptah-operator' } });

const metrics = env['PTAH_METRICS_BIND_ADDRESS'] ? new OperatorMetrics() : undefined;
// One connection pool for every request and watch (see runtime/kube-config.ts).
const kubeConfig = new SharedConnectionKubeConfig((method, resource) =>
  metrics?.apiRequest(method, resource),
);
if (env['KUBECONFIG']) kubeConfig.loadFromFile(env['KUBECONFIG']);
else kubeConfig.loadFromCluster();

const managerIdentity = {
  managerImage: env['PTAH_MANAGER_IMAGE'] ?? 'ptah-operator:dev',
  managerRevision: env['PTAH_MANAGER_REVISION'] ?? 'dev',
  controllerStateVersion: CONTROLLER_STATE_VERSION,
  ptahVersion: env['PTAH_VERSION'] ?? '0.1.0',
  runnerImage: env['PTAH_RUNNER_IMAGE'] ?? 'ptah-runner:dev',
};
const manager = new Manager({
  kubeConfig,
  coordinationNamespace: env['PTAH_COORDINATION_NAMESPACE'] ?? 'ptah-system',
  identity: env['PTAH_MANAGER_IDENTITY'] ?? `${hostname()}-${process.pid}`,
  manager: managerIdentity,
  log,
  ...(metrics ? { metrics } : {}),
  ...(env['PTAH_LEADER_LEASE_SECONDS']
    ? { leaderLeaseSeconds: Number(env['PTAH_LEADER_LEASE_SECONDS']) }
    : {}),
  leaderLeaseFromRelease: env['PTAH_LEADER_LEASE_FROM_RELEASE'] === 'true',
});

const stop = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.once(sig, () => {
    log.info({ signal: sig }, 'shutting down');
    stop.abort();
  });
}

log.info({ coordinationNamespace: env['PTAH_COORDINATION_NAMESPACE'] ?? 'ptah-system' }, 'manager starting');
/** PTAH_WEBHOOK_BIND_ADDRESS (host:port, empty host = every address), else loopback on PTAH_WEBHOOK_PORT. */
function webhookBind(): { host: string; port: number } {
  const bind = env['PTAH_WEBHOOK_BIND_ADDRESS'];
  if (bind === undefined || bind === '')
    return { host: '127.0.0.1', port: Number(env['PTAH_WEBHOOK_PORT'] ?? 0) };
  const { host, port } = parseBindAddress(bind, 'webhook');
  return { host: host === '' ? '0.0.0.0' : host, port };
}

let webhooks: AdmissionServer | undefined;
let stopCertificateReload: (() => void) | undefined;
let metricsServer: MetricsServer | undefined;
try {
  // Before anything is served or reconciled: a manager older than the stored state refuses to run.
  const newer = await scanStoredState(kubeConfig.makeApiClient(CustomObjectsApi), CONTROLLER_STATE_VERSION);
  if (newer.length > 0) {
    log.fatal({ newer: newer.slice(0, 5) }, fenceRefusal(newer, CONTROLLER_STATE_VERSION));
    process.exit(1);
  }
  // Webhooks first: admission must answer even while this replica waits for leadership.
  if (env['PTAH_WEBHOOK_CERT_FILE'] && env['PTAH_WEBHOOK_KEY_FILE']) {
    const files = { certFile: env['PTAH_WEBHOOK_CERT_FILE'], keyFile: env['PTAH_WEBHOOK_KEY_FILE'] };
    // The only writer vcontrollerwrite admits is this process's own identity, asked of the API server.
    // Their rebuilds read the manager's watches first, which start with manager.start below: until each
    // has listed, its reads go to the API server.
    const controller = controllerWriteSources(
      kubeConfig,
      managerIdentity,
      await managerUsername(kubeConfig),
      manager.watches,
    );
    webhooks = await startAdmissionServer({
      cert: readFileSync(files.certFile),
      key: readFileSync(files.keyFile),
      ...webhookBind(),
      handlers: {
        ...approvalWebhooks(kubernetesApprovalSubjects(kubeConfig)),
        ...controllerWebhooks(controller.writes, controller.pods),
      },
      onReview: (e) => {
        metrics?.admissionReview(e.path.replace(/^\//, ''), e.allowed, e.durationMs / 1000);
        log.info(
          { path: e.path, allowed: e.allowed, code: e.code, ms: e.durationMs, reason: e.message },
          'admission review',
        );
      },
    });
    stopCertificateReload = reloadCertificateOnChange(files, webhooks, {
      onReload: (outcome) => log.info({ outcome }, 'webhook serving certificate changed'),
    });
    log.info({ port: webhooks.port }, 'webhooks serving');
  } else {
    log.warn(
      {},
      'approval webhooks not served here: approvals are accepted only while registered webhooks stamp them',
    );
  }
  if (metrics) {
    metricsServer = await startMetricsServer(metrics, env['PTAH_METRICS_BIND_ADDRESS']!);
    log.info({ port: metricsServer.port }, 'metrics serving');
  }
  await manager.start(stop.signal);
  stopCertificateReload?.();
  await webhooks?.close();
  await metricsServer?.close();
  log.info({}, 'manager stopped');
  process.exit(stop.signal.aborted ? 0 : 1);
} catch (error) {
  log.error({ error: (error as Error).name }, 'manager failed');
  process.exit(1);
}
