// deploy/kubernetes/, rendered as `kubectl apply -k` would render it (offline), each object
// validated against Kubernetes' schemas (the kubernetes-models package), and what the
// deployment promises checked on the rendered objects.
import { execFile, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { loadConfig } from '../../lib/process/config.js'

const kubectl = spawnSync('kubectl', ['version', '--client']).status === 0
const run = promisify(execFile)

interface Probe { httpGet: { path: string, port: string }, periodSeconds: number, failureThreshold: number }
interface Container {
  name: string
  image: string
  command?: string[]
  ports?: { name: string, containerPort: number }[]
  envFrom: { configMapRef: { name: string } }[]
  env: { name: string, valueFrom: { secretKeyRef: { name: string, key: string } } }[]
  startupProbe?: Probe
  readinessProbe?: Probe
  livenessProbe?: Probe
  resources: { requests: Record<string, string>, limits: Record<string, string> }
  securityContext: { allowPrivilegeEscalation: boolean, readOnlyRootFilesystem: boolean, runAsNonRoot: boolean, capabilities: { drop: string[] } }
}
interface PodSpec {
  securityContext: { runAsNonRoot: boolean, runAsUser: number }
  terminationGracePeriodSeconds?: number
  automountServiceAccountToken: boolean
  containers: Container[]
}
interface KubeObject {
  apiVersion: string
  kind: string
  metadata: { name: string, annotations?: Record<string, string> }
  spec: any
  data?: Record<string, string>
}

/**
 * tsc's complaints about `objects` written as literals of their kubernetes-models interfaces
 * (`const object0: IDeployment = {…}`), or '' when it has none. The file goes where
 * node_modules resolves, in its cache folder.
 */
async function typeCheck (objects: KubeObject[]): Promise<string> {
  await mkdir(path.join('node_modules', '.cache'), { recursive: true })
  const folder = await mkdtemp(path.join('node_modules', '.cache', 'manifests-'))
  try {
    const file = path.join(folder, 'manifests.ts')
    await writeFile(file, objects.map((object, i) =>
      `import type { I${object.kind} as Kind${i} } from 'kubernetes-models/${object.apiVersion}/${object.kind}'\n` +
      `export const object${i}: Kind${i} = ${JSON.stringify(object, null, 2)}\n`).join(''))
    return await run('npx', ['tsc', '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', file])
      .then(() => '', (error: { stdout: string }) => error.stdout)
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

t.test('deploy/kubernetes renders objects that Kubernetes\' schemas accept, and that keep what docs/deployment.md says',
  { skip: kubectl ? false : 'kubectl is not installed' }, async t => {
    const { stdout } = await run('kubectl', ['kustomize', 'deploy/kubernetes'])
    const objects = parseAllDocuments(stdout).map(document => document.toJS() as KubeObject)
    const byKind = (kind: string) => objects.filter(object => object.kind === kind)

    t.same(objects.map(object => object.kind).sort(), ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Job', 'PodDisruptionBudget', 'Service'])
    for (const object of objects) {
      // kubernetes-models/<group>/<version>/<Kind>: the model of that kind, with its schema.
      const model = await import(`kubernetes-models/${object.apiVersion}/${object.kind}`) as Record<string, new (data: unknown) => { validate: () => void }>
      t.doesNotThrow(() => new model[object.kind]!(object).validate(), `${object.kind} ${object.metadata.name} is valid`)
    }

    await t.test('no field that Kubernetes does not know: each object type-checked against kubernetes-models\' interfaces, whose excess-property check the schemas lack', async t => {
      t.equal(await typeCheck(objects), '', 'tsc finds nothing')
      // The check itself catches a misspelt field.
      const misspelt = structuredClone(objects)
      const container = misspelt.find(object => object.kind === 'Deployment')!.spec.template.spec.containers[0]
      container.readinesProbe = container.readinessProbe
      delete container.readinessProbe
      t.match(await typeCheck(misspelt), /'"readinesProbe"' does not exist in type 'IContainer'/)
    })

    const [config] = byKind('ConfigMap')
    const [deployment] = byKind('Deployment')
    const [job] = byKind('Job')
    const pod = deployment!.spec.template.spec as PodSpec
    const [api] = pod.containers
    const settings = config!.data!

    await t.test('the images, as rendered: named in full, registry first (the manifests\' short name is kustomize\'s, which kustomization.yaml replaces)', async t => {
      for (const object of [deployment!, job!]) {
        for (const container of (object.spec.template.spec as PodSpec).containers) {
          t.match(container.image, /^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?\/[a-z0-9/._-]+:[\w.-]+$/, `${object.kind} ${container.name}: ${container.image}`)
        }
      }
    })

    await t.test('probes: readiness on /health/ready, liveness and start-up on /health/live, on the API\'s port', async t => {
      t.same(api!.ports, [{ name: 'http', containerPort: 3000 }, { name: 'metrics', containerPort: 9464 }])
      t.equal(api!.readinessProbe!.httpGet.path, '/health/ready')
      t.equal(api!.livenessProbe!.httpGet.path, '/health/live')
      t.equal(api!.startupProbe!.httpGet.path, '/health/live')
      for (const probe of [api!.readinessProbe, api!.livenessProbe, api!.startupProbe]) t.equal(probe!.httpGet.port, 'http')
    })

    await t.test('shutdown: SHUTDOWN_DELAY outlasts the readiness probe\'s period × failures; delay and grace fit in the pod\'s grace period', async t => {
      const seconds = (value: string) => Number(/^(\d+)s$/.exec(value)![1])
      const probe = api!.readinessProbe!
      t.ok(seconds(settings.SHUTDOWN_DELAY!) >= probe.periodSeconds * probe.failureThreshold, `SHUTDOWN_DELAY ${settings.SHUTDOWN_DELAY}`)
      t.ok(probe.failureThreshold >= 2, 'one slow check takes no pod out of rotation')
      t.ok(seconds(settings.SHUTDOWN_DELAY!) + seconds(settings.SHUTDOWN_GRACE!) < pod.terminationGracePeriodSeconds!, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}`)
      t.same(deployment!.spec.strategy.rollingUpdate, { maxSurge: 1, maxUnavailable: 0 }, 'no pod stopped before its successor is ready')
    })

    await t.test('the pods and the Job: non-root, no privilege escalation, read-only root, every capability dropped, limits set', async t => {
      for (const spec of [pod, job!.spec.template.spec as PodSpec]) {
        t.equal(spec.securityContext.runAsNonRoot, true)
        t.equal(spec.securityContext.runAsUser, 1000)
        t.equal(spec.automountServiceAccountToken, false)
        for (const container of spec.containers) {
          t.same(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } }, container.name)
          t.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory, `${container.name}: requests and limits`)
        }
      }
    })

    await t.test('secrets from the Secret, every other setting from the ConfigMap; migrations by the Job only', async t => {
      for (const container of [api!, (job!.spec.template.spec as PodSpec).containers[0]!]) {
        t.same(container.env.map(variable => [variable.name, variable.valueFrom.secretKeyRef]), [
          ['JWT_SECRET', { name: 'student-records-api', key: 'JWT_SECRET' }],
          ['DB_PASSWORD', { name: 'student-records-api', key: 'DB_PASSWORD' }]
        ], `${container.name}: the secrets`)
        t.same(container.envFrom, [{ configMapRef: { name: config!.metadata.name } }], `${container.name}: the ConfigMap`)
      }
      t.notOk('JWT_SECRET' in settings || 'DB_PASSWORD' in settings, 'no secret in the ConfigMap')
      t.equal(settings.MIGRATE, 'false', 'the pods do not migrate')
      t.same((job!.spec.template.spec as PodSpec).containers[0]!.command, ['node', 'dist/scripts/migrate.js'], 'the Job runs the migration script')
      t.equal(job!.spec.template.spec.restartPolicy, 'Never')
    })

    await t.test('the settings are valid; the client\'s address comes from the ingress controller\'s pods (TRUST_PROXY)', async t => {
      const config = loadConfig({ ...settings, JWT_SECRET: 'x'.repeat(32), DB_PASSWORD: 'from the Secret' })
      t.ok(config.trustProxy.length > 0, `TRUST_PROXY ${settings.TRUST_PROXY}: the ingress's X-Forwarded-For is trusted`)
    })

    await t.test('metrics annotated for Prometheus; the Service exposes the API only; PDB and autoscaler aim at the Deployment', async t => {
      const annotations = deployment!.spec.template.metadata.annotations
      t.same(annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9464', 'prometheus.io/path': '/metrics' })
      const [service] = byKind('Service')
      t.same(service!.spec.ports, [{ name: 'http', port: 80, targetPort: 'http' }])
      t.same(service!.spec.selector, deployment!.spec.selector.matchLabels)
      t.same(byKind('PodDisruptionBudget')[0]!.spec.selector.matchLabels, deployment!.spec.selector.matchLabels)
      const autoscaler = byKind('HorizontalPodAutoscaler')[0]!.spec
      t.same(autoscaler.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment!.metadata.name })
      t.ok(autoscaler.minReplicas >= 2, 'two pods at least: one can be rolled or lost at any time')
      t.notOk('replicas' in deployment!.spec, 'the autoscaler owns the count')
      // Per pod: the pool and the connection that listens. The most pods, one more in a
      // rollout (maxSurge), and the Job's migration (its pool, the migrator, the lock): inside
      // the 97 of PostgreSQL's 100 that are not kept for superusers, with room for draining pods.
      const perPod = Number(settings.DB_POOL_MAX) + 1
      const most = perPod * (autoscaler.maxReplicas + deployment!.spec.strategy.rollingUpdate.maxSurge) + 4
      t.ok(most <= 97 * 0.75, `${most} connections at the most`)
    })
  })
