import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { findKubernetesBinaries } from './k8s-binaries.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import {
  createCertificateAuthority,
  createServiceAccountKeyPair,
  issueCertificate,
  type CertificateAuthority,
  type IssuedCertificate,
} from './pki.ts';
import { freePort } from './ports.ts';
import { startProcess, waitUntil, type ManagedProcess } from './process.ts';

export interface ControlPlaneKubeconfigs {
  readonly admin: string;
  readonly manager: string;
  readonly approver: string;
  readonly user: string;
  readonly node: string;
}

export interface ControlPlane {
  /** Its temporary directory: certificates, kubeconfigs, etcd data, logs. */
  readonly dir: string;
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** The cluster CA (PEM file); it also signs the node agent's serving certificate. */
  readonly caFile: string;
  readonly kubeconfigs: ControlPlaneKubeconfigs;
  /** For the node agent's kubelet API: SAN 127.0.0.1 and localhost, signed by the cluster CA. */
  readonly nodeServing: { readonly certFile: string; readonly keyFile: string };
  /** Usernames as the API server sees them (and as admission policies match them). */
  readonly identities: { readonly manager: string; readonly approver: string; readonly user: string };
  /** The node name the `node` kubeconfig may act for. */
  readonly nodeName: string;
  /** A namespace where the ordinary user may run Jobs and read their Pods and logs. */
  readonly testNamespace: string;
  /** What runs and where, so a supervisor can record it and `down` can verify it is gone. */
  readonly processes: readonly { readonly name: string; readonly pid: number; readonly logFile: string }[];
  readonly ports: readonly number[];
  stop(): Promise<void>;
}

export interface StartControlPlaneOptions {
  /** Directory to work in; a new temporary one by default. stop() removes it either way. */
  readonly dir?: string;
}

export const MANAGER_NAMESPACE = 'ptah-system';
export const MANAGER_SERVICE_ACCOUNT = 'ptah-manager';
export const NODE_NAME = 'ptah-node';
export const TEST_NAMESPACE = 'ptah-test';
const SERVICE_CIDR = '10.96.0.0/24';
const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const IDENTITIES = {
  manager: `system:serviceaccount:${MANAGER_NAMESPACE}:${MANAGER_SERVICE_ACCOUNT}`,
  approver: 'approver@example.com',
  user: 'user@example.com',
} as const;
// Long enough for any test run or demo session; the API server caps nothing by default.
const MANAGER_TOKEN_SECONDS = 7 * 24 * 3600;

// Controllers for storage, autoscaling and IPAM have nothing to do here; leaving them out
// shortens start-up and idle CPU on a small shared machine.
const DISABLED_CONTROLLERS = [
  'persistentvolume-binder-controller',
  'persistentvolume-attach-detach-controller',
  'persistentvolume-expander-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
  'ephemeral-volume-controller',
  'horizontal-pod-autoscaler-controller',
  'node-ipam-controller',
  'volumeattributesclass-protection-controller',
  'resourceclaim-controller',
  'device-taint-eviction-controller',
  'storage-version-migrator-controller',
];

interface Pki {
  readonly ca: CertificateAuthority;
  readonly apiserver: IssuedCertificate;
  readonly kubeletClient: IssuedCertificate;
  readonly admin: IssuedCertificate;
  readonly controllerManager: IssuedCertificate;
  readonly scheduler: IssuedCertificate;
  readonly approver: IssuedCertificate;
  readonly user: IssuedCertificate;
  readonly nodeClient: IssuedCertificate;
  readonly nodeServing: IssuedCertificate;
  readonly serviceAccount: { privateKeyFile: string; publicKeyFile: string };
}

function createPki(dir: string): Pki {
  const ca = createCertificateAuthority(dir, 'ca', 'ptah-local-ca');
  const client = (name: string, commonName: string, organizations: string[] = []): IssuedCertificate =>
    issueCertificate(dir, ca, { name, commonName, organizations, usage: 'client' });
  return {
    ca,
    apiserver: issueCertificate(dir, ca, {
      name: 'apiserver',
      commonName: 'kube-apiserver',
      dnsNames: [
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
      ],
      ipAddresses: ['127.0.0.1', '10.96.0.1'],
      usage: 'server',
    }),
    kubeletClient: client('apiserver-kubelet-client', 'kube-apiserver-kubelet-client'),
    admin: client('admin', 'ptah-admin', ['system:masters']),
    // One privileged identity for all controllers: per-controller ServiceAccount credentials
    // double the control plane's start (each controller waits for its own token) and buy a
    // local test cluster nothing.
    controllerManager: client('controller-manager', 'system:kube-controller-manager', ['system:masters']),
    scheduler: client('scheduler', 'system:kube-scheduler'),
    approver: client('approver', IDENTITIES.approver, ['ptah:approvers']),
    user: client('user', IDENTITIES.user, ['ptah:users']),
    nodeClient: client('node', `system:node:${NODE_NAME}`, ['system:nodes']),
    nodeServing: issueCertificate(dir, ca, {
      name: 'node-serving',
      commonName: `system:node:${NODE_NAME}`,
      organizations: ['system:nodes'],
      dnsNames: ['localhost', NODE_NAME],
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    }),
    serviceAccount: createServiceAccountKeyPair(dir),
  };
}

/** GET over HTTPS with a client certificate; resolves with the status code and body. */
function httpsGet(
  url: string,
  tls: { ca: Buffer; cert: Buffer; key: Buffer },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ...tls, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

/** With PTAH_ENV_TIMING=1, start-up phases print to stderr: what the warm-start benchmark breaks down. */
export function phaseTimer(component: string): (phase: string) => void {
  const start = Date.now();
  const enabled = process.env['PTAH_ENV_TIMING'] === '1';
  return (phase) => {
    if (enabled) console.error(`timing ${component}: ${phase} at ${Date.now() - start} ms`);
  };
}

function isStatus(error: unknown, code: number): boolean {
  return error instanceof k8s.ApiException && error.code === code;
}

/**
 * RBAC for tests: the ordinary user may run Jobs, manage ConfigMaps and read Pods, their logs
 * and events in the test namespace; nothing cluster-wide.
 */
async function bootstrapObjects(adminKubeconfig: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  for (const name of [MANAGER_NAMESPACE, TEST_NAMESPACE]) {
    await core.createNamespace({ body: { metadata: { name } } });
  }
  await core.createNamespacedServiceAccount({
    namespace: MANAGER_NAMESPACE,
    body: { metadata: { name: MANAGER_SERVICE_ACCOUNT } },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'ptah:test-workloads' },
      rules: [
        {
          apiGroups: ['batch'],
          resources: ['jobs'],
          verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch', 'update'],
        },
        {
          apiGroups: [''],
          resources: ['configmaps'],
          verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch', 'update'],
        },
        { apiGroups: [''], resources: ['pods', 'events'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: TEST_NAMESPACE,
    body: {
      metadata: { name: 'ptah:test-workloads:user' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ptah:test-workloads' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: IDENTITIES.user }],
    },
  });
}

async function requestManagerToken(adminKubeconfig: string): Promise<string> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const response = await core.createNamespacedServiceAccountToken({
    name: MANAGER_SERVICE_ACCOUNT,
    namespace: MANAGER_NAMESPACE,
    body: { spec: { audiences: [ISSUER], expirationSeconds: MANAGER_TOKEN_SECONDS } },
  });
  const token = response.status?.token;
  if (!token) throw new Error('controlplane: the TokenRequest for the manager returned no token');
  return token;
}

/** The service-account controller creates `default` in every namespace; Pods need it to be admitted. */
async function waitForDefaultServiceAccounts(adminKubeconfig: string, kcm: ManagedProcess): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (const namespace of ['default', TEST_NAMESPACE]) {
    await waitUntil(
      `default ServiceAccount in ${namespace}`,
      async () => {
        try {
          await core.readNamespacedServiceAccount({ name: 'default', namespace });
          return true;
        } catch (error) {
          if (isStatus(error, 404)) return false;
          throw error;
        }
      },
      { process: kcm, timeoutMs: 60_000, intervalMs: 250 },
    );
  }
}

export async function startControlPlane(options: StartControlPlaneOptions = {}): Promise<ControlPlane> {
  const bin = findKubernetesBinaries();
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'ptah-cp-'));
  const pkiDir = join(dir, 'pki');
  const logDir = join(dir, 'logs');
  const kubeconfigDir = join(dir, 'kubeconfig');
  for (const d of [dir, pkiDir, logDir, kubeconfigDir]) mkdirSync(d, { recursive: true, mode: 0o700 });

  const started: ManagedProcess[] = [];
  // If the owning process dies without stop() (an uncaught error, process.exit), take the
  // control plane with it rather than leave servers listening; 'exit' allows only sync work.
  const killOnExit = (): void => {
    for (const p of started) if (!p.exited()) p.child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const ports: number[] = [];
  const stopAll = async (): Promise<void> => {
    // Dependents first, so nothing logs storms of connection errors while it is stopped.
    const [etcd, apiserver, ...rest] = started;
    await Promise.all(rest.map((p) => p.stop(10_000)));
    if (apiserver) await apiserver.stop(15_000);
    if (etcd) await etcd.stop(10_000);
  };

  try {
    const mark = phaseTimer('controlplane');
    const etcdClientPort = await freePort();
    const etcdPeerPort = await freePort();
    ports.push(etcdClientPort, etcdPeerPort);
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = startProcess(
      'etcd',
      bin.etcd,
      [
        '--name=ptah',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=ptah=${peerUrl}`,
        '--initial-cluster-state=new',
        // Throwaway data: durability buys nothing and fsync dominates etcd latency on shared disks.
        '--unsafe-no-fsync',
        '--quota-backend-bytes=1073741824',
        // A single member has nobody to wait for: elect it at once rather than after the default second.
        '--heartbeat-interval=50',
        '--election-timeout=300',
        '--log-level=warn',
      ],
      join(logDir, 'etcd.log'),
    );
    started.push(etcd);
    // etcd needs no certificates (plain HTTP on loopback); making them while it elects itself saves a second.
    const pki = createPki(pkiDir);
    mark('certificates');
    const tls = {
      ca: readFileSync(pki.ca.certFile),
      cert: readFileSync(pki.admin.certFile),
      key: readFileSync(pki.admin.keyFile),
    };

    await waitUntil(
      'etcd',
      async () => {
        const r = await httpGet(`${etcdUrl}/health`);
        return r.status === 200 && r.body.includes('"health":"true"');
      },
      { process: etcd, timeoutMs: 30_000, intervalMs: 100 },
    );

    mark('etcd healthy');
    const apiPort = await freePort();
    ports.push(apiPort);
    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = startProcess(
      'kube-apiserver',
      bin.apiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${pkiDir}`,
        `--tls-cert-file=${pki.apiserver.certFile}`,
        `--tls-private-key-file=${pki.apiserver.keyFile}`,
        `--client-ca-file=${pki.ca.certFile}`,
        `--service-account-issuer=${ISSUER}`,
        `--service-account-key-file=${pki.serviceAccount.publicKeyFile}`,
        `--service-account-signing-key-file=${pki.serviceAccount.privateKeyFile}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--authorization-mode=Node,RBAC',
        // ValidatingAdmissionPolicy and both webhook plugins are on by default in 1.37;
        // NodeRestriction is not, and it keeps the node agent's identity to its own Node and Pods.
        '--enable-admission-plugins=NodeRestriction',
        `--kubelet-client-certificate=${pki.kubeletClient.certFile}`,
        `--kubelet-client-key=${pki.kubeletClient.keyFile}`,
        `--kubelet-certificate-authority=${pki.ca.certFile}`,
        '--kubelet-preferred-address-types=InternalIP',
        // A loopback advertise address is not a valid endpoint for the kubernetes Service.
        '--endpoint-reconciler-type=none',
        // Webhooks (and aggregated APIs) behind a Service are dialled at one of its ready endpoints, as
        // nothing here routes cluster IPs (no kube-proxy); the node agent gives every Pod its own IP.
        '--enable-aggregator-routing=true',
        '--profiling=false',
        '--allow-privileged=true',
      ],
      join(logDir, 'kube-apiserver.log'),
    );
    started.push(apiserver);
    // The controller manager gives the API server only ~10 s to turn healthy, so it starts once
    // the API server answers at all, overlapping the rest of the API server's start-up with its own.
    await waitUntil(
      'kube-apiserver listening',
      async () => (await httpsGet(`${server}/livez`, tls)).status > 0,
      {
        process: apiserver,
        timeoutMs: 90_000,
        intervalMs: 100,
      },
    );

    mark('kube-apiserver answering');
    const kubeconfig = (name: string, userName: string, cert: IssuedCertificate, namespace?: string) =>
      writeKubeconfig(join(kubeconfigDir, `${name}.kubeconfig`), {
        server,
        caFile: pki.ca.certFile,
        userName,
        credentials: cert,
        ...(namespace ? { namespace } : {}),
      });
    const admin = kubeconfig('admin', 'ptah-admin', pki.admin);
    const kcmConfig = kubeconfig(
      'controller-manager',
      'system:kube-controller-manager',
      pki.controllerManager,
    );
    const schedulerConfig = kubeconfig('scheduler', 'system:kube-scheduler', pki.scheduler);
    const approver = kubeconfig('approver', IDENTITIES.approver, pki.approver, TEST_NAMESPACE);
    const user = kubeconfig('user', IDENTITIES.user, pki.user, TEST_NAMESPACE);
    const node = kubeconfig('node', `system:node:${NODE_NAME}`, pki.nodeClient);

    const kcm = startProcess(
      'kube-controller-manager',
      bin.controllerManager,
      [
        `--kubeconfig=${kcmConfig}`,
        '--secure-port=0',
        '--leader-elect=false',
        `--controllers=*,${DISABLED_CONTROLLERS.map((c) => `-${c}`).join(',')}`,
        '--use-service-account-credentials=false',
        `--service-account-private-key-file=${pki.serviceAccount.privateKeyFile}`,
        `--root-ca-file=${pki.ca.certFile}`,
        `--cluster-signing-cert-file=${pki.ca.certFile}`,
        `--cluster-signing-key-file=${pki.ca.keyFile}`,
        '--cluster-name=ptah-local',
      ],
      join(logDir, 'kube-controller-manager.log'),
    );
    started.push(kcm);
    const scheduler = startProcess(
      'kube-scheduler',
      bin.scheduler,
      [`--kubeconfig=${schedulerConfig}`, '--secure-port=0', '--leader-elect=false'],
      join(logDir, 'kube-scheduler.log'),
    );
    started.push(scheduler);

    await waitUntil('kube-apiserver', async () => (await httpsGet(`${server}/readyz`, tls)).status === 200, {
      process: apiserver,
      timeoutMs: 90_000,
      intervalMs: 100,
    });

    mark('kube-apiserver ready');
    await bootstrapObjects(admin);
    const manager = writeKubeconfig(join(kubeconfigDir, 'manager.kubeconfig'), {
      server,
      caFile: pki.ca.certFile,
      userName: IDENTITIES.manager,
      credentials: { token: await requestManagerToken(admin) },
      namespace: MANAGER_NAMESPACE,
    });
    mark('bootstrap objects and manager token');
    await waitForDefaultServiceAccounts(admin, kcm);
    mark('controllers running (default ServiceAccounts exist)');

    let stopped = false;
    return {
      dir,
      server,
      caFile: pki.ca.certFile,
      kubeconfigs: { admin, manager, approver, user, node },
      nodeServing: { certFile: pki.nodeServing.certFile, keyFile: pki.nodeServing.keyFile },
      identities: { ...IDENTITIES },
      nodeName: NODE_NAME,
      testNamespace: TEST_NAMESPACE,
      processes: started.map((p) => ({ name: p.name, pid: p.pid, logFile: p.logFile })),
      ports,
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopAll();
        process.removeListener('exit', killOnExit);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopAll();
    process.removeListener('exit', killOnExit);
    // The directory stays: its logs explain the failure, and nothing in it runs any more.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`controlplane: start failed (logs kept in ${logDir}): ${reason}`, { cause: error });
  }
}
